/**
 * A transaction handle: a `Store` whose calls join one transaction frame,
 * the same for both SQL stores; the dialect supplies its frame session and
 * the few calls that read its own machinery.
 *
 * @module
 */
import { BeehiveError } from "../../src/model/errors.ts";
import type { Fence, Store } from "../../src/store.ts";
import { checkHook, checkTransactionFn } from "./_checks.ts";
import { Families } from "./_families.ts";
import type { LeaseLocks } from "./_leases.ts";
import type { SqlSession } from "./_session.ts";

/** A dialect's transaction-frame session, as the handle uses it. */
export interface FrameSession<S> {
  /** Opens a nested frame (a savepoint) and runs `fn` in it. */
  nested<T>(fn: (session: S) => Promise<T>): Promise<T>;
  /** Registers a hook against this frame. */
  afterCommit(fn: () => void | Promise<void>): void;
}

/** What a dialect supplies to its transaction handles. */
export interface TxHandleParts<S> {
  /** The families' session over a frame's session. */
  sql(session: S): SqlSession;
  /** The held-lease locks of the store. */
  readonly locks: LeaseLocks;
  /** The highest committed resource version, read in the frame. */
  latestVersion(session: S): Promise<number>;
  /** `reclaimSpace` called through the frame. */
  reclaimSpace(session: S, maxPages: number): Promise<number>;
  /** Subscribes to commits by other opens of the store. */
  watchCommits(listener: () => void): () => void;
}

/** A transaction handle: a `Store` whose calls join one transaction frame. */
export class SqlTx<S extends FrameSession<S>> extends Families implements Store {
  readonly identity: string;
  readonly origin: number;
  readonly #session: S;
  readonly #parts: TxHandleParts<S>;

  constructor(identity: string, origin: number, session: S, parts: TxHandleParts<S>) {
    super(parts.sql(session), parts.locks);
    this.identity = identity;
    this.origin = origin;
    this.#session = session;
    this.#parts = parts;
  }

  within<T>(fn: (tx: Store) => Promise<T>): Promise<T> {
    try {
      checkTransactionFn(fn);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#session.nested((s) => fn(new SqlTx(this.identity, this.origin, s, this.#parts)));
  }

  afterCommit(fn: () => void | Promise<void>): void {
    checkHook(fn);
    this.#session.afterCommit(fn);
  }

  getLatestResourceVersion(): Promise<number> {
    return this.#parts.latestVersion(this.#session);
  }

  reclaimSpace(maxPages: number): Promise<number> {
    return this.#parts.reclaimSpace(this.#session, maxPages);
  }

  /** The outermost transaction's fence applies: a transaction is checked once, when it begins. */
  fenced(_fence: Fence): Store {
    return this;
  }

  watchCommits(listener: () => void): () => void {
    return this.#parts.watchCommits(listener);
  }

  close(): Promise<void> {
    return Promise.reject(
      new BeehiveError("Cannot close the store through a transaction handle; close the root store"),
    );
  }
}
