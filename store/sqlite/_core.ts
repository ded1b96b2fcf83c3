/**
 * The shared state of one open SQLite store: the two connections and their
 * statement caches, the writer lock, the resource-version allocator, the open
 * epoch, and error translation.
 *
 * @module
 */
import { BeehiveError, NameTakenError, StoreClosedError, StoreError } from "../../src/errors.ts";
import type { Logger } from "../../src/logger.ts";
import { kindName } from "../../src/_engine_keys.ts";
import type { Connection, Driver, SqlValue, Statement } from "./_driver.ts";

/** A row as a driver returns it. */
export type Row = Record<string, SqlValue>;

/** A row as an array, in column order. */
export type RowArray = SqlValue[];

/** Parameters bound to one statement. */
export type SqlValueList = SqlValue[];

/** The logger a store reports failures with no caller to. */
export type StoreLogger = Logger;

/** A connection with a statement cache: every SQL text is compiled once. */
export class Db {
  readonly #conn: Connection;
  readonly #cache = new Map<string, Statement>();
  /** Statements returning arrays (or `undefined` where the driver cannot). */
  readonly #arrays = new Map<string, { stmt: Statement; arrays: boolean }>();

  constructor(conn: Connection) {
    this.#conn = conn;
  }

  /** The cached statement for `sql`. */
  stmt(sql: string): Statement {
    let s = this.#cache.get(sql);
    if (s === undefined) {
      s = this.#conn.prepare(sql);
      this.#cache.set(sql, s);
    }
    return s;
  }

  #arrayStmt(sql: string): { stmt: Statement; arrays: boolean } {
    let entry = this.#arrays.get(sql);
    if (entry === undefined) {
      const stmt = this.#conn.prepare(sql);
      const arrays = typeof stmt.setReturnArrays === "function";
      if (arrays) stmt.setReturnArrays!(true);
      this.#arrays.set(sql, entry = { stmt, arrays });
    }
    return entry;
  }

  /** Every row of `sql`, as arrays in column order. */
  rows(sql: string, ...params: SqlValue[]): RowArray[] {
    const { stmt, arrays } = this.#arrayStmt(sql);
    const rows = stmt.all(...params);
    return arrays ? rows as unknown as RowArray[] : rows.map((r) => Object.values(r));
  }

  /** The first row of `sql` as an array in column order, or `undefined`. */
  row(sql: string, ...params: SqlValue[]): RowArray | undefined {
    const { stmt, arrays } = this.#arrayStmt(sql);
    const row = stmt.get(...params);
    if (row === undefined || arrays) return row as unknown as RowArray | undefined;
    return Object.values(row);
  }

  /** Runs statements that bind nothing. */
  exec(sql: string): void {
    this.#conn.exec(sql);
  }

  /** The first row of `sql`, or `undefined`. */
  get(sql: string, ...params: SqlValue[]): Row | undefined {
    return this.stmt(sql).get(...params);
  }

  /** Every row of `sql`. */
  all(sql: string, ...params: SqlValue[]): Row[] {
    return this.stmt(sql).all(...params);
  }

  /** Runs `sql` and reports how many rows it changed. */
  run(sql: string, ...params: SqlValue[]): number {
    return Number(this.stmt(sql).run(...params).changes);
  }

  close(): void {
    this.#cache.clear();
    this.#arrays.clear();
    this.#conn.close();
  }
}

/** A FIFO async mutex: the writer connection's owner. */
export class WriterLock {
  #held = false;
  readonly #waiters: (() => void)[] = [];

  /** Takes the lock now if it is free; reports whether it did. */
  tryAcquire(): boolean {
    if (this.#held) return false;
    this.#held = true;
    return true;
  }

  /** Resolves once the caller holds the lock. */
  acquire(): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#waiters.push(resolve);
    return promise;
  }

  /** Hands the lock to the next waiter, or frees it. */
  release(): void {
    const next = this.#waiters.shift();
    if (next === undefined) this.#held = false;
    else next();
  }
}

/** Versions reserved per counter write. */
export const VERSION_BLOCK = 1024;

const DRAW_SQL = "UPDATE resource_version_seq SET value = value + ? WHERE id = 1 RETURNING value";

