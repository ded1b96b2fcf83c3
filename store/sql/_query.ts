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

/** The statements a body yields, with their results typed. */
export const q = {
  /** Every row of `sql`, as arrays in column order. */
  *rows(sql: string, ...params: unknown[]): Q<RowArray[]> {
    return (yield { op: "rows", sql, params }) as RowArray[];
  },
  /** The first row of `sql` as an array in column order, or `undefined`. */
  *row(sql: string, ...params: unknown[]): Q<RowArray | undefined> {
    return (yield { op: "row", sql, params }) as RowArray | undefined;
  },
  /** Every row of `sql`, keyed by column name. */
  *all(sql: string, ...params: unknown[]): Q<Row[]> {
    return (yield { op: "all", sql, params }) as Row[];
  },
  /** The first row of `sql` keyed by column name, or `undefined`. */
  *get(sql: string, ...params: unknown[]): Q<Row | undefined> {
    return (yield { op: "get", sql, params }) as Row | undefined;
  },
  /** Runs `sql` and returns how many rows it changed. */
  *run(sql: string, ...params: unknown[]): Q<number> {
    return (yield { op: "run", sql, params }) as number;
  },
};

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
  run: (conn: C, query: Query) => Promise<unknown>,
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
