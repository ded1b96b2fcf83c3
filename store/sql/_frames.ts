/**
 * Transaction frames, which both SQL stores share: the outermost frame and
 * the savepoints nested in it, the rules for which handle may run statements,
 * the `afterCommit` hooks each frame registers, and the unwinding that drops
 * a rolled-back frame's hooks and stales its handles.
 *
 * @module
 */
import { StaleTxError } from "../../src/errors.ts";

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
  /** Where the dialect's undo log (SQLite's commit journal) stood when this frame's savepoint opened. */
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
