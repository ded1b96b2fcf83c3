/**
 * Transaction frames, which both SQL stores share: the outermost frame and
 * the savepoints nested in it, the rules for which handle may run statements,
 * the `afterCommit` hooks each frame registers, and the unwinding that drops
 * a rolled-back frame's hooks and stales its handles.
 *
 * @module
 */
import {
  type BeehiveError,
  ConcurrentNestedTxError,
  StaleTxError,
} from "../../src/model/errors.ts";
import type { Fence } from "../../src/store.ts";
import type { Member } from "./_write_group.ts";

/** A registered afterCommit hook and the frame that owns it. */
export interface Hook {
  readonly frame: Frame;
  readonly fn: () => void | Promise<void>;
}

/** One outermost transaction's shared state; a dialect adds what its units need. */
export class TxState {
  readonly hooks: Hook[] = [];
  done = false;
  committed = false;
  #savepoints = 0;

  /** A fresh savepoint name for a nested frame. */
  nextSavepoint(): string {
    return `bh_sp_${++this.#savepoints}`;
  }
}

/** One frame of a transaction: the outermost, or a savepoint. */
export class Frame<S extends TxState = TxState> {
  readonly state: S;
  readonly parent: Frame<S> | undefined;
  ended = false;
  /** The nested frame opened on this one and still open. */
  child: Frame<S> | undefined;
  /** Where the commit journal (`_journal.ts`) stood when this frame's savepoint opened. */
  mark = 0;

  constructor(state: S, parent: Frame<S> | undefined) {
    this.state = state;
    this.parent = parent;
  }

