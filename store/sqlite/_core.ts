/**
 * The shared state of one open SQLite store: the two connections and their
 * statement caches, the writer lock, the resource-version allocator, the open
 * epoch, the fence check, and error translation.
 *
 * @module
 */
import type { Logger } from "../../src/telemetry/logger.ts";
import type { Fence } from "../../src/store.ts";
import type { Connection, Driver, SqlValue, Statement } from "./_driver.ts";
import type { LockFiles } from "./_lock_files.ts";
import type { LiveOpens } from "../sql/_live_opens.ts";
import type { Checkpointer } from "./_checkpointer.ts";
import { CommitJournal, type JournalSource } from "../sql/_journal.ts";
import { AsyncLock } from "../sql/_lock.ts";
import { FENCE_SQL, refuseStaleFence, type StoreOpen, StoreState } from "../sql/_store_state.ts";
import type { Query } from "../sql/_query.ts";
import { DeferredLog, type LogMark } from "./_deferred_log.ts";
import { LabelSetIds } from "../sql/_label_set_ids.ts";

/**
 * Where an open write transaction stood: the commit journal, the deferred
 * log, and the writer's count of writing statements.
 */
export interface TxMark {
  readonly journal: number;
  readonly log: LogMark;
  readonly writes: number;
}

/** A row as a driver returns it. */
export type Row = Record<string, SqlValue>;

/** A row as an array, in column order. */
export type RowArray = SqlValue[];

/** Parameters bound to one statement. */
export type SqlValueList = SqlValue[];

/** The logger a store reports failures with no caller to. */
export type StoreLogger = Logger;

/** A compiled statement and what its text says about it. */
interface Compiled {
  readonly stmt: Statement;
  /** Whether `get`/`all` return arrays (the driver could switch them). */
  readonly arrays: boolean;
  /** Whether running it may change the database: anything but a read. */
  readonly writes: boolean;
  /** Whether its text names `object_writes`. */
  readonly touchesLog: boolean;
}

/** Statements that only read. Anything else (a `WITH` included) counts as a write. */
const READ_ONLY = /^\s*(SELECT|PRAGMA|VALUES|EXPLAIN)\b/i;

/**
 * A connection with a statement cache: every SQL text is compiled once. It
 * counts the statements that may have changed the database
 * ({@linkcode Db.writes}).
 */
export class Db {
  /** The store open (`store_epoch`) this connection's writes carry into the write log. */
  origin = 0;
  /** Where the writer's appended log entries are journaled; unset on the reader. */
  journal: CommitJournal | undefined;
  /**
   * How many statements that are not reads have completed on this
   * connection: while it reads the same, nothing was written.
   */
  writes = 0;
  readonly #conn: Connection;
  /** The writer's deferred log entries, inserted before any statement on `object_writes` runs. */
  #log: DeferredLog | undefined;
  /** Statements returning rows as objects. */
  readonly #cache = new Map<string, Compiled>();
  /** Statements returning rows as arrays (or objects, where the driver cannot). */
  readonly #arrays = new Map<string, Compiled>();

  constructor(conn: Connection) {
    this.#conn = conn;
  }

  /** Defers this connection's log entries (the writer's): returns where they wait. */
  deferLog(): DeferredLog {
    return this.#log = new DeferredLog((sql) => this.#conn.prepare(sql), () => this.writes++);
  }

  /**
   * Whether a transaction is open on this connection; `undefined` where the
   * driver cannot tell.
   */
  inTransaction(): boolean | undefined {
    return this.#conn.isTransaction;
  }

  /** Inserts the waiting log entries first when the statement touches the log. */
  #ready(c: Compiled): Compiled {
    if (c.touchesLog && this.#log?.pending) this.#log.flush();
    return c;
  }

