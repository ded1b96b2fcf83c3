/**
 * Sessions route a family's statements: the root session reads on any pooled
 * connection and wraps each write in its own transaction; a transaction
 * session runs everything on the transaction's connection, with a savepoint
 * around each write so a failing mutator leaves nothing behind. A transaction
 * spans awaits; its units run one at a time.
 *
 * @module
 */
import { ConcurrentNestedTxError, StaleTxError } from "../../src/model/errors.ts";
import type { Fence } from "../../src/store.ts";
import { AsyncLock, type Core, Db, type PgClient } from "./_core.ts";
import { isServerError, MemberSavepoint, releaseClient, rollbackQuietly } from "./_connections.ts";
import { commitInGroup } from "./_group_commit.ts";
import { Draws, Scope, type WriteScope } from "./_write_scope.ts";

export type { WriteScope } from "./_write_scope.ts";

/** How a family reaches the database. */
export interface Session {
  readonly core: Core;
  /** Runs reads on a connection. */
  read<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  /** Runs reads that must see one snapshot. */
  readSnapshot<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  /** Runs a write unit atomically. */
  write<T>(fn: (scope: WriteScope) => Promise<T>): Promise<T>;
}

/** A registered afterCommit hook and the frame that owns it. */
interface Hook {
  readonly frame: Frame;
  readonly fn: () => void | Promise<void>;
}

/** One outermost transaction's shared state. */
export class TxState {
  readonly db: Db;
  readonly draws: Draws;
  readonly hooks: Hook[] = [];
  /** Units (and savepoint statements) run one at a time on the connection. */
  readonly lock = new AsyncLock();
  done = false;
  committed = false;
  #savepoints = 0;

  constructor(db: Db, draws: Draws) {
    this.db = db;
    this.draws = draws;
  }

  nextSavepoint(): string {
    return `bh_sp_${++this.#savepoints}`;
  }

  /** Runs `fn` holding the connection. */
  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    await this.lock.acquire();
    try {
      return await fn();
    } finally {
      this.lock.release();
    }
  }
}

/** One frame of a transaction: the outermost, or a savepoint. */
export class Frame {
  readonly state: TxState;
  readonly parent: Frame | undefined;
  ended = false;
  /** The nested frame opened on this one and still open. */
  child: Frame | undefined;

  constructor(state: TxState, parent: Frame | undefined) {
    this.state = state;
    this.parent = parent;
  }

  /** Whether `this` is `frame` or nested inside it. */
  within(frame: Frame): boolean {
    if (this === frame) return true;
    for (let f = this.parent; f !== undefined; f = f.parent) {
      if (f === frame) return true;
    }
    return false;
  }

  /** Refuses a frame that cannot run statements now. */
  assertLive(): void {
    if (this.ended || this.state.done) {
      throw new StaleTxError("Cannot use the transaction handle: its frame has already ended");
    }
    if (this.child !== undefined) {
      throw new StaleTxError(
        "Cannot use the transaction handle: a nested frame opened on it is still open; use that frame's handle",
      );
    }
  }
}

/** Runs hooks in order, awaiting each; a failing hook is reported and skipped. */
export async function runHooks(
  core: Core,
  hooks: readonly (() => void | Promise<void>)[],
): Promise<void> {
  for (const fn of hooks) {
    try {
      await fn();
    } catch (error) {
      core.report("beehive store: an afterCommit hook failed", error);
    }
  }
}

/** The session of a root store handle; a fenced handle checks its fence in every write. */
export class RootSession implements Session {
  readonly core: Core;
  readonly fence: Fence | undefined;

  constructor(core: Core, fence?: Fence) {
    this.core = core;
    this.fence = fence;
  }

  async read<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    const core = this.core;
    try {
      core.assertOpen();
    } catch (error) {
      throw core.translate(error);
    }
    core.enter();
    try {
      const client = await core.connect();
      let failed = false;
      try {
        return await fn(new Db(client, core.epoch));
      } catch (error) {
        failed = !isServerError(error);
        throw error;
      } finally {
        releaseClient(client, failed);
      }
    } catch (error) {
      throw core.translate(error);
    } finally {
      core.leave();
    }
  }

  async readSnapshot<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    const core = this.core;
    try {
      core.assertOpen();
    } catch (error) {
      throw core.translate(error);
    }
    core.enter();
    try {
      const client = await core.connect();
      const db = new Db(client, core.epoch);
      let failed = false;
      try {
        await db.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
        const result = await fn(db);
        await db.exec("COMMIT");
        return result;
      } catch (error) {
        failed = !await rollbackQuietly(db);
        throw error;
      } finally {
        releaseClient(client, failed);
      }
    } catch (error) {
      throw core.translate(error);
    } finally {
      core.leave();
    }
  }

  /** Queues the unit for the next group commit (see `_group_commit.ts`). */
  async write<T>(fn: (scope: WriteScope) => Promise<T>): Promise<T> {
    const core = this.core;
    try {
      core.assertOpen();
    } catch (error) {
      throw core.translate(error);
    }
    core.enter();
    try {
      return await commitInGroup(core, fn, this.fence);
    } finally {
      core.leave();
    }
  }
}

