/**
 * Held leases' locks on PostgreSQL: a session advisory lock on a dedicated
 * connection per held lease, which the server drops with the connection (a
 * crashed or killed holder frees it at once).
 *
 * @module
 */
import pg from "pg";
import { StoreError } from "../../src/model/errors.ts";
import type { LeaseLocks } from "../sql/_leases.ts";
import { type Q, q } from "../sql/_query.ts";
import { quote } from "../sql/_checks.ts";
import { type Core, lockKey, pgTypes } from "./_core.ts";

/** Whether any session holds the advisory lock (pg_locks shows int4 keys as unsigned oids). */
const LOCKED = `SELECT EXISTS (SELECT 1 FROM pg_locks
  WHERE locktype = 'advisory' AND granted AND objsubid = 2
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND classid = ?::bigint::oid AND objid = ?::bigint::oid) AS locked`;

/** The advisory-lock key pair of lease `name` in `schema`. */
function keys(schema: string, name: string): [number, number] {
  return [lockKey(schema), lockKey(name)];
}

/** The held locks of one open store: a dedicated connection each. */
export class HeldLocks implements LeaseLocks {
  readonly #core: Core;
  readonly #held = new Map<string, pg.Client>();
  /** Each held lock's loss: its connection failed, so the server freed the lock. */
  readonly #lost = new Map<string, AbortController>();

  constructor(core: Core) {
    this.#core = core;
  }

  /** Whether this store holds `name`. */
  holds(name: string): boolean {
    return this.#held.has(name);
  }

  /** Takes the advisory lock on a new connection; never waits. Resolves to whether it did. */
  async tryLock(name: string): Promise<boolean> {
    const refused = this.#core.readOnlyRefusal();
    if (refused !== undefined) throw refused;
    const client = new pg.Client({ ...this.#core.connection, types: pgTypes });
    client.on("error", (error) => {
      this.#core.report(
        `beehive store: the connection holding lease ${quote(name)} failed; the lease is free`,
        error,
      );
      if (this.#held.get(name) === client) {
        this.#lost.get(name)?.abort(
          new StoreError(
            `Lost lease ${
              quote(name)
            }: the connection holding its advisory lock failed, so another process can take the lease`,
            { cause: error },
          ),
        );
      }
    });
    try {
      await client.connect();
      const [a, b] = keys(this.#core.schema, name);
      const r = await client.query("SELECT pg_try_advisory_lock($1::int, $2::int) AS got", [a, b]);
      if (r.rows[0].got === true && !this.#held.has(name)) {
        this.#held.set(name, client);
        this.#lost.set(name, new AbortController());
        return true;
      }
    } catch (error) {
      await client.end().catch(() => {});
      throw this.#core.translate(error);
    }
    await client.end().catch(() => {});
    return false;
  }

  /** Frees `name`: unlocks, then closes its connection. */
  async unlock(name: string): Promise<void> {
    const client = this.#held.get(name);
    if (client === undefined) return;
    this.#held.delete(name);
    this.#lost.delete(name);
    try {
      // Unlocked before the connection ends, so the next reader never sees a dying backend's lock.
      await client.query("SELECT pg_advisory_unlock_all()");
    } catch {
      // The connection is gone, and the lock with it.
    }
    await client.end().catch(() => {});
  }

  /** Frees every held lock. */
  async close(): Promise<void> {
    await Promise.all([...this.#held.keys()].map((name) => this.unlock(name)));
  }

  /** The signal of `name`'s lock being lost while held: its connection failed. */
  lost(name: string): AbortSignal | undefined {
    return this.#lost.get(name)?.signal;
  }

  /** Whether any session holds `name`'s advisory lock: one read. */
  *isLocked(name: string): Q<boolean> {
    const [a, b] = keys(this.#core.schema, name);
    const row = yield* q.get(LOCKED, a >>> 0, b >>> 0);
    return row!.locked === true;
  }
}
