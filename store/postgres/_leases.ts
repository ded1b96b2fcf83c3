/**
 * The lease family: timed leases (acquire, renew, release) and held locks
 * (hold), with fencing epochs that only grow. A timed lease lives in its row;
 * a held lock's liveness is a session advisory lock on a dedicated
 * connection, which the server drops with the connection (a crashed or
 * killed holder frees it at once); its row only names the holder.
 *
 * @module
 */
import pg from "pg";
import { BeehiveError, StoreInUseError } from "../../src/model/errors.ts";
import type {
  HeldLease,
  LeaseAcquireInput,
  LeaseAcquireResult,
  LeaseRenewInput,
  Leases,
  LeaseTermInput,
  RawLease,
} from "../../src/store.ts";
import { type Core, type Db, lockKey, pgTypes } from "./_core.ts";
import { describe, isStorableText, rejectWith } from "./_rows.ts";
import { type Session, TxSession } from "./_session.ts";

const SELECT =
  "SELECT name, holder, epoch, acquired_at, expires_at, pid FROM leases WHERE name = ?";

const UPSERT = `INSERT INTO leases (name, holder, epoch, acquired_at, expires_at, pid)
  VALUES (?, ?, ?, ?, ?, ?)
  ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, epoch = excluded.epoch,
    acquired_at = excluded.acquired_at, expires_at = excluded.expires_at, pid = excluded.pid`;

const FREE = `UPDATE leases SET holder = NULL, acquired_at = NULL, expires_at = NULL, pid = NULL
  WHERE name = ? AND holder = ? AND epoch = ?`;

/** Whether any session holds the advisory lock (pg_locks shows int4 keys as unsigned oids). */
const LOCKED = `SELECT EXISTS (SELECT 1 FROM pg_locks
  WHERE locktype = 'advisory' AND granted AND objsubid = 2
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND classid = ?::bigint::oid AND objid = ?::bigint::oid) AS locked`;

interface LeaseRow extends RawLease {
  readonly pid: number | undefined;
}

async function read(db: Db, name: string): Promise<LeaseRow | undefined> {
  const r = await db.get(SELECT, name);
  if (r === undefined) return undefined;
  return {
    name: r.name as string,
    holder: r.holder === null ? undefined : r.holder as string,
    epoch: Number(r.epoch),
    acquiredAt: r.acquired_at === null ? undefined : Number(r.acquired_at),
    expiresAt: r.expires_at === null ? undefined : Number(r.expires_at),
    pid: r.pid === null ? undefined : Number(r.pid),
  };
}

function strip(row: LeaseRow): RawLease {
  const { pid: _pid, ...lease } = row;
  return lease;
}

function checkText(value: unknown, what: string): asserts value is string {
  if (typeof value !== "string" || value === "" || !isStorableText(value)) {
    throw new TypeError(
      `Cannot use lease ${what}: current value is ${
        describe(value)
      }, expected a non-empty, well-formed string without NUL`,
    );
  }
}

function checkDuration(value: unknown): asserts value is number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new TypeError(
      `Cannot use lease duration: current value is ${describe(value)}, expected a number > 0 (ms)`,
    );
  }
}

function checkEpoch(value: unknown): asserts value is number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new TypeError(
      `Cannot use lease epoch: current value is ${describe(value)}, expected an integer >= 0`,
    );
  }
}

function checkTerm(input: LeaseTermInput): void {
  if (typeof input !== "object" || input === null) {
    throw new TypeError(`Cannot use lease input: current value is ${describe(input)}`);
  }
  checkText(input.name, "name");
  checkText(input.holder, "holder");
  checkEpoch(input.epoch);
}

function inUse(row: LeaseRow): StoreInUseError {
  const pid = row.pid === undefined ? "" : ` (pid ${row.pid})`;
  const since = row.acquiredAt === undefined
    ? ""
    : ` since ${new Date(row.acquiredAt).toISOString()}`;
  return new StoreInUseError(
    `Cannot take lease "${row.name}": it is held by ${JSON.stringify(row.holder)}${pid}${since}`,
  );
}

/** The process id, where the runtime has one, to name a holder in messages. */
function processId(): number | null {
  const g = globalThis as { process?: { pid?: unknown } };
  return typeof g.process?.pid === "number" ? g.process.pid : null;
}

/** The advisory-lock key pair of lease `name` in `schema`. */
function keys(schema: string, name: string): [number, number] {
  return [lockKey(schema), lockKey(name)];
}

/** The held locks of one open store: a dedicated connection each. */
export class HeldLocks {
  readonly #core: Core;
  readonly #held = new Map<string, pg.Client>();

  constructor(core: Core) {
    this.#core = core;
  }

  /** Whether this store holds `name`. */
  holds(name: string): boolean {
    return this.#held.has(name);
  }