/** The session of one transaction frame's handle. */
export class TxSession implements Session {
  readonly core: Core;
  readonly frame: Frame;

  constructor(core: Core, frame: Frame) {
    this.core = core;
    this.frame = frame;
  }

  async read<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    const core = this.core;
    try {
      core.assertConnected();
      this.frame.assertLive();
      const state = this.frame.state;
      // Checked at the call, as a unit begins: the units already queued run before any
      // commit or rollback, which queue behind them.
      return await state.exclusive(() => fn(state.db));
    } catch (error) {
      throw core.translate(error);
    }
  }

  readSnapshot<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    return this.read(fn);
  }

  async write<T>(fn: (scope: WriteScope) => Promise<T>): Promise<T> {
    const core = this.core;
    try {
      core.assertConnected();
      this.frame.assertLive();
      const state = this.frame.state;
      return await state.exclusive(async () => {
        const db = state.db;
        // A fixed name is safe: units hold the connection, so they never interleave.
        await db.exec("SAVEPOINT bh_unit");
        const mark = state.draws.mark();
        try {
          const result = await fn(new Scope(db, state.draws));
          await db.exec("RELEASE bh_unit");
          return result;
        } catch (error) {
          // Versions drawn by a unit that unwound are returned: none was seen outside.
          state.draws.restore(mark);
          await db.exec("ROLLBACK TO bh_unit; RELEASE bh_unit");
          throw error;
        }
      });
    } catch (error) {
      throw core.translate(error);
    }
  }

  /** Registers a hook against this frame. */
  afterCommit(fn: () => void | Promise<void>): void {
    // A frame that unwound (itself or through an ancestor) has nothing left to commit.
    if (isUnwound(this.frame)) return;
    const state = this.frame.state;
    if (!state.done) {
      state.hooks.push({ frame: this.frame, fn });
      return;
    }
    if (state.committed) void runHooks(this.core, [fn]);
  }

  /** Opens a nested frame (a savepoint) and runs `fn` in it. */
  async nested<T>(fn: (session: TxSession) => Promise<T>): Promise<T> {
    const core = this.core;
    const parent = this.frame;
    const state = parent.state;
    try {
      core.assertConnected();
      if (parent.child !== undefined && !parent.ended && !state.done) {
        throw new ConcurrentNestedTxError(
          "Cannot open a nested transaction frame: a sibling frame on the same handle is still open",
        );
      }
      parent.assertLive();
    } catch (error) {
      throw core.translate(error);
    }
    const frame = new Frame(state, parent);
    const name = state.nextSavepoint();
    // Claimed before the savepoint's round trip, so a sibling opened meanwhile is refused.
    parent.child = frame;
    const draws = { next: state.draws.next, drawn: state.draws.drawn };
    // Queued, not awaited: fn starts at once, and its units queue behind the savepoint.
    let opened: unknown;
    const savepoint = state.exclusive(() => state.db.exec(`SAVEPOINT ${name}`)).then(
      () => true,
      (error) => {
        opened = error;
        return false;
      },
    );
    let result: T | undefined;
    let failure: unknown;
    let failed = false;
    try {
      result = await fn(new TxSession(core, frame));
      if (!await savepoint) throw core.translate(opened);
      if (frame.child !== undefined) {
        throw new ConcurrentNestedTxError(
          "Cannot commit the transaction frame: a frame nested in it is still open",
        );
      }
    } catch (error) {
      failed = true;
      failure = error;
    }
    if (state.done || isUnwound(frame)) {
      // An enclosing frame already ended and took this savepoint with it.
      markUnwound(frame);
      if (failed) throw failure;
      throw new StaleTxError(
        "Cannot commit the nested transaction frame: an enclosing frame ended while it was open",
      );
    }
    if (failed) {
      try {
        await unwind(frame, name);
        state.draws.next = draws.next;
        state.draws.drawn = draws.drawn;
      } catch (error) {
        core.report("beehive store: rolling back a savepoint failed", error);
      }
      throw failure;
    }
    frame.ended = true;
    parent.child = undefined;
    try {
      await state.exclusive(() => state.db.exec(`RELEASE ${name}`));
    } catch (error) {
      throw core.translate(error);
    }
    return result as T;
  }
}

