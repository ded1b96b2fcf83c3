/**
 * The write log's entries a SQLite write transaction appended, held in
 * memory and inserted together: once just before the commit, and before
 * any statement of the transaction that reads or writes `object_writes`
 * itself (so the transaction always sees its own entries). One commit of
 * several writes then runs one multi-row `INSERT` instead of one per entry.
 *
 * A savepoint's rollback cuts the entries back to where they stood when it
 * opened ({@linkcode DeferredLog.mark}): those appended since are dropped,
 * and those inserted since — appended before it or after — were undone by
 * the rollback itself, so they wait again. A rolled-back transaction drops
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

/** Where a transaction's entries stood when a savepoint opened. */
export interface LogMark {
  /** How many values had been appended. */
  readonly appended: number;
  /** How many of them had been inserted. */
  readonly inserted: number;
}

/** The open write transaction's log entries not yet inserted, on one writer connection. */
export class DeferredLog implements LogSink {
  /** Every entry of the transaction, flat: {@linkcode COLUMNS} values each. */
  #values: SqlValue[] = [];
  /** How many of them are inserted. */
  #inserted = 0;
  readonly #prepare: (sql: string) => Statement;
  readonly #wrote: () => void;
  /** The statement inserting `n` entries, at index `n`. */
  readonly #inserts: (Statement | undefined)[] = [];

  /**
   * `prepare` compiles on the writer connection, outside its checked
   * statement cache; `wrote` counts each insert as a writing statement there.
   */
  constructor(prepare: (sql: string) => Statement, wrote: () => void) {
    this.#prepare = prepare;
    this.#wrote = wrote;
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
  mark(): LogMark {
    return { appended: this.#values.length, inserted: this.#inserted };
  }

  /**
   * The savepoint opened at `mark` rolled back: the entries appended since
   * never happened, and the rollback undid every insert made since.
   */
  rollbackTo(mark: LogMark): void {
    if (this.#values.length > mark.appended) this.#values.length = mark.appended;
    if (this.#inserted > mark.inserted) this.#inserted = mark.inserted;
  }

  /** Inserts the waiting entries; a failure leaves them waiting (the transaction then aborts). */
  flush(): void {
    const values = this.#values;
    while (this.#inserted < values.length) {
      const n = Math.min(CHUNK, (values.length - this.#inserted) / COLUMNS);
      const from = this.#inserted;
      this.#statement(n).run(...values.slice(from, from + n * COLUMNS));
      this.#inserted = from + n * COLUMNS;
      this.#wrote();
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
