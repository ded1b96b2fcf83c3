/**
 * The SQLite C API through `Deno.dlopen`: the symbols table, the result and
 * type codes the driver reads, and the loaded library, shared by every
 * connection that uses it and closed when the last one closes.
 *
 * Deno-only: imported (dynamically) only when `driver: "ffi"` is chosen.
 *
 * @module
 */

/** The oldest SQLite whose SQL the store uses (the JSON `->>` operator; STRICT needs 3.37). */
export const MIN_SQLITE_VERSION = 3_038_000;

/** The SQLite functions the driver calls. None are nonblocking: the seam is synchronous. */
const SYMBOLS = {
  sqlite3_libversion: { parameters: [], result: "pointer" },
  sqlite3_libversion_number: { parameters: [], result: "i32" },
  sqlite3_open_v2: { parameters: ["buffer", "buffer", "i32", "pointer"], result: "i32" },
  sqlite3_close_v2: { parameters: ["pointer"], result: "i32" },
  sqlite3_extended_result_codes: { parameters: ["pointer", "i32"], result: "i32" },
  sqlite3_errmsg: { parameters: ["pointer"], result: "pointer" },
  sqlite3_errstr: { parameters: ["i32"], result: "pointer" },
  sqlite3_exec: {
    parameters: ["pointer", "buffer", "pointer", "pointer", "pointer"],
    result: "i32",
  },
  sqlite3_busy_timeout: { parameters: ["pointer", "i32"], result: "i32" },
  sqlite3_changes64: { parameters: ["pointer"], result: "i64" },
  sqlite3_get_autocommit: { parameters: ["pointer"], result: "i32" },
  sqlite3_prepare_v3: {
    parameters: ["pointer", "buffer", "i32", "u32", "buffer", "pointer"],
    result: "i32",
  },
  sqlite3_finalize: { parameters: ["pointer"], result: "i32" },
  sqlite3_reset: { parameters: ["pointer"], result: "i32" },
  sqlite3_step: { parameters: ["pointer"], result: "i32" },
  sqlite3_bind_parameter_count: { parameters: ["pointer"], result: "i32" },
  sqlite3_bind_null: { parameters: ["pointer", "i32"], result: "i32" },
  sqlite3_bind_int64: { parameters: ["pointer", "i32", "i64"], result: "i32" },
  sqlite3_bind_double: { parameters: ["pointer", "i32", "f64"], result: "i32" },
  // The destructor is passed as an integer: -1 is SQLITE_TRANSIENT (SQLite copies the bytes).
  sqlite3_bind_text: { parameters: ["pointer", "i32", "buffer", "i32", "isize"], result: "i32" },
  sqlite3_bind_blob: { parameters: ["pointer", "i32", "buffer", "i32", "isize"], result: "i32" },
  sqlite3_bind_zeroblob: { parameters: ["pointer", "i32", "i32"], result: "i32" },
  sqlite3_column_count: { parameters: ["pointer"], result: "i32" },
  sqlite3_column_name: { parameters: ["pointer", "i32"], result: "pointer" },
  sqlite3_column_type: { parameters: ["pointer", "i32"], result: "i32" },
  sqlite3_column_int64: { parameters: ["pointer", "i32"], result: "i64" },
  sqlite3_column_double: { parameters: ["pointer", "i32"], result: "f64" },
  sqlite3_column_text: { parameters: ["pointer", "i32"], result: "pointer" },
  sqlite3_column_blob: { parameters: ["pointer", "i32"], result: "pointer" },
  sqlite3_column_bytes: { parameters: ["pointer", "i32"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

/** The bound functions of a loaded library. */
export type Symbols = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

/** Result and type codes (sqlite3.h). */
export const SQLITE_OK = 0;
export const SQLITE_ROW = 100;
export const SQLITE_DONE = 101;
export const SQLITE_MISUSE = 21;
export const SQLITE_INTEGER = 1;
export const SQLITE_FLOAT = 2;
export const SQLITE_TEXT = 3;
export const SQLITE_BLOB = 4;
/** READWRITE | CREATE | NOMUTEX (one thread per connection) | EXRESCODE (extended codes). */
export const OPEN_FLAGS = 0x2 | 0x4 | 0x8000 | 0x0200_0000;
/** READONLY | URI (a `file:` name may carry `immutable=1`) | NOMUTEX | EXRESCODE. */
export const OPEN_READ_ONLY_FLAGS = 0x1 | 0x40 | 0x8000 | 0x0200_0000;
/** The statement is long-lived (it sits in the store's cache). */
export const SQLITE_PREPARE_PERSISTENT = 0x1;
/** The destructor value telling SQLite to copy a bound buffer before the call returns. */
export const SQLITE_TRANSIENT = -1n;

/** A failure the driver reports: SQLite's extended result code and message, as node:sqlite does. */
export class SqliteFfiError extends Error {
  /** SQLite's extended result code. */
  readonly errcode: number;
  /** SQLite's description of the primary result code. */
  readonly errstr: string;

  constructor(message: string, errcode: number, errstr: string) {
    super(message);
    this.name = "SqliteFfiError";
    this.errcode = errcode;
    this.errstr = errstr;
  }
}

/** Reads a NUL-terminated UTF-8 string SQLite owns. */
export function cString(pointer: Deno.PointerValue): string {
  return pointer === null ? "" : Deno.UnsafePointerView.getCString(pointer);
}

/** The library's name on this platform, as the dynamic loader finds it. */
export function defaultLibraryName(): string {
  switch (Deno.build.os) {
    case "darwin":
      return "libsqlite3.dylib";
    case "windows":
      return "sqlite3.dll";
    default:
      return "libsqlite3.so.0";
  }
}

/** `3038000` as `3.38.0`. */
export function versionText(n: number): string {
  return `${Math.floor(n / 1_000_000)}.${Math.floor(n / 1000) % 1000}.${n % 1000}`;
}

/** Refuses a library older than {@linkcode MIN_SQLITE_VERSION}, saying which version is needed. */
export function checkVersion(name: string, number: number, text: string): void {
  if (number < MIN_SQLITE_VERSION) {
    throw new Error(
      `the SQLite library ${JSON.stringify(name)} is version ${text}; the store needs SQLite ${
        versionText(MIN_SQLITE_VERSION)
      } or newer`,
    );
  }
}

/** One loaded library and how many connections hold it. */
export class SqliteLibrary {
  readonly name: string;
  readonly symbols: Symbols;
  /** `sqlite3_libversion()`, e.g. `3.40.1`. */
  readonly version: string;
  readonly #lib: Deno.DynamicLibrary<typeof SYMBOLS>;
  #holders = 0;

  private constructor(name: string, lib: Deno.DynamicLibrary<typeof SYMBOLS>) {
    this.name = name;
    this.#lib = lib;
    this.symbols = lib.symbols;
    this.version = cString(lib.symbols.sqlite3_libversion());
  }

  /** Loads `name` once its version is known to be new enough. */
  static load(name: string): SqliteLibrary {
    let probe;
    try {
      probe = Deno.dlopen(name, {
        sqlite3_libversion: SYMBOLS.sqlite3_libversion,
        sqlite3_libversion_number: SYMBOLS.sqlite3_libversion_number,
      });
    } catch (error) {
      const denied = error instanceof Deno.errors.NotCapable ||
        error instanceof Deno.errors.PermissionDenied;
      throw new Error(
        `cannot load the SQLite library ${JSON.stringify(name)}${
          denied ? " (FFI access is not granted: run Deno with --allow-ffi)" : ""
        }: ${(error as Error).message}`,
        { cause: error },
      );
    }
    try {
      checkVersion(
        name,
        probe.symbols.sqlite3_libversion_number(),
        cString(probe.symbols.sqlite3_libversion()),
      );
    } finally {
      probe.close();
    }
    return new SqliteLibrary(name, Deno.dlopen(name, SYMBOLS));
  }

  /** Counts a new holder. */
  hold(): void {
    this.#holders++;
  }

  /** Drops a holder; reports whether it was the last (the library is then closed). */
  release(): boolean {
    if (--this.#holders > 0) return false;
    this.#lib.close();
    return true;
  }
}

const loaded = new Map<string, SqliteLibrary>();

/** The library called `name`, loaded on first use; pair with {@linkcode releaseLibrary}. */
export function acquireLibrary(name: string): SqliteLibrary {
  let lib = loaded.get(name);
  if (lib === undefined) {
    lib = SqliteLibrary.load(name);
    loaded.set(name, lib);
  }
  lib.hold();
  return lib;
}

/** Drops a hold taken by {@linkcode acquireLibrary}; the last one unloads the library. */
export function releaseLibrary(lib: SqliteLibrary): void {
  if (lib.release() && loaded.get(lib.name) === lib) loaded.delete(lib.name);
}
