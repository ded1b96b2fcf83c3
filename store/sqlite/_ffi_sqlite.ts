/**
 * The Deno FFI shim: the driver seam over the system's (or any) SQLite library
 * through `Deno.dlopen`. A connection owns its statements and finalizes them
 * on close; the library stays loaded while any connection holds it.
 *
 * Deno-only: `openSqliteStore` imports this module dynamically, and only for
 * `driver: "ffi"`.
 *
 * @module
 */
import type { Connection, Driver, DriverFailure, OpenOptions, Statement } from "./_driver.ts";
import {
  acquireLibrary,
  cString,
  defaultLibraryName,
  OPEN_FLAGS,
  OPEN_READ_ONLY_FLAGS,
  releaseLibrary,
  SQLITE_MISUSE,
  SQLITE_OK,
  SQLITE_PREPARE_PERSISTENT,
  SqliteFfiError,
  type SqliteLibrary,
  type Symbols,
} from "./_ffi_library.ts";
import { FfiStatement, type StatementOwner } from "./_ffi_statement.ts";

const encoder = new TextEncoder();

function cStringBytes(text: string): Uint8Array {
  return encoder.encode(`${text}\0`);
}

function takePointer(out: BigUint64Array): Deno.PointerValue {
  return Deno.UnsafePointer.create(out[0]);
}

/** One `sqlite3*` handle and the statements prepared on it. */
export class FfiConnection implements Connection, StatementOwner {
  readonly symbols: Symbols;
  readonly handle: Deno.PointerObject;
  readonly #lib: SqliteLibrary;
  readonly #statements = new Set<FfiStatement>();
  #open = true;

  private constructor(lib: SqliteLibrary, handle: Deno.PointerObject) {
    this.#lib = lib;
    this.symbols = lib.symbols;
    this.handle = handle;
  }

  /** Opens `path` read-write, creating it (or read-only); takes over `lib`'s hold on success. */
  static open(lib: SqliteLibrary, path: string, readOnly: boolean): FfiConnection {
    const sym = lib.symbols;
    const out = new BigUint64Array(1);
    const flags = readOnly ? OPEN_READ_ONLY_FLAGS : OPEN_FLAGS;
    const rc = sym.sqlite3_open_v2(cStringBytes(path), out, flags, null);
    const handle = takePointer(out);
    if (rc !== SQLITE_OK || handle === null) {
      const message = handle === null
        ? cString(sym.sqlite3_errstr(rc))
        : cString(sym.sqlite3_errmsg(handle));
      // A failed open still allocates a handle, which must be closed.
      if (handle !== null) sym.sqlite3_close_v2(handle);
      throw new SqliteFfiError(message, rc, cString(sym.sqlite3_errstr(rc)));
    }
    sym.sqlite3_extended_result_codes(handle, 1);
    return new FfiConnection(lib, handle);
  }

  exec(sql: string): void {
    const h = this.#live();
    const rc = this.symbols.sqlite3_exec(h, cStringBytes(sql), null, null, null);
    if (rc !== SQLITE_OK) throw this.failure(rc);
  }

  /** Whether a transaction is open: SQLite's autocommit mode is off. */
  get isTransaction(): boolean {
    return this.symbols.sqlite3_get_autocommit(this.#live()) === 0;
  }

  prepare(sql: string): Statement {
    const h = this.#live();
    const bytes = encoder.encode(sql);
    const out = new BigUint64Array(1);
    const rc = this.symbols.sqlite3_prepare_v3(
      h,
      bytes,
      bytes.byteLength,
      SQLITE_PREPARE_PERSISTENT,
      out,
      null,
    );
    if (rc !== SQLITE_OK) throw this.failure(rc);
    const stmt = takePointer(out);
    if (stmt === null) {
      throw new SqliteFfiError("Cannot prepare the statement: it is empty", SQLITE_MISUSE, "");
    }
    const s = new FfiStatement(this, stmt);
    this.#statements.add(s);
    return s;
  }

  /** Finalizes every statement, closes the handle and drops the library hold. */
  close(): void {
    this.#live();
    this.#open = false;
    for (const s of [...this.#statements]) s.finalize();
    const rc = this.symbols.sqlite3_close_v2(this.handle);
    const error = rc === SQLITE_OK ? undefined : this.failure(rc);
    releaseLibrary(this.#lib);
    if (error !== undefined) throw error;
  }

  failure(code: number): SqliteFfiError {
    const sym = this.symbols;
    return new SqliteFfiError(
      cString(sym.sqlite3_errmsg(this.handle)),
      code,
      cString(sym.sqlite3_errstr(code)),
    );
  }

  forget(stmt: FfiStatement): void {
    this.#statements.delete(stmt);
  }

  #live(): Deno.PointerObject {
    if (!this.#open) throw new TypeError("Cannot use the connection: it is closed");
    return this.handle;
  }
}

/** A driver over the SQLite library `library` (a file name or path for `Deno.dlopen`). */
export function ffiDriver(library: string): Driver {
  return {
    open(path: string, options?: OpenOptions): Connection {
      const lib = acquireLibrary(library);
      try {
        return FfiConnection.open(lib, path, options?.readOnly === true);
      } catch (error) {
        releaseLibrary(lib);
        throw error;
      }
    },
    describeFailure(error: unknown): DriverFailure {
      const e = error as { errcode?: unknown; message?: unknown };
      return {
        code: typeof e?.errcode === "number" ? e.errcode : undefined,
        message: typeof e?.message === "string" ? e.message : String(error),
      };
    },
  };
}

/**
 * The library the driver loads when the caller names none:
 * `BEEHIVE_SQLITE_LIBRARY` when set and readable, else the platform's name.
 */
export function libraryFromEnvironment(): string {
  const variable = "BEEHIVE_SQLITE_LIBRARY";
  if (Deno.permissions.querySync({ name: "env", variable }).state === "granted") {
    const value = Deno.env.get(variable);
    if (value !== undefined && value !== "") return value;
  }
  return defaultLibraryName();
}