  /** Whether `this` is `frame` or nested inside it. */
  within(frame: Frame<S>): boolean {
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

/** Where a failure with no caller to reject is reported: the store's core. */
export interface Reporter {
  report(message: string, error: unknown): void;
}

/** Runs hooks in order, awaiting each; a failing hook is reported and skipped. */
export async function runHooks(
  reporter: Reporter,
  hooks: readonly (() => void | Promise<void>)[],
): Promise<void> {
  for (const fn of hooks) {
    try {
      await fn();
    } catch (error) {
      reporter.report("beehive store: an afterCommit hook failed", error);
    }
  }
}

/** Registers `fn` against `frame`: it runs after the outermost commit, unless the frame unwinds. */
export function afterCommit(
  frame: Frame,
  fn: () => void | Promise<void>,
  reporter: Reporter,
): void {
  // A frame that unwound (itself or through an ancestor) has nothing left to commit.
  if (isUnwound(frame)) return;
  const state = frame.state;
  if (!state.done) {
    state.hooks.push({ frame, fn });
    return;
  }
  // After the transaction ended: run now if it committed.
  if (state.committed) void runHooks(reporter, [fn]);
}

/** Frames whose writes were rolled back; their handles' late hooks never run. */
const unwoundFrames = new WeakSet<Frame<TxState>>();

/** Whether `frame` or a frame enclosing it was rolled back. */
export function isUnwound<S extends TxState>(frame: Frame<S>): boolean {
  for (let f: Frame<S> | undefined = frame; f !== undefined; f = f.parent) {
    if (unwoundFrames.has(f)) return true;
  }
  return false;
}

/** Marks `frame` and the frames nested in it rolled back. */
export function markUnwound<S extends TxState>(frame: Frame<S>): void {
  unwoundFrames.add(frame);
  for (let f = frame.child; f !== undefined; f = f.child) {
    unwoundFrames.add(f);
    f.ended = true;
  }
}

/**
 * Ends a nested frame that failed: drops its hooks (and its children's),
 * marks it rolled back and detaches it from its parent. Returns whether the
 * transaction is still open, so the dialect should roll back to its savepoint.
 */
export function unwindFrame<S extends TxState>(frame: Frame<S>): boolean {
  const state = frame.state;
  for (let i = state.hooks.length - 1; i >= 0; i--) {
    if (state.hooks[i].frame.within(frame as Frame)) state.hooks.splice(i, 1);
  }
  markUnwound(frame);
  frame.ended = true;
  if (frame.parent !== undefined && frame.parent.child === frame) frame.parent.child = undefined;
  return !state.done;
}

/** How a dialect sets, rolls back and releases the savepoint of a nested frame. */
export interface SavepointSteps<S extends TxState> {
  /**
   * Sets savepoint `name` for `frame`. A synchronous dialect sets it at once
   * (a throw refuses the frame); an asynchronous one queues it ahead of the
   * frame's units and returns a promise of the error it failed with
   * (undefined: set), checked before the frame commits.
   */
  open(frame: Frame<S>, name: string): Promise<unknown> | void;
  /** Rolls the open transaction back to savepoint `name` and releases it. */
  rollback(frame: Frame<S>, name: string): void | Promise<void>;
  /** Releases savepoint `name`: the frame's writes join its parent's. */
  release(frame: Frame<S>, name: string): void | Promise<void>;
}

/** The store a nested frame reports to: its connection check, error translation and reporting. */
export interface FrameHost extends Reporter {
  assertConnected(): void;
  translate(error: unknown): BeehiveError;
}

/**
 * Opens a frame nested in `parent` (a savepoint) and runs `fn` in it: the
 * frame commits into its parent when `fn` resolves and rolls back alone when
 * it rejects (with `fn`'s own error). A frame still open inside it, or an
 * enclosing frame that ended meanwhile, fails the commit.
 */
export async function runNested<S extends TxState, T>(
  host: FrameHost,
  parent: Frame<S>,
  steps: SavepointSteps<S>,
  fn: (frame: Frame<S>) => Promise<T>,
): Promise<T> {
  const state = parent.state;
  try {
    host.assertConnected();
    if (parent.child !== undefined && !parent.ended && !state.done) {
      throw new ConcurrentNestedTxError(
        "Cannot open a nested transaction frame: a sibling frame on the same handle is still open",
      );
    }
    parent.assertLive();
  } catch (error) {
    throw host.translate(error);
  }
  const frame = new Frame(state, parent);
  const name = state.nextSavepoint();
  let opening: Promise<unknown> | void;
  try {
    opening = steps.open(frame, name);
  } catch (error) {
    throw host.translate(error);
  }
  // Claimed before any round trip, so a sibling opened meanwhile is refused.
  parent.child = frame;
  let result: T | undefined;
  let failure: unknown;
  let failed = false;
  try {
    result = await fn(frame);
    if (opening !== undefined) {
      const refused = await opening;
      if (refused !== undefined) throw host.translate(refused);
    }
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
      if (unwindFrame(frame)) await steps.rollback(frame, name);
    } catch (error) {
      host.report("beehive store: rolling back a savepoint failed", error);
    }
    // fn's own rejection reaches the caller as it was thrown.
    throw failure;
  }
  frame.ended = true;
  parent.child = undefined;
  try {
    await steps.release(frame, name);
  } catch (error) {
    throw host.translate(error);
  }
  return result as T;
}

/** What a dialect supplies to run one outermost transaction as a write-group member. */
export interface OutermostSteps<Tx, S extends TxState, T> {
  /** The transaction's state, made when its turn in the group comes. */
  begin(tx: Tx): S;
  /** Runs the caller's function on the outermost frame. */
  run(frame: Frame<S>): Promise<T>;
  /** Waits for units the function left running on the connection; none where units are synchronous. */
  settle?(state: S): Promise<void>;
  /** The highest version the transaction drew. */
  drawn(tx: Tx, state: S): number;
  /** The transaction is admitted, before it queues (PostgreSQL's work count). */
  admitted?(): void;
  /** The transaction is over, committed or not, before its hooks run (PostgreSQL's work count). */
  over?(): void;
}

/** The open an outermost transaction runs on: it reports failing hooks and may refuse new work. */
export interface OutermostHost extends Reporter {
  /** A rejection once the open takes no new work; undefined while it does. */
  refusal(): Promise<never> | undefined;
}

/** A dialect's way to run `fn` as an outermost transaction of the open `core`. */
export type RunOutermost<C, S> = <T>(
  core: C,
  fn: (session: S) => Promise<T>,
  fence?: Fence,
) => Promise<T>;

/**
 * Runs an outermost transaction as a member of the dialect's write group
 * (`submit` queues it): refused at once when the open takes no new work; it
 * commits when its function resolves and rolls back (alone) when it rejects,
 * and resolves after the commit and its hooks.
 */
export function submitOutermost<Tx, S extends TxState, T>(
  host: OutermostHost,
  fence: Fence | undefined,
  steps: OutermostSteps<Tx, S, T>,
  submit: (member: Member<Tx>) => void,
): Promise<T> {
  const refused = host.refusal();
  if (refused !== undefined) return refused;
  steps.admitted?.();
  const { member, promise } = outermostMember(host, fence, steps);
  submit(member);
  return promise;
}

/**
 * The write-group member (`_write_group.ts`) that runs one outermost
 * transaction: its function runs when the group reaches it; it resolves after
 * the shared commit and its hooks, and rejects with the function's own error
 * (the frame unwound, alone) or with the group's.
 */
function outermostMember<Tx, S extends TxState, T>(
  reporter: Reporter,
  fence: Fence | undefined,
  steps: OutermostSteps<Tx, S, T>,
): { member: Member<Tx>; promise: Promise<T> } {
  const { promise, resolve, reject } = Promise.withResolvers<T>();
  let state: S | undefined;
  let frame: Frame<S>;
  let value: T;
  const unwound = () => {
    frame.ended = true;
    state!.done = true;
    markUnwound(frame);
  };
  const member: Member<Tx> = {
    fence,
    transaction: true,
    async run(tx) {
      const s = state = steps.begin(tx);
      frame = new Frame(s, undefined);
      let failed = false;
      let failure: unknown;
      try {
        value = await steps.run(frame);
        if (frame.child !== undefined) {
          throw new ConcurrentNestedTxError(
            "Cannot commit the transaction: a nested frame is still open",
          );
        }
      } catch (error) {
        failed = true;
        // fn's own rejection reaches the caller as it was thrown.
        failure = error;
      }
      if (failed) unwound();
      else {
        frame.ended = true;
        s.done = true;
      }
      // Units left running finish before the rollback or the next member.
      if (steps.settle !== undefined) await steps.settle(s);
      if (failed) throw failure;
      return steps.drawn(tx, s);
    },
    async committed() {
      state!.committed = true;
      steps.over?.();
      await runHooks(reporter, state!.hooks.map((h) => h.fn));
      resolve(value);
    },
    failed(error) {
      // A member that ran to its end lost its writes with the group's commit.
      if (state !== undefined) {
        if (!state.done) unwound();
        else markUnwound(frame);
      }
      steps.over?.();
      reject(error);
    },
  };
  return { member, promise };
}

/** What a transaction frame's session shares across stores: its frame, its hooks and its nesting. */
export abstract class FrameSession<C extends FrameHost, S extends TxState, Self> {
  readonly core: C;
  readonly frame: Frame<S>;

  constructor(core: C, frame: Frame<S>) {
    this.core = core;
    this.frame = frame;
  }

  /** Registers a hook against this frame. */
  afterCommit(fn: () => void | Promise<void>): void {
    afterCommit(this.frame, fn, this.core);
  }

  /** Opens a nested frame (a savepoint) and runs `fn` in it. */
  nested<T>(fn: (session: Self) => Promise<T>): Promise<T> {
    return runNested(this.core, this.frame, this.savepoints(), (frame) => fn(this.on(frame)));
  }

  /** The dialect's savepoint steps. */
  protected abstract savepoints(): SavepointSteps<S>;

  /** A session of the same kind on `frame`. */
  protected abstract on(frame: Frame<S>): Self;
}

/** What a root handle's session shares across stores: its store and the fence its writes carry. */
export abstract class RootSessionBase<C> {
  readonly core: C;
  /** Checked inside every write transaction of a fenced handle. */
  readonly fence: Fence | undefined;

  constructor(core: C, fence?: Fence) {
    this.core = core;
    this.fence = fence;
  }
}
