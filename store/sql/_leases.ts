/**
 * The lease family: timed leases (acquire, renew, release) and held locks
 * (hold), with fencing epochs that only grow. A timed lease lives in its row;
 * a held lock's liveness is the dialect's own lock ({@linkcode LeaseLocks}:
 * a file lock on SQLite, a session advisory lock on PostgreSQL) and its row
 * only names the holder.
 *
 * @module
 */
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
import { describe, isStorableText, quote, rejectWith } from "./_checks.ts";
import type { Maybe } from "./_write_group.ts";
import { type Q, q } from "./_query.ts";
import type { SqlSession, WriteScope } from "./_session.ts";

/** The locks that keep held leases alive: a dialect's own, one per lease name. */
export interface LeaseLocks {
  /** Whether this store holds lease `name`'s lock. */
  holds(name: string): boolean;
  /** Takes lease `name`'s lock without waiting; resolves to whether it did. */
  tryLock(name: string): Maybe<boolean>;
  /** Frees lease `name`'s lock if this store holds it. */
  unlock(name: string): Maybe<void>;
  /** Whether some live holder, in any process, has lease `name`'s lock: a step of a body. */
  isLocked(name: string): Q<boolean>;
  /** The signal of lease `name`'s lock being lost while held, where the dialect can tell. */
  lost?(name: string): AbortSignal | undefined;
}

const SELECT =
  "SELECT name, holder, epoch, acquired_at, expires_at, pid, duration FROM leases WHERE name = ?";

const UPSERT = `INSERT INTO leases (name, holder, epoch, acquired_at, expires_at, pid, duration)
  VALUES (?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, epoch = excluded.epoch,
    acquired_at = excluded.acquired_at, expires_at = excluded.expires_at, pid = excluded.pid,
    duration = excluded.duration`;

const FREE = `UPDATE leases SET holder = NULL, acquired_at = NULL, expires_at = NULL, pid = NULL,
    duration = NULL
  WHERE name = ? AND holder = ? AND epoch = ?`;

interface LeaseRow extends RawLease {
  readonly pid: number | undefined;
  /** A timed lease's duration (ms) as its holder last wrote it; absent for a held lock or an older row. */
  readonly duration: number | undefined;
}

function* read(name: string): Q<LeaseRow | undefined> {
  const r = yield* q.get(SELECT, name);
  if (r === undefined) return undefined;
  return {
    name: r.name as string,
    holder: r.holder === null ? undefined : r.holder as string,
    epoch: Number(r.epoch),
    acquiredAt: r.acquired_at === null ? undefined : Number(r.acquired_at),
    expiresAt: r.expires_at === null ? undefined : Number(r.expires_at),
    pid: r.pid === null ? undefined : Number(r.pid),
    duration: r.duration === null || r.duration === undefined ? undefined : Number(r.duration),
  };
}

function strip(row: LeaseRow): RawLease {
  const { pid: _pid, duration: _duration, ...lease } = row;
  return lease;
}

/**
 * How long a timed lease lasts unrenewed: the duration its holder wrote, or,
 * on a row written before durations were kept, its expiry less its
 * acquisition (both from the holder's clock, so no offset; at least the duration).
 */
function termLength(row: LeaseRow): number {
  return row.duration ?? row.expiresAt! - (row.acquiredAt ?? row.expiresAt!);
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
    `Cannot take lease ${quote(row.name)}: it is held by ${quote(row.holder ?? "")}${pid}${since}`,
  );
}

/** The process id, where the runtime has one, to name a holder in messages. */
function processId(): number | null {
  const g = globalThis as { process?: { pid?: unknown } };
  return typeof g.process?.pid === "number" ? g.process.pid : null;
}

export class SqlLeases implements Leases {
  readonly #s: SqlSession;
  readonly #locks: LeaseLocks;

  constructor(session: SqlSession, locks: LeaseLocks) {
    this.#s = session;
    this.#locks = locks;
  }

  get(name: string): Promise<RawLease | undefined> {
    return rejectWith(() => {
      checkText(name, "name");
      const locks = this.#locks;
      return this.#s.read(() => getBody(locks, name));
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
      const locks = this.#locks;
      return this.#s.write((scope) => acquireBody(scope, locks, name, holder, duration));
    });
  }

  renew(input: LeaseRenewInput): Promise<RawLease | undefined> {
    return rejectWith(() => {
      checkTerm(input);
      checkDuration(input.duration);
      const { name, holder, epoch, duration } = input;
      const locks = this.#locks;
      return this.#s.write((scope) => renewBody(scope, locks, name, holder, epoch, duration));
    });
  }

  release(input: LeaseTermInput): Promise<boolean> {
    return rejectWith(() => {
      checkTerm(input);
      const { name, holder, epoch } = input;
      return this.#s.write(() => releaseBody(name, holder, epoch));
    });
  }

  hold(name: string, holder: string): Promise<HeldLease> {
    return rejectWith(() => {
      checkText(name, "name");
      checkText(holder, "holder");
      if (this.#s.inTransaction) {
        throw new BeehiveError(
          "Cannot hold a lease inside a transaction: a held lease outlives it; use the root store",
        );
      }
      this.#s.assertOpen();
      return this.#hold(name, holder);
    });
  }

