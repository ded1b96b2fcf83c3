/**
 * The synchronous SQLite driver seam: the structural subset of a driver the
 * adapter uses. `node:sqlite` is one shim over it; another driver (e.g. a Deno
 * FFI binding) needs only these members.
 *
 * @module
 */

/** A value a statement binds or returns. */
export type SqlValue = number | string | null | bigint | Uint8Array;

/** What running a write statement reports. */
export interface RunResult {
  /** Rows the statement changed. */
  readonly changes: number | bigint;
}

/** A prepared statement. Rows come back as plain objects keyed by column name. */
export interface Statement {
  /** Runs the statement to completion. */
  run(...params: SqlValue[]): RunResult;
  /** The first row, or `undefined`. The statement is reset afterwards. */
  get(...params: SqlValue[]): Record<string, SqlValue> | undefined;
  /** Every row. */
  all(...params: SqlValue[]): Record<string, SqlValue>[];
  /**
   * Optional: makes `get`/`all` return rows as arrays in column order, which
   * is cheaper to read. Drivers without it return objects, which the adapter
   * converts.
   */
  setReturnArrays?(enabled: boolean): void;
}

/** An open connection. */
export interface Connection {
  /** Runs one or more statements that bind nothing. */
  exec(sql: string): void;
  /** Compiles a statement. */
  prepare(sql: string): Statement;
  /**
   * Optional: whether a transaction is open (SQLite's autocommit mode is
   * off). A driver without it makes the store assume a failed statement may
   * have ended the transaction.
   */
  readonly isTransaction?: boolean;
  /** Closes the connection. */
  close(): void;
}

/** How a connection is opened. */
export interface OpenOptions {
  /**
   * Opens an existing file read-only (never creating it); `path` may then be
   * a `file:` URI (e.g. with `immutable=1`).
   */
  readonly readOnly?: boolean;
}

/** Opens connections. */
export interface Driver {
  /** Opens `path` (a file path), read-write and created if missing unless `options.readOnly`. */
  open(path: string, options?: OpenOptions): Connection;
  /** Normalizes an error this driver threw. */
  describeFailure(error: unknown): DriverFailure;
}

/**
 * A driver failure normalized by a shim: `code` is SQLite's extended result
 * code when the driver reports one, else `undefined`.
 */
export interface DriverFailure {
  readonly code: number | undefined;
  readonly message: string;
}
