/**
 * The write log's entries a SQLite write transaction appended, held in
 * memory and inserted together: once just before the commit, and before
 * any statement of the transaction that reads or writes `object_writes`
 * itself (so the transaction always sees its own entries). One commit of
 * several writes then runs one multi-row `INSERT` instead of one per entry.
 *
 * A savepoint's rollback cuts the entries back to where they stood when it
 * opened ({@linkcode DeferredLog.mark}); entries already inserted past that
 * point are undone by the rollback itself. A rolled-back transaction drops
 * them all.
 *
 * @module
 */
import type { SqlValue, Statement } from "./_driver.ts";
import type { DeferredLog as LogSink } from "../sql/_session.ts";

/** Columns an entry binds, in the order of {@linkcode rowsSql}. */
const COLUMNS = 8;

/** The most entries one statement inserts (8 parameters each). */
export const CHUNK = 16;

/** The `INSERT` of `n` entries. */
export function rowsSql(n: number): string {
  const row = "(?, ?, ?, ?, ?, ?, ?, ?)";
  return `INSERT INTO object_writes
  (resource_version, object_id, "group", kind, op, written_at, final, origin)
  VALUES ${Array.from({ length: n }, () => row).join(", ")}`;
}

/** The open write transaction's log entries not yet inserted, on one writer connection. */
export class DeferredLog implements LogSink {
  /** Every entry of the transaction, flat: {@linkcode COLUMNS} values each. */
  #values: SqlValue[] = [];
  /** How many of them are inserted. */
  #inserted = 0;
  readonly #prepare: (sql: string) => Statement;
  /** The statement inserting `n` entries, at index `n`. */
  readonly #inserts: (Statement | undefined)[] = [];

  /** `prepare` compiles on the writer connection, outside its checked statement cache. */
  constructor(prepare: (sql: string) => Statement) {
    this.#prepare = prepare;
  }

  /** Whether entries wait to be inserted. */
  get pending(): boolean {
    return this.#inserted < this.#values.length;
  }

  append(
    rv: number,
    objectId: number,
    group: string,
    kind: string,
    op: number,
    writtenAt: number,
    final: string | null,
    origin: number,
  ): void {
    this.#values.push(rv, objectId, group, kind, op, writtenAt, final, origin);
  }

  /** Where the entries stand: a savepoint opening records it. */
  mark(): number {
    return this.#values.length;
  }

  /**
   * The savepoint opened at `mark` rolled back: its entries never happened.
   * Those already inserted were undone by the rollback.
   */
  rollbackTo(mark: number): void {
    if (this.#values.length > mark) this.#values.length = mark;
    if (this.#inserted > mark) this.#inserted = mark;
  }

  /** Inserts the waiting entries; a failure leaves them waiting (the transaction then aborts). */
  flush(): void {
    const values = this.#values;
    while (this.#inserted < values.length) {
      const n = Math.min(CHUNK, (values.length - this.#inserted) / COLUMNS);
      const from = this.#inserted;
      this.#statement(n).run(...values.slice(from, from + n * COLUMNS));
      this.#inserted = from + n * COLUMNS;
    }
  }

  /** The transaction ended (committed or rolled back): nothing is owed. */
  clear(): void {
    this.#values = [];
    this.#inserted = 0;
  }

  #statement(n: number): Statement {
    return this.#inserts[n] ??= this.#prepare(rowsSql(n));
  }
}
