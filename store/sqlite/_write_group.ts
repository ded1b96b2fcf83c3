/**
 * The write group: every outermost write of one open store — a single-call
 * write and a `within` transaction alike — queues here, and the writes
 * waiting when the writer next frees share one `BEGIN IMMEDIATE … COMMIT`.
 *
 * A group starts one event-loop turn after its first member queued (a
 * `setImmediate` taken when this module loads, so a fake clock installed
 * later changes nothing): by then every caller and every pass that was
 * already running has reached its next write, so a lone caller's create, a
 * pass's status write and the previous pass's settle handshake commit
 * together instead of one after another. Members run in the order they
 * queued, one at a time; with more than one, each runs in its own savepoint,
 * so one that throws is rolled back alone and rejects alone. Every member
 * resolves only once the shared commit is durable (a transaction after its
 * `afterCommit` hooks, in member order); a failing commit rejects them all.
 * A fenced member's fence is checked inside its savepoint.
 *
 * @module
 */
import type { Fence } from "../../src/store.ts";
import type { Core } from "./_core.ts";

/** The most members one commit takes; the rest form the next group. */
export const MAX_GROUP = 256;

/**
 * How many promise-reaction turns a group waits after its first member
 * queued: enough for a caller resumed by the last commit, a pass that just
 * returned and the pass after it to reach their next writes and join. No
 * timer is involved, so a fake clock changes nothing.
 */
export const GROUP_TURNS = 16;

/** Calls `fn` after `turns` promise-reaction turns (a promise reaction cannot be faked). */
function afterTurns(turns: number, fn: () => void): void {
  const hop = () => {
    if (--turns <= 0) fn();
    else void Promise.resolve().then(hop);
  };
  void Promise.resolve().then(hop);
}

/** One queued write. */
export interface Member {
  readonly fence: Fence | undefined;
  /**
   * Runs the member's writes inside the open transaction and returns the
   * highest version it drew (0 for none). A throw (or rejection) unwinds the
   * member alone and is what it rejects with.
   */
  run(): number | Promise<number>;
  /** The shared commit is durable: finish (hooks) and resolve. */
  committed(): void | Promise<void>;
  /** Rejects the member: it was refused, or nothing committed. */
  failed(error: unknown): void;
}

/** Rolls the writer's transaction back, ignoring a transaction SQLite already ended. */
export function rollbackQuietly(core: Core): void {
  core.journal.aborted();
  try {
    core.writer.exec("ROLLBACK");
  } catch {
    // SQLite already rolled back (e.g. SQLITE_FULL); nothing is left to undo.
  }
}

/** A member's failure; undefined for a member whose writes stand. */
type Failure = { readonly error: unknown } | undefined;

/** Checks a member's fence inside the transaction, as a store error. */
function checkFence(core: Core, m: Member): void {
  try {
    core.checkFence(m.fence);
  } catch (error) {
    throw core.translate(error);
  }
}

class WriteGroup {
  readonly #core: Core;
  readonly #pending: Member[] = [];
  #scheduled = false;

  constructor(core: Core) {
    this.#core = core;
  }

  submit(member: Member): void {
    this.#pending.push(member);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    afterTurns(GROUP_TURNS, () => void this.#run());
  }

  async #run(): Promise<void> {
    const core = this.#core;
    if (!core.lock.tryAcquire()) await core.lock.acquire();
    // Everything queued by the time the writer is ours goes in this group.
    const group = this.#pending.splice(0, MAX_GROUP);
    this.#scheduled = false;
    if (this.#pending.length > 0) this.#schedule();
    if (group.length === 0) {
      core.lock.release();
      return;
    }
    const failures = group.length === 1 ? await this.#alone(group[0]) : await this.#together(group);
    core.lock.release();
    if (failures === undefined) return;
    for (let i = 0; i < group.length; i++) {
      const failure = failures[i];
      if (failure === undefined) await group[i].committed();
      else group[i].failed(failure.error);
    }
  }

  /** Opens the shared transaction; on failure rejects `group` and returns false. */
  #begin(group: readonly Member[]): boolean {
    const core = this.#core;
    try {
      // A write queued behind a close is refused; the transaction in flight has finished.
      core.assertOpen();
      core.writer.exec("BEGIN IMMEDIATE");
      try {
        core.beginVersions();
      } catch (error) {
        rollbackQuietly(core);
        throw error;
      }
      return true;
    } catch (error) {
      const failure = core.translate(error);
      for (const m of group) m.failed(failure);
      return false;
    }
  }

  /** A group of one: the transaction is the member's, and a throw rolls it all back. */
  async #alone(m: Member): Promise<Failure[] | undefined> {
    const core = this.#core;
    if (!this.#begin([m])) return undefined;
    let drawn: number;
    try {
      checkFence(core, m);
      const ran = m.run();
      drawn = typeof ran === "number" ? ran : await ran;
    } catch (error) {
      rollbackQuietly(core);
      m.failed(error);
      return undefined;
    }
    try {
      core.publish(drawn);
      core.writer.exec("COMMIT");
    } catch (error) {
      rollbackQuietly(core);
      m.failed(core.translate(error));
      return undefined;
    }
    core.committed(drawn);
    core.checkpointer?.committed();
    return [undefined];
  }

  /** Several members, each in its own savepoint; returns each one's failure (undefined: none). */
  async #together(group: readonly Member[]): Promise<Failure[] | undefined> {
    const core = this.#core;
    if (!this.#begin(group)) return undefined;
    const db = core.writer;
    const failures: Failure[] = [];
    let drawn = 0;
    try {
      for (const m of group) {
        // A fixed name is safe: members run one after another.
        db.exec("SAVEPOINT bh_member");
        const mark = core.journal.mark();
        let failure: Failure;
        try {
          checkFence(core, m);
          const ran = m.run();
          const d = typeof ran === "number" ? ran : await ran;
          if (d > drawn) drawn = d;
        } catch (error) {
          failure = { error };
        }
        // A failing rollback loses the whole group (below).
        if (failure === undefined) db.exec("RELEASE bh_member");
        else core.rollbackToSavepoint("bh_member", mark);
        failures.push(failure);
      }
      core.publish(drawn);
      db.exec("COMMIT");
    } catch (error) {
      // The shared transaction is lost: nothing any member wrote committed.
      rollbackQuietly(core);
      const failure = core.translate(error);
      group.forEach((m, i) => m.failed(failures[i] !== undefined ? failures[i].error : failure));
      return undefined;
    }
    core.committed(drawn);
    core.checkpointer?.committed();
    return failures;
  }
}

const groups = new WeakMap<Core, WriteGroup>();

function groupOf(core: Core): WriteGroup {
  let group = groups.get(core);
  if (group === undefined) groups.set(core, group = new WriteGroup(core));
  return group;
}

/** Queues `member` for the next group commit of `core`. */
export function submitWrite(core: Core, member: Member): void {
  groupOf(core).submit(member);
}
