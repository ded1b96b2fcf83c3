/**
 * Sessions route a family's statements: the root session reads on the reader
 * connection and wraps each write in its own `BEGIN IMMEDIATE` under the
 * writer lock; a transaction session runs everything on the writer inside the
 * open transaction, with a savepoint around each write so a failing mutator
 * leaves nothing behind.
 *
 * @module
 */
import { ConcurrentNestedTxError, StaleTxError } from "../../src/errors.ts";
import type { Fence } from "../../src/store.ts";
import type { Core, Db } from "./_core.ts";
import { commitInGroup, rollbackQuietly } from "./_group_commit.ts";
import { Scope, type WriteScope } from "./_write_scope.ts";

export type { WriteScope };

/** How a family reaches the database. */
export interface Session {
  readonly core: Core;
  /** Runs synchronous reads on the right connection. */
  read<T>(fn: (db: Db) => T): Promise<T>;
  /** Runs synchronous reads that must see one snapshot. */
  readSnapshot<T>(fn: (db: Db) => T): Promise<T>;
  /** Runs a synchronous write unit atomically. */
  write<T>(fn: (scope: WriteScope) => T): Promise<T>;
}

/** A registered afterCommit hook and the frame that owns it. */
interface Hook {
  readonly frame: Frame;
  readonly fn: () => void | Promise<void>;
}

/** One outermost transaction's shared state. */
export class TxState {
  drawn = 0;
  readonly hooks: Hook[] = [];
  done = false;
  committed = false;
  #savepoints = 0;

