/**
 * Group commit on PostgreSQL: the single-call writes of one store that wait
 * together share one transaction — one counter lock, one commit, one
 * notification. Writers are serialized by the counter row anyway (versions
 * are commit-ordered), so one write transaction at a time (`Core.writeLock`)
 * loses no parallelism, and a write that arrives while the writer is busy
 * joins the next group instead of queueing for the row lock on a connection
 * of its own.
 *
 * A group of one runs as its own transaction, as before. In a larger group
 * each member runs in its own savepoint, checked against its own fence there:
 * a member that throws is rolled back alone (its version draws returned) and
 * rejects alone. Every member resolves only once the commit is acknowledged;
 * a failing commit or a lost connection rejects them all.
 *
 * @module
 */
import type { BeehiveError } from "../../src/model/errors.ts";
import type { Fence } from "../../src/store.ts";
import { MemberSavepoint, releaseClient, rollbackQuietly } from "./_connections.ts";
import { type Core, Db, type PgClient } from "./_core.ts";
import { Draws, Scope, type WriteScope } from "./_write_scope.ts";

/** The most members one commit takes; the rest form the next group. */
export const MAX_GROUP = 256;

interface Member {
  readonly fn: (scope: WriteScope) => Promise<unknown>;
  readonly fence: Fence | undefined;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

class GroupCommit {
  readonly #core: Core;
  readonly #pending: Member[] = [];
  #running = false;

  constructor(core: Core) {
    this.#core = core;
  }

  submit<T>(fn: (scope: WriteScope) => Promise<T>, fence: Fence | undefined): Promise<T> {
    const { promise, resolve, reject } = Promise.withResolvers<T>();
    this.#pending.push({ fn, fence, resolve: resolve as (value: unknown) => void, reject });
    if (!this.#running) {
      this.#running = true;
      // After the microtasks already queued: callers resumed together submit together.
      queueMicrotask(() => void this.#drain());
    }
    return promise;
  }

  async #drain(): Promise<void> {
    const lock = this.#core.writeLock;
    try {
      while (this.#pending.length > 0) {
        if (!lock.tryAcquire()) await lock.acquire();
        // Everything queued by the time the writer is ours goes in this group.
        try {
          await this.#flush(this.#pending.splice(0, MAX_GROUP));
        } finally {
          lock.release();
        }
      }
    } finally {
      this.#running = false;
    }
  }

  async #flush(group: readonly Member[]): Promise<void> {
    // Each member passed the open check and is counted as work in flight by its caller,
    // so a store closing meanwhile waits for the group.
    const core = this.#core;
    let client: PgClient;
    try {
      client = await core.connect();
    } catch (error) {
      const failure = core.translate(error);
      for (const m of group) m.reject(failure);
      return;
    }
    const db = new Db(client, core.epoch);
    const results: unknown[] = [];
    const failures: (BeehiveError | undefined)[] = [];
    let broken = false;
    try {
      if (group.length === 1) {
        // Alone: the transaction is the member's; a throw rolls it all back.
        const draws = new Draws(await core.begin(db, group[0].fence));
        results.push(await group[0].fn(new Scope(db, draws)));
        await core.commit(db, draws.drawn);
      } else {
        const draws = new Draws(await core.begin(db, undefined));
        const savepoint = new MemberSavepoint(db, "bh_member");
        for (const m of group) await this.#member(savepoint, db, draws, m, results, failures);
        await core.commit(db, draws.drawn);
      }
    } catch (error) {
      broken = !await rollbackQuietly(db);
      // Nothing committed: every member rejects, with its own error where it had one.
      const failure = core.translate(error);
      group.forEach((m, i) => m.reject(failures[i] ?? failure));
      return;
    } finally {
      releaseClient(client, broken);
    }
    group.forEach((m, i) => {
      const failure = failures[i];
      if (failure === undefined) m.resolve(results[i]);
      else m.reject(failure);
    });
  }

  /** Runs one member of a larger group in its own savepoint; a connection failure throws. */
  async #member(
    savepoint: MemberSavepoint,
    db: Db,
    draws: Draws,
    m: Member,
    results: unknown[],
    failures: (BeehiveError | undefined)[],
  ): Promise<void> {
    const core = this.#core;
    // One name for all: members run one after another on the connection.
    await savepoint.open();
    const mark = draws.mark();
    try {
      if (m.fence !== undefined) await core.checkFence(db, m.fence);
      results.push(await m.fn(new Scope(db, draws)));
      failures.push(undefined);
    } catch (error) {
      // The member's own failure, unless the connection went with it: then the
      // rollback below fails too, and that is the whole group's.
      draws.restore(mark);
      try {
        await savepoint.rollback();
      } catch {
        throw error;
      }
      results.push(undefined);
      failures.push(core.translate(error));
    }
  }
}

const groups = new WeakMap<Core, GroupCommit>();

/**
 * Runs a write unit in the next group commit of `core`, checked against
 * `fence`; resolves to what the unit returned, once committed. The caller has
 * checked the store is open and counts the write as work in flight.
 */
export function commitInGroup<T>(
  core: Core,
  fn: (scope: WriteScope) => Promise<T>,
  fence: Fence | undefined,
): Promise<T> {
  let group = groups.get(core);
  if (group === undefined) groups.set(core, group = new GroupCommit(core));
  return group.submit(fn, fence);
}
