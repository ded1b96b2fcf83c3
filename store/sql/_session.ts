/**
 * The session a shared family runs its bodies through: the dialect's, bound
 * to a root handle (reads on a pooled or idle connection, each write in the
 * write group) or to a transaction frame (everything on the transaction's
 * connection, each write unit in a savepoint).
 *
 * @module
 */
import type { TailWrite } from "../../src/watches/kind_tail.ts";
import type { Dialect } from "./_dialect.ts";
import type { LiveOpens, Viewer } from "./_live_opens.ts";
import { type Q, type Query, runOn, type Runs } from "./_query.ts";

/** Where a store keeps the write-log entries of the open transaction for readers tailing from memory. */
export interface WriteJournal {
  /** Whether anyone reads this transaction's entries. */
  readonly active: boolean;
  /** Whether anyone reads the entries of kind `group`/`kind`. */
  wants(group: string, kind: string): boolean;
  /** Keeps one entry. */
  logged(write: TailWrite): void;
}

/**
 * Where a store holds the open transaction's write-log entries to insert
 * them together later (SQLite), instead of one statement each.
 */
export interface DeferredLog {
  /** Holds one entry: the `object_writes` row's values, in column order. */
  append(
    rv: number,
    objectId: number,
    group: string,
    kind: string,
    op: number,
    writtenAt: number,
    final: string | null,
    origin: number,
  ): void;
}

/**
 * What a write unit may use besides its statements: one clock reading,
 * version draws, and (where the dialect assigns them) row ids.
 */
export interface WriteScope {
  /** The store open the unit's write-log entries carry as their origin. */
  readonly origin: number;
  /** The open transaction's journal, where the store tails kinds from memory. */
  readonly journal: WriteJournal | undefined;
  /** Where the unit's write-log entries wait to be inserted; unset where each is inserted at once. */
  readonly log?: DeferredLog;
  /** `Date.now()` read once for the whole unit. */
  readonly now: number;
  /** The next resource version. */
  draw(): number;
  /** `n` consecutive resource versions; returns the first. */
  drawMany(n: number): number;
  /** The version {@linkcode WriteScope.draw} returns next, without taking it. */
  peekVersion(): number;
  /**
   * The id the next row of `table` takes, where the store hands ids out
   * itself (SQLite); `undefined` where the database assigns them on insert.
   */
  peekId(table: IdTable): number | undefined;
  /** Takes the id {@linkcode WriteScope.peekId} returned: its insert succeeded. */
  takeId(table: IdTable): void;
}

/** The tables whose ids a store may hand out itself. */
export type IdTable = "objects" | "events";

/** How a shared family reaches the database. */
export interface SqlSession {
  readonly dialect: Dialect;
  /** This open's number: what its condition rows record as their writer. */
  readonly epoch: number;
  /** How this session's reads judge liveness rows. */
  readonly viewer: Viewer;
  /** Whether the session is a transaction frame's (no lease may be held from it). */
  readonly inTransaction: boolean;
  /** Refuses new work once the store is closing. @throws {StoreClosedError} */
  assertOpen(): void;
  /** Runs a body of reads. */
  read<T>(body: () => Q<T>): Promise<T>;
  /** Runs a body of reads that must see one snapshot. */
  readSnapshot<T>(body: () => Q<T>): Promise<T>;
  /** Runs a write unit atomically. */
  write<T>(body: (scope: WriteScope) => Q<T>): Promise<T>;
}

/**
 * A dialect's own session: how its statements reach the database, on its
 * connection type `D` and write scope `W`. `Async` says whether a callback's
 * work is a promise (PostgreSQL) or runs to its end at once (SQLite).
 */
export interface DialectSession<C, D, W, Async extends boolean> {
  readonly core: C;
  /** Runs reads on the right connection. */
  read<T>(fn: (db: D) => Async extends true ? Promise<T> : T): Promise<T>;
  /** Runs reads that must see one snapshot. */
  readSnapshot<T>(fn: (db: D) => Async extends true ? Promise<T> : T): Promise<T>;
  /** Runs a write unit atomically. */
  write<T>(fn: (scope: W) => Async extends true ? Promise<T> : T): Promise<T>;
}

/** A dialect's own session, as {@linkcode BodySession} drives bodies through it. */
export interface DriverSession<C, S extends WriteScope & { readonly db: C }> {
  readonly core: {
    readonly epoch: number;
    readonly readOnlyAt: string | undefined;
    readonly liveOpens: LiveOpens;
    assertOpen(): void;
  };
  /** Runs `fn` on a connection for reads. */
  read(fn: (db: C) => unknown): Promise<unknown>;
  /** Runs `fn` on a connection inside one snapshot. */
  readSnapshot(fn: (db: C) => unknown): Promise<unknown>;
  /** Runs `fn` as one atomic write unit. */
  write(fn: (scope: S) => unknown): Promise<unknown>;
}

/** How a dialect drives a body on a connection: `driveSync` or `driveAsync`. */
export type Drive = <C, T>(
  body: Q<T>,
  conn: C,
  run: (conn: C, query: Query) => unknown,
) => unknown;

/** A dialect session as the shared families see it: each body driven on the session's connection. */
export class BodySession<C extends Runs<unknown>, S extends WriteScope & { readonly db: C }>
  implements SqlSession {
  readonly dialect: Dialect;
  readonly inTransaction: boolean;
  readonly #s: DriverSession<C, S>;
  readonly #drive: Drive;

  constructor(
    session: DriverSession<C, S>,
    dialect: Dialect,
    inTransaction: boolean,
    drive: Drive,
  ) {
    this.#s = session;
    this.dialect = dialect;
    this.inTransaction = inTransaction;
    this.#drive = drive;
  }

  get epoch(): number {
    return this.#s.core.epoch;
  }

  get viewer(): Viewer {
    const core = this.#s.core;
    // A read-only open wrote no row: every liveness row is another open's.
    return { epoch: core.readOnlyAt === undefined ? core.epoch : 0, opens: core.liveOpens };
  }

  assertOpen(): void {
    this.#s.core.assertOpen();
  }

  read<T>(body: () => Q<T>): Promise<T> {
    return this.#s.read((db) => this.#drive(body(), db, runOn)) as Promise<T>;
  }

  readSnapshot<T>(body: () => Q<T>): Promise<T> {
    return this.#s.readSnapshot((db) => this.#drive(body(), db, runOn)) as Promise<T>;
  }

  write<T>(body: (scope: WriteScope) => Q<T>): Promise<T> {
    return this.#s.write((scope) => this.#drive(body(scope), scope.db, runOn)) as Promise<T>;
  }
}