/** Frames whose writes were rolled back; their handles' late hooks never run. */
const unwoundFrames = new WeakSet<Frame>();

function isUnwound(frame: Frame): boolean {
  for (let f: Frame | undefined = frame; f !== undefined; f = f.parent) {
    if (unwoundFrames.has(f)) return true;
  }
  return false;
}

async function unwind(frame: Frame, savepoint: string): Promise<void> {
  const state = frame.state;
  for (let i = state.hooks.length - 1; i >= 0; i--) {
    if (state.hooks[i].frame.within(frame)) state.hooks.splice(i, 1);
  }
  markUnwound(frame);
  frame.ended = true;
  if (frame.parent !== undefined && frame.parent.child === frame) frame.parent.child = undefined;
  if (!state.done) {
    await state.exclusive(() => state.db.exec(`ROLLBACK TO ${savepoint}; RELEASE ${savepoint}`));
  }
}

function markUnwound(frame: Frame): void {
  unwoundFrames.add(frame);
  for (let f = frame.child; f !== undefined; f = f.child) {
    unwoundFrames.add(f);
    f.ended = true;
  }
}

/**
 * Runs `fn` as an outermost transaction on one pooled connection, holding the
 * store's write lock: the counter lock and the fence first, commit when it
 * resolves, roll back when it rejects, then the hooks. When the writer is
 * busy, `fn` joins the next transaction group instead.
 */
export async function runOutermost<T>(
  core: Core,
  fn: (session: TxSession) => Promise<T>,
  fence?: Fence,
): Promise<T> {
  try {
    core.assertOpen();
  } catch (error) {
    throw core.translate(error);
  }
  core.enter();
  // Contended: join the next group of transactions sharing one commit.
  const group = txGroup(core);
  if (group.waiting || !core.writeLock.tryAcquire()) {
    try {
      return await group.join(fn, fence);
    } finally {
      core.leave();
    }
  }
  const unlock = () => {
    core.writeLock.release();
    core.leave();
  };
  let client: PgClient;
  let state: TxState;
  try {
    client = await core.connect();
  } catch (error) {
    unlock();
    throw error;
  }
  const db = new Db(client, core.epoch);
  try {
    core.assertOpen();
    state = new TxState(db, new Draws(await core.begin(db, fence)));
  } catch (error) {
    releaseClient(client, !await rollbackQuietly(db));
    unlock();
    throw core.translate(error);
  }
  const frame = new Frame(state, undefined);
  const finish = (failed: boolean) => {
    releaseClient(client, failed);
    unlock();
  };
  const abort = async () => {
    frame.ended = true;
    state.done = true;
    markUnwound(frame);
    // A unit still running holds the connection: the rollback waits for it.
    const ok = await state.exclusive(() => rollbackQuietly(db));
    finish(!ok);
  };
  let result: T;
  try {
    result = await fn(new TxSession(core, frame));
  } catch (error) {
    await abort();
    throw error;
  }
  try {
    if (frame.child !== undefined) {
      throw new ConcurrentNestedTxError(
        "Cannot commit the transaction: a nested frame is still open",
      );
    }
    frame.ended = true;
    state.done = true;
    await state.exclusive(() => core.commit(db, state.draws.drawn));
    state.committed = true;
  } catch (error) {
    await abort();
    throw core.translate(error);
  }
  finish(false);
  await runHooks(core, state.hooks.map((h) => h.fn));
  return result;
}

/** The most transactions one group commit takes; the rest form the next group. */
const MAX_TX_GROUP = 64;

interface TxMember {
  readonly fn: (session: TxSession) => Promise<unknown>;
  readonly fence: Fence | undefined;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

type TxOutcome =
  | { readonly ok: true; readonly value: unknown; readonly state: TxState }
  | { readonly ok: false; readonly error: unknown };

/**
 * Outermost transactions that found the writer busy, run one after another
 * inside one PostgreSQL transaction when it frees, each in its own savepoint
 * and drawing versions from the shared counter: one that rejects (or whose
 * fence is stale) unwinds alone, its draws returned, and every member
 * resolves — after its hooks — only once the shared commit is acknowledged.
 * A failing commit or a lost connection rejects them all. Members never
 * interleave: each `fn` runs to completion before the next starts, exactly as
 * under the lock.
 */
class TxGroup {
  readonly #core: Core;
  readonly #pending: TxMember[] = [];
  #scheduled = false;

