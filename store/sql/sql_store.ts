/**
 * {@linkcode SqlStore}: the root handle both SQL stores share. `SqliteStore`
 * and `PostgresStore` extend it with how they open, fence and close.
 *
 * @module
 */
import type {
  Conditions,
  DeletionRequests,
  Dependencies,
  DriverCursors,
  Edges,
  Events,
  Fence,
  Kinds,
  Leases,
  Objects,
  ObjectWrites,
  ReconcileOwed,
  Store,
} from "../../src/store.ts";
import { checkFenceOption, checkHook, checkTransactionFn } from "./_checks.ts";
import type { Families } from "./_families.ts";
import type { IntegrityReport } from "./_integrity.ts";
import { type FrameSession, SqlTx, type TxHandleParts } from "./_tx_handle.ts";

/** What a dialect hands its root handle: the few calls that reach its own machinery. */
export interface RootParts<S extends FrameSession<S>> {
  /** This open's number, which its writes carry (0 on a read-only open). */
  readonly origin: number;
  /** The families bound to the root session. */
  readonly families: Families;
  /** What the transaction handles read of the store. */
  readonly tx: TxHandleParts<S>;
  /** This handle's fence, checked when each of its write transactions begins. */
  readonly fence: Fence | undefined;
  /** Runs `fn` in an outermost transaction (joining the write group where the dialect joins). */
  outermost<T>(fn: (session: S) => Promise<T>, fence: Fence | undefined): Promise<T>;
  /** Runs a hook registered outside any transaction: at once, reporting a failure. */
  runHook(fn: () => void | Promise<void>): void;
  /** The highest committed resource version. */
  latestVersion(): Promise<number>;
  /** The dialect's space reclaim. */
  reclaimSpace(maxPages: number): Promise<number>;
  /** The integrity check: the dialect's checks, then the shared ones (`./_integrity.ts`). */
  check(): Promise<IntegrityReport>;
  /** A new handle on the same open, with `fence`, whose `close` closes `root`. */
  withFence(fence: Fence, root: SqlStore): SqlStore;
  /** Releases the open's connections; called once, on the handle that opened the store. */
  close(): Promise<void>;
}

/**
 * A {@linkcode Store} over a SQL database: the root handle both SQL stores
 * (`SqliteStore`, `PostgresStore`) share. Open one with `openSqliteStore` or
 * `openPostgresStore`.
 */
export abstract class SqlStore implements Store {
  /**
   * Which store this is: every open of one database reports one identity (the
   * SQLite file's absolute path, or `memory:<uuid>`; `postgres://host:port/database?schema=name`).
   */
  readonly identity: string;
  /** This open of the store (its `store_epoch`); the write log records it per write. */
  readonly origin: number;
  /** The objects table. */
  readonly objects: Objects;
  /** The conditions table. */
  readonly conditions: Conditions;
  /** The edge table. */
  readonly edges: Edges;
  /** The deletion-request lifecycle. */
  readonly deletionRequests: DeletionRequests;
  /** The dependency watermarks. */
  readonly dependencies: Dependencies;
  /** Driver scan positions. */
  readonly driverCursors: DriverCursors;
  /** The event log. */
  readonly events: Events;
  /** The object write log. */
  readonly objectWrites: ObjectWrites;
  /** The owed counts. */
  readonly reconcileOwed: ReconcileOwed;
  /** Named leases with fencing epochs. */
  readonly leases: Leases;
  /** The stored kind definitions. */
  readonly kinds: Kinds;
  // deno-lint-ignore no-explicit-any
  readonly #parts: RootParts<any>;
  /** The handle the open returned, which owns the connections; undefined on that one. */
  readonly #root: SqlStore | undefined;
  #closed: Promise<void> | undefined;

  /** @ignore A dialect's store builds its handles; open one with its `open…Store` function. */
  protected constructor(
    identity: string,
    // deno-lint-ignore no-explicit-any
    parts: RootParts<any>,
    root: SqlStore | undefined,
  ) {
    const families = parts.families;
    this.identity = identity;
    this.origin = parts.origin;
    this.objects = families.objects;
    this.conditions = families.conditions;
    this.edges = families.edges;
    this.deletionRequests = families.deletionRequests;
    this.dependencies = families.dependencies;
    this.driverCursors = families.driverCursors;
    this.events = families.events;
    this.objectWrites = families.objectWrites;
    this.reconcileOwed = families.reconcileOwed;
    this.leases = families.leases;
    this.kinds = families.kinds;
    this.#parts = parts;
    this.#root = root;
  }

  /** Runs `fn` in one transaction: it commits when `fn` resolves and rolls back when it rejects. */
  within<T>(fn: (tx: Store) => Promise<T>): Promise<T> {
    try {
      checkTransactionFn(fn);
    } catch (error) {
      return Promise.reject(error);
    }
    const parts = this.#parts;
    return parts.outermost(
      (session) => fn(new SqlTx(this.identity, this.origin, session, parts.tx)),
      parts.fence,
    );
  }

  /** Runs `fn` after the current transaction commits; outside one, at once. */
  afterCommit(fn: () => void | Promise<void>): void {
    checkHook(fn);
    this.#parts.runHook(fn);
  }

  /** The highest resource version committed to the store. */
  getLatestResourceVersion(): Promise<number> {
    return this.#parts.latestVersion();
  }

  /**
   * Returns free space to the operating system, a bounded step at a time;
   * resolves to the pages the store's files shrank by. An idle call is one read.
   */
  reclaimSpace(maxPages: number): Promise<number> {
    return this.#parts.reclaimSpace(maxPages);
  }

  /**
   * Checks the store's integrity, reading only: the database's own checks
   * (SQLite: `PRAGMA integrity_check` and `foreign_key_check`), the schema
   * version, and beehive's invariants (object and write-log versions under
   * the store's counter, sane generations, no edge, condition, event or
   * watermark pointing at a missing object). Resolves to what it found; a
   * file too damaged to read rejects with a `StoreError`. No check can see a
   * value changed into another valid value (a flipped bit in a name or spec):
   * SQLite keeps no checksums of row contents.
   */
  check(): Promise<IntegrityReport> {
    return this.#parts.check();
  }

  /**
   * A handle on this store whose every write transaction first checks, inside
   * it, that lease `fence.lease` is not past `fence.epoch`; a write from a term
   * that is over rejects with `FencedError` and commits nothing.
   */
  fenced(fence: Fence): Store {
    checkFenceOption(fence);
    return this.#parts.withFence({ ...fence }, this.#root ?? this);
  }

  /**
   * Calls `listener` soon after another open of this store (another
   * connection or process) commits; listening writes nothing.
   */
  watchCommits(listener: () => void): () => void {
    return this.#parts.tx.watchCommits(listener);
  }

  /** Closes the store once the transactions in flight end. Idempotent. */
  close(): Promise<void> {
    if (this.#root !== undefined) return this.#root.close();
    return this.#closed ??= this.#parts.close();
  }

  /** Closes the store. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