/** Everything one open store shares between its root handle and its transactions. */
export class Core {
  readonly writer: Db;
  readonly reader: Db;
  readonly lock = new WriterLock();
  readonly driver: Driver;
  readonly logger: StoreLogger | undefined;
  /** This open's number, for the liveness downgrade. */
  readonly epoch: number;
  /** The highest resource version a committed transaction drew. */
  published = 0;
  #next = 0;
  #end = 0;
  #closing = false;
  #closed = false;

  constructor(
    driver: Driver,
    writer: Db,
    reader: Db,
    epoch: number,
    logger: StoreLogger | undefined,
  ) {
    this.driver = driver;
    this.writer = writer;
    this.reader = reader;
    this.epoch = epoch;
    this.logger = logger;
  }

  get closing(): boolean {
    return this.#closing;
  }

  /** Refuses new work; a transaction already running may finish. */
  markClosing(): void {
    this.#closing = true;
  }

  /** Closes both connections. */
  close(): void {
    this.#closed = true;
    try {
      this.reader.close();
    } finally {
      this.writer.close();
    }
  }

  /** Rejects new work once close was called. */
  assertOpen(): void {
    if (this.#closing) throw new StoreClosedError("Cannot use the store: it is closed");
  }

  /** Rejects work once the connections are gone. */
  assertConnected(): void {
    if (this.#closed) throw new StoreClosedError("Cannot use the store: it is closed");
  }

  /**
   * Reserves a block of versions in its own commit, so every version handed
   * out is covered by the durable counter. Call with the lock held, outside
   * any transaction, or at open (which also publishes the previous counter).
   */
  refillVersions(): void {
    if (this.#next < this.#end) return;
    const hi = Number(this.writer.get(DRAW_SQL, VERSION_BLOCK)!.value);
    this.#next = hi - VERSION_BLOCK + 1;
    this.#end = hi + 1;
  }

  /** Seeds the allocator at open: everything at or below the old counter was issued. */
  seedVersions(): void {
    this.refillVersions();
    this.published = this.#next - 1;
  }

  /**
   * The next resource version, inside a write transaction. When the block is
   * spent it draws straight from the counter in that transaction (and a
   * rollback takes the draw back with it).
   */
  takeVersion(): number {
    if (this.#next < this.#end) return this.#next++;
    return Number(this.writer.get(DRAW_SQL, 1)!.value);
  }

  /** `n` consecutive versions inside a write transaction. */
  takeVersions(n: number): number {
    if (this.#next + n <= this.#end) {
      const first = this.#next;
      this.#next += n;
      return first;
    }
    this.#next = this.#end;
    return Number(this.writer.get(DRAW_SQL, n)!.value) - n + 1;
  }

  /** Publishes a committed transaction's highest draw. */
  publish(drawn: number): void {
    if (drawn > this.published) this.published = drawn;
  }

  /** Reports a failure from a hook or another place with no caller to reject. */
  report(message: string, error: unknown): void {
    this.logger?.error(message, { error });
  }

  /**
   * Translates anything a driver threw into a {@linkcode BeehiveError}.
   * Beehive errors pass through untouched.
   */
  translate(error: unknown): BeehiveError {
    if (error instanceof BeehiveError) return error;
    if (this.#closed || this.#closing) {
      return new StoreClosedError("Cannot use the store: it is closed", { cause: error });
    }
    const failure = this.driver.describeFailure(error);
    return new StoreError(`SQLite store failure: ${failure.message}`, { cause: error });
  }

  /** Whether a driver error is a UNIQUE constraint violation. */
  isUniqueViolation(error: unknown): boolean {
    const failure = this.driver.describeFailure(error);
    // SQLITE_CONSTRAINT_UNIQUE and SQLITE_CONSTRAINT_PRIMARYKEY.
    if (failure.code !== undefined) return failure.code === 2067 || failure.code === 1555;
    return failure.message.includes("UNIQUE constraint failed");
  }

  /** Whether a driver error is a foreign-key violation. */
  isForeignKeyViolation(error: unknown): boolean {
    const failure = this.driver.describeFailure(error);
    if (failure.code !== undefined) return failure.code === 787;
    return failure.message.includes("FOREIGN KEY constraint failed");
  }
}

/** Builds the error a create reports for a name held within its kind. */
export function nameTaken(group: string, kind: string, name: string, cause: unknown) {
  return new NameTakenError(
    `Cannot create ${
      kindName({ group, kind })
    } "${name}": the name is already in use for this kind`,
    { cause },
  );
}