  constructor(core: Core) {
    this.#core = core;
  }

  /** Whether transactions are queued for a group (a new one must queue behind them). */
  get waiting(): boolean {
    return this.#pending.length > 0;
  }

  join<T>(fn: (session: TxSession) => Promise<T>, fence: Fence | undefined): Promise<T> {
    const { promise, resolve, reject } = Promise.withResolvers<T>();
    this.#pending.push({ fn, fence, resolve: resolve as (value: unknown) => void, reject });
    this.#schedule();
    return promise;
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    void this.#run();
  }

  async #run(): Promise<void> {
    const core = this.#core;
    await core.writeLock.acquire();
    const members = this.#pending.splice(0, MAX_TX_GROUP);
    this.#scheduled = false;
    if (this.#pending.length > 0) this.#schedule();
    let client: PgClient;
    let draws: Draws;
    try {
      client = await core.connect();
    } catch (error) {
      core.writeLock.release();
      const failure = core.translate(error);
      for (const m of members) m.reject(failure);
      return;
    }
    const db = new Db(client, core.epoch);
    try {
      draws = new Draws(await core.begin(db, undefined));
    } catch (error) {
      releaseClient(client, !await rollbackQuietly(db));
      core.writeLock.release();
      const failure = core.translate(error);
      for (const m of members) m.reject(failure);
      return;
    }
    const outcomes: TxOutcome[] = [];
    try {
      const savepoint = new MemberSavepoint(db, "bh_tx_member");
      for (const m of members) outcomes.push(await this.#member(savepoint, db, draws, m));
      await core.commit(db, draws.drawn);
    } catch (error) {
      // The shared transaction is lost: nothing any member wrote committed.
      releaseClient(client, !await rollbackQuietly(db));
      core.writeLock.release();
      const failure = core.translate(error);
      members.forEach((m, i) => {
        const o = outcomes[i];
        m.reject(o !== undefined && !o.ok ? o.error : failure);
      });
      return;
    }
    for (const o of outcomes) if (o.ok) o.state.committed = true;
    releaseClient(client);
    core.writeLock.release();
    for (let i = 0; i < members.length; i++) {
      const o = outcomes[i];
      if (!o.ok) {
        members[i].reject(o.error);
        continue;
      }
      await runHooks(core, o.state.hooks.map((h) => h.fn));
      members[i].resolve(o.value);
    }
  }

  /** Runs one member in its own savepoint; throws only when the shared transaction broke. */
  async #member(
    savepoint: MemberSavepoint,
    db: Db,
    draws: Draws,
    m: TxMember,
  ): Promise<TxOutcome> {
    const core = this.#core;
    const state = new TxState(db, draws);
    const frame = new Frame(state, undefined);
    await savepoint.open();
    const mark = draws.mark();
    const unwind = async (error: unknown): Promise<TxOutcome> => {
      frame.ended = true;
      state.done = true;
      markUnwound(frame);
      draws.restore(mark);
      // A unit still running holds the connection: the rollback waits for it.
      await state.exclusive(() => savepoint.rollback());
      return { ok: false, error };
    };
    try {
      if (m.fence !== undefined) await core.checkFence(db, m.fence);
    } catch (error) {
      return await unwind(core.translate(error));
    }
    let value: unknown;
    try {
      value = await m.fn(new TxSession(core, frame));
    } catch (error) {
      // fn's own rejection reaches the caller as it was thrown.
      return await unwind(error);
    }
    if (frame.child !== undefined) {
      return await unwind(
        new ConcurrentNestedTxError("Cannot commit the transaction: a nested frame is still open"),
      );
    }
    frame.ended = true;
    state.done = true;
    // Units it left running finish before the next member starts.
    await state.exclusive(() => Promise.resolve());
    return { ok: true, value, state };
  }
}

const txGroups = new WeakMap<Core, TxGroup>();

function txGroup(core: Core): TxGroup {
  let group = txGroups.get(core);
  if (group === undefined) txGroups.set(core, group = new TxGroup(core));
  return group;
}