  /** Takes the advisory lock on a new connection; never waits. Resolves to whether it did. */
  async tryLock(name: string): Promise<boolean> {
    const client = new pg.Client({ ...this.#core.connection, types: pgTypes });
    client.on("error", (error) => {
      this.#core.report(
        `beehive store: the connection holding lease "${name}" failed; the lease is free`,
        error,
      );
    });
    try {
      await client.connect();
      const [a, b] = keys(this.#core.schema, name);
      const r = await client.query("SELECT pg_try_advisory_lock($1::int, $2::int) AS got", [a, b]);
      if (r.rows[0].got === true && !this.#held.has(name)) {
        this.#held.set(name, client);
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

  /** Whether any session holds `name`'s advisory lock, read on `db`. */
  async isLocked(db: Db, name: string): Promise<boolean> {
    const [a, b] = keys(this.#core.schema, name);
    const row = await db.get(LOCKED, a >>> 0, b >>> 0);
    return row!.locked === true;
  }
}

export class PostgresLeases implements Leases {
  readonly #s: Session;
  readonly #locks: HeldLocks;

  constructor(session: Session, locks: HeldLocks) {
    this.#s = session;
    this.#locks = locks;
  }

  /** Whether `row` names a live holder now (a held lock's advisory lock is still held). */
  async #live(db: Db, row: LeaseRow | undefined, now: number): Promise<boolean> {
    if (row?.holder === undefined) return false;
    if (row.expiresAt === undefined) return await this.#locks.isLocked(db, row.name);
    return row.expiresAt > now;
  }

  get(name: string): Promise<RawLease | undefined> {
    return rejectWith(() => {
      checkText(name, "name");
      return this.#s.read(async (db) => {
        const row = await read(db, name);
        if (row === undefined) return undefined;
        // A held lock whose holder died reads as free: nothing holds its advisory lock.
        if (
          row.holder !== undefined && row.expiresAt === undefined && !await this.#live(db, row, 0)
        ) {
          return { ...strip(row), holder: undefined, acquiredAt: undefined };
        }
        return strip(row);
      });
    });
  }

  acquire(input: LeaseAcquireInput): Promise<LeaseAcquireResult> {
    return rejectWith(() => {
      if (typeof input !== "object" || input === null) {
        throw new TypeError(`Cannot acquire a lease: input is ${describe(input)}`);
      }
      const { name, holder, duration } = input;
      checkText(name, "name");
      checkText(holder, "holder");
      checkDuration(duration);
      return this.#s.write(async ({ db, now }) => {
        const row = await read(db, name);
        const expiresAt = now + Math.ceil(duration);
        if (row?.holder === holder && row.expiresAt !== undefined) {
          await db.run(
            "UPDATE leases SET expires_at = ? WHERE name = ? AND epoch = ?",
            expiresAt,
            name,
            row.epoch,
          );
          return { acquired: true, lease: strip({ ...row, expiresAt }) };
        }
        // Probed under the counter lock: a holder taking the advisory lock now
        // records itself only after this commit, and then sees this lease.
        if (await this.#live(db, row, now)) return { acquired: false, lease: strip(row!) };
        const epoch = (row?.epoch ?? 0) + 1;
        await db.run(UPSERT, name, holder, epoch, now, expiresAt, processId());
        return {
          acquired: true,
          lease: { name, holder, epoch, acquiredAt: now, expiresAt },
        };
      });
    });
  }

  renew(input: LeaseRenewInput): Promise<RawLease | undefined> {
    return rejectWith(() => {
      checkTerm(input);
      checkDuration(input.duration);
      const { name, holder, epoch, duration } = input;
      return this.#s.write(async ({ db, now }) => {
        const row = await read(db, name);
        if (row?.holder !== holder || row.epoch !== epoch || row.expiresAt === undefined) {
          return undefined;
        }
        const expiresAt = now + Math.ceil(duration);
        await db.run("UPDATE leases SET expires_at = ? WHERE name = ?", expiresAt, name);
        return strip({ ...row, expiresAt });
      });
    });
  }

  release(input: LeaseTermInput): Promise<boolean> {
    return rejectWith(() => {
      checkTerm(input);
      const { name, holder, epoch } = input;
      return this.#s.write(async ({ db }) =>
        await db.run(`${FREE} AND expires_at IS NOT NULL`, name, holder, epoch) > 0
      );
    });
  }

  hold(name: string, holder: string): Promise<HeldLease> {
    return rejectWith(() => {
      checkText(name, "name");
      checkText(holder, "holder");
      if (this.#s instanceof TxSession) {
        throw new BeehiveError(
          "Cannot hold a lease inside a transaction: a held lease outlives it; use the root store",
        );
      }
      this.#s.core.assertOpen();
      return this.#hold(name, holder);
    });
  }

  async #hold(name: string, holder: string): Promise<HeldLease> {
    const locks = this.#locks;
    if (locks.holds(name) || !await locks.tryLock(name)) {
      const row = await this.#s.read((db) => read(db, name));
      throw inUse(row ?? { name, holder: "another connection", epoch: 0 } as LeaseRow);
    }
    let lease: RawLease;
    try {
      lease = await this.#s.write(async ({ db, now }) => {
        const row = await read(db, name);
        if (row?.holder !== undefined && row.expiresAt !== undefined && row.expiresAt > now) {
          throw inUse(row);
        }
        const epoch = (row?.epoch ?? 0) + 1;
        await db.run(UPSERT, name, holder, epoch, now, null, processId());
        return { name, holder, epoch, acquiredAt: now, expiresAt: undefined };
      });
    } catch (error) {
      await locks.unlock(name);
      throw error;
    }
    let released: Promise<void> | undefined;
    const release = () =>
      released ??= this.#s.write(async ({ db }) => {
        await db.run(`${FREE} AND expires_at IS NULL`, name, holder, lease.epoch);
      }).catch(() => {
        // A closed store already dropped the lock; a failed write leaves a row whose lock is free.
      }).finally(() => locks.unlock(name));
    return { lease, release };
  }
}
