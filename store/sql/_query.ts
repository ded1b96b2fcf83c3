/**
 * How a shared family talks to the database: its body is a generator that
 * yields each statement ({@linkcode q}) and is resumed with the statement's
 * result. The dialect's session drives it — SQLite's synchronously, in one
 * go on its connection (`driveSync`); PostgreSQL's awaiting each round trip
 * (`driveAsync`) — so one body serves both without SQLite paying for a
 * promise per statement. A driver error is thrown back into the body at the
 * `yield`, where the family may catch it (a unique violation becoming
 * `NameTakenError`).
 *
 * @module
 */
import type { Row, RowArray } from "./_rows.ts";

/** What a statement returns: every row as arrays, the first as an array, every row keyed, the first keyed, or the rows it changed. */
export type Op = "rows" | "row" | "all" | "get" | "run";

/** One statement a body yields: `?` placeholders, bound in order. */
export interface Query {
  readonly op: Op;
  readonly sql: string;
  readonly params: unknown[];
}

/** A family body (or a step of one) that yields statements and returns `T`. */
export type Q<T> = Generator<Query, T, unknown>;

/**
 * One statement as an iterator a body delegates to (`yield*`): it yields the
 * statement once and returns what the body was resumed with. A plain object
 * rather than a generator: cheaper to make, one per statement.
 */
class Step<T> {
  readonly #query: Query;
  #sent = false;

  constructor(query: Query) {
    this.#query = query;
  }

  next(result?: unknown): IteratorResult<Query, T> {
    if (this.#sent) return { done: true, value: result as T };
    this.#sent = true;
    return { done: false, value: this.#query };
  }

  /** A driver error thrown back into the body: it surfaces at the body's `yield*`. */
  throw(error: unknown): never {
    throw error;
  }

  return(value: T): IteratorResult<Query, T> {
    this.#sent = true;
    return { done: true, value };
  }

  [Symbol.iterator](): this {
    return this;
  }
}

function step<T>(op: Op, sql: string, params: unknown[]): Q<T> {
  return new Step<T>({ op, sql, params }) as unknown as Q<T>;
}

/** The statements a body yields (`yield* q.row(…)`), with their results typed. */
export const q = {
  /** Every row of `sql`, as arrays in column order. */
  rows: (sql: string, ...params: unknown[]): Q<RowArray[]> => step("rows", sql, params),
  /** The first row of `sql` as an array in column order, or `undefined`. */
  row: (sql: string, ...params: unknown[]): Q<RowArray | undefined> => step("row", sql, params),
  /** Every row of `sql`, keyed by column name. */
  all: (sql: string, ...params: unknown[]): Q<Row[]> => step("all", sql, params),
  /** The first row of `sql` keyed by column name, or `undefined`. */
  get: (sql: string, ...params: unknown[]): Q<Row | undefined> => step("get", sql, params),
  /** Runs `sql` and returns how many rows it changed. */
  run: (sql: string, ...params: unknown[]): Q<number> => step("run", sql, params),
};

/** A step that runs no statement and returns `value` at once (a dialect answering from memory). */
export function done<T>(value: T): Q<T> {
  return {
    next: () => ({ done: true, value }),
    [Symbol.iterator]() {
      return this;
    },
  } as unknown as Q<T>;
}

/** A connection that runs a yielded statement: each dialect's `Db`. */
export interface Runs<R> {
  query(query: Query): R;
}

/** Runs `query` on `conn` (the runner both drives take). */
export function runOn<R>(conn: Runs<R>, query: Query): R {
  return conn.query(query);
}

/** Drives `body` to its end on a synchronous connection `conn`, without yielding to the event loop. */
export function driveSync<C, T>(body: Q<T>, conn: C, run: (conn: C, query: Query) => unknown): T {
  let step = body.next();
  while (!step.done) {
    let result: unknown;
    try {
      result = run(conn, step.value);
    } catch (error) {
      step = body.throw(error);
      continue;
    }
    step = body.next(result);
  }
  return step.value;
}

/** Drives `body` to its end on `conn`, awaiting each statement. */
export async function driveAsync<C, T>(
  body: Q<T>,
  conn: C,
  run: (conn: C, query: Query) => unknown,
): Promise<T> {
  let step = body.next();
  while (!step.done) {
    let result: unknown;
    try {
      result = await run(conn, step.value);
    } catch (error) {
      step = body.throw(error);
      continue;
    }
    step = body.next(result);
  }
  return step.value;
}