  async #hold(name: string, holder: string): Promise<HeldLease> {
    const locks = this.#locks;
    if (locks.holds(name) || !await locks.tryLock(name)) {
      const row = await this.#s.read(() => read(name));
      throw inUse(row ?? { name, holder: "another connection", epoch: 0 } as LeaseRow);
    }
    let lease: RawLease;
    try {
      lease = await this.#s.write((scope) => holdBody(scope, locks, name, holder));
    } catch (error) {
      await locks.unlock(name);
      throw error;
    }
    let released: Promise<void> | undefined;
    const release = () =>
      released ??= this.#s.write(() => freeBody(name, holder, lease.epoch)).catch(() => {
        // A closed store already dropped the lock; a failed write leaves a row whose lock is free.
      }).finally(() => locks.unlock(name));
    const lost = locks.lost?.(name);
    return lost === undefined ? { lease, release } : { lease, release, lost };
  }
}

/**
 * What one open of the store has seen of each timed lease: its term (holder,
 * epoch and expiry as written) and when this open first saw that term, on its
 * own monotonic clock. A timed lease lapses for an open that has seen its term
 * unchanged for a lease duration — as client-go's leader election judges it —
 * so neither another host's clock nor a jump of this host's wall clock can end
 * a lease its holder keeps renewing.
 */
class Sightings {
  readonly #seen = new Map<string, { readonly term: string; readonly at: number }>();

  /** Records `row`'s term as seen now unless it is the one last seen; how long (ms) it has been seen unchanged. */
  unchangedFor(row: LeaseRow): number {
    const term = `${row.holder}\u0000${row.epoch}\u0000${row.expiresAt}`;
    const at = performance.now();
    const seen = this.#seen.get(row.name);
    if (seen?.term === term) return at - seen.at;
    this.#seen.set(row.name, { term, at });
    return 0;
  }

  /** This open wrote `row`'s term: seen from now. */
  wrote(row: LeaseRow): void {
    this.unchangedFor(row);
  }
}

/** Each open's sightings, by the locks object its handles share. */
const sightingsOf = new WeakMap<LeaseLocks, Sightings>();

function sightings(locks: LeaseLocks): Sightings {
  let s = sightingsOf.get(locks);
  if (s === undefined) sightingsOf.set(locks, s = new Sightings());
  return s;
}

/**
 * Whether `row` names a live holder now: a held lock's lock is still held; a
 * timed lease's term has not been seen unchanged for `duration` ms here.
 */
function* live(locks: LeaseLocks, row: LeaseRow | undefined, duration: number): Q<boolean> {
  if (row?.holder === undefined) return false;
  if (row.expiresAt === undefined) return yield* locks.isLocked(row.name);
  return sightings(locks).unchangedFor(row) < duration;
}

function* getBody(locks: LeaseLocks, name: string) {
  const row = yield* read(name);
  if (row === undefined) return undefined;
  // A held lock whose holder died reads as free: nothing holds its lock.
  if (
    row.holder !== undefined && row.expiresAt === undefined && !(yield* live(locks, row, 0))
  ) {
    return { ...strip(row), holder: undefined, acquiredAt: undefined };
  }
  return strip(row);
}

function* acquireBody(
  { now }: WriteScope,
  locks: LeaseLocks,
  name: string,
  holder: string,
  duration: number,
): Q<LeaseAcquireResult> {
  const row = yield* read(name);
  const ms = Math.ceil(duration);
  const expiresAt = now + ms;
  if (row?.holder === holder && row.expiresAt !== undefined) {
    yield* q.run(
      "UPDATE leases SET expires_at = ?, duration = ? WHERE name = ? AND epoch = ?",
      expiresAt,
      ms,
      name,
      row.epoch,
    );
    const renewed = { ...row, expiresAt, duration: ms };
    sightings(locks).wrote(renewed);
    return { acquired: true, lease: strip(renewed) };
  }
  // Probed inside the write transaction: a holder taking the lock now records itself
  // only after this commit, and then sees this lease.
  if (yield* live(locks, row, duration)) return { acquired: false, lease: strip(row!) };
  const epoch = (row?.epoch ?? 0) + 1;
  yield* q.run(UPSERT, name, holder, epoch, now, expiresAt, processId(), ms);
  const lease = { name, holder, epoch, acquiredAt: now, expiresAt };
  sightings(locks).wrote({ ...lease, pid: undefined, duration: ms });
  return { acquired: true, lease };
}

function* renewBody(
  { now }: WriteScope,
  locks: LeaseLocks,
  name: string,
  holder: string,
  epoch: number,
  duration: number,
) {
  const row = yield* read(name);
  if (row?.holder !== holder || row.epoch !== epoch || row.expiresAt === undefined) {
    return undefined;
  }
  const ms = Math.ceil(duration);
  const expiresAt = now + ms;
  yield* q.run(
    "UPDATE leases SET expires_at = ?, duration = ? WHERE name = ?",
    expiresAt,
    ms,
    name,
  );
  const renewed = { ...row, expiresAt, duration: ms };
  sightings(locks).wrote(renewed);
  return strip(renewed);
}

function* releaseBody(name: string, holder: string, epoch: number) {
  return (yield* q.run(`${FREE} AND expires_at IS NOT NULL`, name, holder, epoch)) > 0;
}

function* holdBody({ now }: WriteScope, locks: LeaseLocks, name: string, holder: string) {
  const row = yield* read(name);
  // A timed lease of the same name keeps this lock out until this open has seen its
  // term unchanged for its duration, as acquire judges it: never by its timestamps.
  if (row?.expiresAt !== undefined && (yield* live(locks, row, termLength(row)))) {
    throw inUse(row);
  }
  const epoch = (row?.epoch ?? 0) + 1;
  yield* q.run(UPSERT, name, holder, epoch, now, null, processId(), null);
  return { name, holder, epoch, acquiredAt: now, expiresAt: undefined };
}

function* freeBody(name: string, holder: string, epoch: number) {
  yield* q.run(`${FREE} AND expires_at IS NULL`, name, holder, epoch);
}