  nextSavepoint(): string {
    return `bh_sp_${++this.#savepoints}`;
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
      throw new StaleTxError(
        "Cannot use the transaction handle: its frame has already ended",
      );
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

  read<T>(fn: (db: Db) => T): Promise<T> {
    try {
      this.core.assertOpen();
      return Promise.resolve(fn(this.core.reader));
    } catch (error) {
      return Promise.reject(this.core.translate(error));
    }
  }

  readSnapshot<T>(fn: (db: Db) => T): Promise<T> {
    try {
      this.core.assertOpen();
      const db = this.core.reader;
      db.exec("BEGIN");
      try {
        return Promise.resolve(fn(db));
      } finally {
        db.exec("COMMIT");
      }
    } catch (error) {
      return Promise.reject(this.core.translate(error));
    }
  }

  /** Queues the unit for the next group commit (see `_group_commit.ts`). */
  write<T>(fn: (scope: WriteScope) => T): Promise<T> {
    try {
      this.core.assertOpen();
    } catch (error) {
      return Promise.reject(this.core.translate(error));
    }
    return commitInGroup(this.core, fn, this.fence);
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

  read<T>(fn: (db: Db) => T): Promise<T> {
    try {
      this.core.assertConnected();
      this.frame.assertLive();
      return Promise.resolve(fn(this.core.writer));
    } catch (error) {
      return Promise.reject(this.core.translate(error));
    }
  }

  readSnapshot<T>(fn: (db: Db) => T): Promise<T> {
    return this.read(fn);
  }

  write<T>(fn: (scope: WriteScope) => T): Promise<T> {
    const core = this.core;
    try {
      core.assertConnected();
      this.frame.assertLive();
      const db = core.writer;
      // A fixed name is safe: the unit is synchronous, so units never interleave.
      db.exec("SAVEPOINT bh_unit");
      try {
        const scope = new Scope(core);
        const result = fn(scope);
        db.exec("RELEASE bh_unit");
        const state = this.frame.state;
        if (scope.drawn > state.drawn) state.drawn = scope.drawn;
        return Promise.resolve(result);
      } catch (error) {
        db.exec("ROLLBACK TO bh_unit");
        db.exec("RELEASE bh_unit");
        throw error;
      }
    } catch (error) {
      return Promise.reject(core.translate(error));
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
    // After the transaction ended: run now if it committed.
    if (state.committed) void runHooks(this.core, [fn]);
  }

  /** Opens a nested frame (a savepoint) and runs `fn` in it. */
  async nested<T>(fn: (session: TxSession) => Promise<T>): Promise<T> {
    const core = this.core;
    const parent = this.frame;
    try {
      core.assertConnected();
      if (parent.child !== undefined && !parent.ended && !parent.state.done) {
        throw new ConcurrentNestedTxError(
          "Cannot open a nested transaction frame: a sibling frame on the same handle is still open",
        );
      }
      parent.assertLive();
    } catch (error) {
      throw core.translate(error);
    }
    const frame = new Frame(parent.state, parent);
    const state = parent.state;
    const name = state.nextSavepoint();
    try {
      core.writer.exec(`SAVEPOINT ${name}`);
    } catch (error) {
      throw core.translate(error);
    }
    parent.child = frame;
    let result: T | undefined;
    let failure: unknown;
    let failed = false;
    try {
      result = await fn(new TxSession(core, frame));
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
      // An enclosing frame already ended and took this savepoint with it: nothing is ours to touch.
      markUnwound(frame);
      if (failed) throw failure;
      throw new StaleTxError(
        "Cannot commit the nested transaction frame: an enclosing frame ended while it was open",
      );
    }
    if (failed) {
      try {
        unwind(core, frame, name);
      } catch (error) {
        core.report("beehive store: rolling back a savepoint failed", error);
      }
      // fn's own rejection reaches the caller as it was thrown.
      throw failure;
    }
    frame.ended = true;
    parent.child = undefined;
    try {
      core.writer.exec(`RELEASE ${name}`);
    } catch (error) {
      throw core.translate(error);
    }
    return result as T;
  }
}

/** Frames whose writes were rolled back; their handles' late hooks never run. */
const unwoundFrames = new WeakSet<Frame>();

/** Whether `frame` or a frame enclosing it was rolled back. */
function isUnwound(frame: Frame): boolean {
  for (let f: Frame | undefined = frame; f !== undefined; f = f.parent) {
    if (unwoundFrames.has(f)) return true;
  }
  return false;
}

function unwind(core: Core, frame: Frame, savepoint: string): void {
  const state = frame.state;
  for (let i = state.hooks.length - 1; i >= 0; i--) {
    if (state.hooks[i].frame.within(frame)) state.hooks.splice(i, 1);
  }
  markUnwound(frame);
  frame.ended = true;
  if (frame.parent !== undefined && frame.parent.child === frame) frame.parent.child = undefined;
  if (!state.done) {
    core.writer.exec(`ROLLBACK TO ${savepoint}`);
    core.writer.exec(`RELEASE ${savepoint}`);
  }
}

function markUnwound(frame: Frame): void {
  unwoundFrames.add(frame);
  let f = frame.child;
  while (f !== undefined) {
    unwoundFrames.add(f);
    f.ended = true;
    f = f.child;
  }
}

/**
 * Runs `fn` as an outermost transaction: `BEGIN IMMEDIATE` under the writer
 * lock, commit when it resolves, roll back when it rejects, then the hooks.
 * When the writer is busy, `fn` joins the next transaction group instead.
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
  // Contended: join the next group of transactions sharing one commit.
  const group = txGroup(core);
  if (group.waiting || !core.lock.tryAcquire()) return group.join(fn, fence);
  const state = new TxState();
  const frame = new Frame(state, undefined);
  let result: T;
  try {
    core.assertOpen();
    core.writer.exec("BEGIN IMMEDIATE");
    try {
      core.beginVersions();
      core.checkFence(fence);
    } catch (error) {
      rollbackQuietly(core);
      throw error;
    }
  } catch (error) {
    core.lock.release();
    throw core.translate(error);
  }
  const abort = () => {
    frame.ended = true;
    state.done = true;
    markUnwound(frame);
    rollbackQuietly(core);
    core.lock.release();
  };
  try {
    result = await fn(new TxSession(core, frame));
  } catch (error) {
    abort();
    // fn's own rejection reaches the caller as it was thrown.
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
    core.publish(state.drawn);
    core.writer.exec("COMMIT");
    state.committed = true;
  } catch (error) {
    abort();
    throw core.translate(error);
  }
  core.lock.release();
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
 * inside one SQLite transaction when it frees, each in its own savepoint: one
 * that rejects (or whose fence is stale) unwinds alone, and every member
 * resolves — after its hooks — only once the shared commit is durable. A
 * failing commit rejects them all. Members never interleave: each `fn` runs
 * to completion before the next starts, exactly as under the lock.
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
    await core.lock.acquire();
    const members = this.#pending.splice(0, MAX_TX_GROUP);
    this.#scheduled = false;
    if (this.#pending.length > 0) this.#schedule();
    const outcomes: TxOutcome[] = [];
    try {
      core.assertOpen();
      core.writer.exec("BEGIN IMMEDIATE");
    } catch (error) {
      core.lock.release();
      const failure = core.translate(error);
      for (const m of members) m.reject(failure);
      return;
    }
    let drawn = 0;
    try {
      core.beginVersions();
      for (const m of members) {
        const outcome = await this.#member(m);
        outcomes.push(outcome);
        if (outcome.ok && outcome.state.drawn > drawn) drawn = outcome.state.drawn;
      }
      core.publish(drawn);
      core.writer.exec("COMMIT");
    } catch (error) {
      // The shared transaction is lost: nothing any member wrote committed.
      rollbackQuietly(core);
      core.lock.release();
      const failure = core.translate(error);
      members.forEach((m, i) => {
        const o = outcomes[i];
        m.reject(o !== undefined && !o.ok ? o.error : failure);
      });
      return;
    }
    for (const o of outcomes) if (o.ok) o.state.committed = true;
    core.lock.release();
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
  async #member(m: TxMember): Promise<TxOutcome> {
    const core = this.#core;
    const state = new TxState();
    const frame = new Frame(state, undefined);
    const db = core.writer;
    db.exec("SAVEPOINT bh_tx_member");
    const unwind = (error: unknown): TxOutcome => {
      frame.ended = true;
      state.done = true;
      markUnwound(frame);
      db.exec("ROLLBACK TO bh_tx_member");
      db.exec("RELEASE bh_tx_member");
      return { ok: false, error };
    };
    try {
      core.checkFence(m.fence);
    } catch (error) {
      return unwind(core.translate(error));
    }
    let value: unknown;
    try {
      value = await m.fn(new TxSession(core, frame));
    } catch (error) {
      // fn's own rejection reaches the caller as it was thrown.
      return unwind(error);
    }
    if (frame.child !== undefined) {
      return unwind(
        new ConcurrentNestedTxError("Cannot commit the transaction: a nested frame is still open"),
      );
    }
    frame.ended = true;
    state.done = true;
    db.exec("RELEASE bh_tx_member");
    return { ok: true, value, state };
  }
}

const txGroups = new WeakMap<Core, TxGroup>();

function txGroup(core: Core): TxGroup {
  let group = txGroups.get(core);
  if (group === undefined) txGroups.set(core, group = new TxGroup(core));
  return group;
}
