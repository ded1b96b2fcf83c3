/**
 * Group commit: the single-call writes of one store that are waiting at the
 * same moment share one `BEGIN IMMEDIATE … COMMIT`. A unit queued while the
 * writer is free runs after the current microtasks (no timer, so fake time
 * changes nothing); units queued while a transaction or a group holds the
 * writer join the next group. Each member runs in its own savepoint, so one
 * that throws is rolled back alone and rejects alone; every member resolves
 * only once the group's commit is durable, and a failing commit rejects them
 * all. A fenced member's fence is checked inside its savepoint.
 *
 * @module
 */
import type { Fence } from "../../src/store.ts";
import type { Core } from "./_core.ts";
import { Scope, type WriteScope } from "./_write_scope.ts";

/** The most members one commit takes; the rest form the next group. */
export const MAX_GROUP = 256;

interface Member {
  readonly fn: (scope: WriteScope) => unknown;
  readonly fence: Fence | undefined;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/** Rolls the writer's transaction back, ignoring a transaction SQLite already ended. */
export function rollbackQuietly(core: Core): void {
  try {
    core.writer.exec("ROLLBACK");
  } catch {
    // SQLite already rolled back (e.g. SQLITE_FULL); nothing is left to undo.
  }
}

class GroupCommit {
  readonly #core: Core;
  readonly #pending: Member[] = [];
  #scheduled = false;

  constructor(core: Core) {
    this.#core = core;
  }

  submit<T>(fn: (scope: WriteScope) => T, fence: Fence | undefined): Promise<T> {
    const { promise, resolve, reject } = Promise.withResolvers<T>();
    this.#pending.push({ fn, fence, resolve: resolve as (value: unknown) => void, reject });
    this.#schedule();
    return promise;
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    // After the microtasks already queued: callers resumed by the last commit submit first.
    queueMicrotask(() => void this.#flush());
  }

  async #flush(): Promise<void> {
    const core = this.#core;
    if (!core.lock.tryAcquire()) await core.lock.acquire();
    // Everything queued by the time the writer is ours goes in this group.
    const group = this.#pending.splice(0, MAX_GROUP);
    this.#scheduled = false;
    if (this.#pending.length > 0) this.#schedule();
    const results: unknown[] = [];
    const failures: (unknown | undefined)[] = [];
    try {
      core.assertOpen();
      const db = core.writer;
      db.exec("BEGIN IMMEDIATE");
      try {
        core.beginVersions();
        let drawn = 0;
        if (group.length === 1) {
          // Alone: the transaction is the member's; a throw rolls it all back.
          core.checkFence(group[0].fence);
          const scope = new Scope(core);
          results.push(group[0].fn(scope));
          drawn = scope.drawn;
        } else {
          for (const m of group) {
            // A fixed name is safe: members run one after another, synchronously.
            db.exec("SAVEPOINT bh_member");
            try {
              core.checkFence(m.fence);
              const scope = new Scope(core);
              results.push(m.fn(scope));
              failures.push(undefined);
              db.exec("RELEASE bh_member");
              if (scope.drawn > drawn) drawn = scope.drawn;
            } catch (error) {
              db.exec("ROLLBACK TO bh_member");
              db.exec("RELEASE bh_member");
              results.push(undefined);
              failures.push(core.translate(error));
            }
          }
        }
        core.publish(drawn);
        db.exec("COMMIT");
      } catch (error) {
        rollbackQuietly(core);
        throw error;
      }
    } catch (error) {
      // Nothing committed: every member rejects, with its own error where it had one.
      const failure = core.translate(error);
      group.forEach((m, i) => m.reject(failures[i] ?? failure));
      return;
    } finally {
      core.lock.release();
    }
    group.forEach((m, i) => {
      if (failures[i] === undefined) m.resolve(results[i]);
      else m.reject(failures[i]);
    });
  }
}

const groups = new WeakMap<Core, GroupCommit>();

/**
 * Runs a synchronous write unit in the next group commit of `core`, checked
 * against `fence`; resolves to what the unit returned, once committed.
 */
export function commitInGroup<T>(
  core: Core,
  fn: (scope: WriteScope) => T,
  fence: Fence | undefined,
): Promise<T> {
  let group = groups.get(core);
  if (group === undefined) groups.set(core, group = new GroupCommit(core));
  return group.submit(fn, fence);
}
