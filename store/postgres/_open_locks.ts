/**
 * The PostgreSQL store's live opens (see `../sql/_live_opens.ts`): each
 * writable open holds a session advisory lock keyed by its own number on the
 * connection its commit listener keeps from open to close; the server drops
 * it with the connection, so a killed process's opens read as gone at once.
 * Which opens are alive is one read of `pg_locks`; no table records them.
 *
 * @module
 */
import type { LiveOpens } from "../sql/_live_opens.ts";
import { type Q, q } from "../sql/_query.ts";
import { lockKey } from "./_core.ts";

/** Which of the opens bound as an array hold their advisory lock (pg_locks shows int4 keys as unsigned oids). */
const ALIVE = `SELECT objid::bigint AS epoch FROM pg_locks
  WHERE locktype = 'advisory' AND granted AND objsubid = 2
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND classid = ?::bigint::oid AND objid::bigint = ANY(?::bigint[])`;

/** Takes the open's lock without waiting: `got` is false only while an earlier session of it lingers. */
export const LOCK_OPEN = "SELECT pg_try_advisory_lock($1::int, $2::int) AS got";

export class OpenLocks implements LiveOpens {
  /** The first key of every open's lock in this schema (the second is its number). */
  readonly key: number;

  constructor(schema: string) {
    this.key = lockKey(`${schema}\u0000open`);
  }

  /** The parameters of {@linkcode LOCK_OPEN} for the open `epoch`. */
  lockParams(epoch: number): [number, number] {
    return [this.key, epoch | 0];
  }

  *alive(epochs: readonly number[]): Q<ReadonlySet<number>> {
    const rows = yield* q.all(ALIVE, this.key >>> 0, epochs.map((e) => (e | 0) >>> 0));
    return new Set(rows.map((r) => Number(r.epoch)));
  }
}
