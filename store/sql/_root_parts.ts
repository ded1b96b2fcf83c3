/**
 * A root handle's parts, assembled once for both SQL stores from what a
 * dialect gives ({@linkcode DialectKit}): the families, the transaction
 * handles' parts, hooks, the integrity check and the write origin are built
 * alike over the dialect's sessions.
 *
 * @module
 */
import type { Fence } from "../../src/store.ts";
import { Families } from "./_families.ts";
import { type Reporter, type RootSessionBase, runHooks, type RunOutermost } from "./_frames.ts";
import { checkBody, type DialectChecks } from "./_integrity.ts";
import type { LeaseLocks } from "./_leases.ts";
import type { SqlSession } from "./_session.ts";
import type { FrameSession } from "./_tx_handle.ts";
import type { RootParts, SqlStore } from "./sql_store.ts";

/** What a dialect's handles reach of its own machinery, on the open `C`. */
export interface DialectKit<C, R extends RootSessionBase<C>, S extends FrameSession<S>> {
  /** The families' session over a root or frame session of the dialect. */
  sql(session: R | S): SqlSession;
  /** The open's held-lease locks. */
  locks(core: C): LeaseLocks;
  /** The dialect's own integrity checks, run before the shared ones. */
  readonly checks: DialectChecks;
  /** The highest committed resource version, read through `session`. */
  latestVersion(session: R | S): Promise<number>;
  /** The dialect's space reclaim through a root session. */
  reclaimSpace(session: R, maxPages: number): Promise<number>;
  /** The space reclaim called through a transaction frame. */
  txReclaimSpace(session: S, maxPages: number): Promise<number>;
  /** Subscribes to commits by other opens of the store. */
  watchCommits(core: C, listener: () => void): () => void;
  /** Runs a function as an outermost transaction. */
  readonly outermost: RunOutermost<C, S>;
}

/** What only the store class gives: its fenced handles and how its open closes. */
export interface OwnParts {
  /** A new handle on the same open, with `fence`, whose `close` closes `root`. */
  withFence(fence: Fence, root: SqlStore): SqlStore;
  /** Releases the open's connections. */
  close(): Promise<void>;
}

/** The parts of a root handle over `session`, an open `core` of the dialect `kit`. */
export function rootParts<
  C extends Reporter & { readonly epoch: number; readonly readOnlyAt?: string },
  R extends RootSessionBase<C>,
  S extends FrameSession<S>,
>(kit: DialectKit<C, R, S>, session: R, own: OwnParts): RootParts<S> {
  const core = session.core;
  const locks = kit.locks(core);
  return {
    // A read-only open commits nothing: origin 0 is no open's.
    origin: core.readOnlyAt === undefined ? core.epoch : 0,
    families: new Families(kit.sql(session), locks),
    tx: {
      sql: kit.sql,
      locks,
      latestVersion: kit.latestVersion,
      reclaimSpace: kit.txReclaimSpace,
      watchCommits: (listener) => kit.watchCommits(core, listener),
    },
    fence: session.fence,
    outermost: (fn, fence) => kit.outermost(core, fn, fence),
    runHook: (fn) => void runHooks(core, [fn]),
    latestVersion: () => kit.latestVersion(session),
    reclaimSpace: (maxPages) => kit.reclaimSpace(session, maxPages),
    check: () => kit.sql(session).read(() => checkBody(kit.checks)),
    ...own,
  };
}