  #compile(sql: string, arrays: boolean): Compiled {
    const stmt = this.#conn.prepare(sql);
    if (arrays) {
      arrays = typeof stmt.setReturnArrays === "function";
      if (arrays) stmt.setReturnArrays!(true);
    }
    return {
      stmt,
      arrays,
      writes: !READ_ONLY.test(sql),
      touchesLog: sql.includes("object_writes"),
    };
  }

  #object(sql: string): Compiled {
    let c = this.#cache.get(sql);
    if (c === undefined) this.#cache.set(sql, c = this.#compile(sql, false));
    return this.#ready(c);
  }

  #array(sql: string): Compiled {
    let c = this.#arrays.get(sql);
    if (c === undefined) this.#arrays.set(sql, c = this.#compile(sql, true));
    return this.#ready(c);
  }

  /** Counts `c` once it completed. */
  #done<T>(c: Compiled, result: T): T {
    if (c.writes) this.writes++;
    return result;
  }

  /** Every row of `sql`, as arrays in column order. */
  rows(sql: string, ...params: SqlValue[]): RowArray[] {
    return this.#rows(sql, params);
  }

  #rows(sql: string, params: SqlValue[]): RowArray[] {
    const c = this.#array(sql);
    const rows = this.#done(c, c.stmt.all(...params));
    return c.arrays ? rows as unknown as RowArray[] : rows.map((r) => Object.values(r));
  }

  /** The first row of `sql` as an array in column order, or `undefined`. */
  row(sql: string, ...params: SqlValue[]): RowArray | undefined {
    return this.#row(sql, params);
  }

  #row(sql: string, params: SqlValue[]): RowArray | undefined {
    const c = this.#array(sql);
    const row = this.#done(c, c.stmt.get(...params));
    if (row === undefined || c.arrays) return row as unknown as RowArray | undefined;
    return Object.values(row);
  }

  /** Runs one statement a shared family body yielded (`../sql/_query.ts`). */
  query(query: Query): unknown {
    const params = query.params as SqlValue[];
    switch (query.op) {
      case "rows":
        return this.#rows(query.sql, params);
      case "row":
        return this.#row(query.sql, params);
      case "all":
        return this.all(query.sql, ...params);
      case "get":
        return this.get(query.sql, ...params);
      case "run":
        return this.run(query.sql, ...params);
    }
  }

  /** Runs statements that bind nothing (transaction control and pragmas; never the log). */
  exec(sql: string): void {
    this.#conn.exec(sql);
  }

  /** The first row of `sql`, or `undefined`. */
  get(sql: string, ...params: SqlValue[]): Row | undefined {
    const c = this.#object(sql);
    return this.#done(c, c.stmt.get(...params));
  }

  /** Every row of `sql`. */
  all(sql: string, ...params: SqlValue[]): Row[] {
    const c = this.#object(sql);
    return this.#done(c, c.stmt.all(...params));
  }

  /** Runs `sql` and reports how many rows it changed. */
  run(sql: string, ...params: SqlValue[]): number {
    const c = this.#object(sql);
    return this.#done(c, Number(c.stmt.run(...params).changes));
  }

  close(): void {
    this.#cache.clear();
    this.#arrays.clear();
    this.#conn.close();
  }
}

const COUNTER_SQL = "SELECT value FROM resource_version_seq WHERE id = 1";
// MAX with the table's highest id: a row another writer inserted past the counter is never reused.
const COUNTERS_SQL = `SELECT value,
    MAX(last_object_id, COALESCE((SELECT MAX(id) FROM objects), 0)) AS object_id,
    MAX(last_event_id, COALESCE((SELECT MAX(id) FROM events), 0)) AS event_id
  FROM resource_version_seq WHERE id = 1`;
const PUBLISH_SQL =
  "UPDATE resource_version_seq SET value = ?, last_object_id = ?, last_event_id = ? WHERE id = 1";

/** The tables whose ids come from a counter in the resource-version row. */
export type IdTable = "objects" | "events";

/** Which opens are alive, through files this open closes with its connections. */
export interface ClosableLiveOpens extends LiveOpens {
  close(): void;
}

/** A SQLite open's driver, connections and lease lock files. */
export interface Connections {
  readonly driver: Driver;
  readonly writer: Db;
  readonly reader: Db;
  readonly locks: LockFiles;
  /** The open slots: this open's own (when it writes) and the probes of others'. */
  readonly liveOpens: ClosableLiveOpens;
}

/** Everything one open store shares between its root handle and its transactions. */
export class Core extends StoreState implements JournalSource {
  readonly writer: Db;
  readonly reader: Db;
  /** The writer connection's owner: one write group at a time. */
  readonly lock = new AsyncLock();
  /** Where the transaction stood when the running group member began. */
  memberMark: TxMark = { journal: 0, log: { appended: 0, inserted: 0 }, writes: 0 };
  readonly driver: Driver;
  /** The lease lock files. */
  readonly locks: LockFiles;
  /** Which opens of the store are alive. */
  readonly liveOpens: ClosableLiveOpens;
  /** The background checkpointer, for a store on the `node:sqlite` driver. */
  checkpointer: Checkpointer | undefined;
  /** The open write transaction's log entries, for the kinds tailed from memory. */
  readonly journal = new CommitJournal();
  /** The open write transaction's log entries not yet inserted. */
  readonly log: DeferredLog;
  /**
   * The label sets this writer knows exist: forgotten when another
   * connection committed since its last transaction began, and on a rollback.
   */
  readonly labelSetIds = new LabelSetIds();
  /** The next version this connection will hand out. */
  #next = 1;
  /** The committed counter as of the last commit or re-read. */
  #counter = 0;
  /** The next id per table; ids, like versions, are handed out above every committed one. */
  readonly #nextId: Record<IdTable, number> = { objects: 1, events: 1 };
  /** The writer's `PRAGMA data_version` when `#next` was last known good. */
  #seen: number | undefined;
  /** The writer's `PRAGMA data_version` at the last commit probe. */
  #probeSeen: number | undefined;

  constructor(connections: Connections, open: StoreOpen) {
    super(open);
    this.driver = connections.driver;
    this.writer = connections.writer;
    this.reader = connections.reader;
    this.locks = connections.locks;
    this.liveOpens = connections.liveOpens;
    this.writer.journal = this.journal;
    this.log = this.writer.deferLog();
  }

  /** Closes both connections. */
  close(): void {
    this.markClosed();
    try {
      this.locks.close();
      this.liveOpens.close();
      this.reader.close();
    } finally {
      this.writer.close();
    }
  }

  /**
   * Readies version draws for a write transaction just begun (the writer lock
   * and SQLite's write lock held). Versions are drawn in memory above the
   * committed counter and the counter is written at commit, so versions follow
   * commit order across every connection and process. The counter is re-read
   * only when another connection committed since this one last looked.
   */
  beginVersions(): void {
    const seen = this.commitStamp();
    if (seen !== this.#seen) {
      const row = this.writer.get(COUNTERS_SQL)!;
      const committed = Number(row.value);
      this.#counter = committed;
      if (committed + 1 > this.#next) this.#next = committed + 1;
      const ids = this.#nextId;
      if (Number(row.object_id) + 1 > ids.objects) ids.objects = Number(row.object_id) + 1;
      if (Number(row.event_id) + 1 > ids.events) ids.events = Number(row.event_id) + 1;
      this.#seen = seen;
      // Another connection may have made or dropped sets.
      this.labelSetIds.clear();
    }
    this.journal.begin(this.#counter, seen);
  }

  /**
   * The writer's `PRAGMA data_version`: it moves only when another connection
   * or process commits.
   */
  commitStamp(): number {
    return Number(this.writer.get("PRAGMA data_version")!.data_version);
  }

  /**
   * The committed counter as this connection last knew it: after its own
   * last commit, or as re-read when another connection had committed.
   */
  get committedVersion(): number {
    return this.#counter;
  }

  /** Where the open transaction stands: a savepoint, or a member run without one, records it. */
  mark(): TxMark {
    return { journal: this.journal.mark(), log: this.log.mark(), writes: this.writer.writes };
  }

  /**
   * What this open keeps in memory for the transaction besides the journal
   * goes back to `mark`: the deferred log, and the label sets it knew (a set
   * made or dropped since may be undone).
   */
  #cutBack(mark: TxMark): void {
    this.log.rollbackTo(mark.log);
    this.labelSetIds.clear();
  }

  /**
   * Rolls the open transaction back to `savepoint` and releases it, with what
   * this open keeps in memory cut back to `mark` (where it stood when the
   * savepoint opened). A rollback that fails leaves the transaction's content
   * unknown: the journal then hands out no batch of it, and the error is
   * rethrown (the transaction then aborts).
   */
  rollbackToSavepoint(savepoint: string, mark: TxMark): void {
    this.#cutBack(mark);
    // The journal is cut by its own undo, which also covers a failing rollback.
    this.journal.undo(mark.journal, () => {
      this.writer.exec(`ROLLBACK TO ${savepoint}`);
      this.writer.exec(`RELEASE ${savepoint}`);
    });
  }

  /**
   * Whether a member run without a savepoint since `mark` left the
   * transaction open and wrote nothing (its failed statement undid itself);
   * if so, what this open keeps in memory for it is cut back.
   */
  nothingWrittenSince(mark: TxMark): boolean {
    if (this.writer.writes !== mark.writes || this.writer.inTransaction() !== true) return false;
    this.#cutBack(mark);
    this.journal.rollbackTo(mark.journal);
    return true;
  }

  /** The write transaction committed with its highest draw `drawn` (0: none). */
  committed(drawn: number): void {
    if (drawn > 0) this.#counter = drawn;
    this.journal.committed(this.#counter);
  }

  /**
   * Inserts a row under the next id of `table`, inside a write transaction:
   * `insert` runs with the id, which is taken only if `insert` returns. Ids
   * are never reused, even after the highest row is deleted.
   */
  insertWithId(table: IdTable, insert: (id: number) => void): number {
    const id = this.#nextId[table];
    insert(id);
    this.#nextId[table] = id + 1;
    return id;
  }

  /** The id the next row of `table` takes, inside a write transaction. */
  peekId(table: IdTable): number {
    return this.#nextId[table];
  }

  /** Takes the id `peekId` returned: its row was inserted. */
  takeId(table: IdTable): void {
    this.#nextId[table]++;
  }

  /** The version `takeVersion` returns next, without taking it. */
  peekVersion(): number {
    return this.#next;
  }

  /** The next resource version, inside a write transaction. */
  takeVersion(): number {
    return this.#next++;
  }

  /** `n` consecutive versions inside a write transaction; returns the first. */
  takeVersions(n: number): number {
    const first = this.#next;
    this.#next += n;
    return first;
  }

  /**
   * Records a transaction's highest draw in the counter row, with the id
   * counters, just before its commit. A transaction that drew no version
   * inserted no row.
   */
  publish(drawn: number): void {
    if (drawn > 0) {
      this.writer.run(PUBLISH_SQL, drawn, this.#nextId.objects - 1, this.#nextId.events - 1);
    }
  }

  /** The highest committed resource version, read on `db` (the reader, or the writer in a transaction). */
  latestVersion(db: Db): number {
    return Number(db.get(COUNTER_SQL)!.value);
  }

  /** Whether another connection or process committed since the last call: one cheap pragma. */
  externalCommitSeen(): boolean {
    // The writer's data_version moves only on other connections' commits.
    const v = Number(this.writer.get("PRAGMA data_version")!.data_version);
    const moved = this.#probeSeen !== undefined && v !== this.#probeSeen;
    this.#probeSeen = v;
    return moved;
  }

  /**
   * Refuses a write transaction from a term that is over: run inside it, so
   * no successor can take the lease between the check and the commit.
   * @throws {FencedError}
   */
  checkFence(fence: Fence | undefined): void {
    if (fence === undefined) return;
    refuseStaleFence(fence, this.writer.get(FENCE_SQL, fence.lease));
  }

  protected describeFailure(error: unknown): string {
    return `SQLite store failure: ${this.driver.describeFailure(error).message}`;
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
