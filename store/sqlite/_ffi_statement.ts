/**
 * A prepared statement over the SQLite C API: binds every {@linkcode SqlValue}
 * type, steps, reads rows as objects or arrays, and always resets, so no
 * statement holds a read snapshot between calls.
 *
 * @module
 */
import type { RunResult, SqlValue, Statement } from "./_driver.ts";
import {
  cString,
  SQLITE_BLOB,
  SQLITE_DONE,
  SQLITE_FLOAT,
  SQLITE_INTEGER,
  SQLITE_OK,
  SQLITE_ROW,
  SQLITE_TEXT,
  SQLITE_TRANSIENT,
  type Symbols,
} from "./_ffi_library.ts";

/** What a statement needs from its connection. */
export interface StatementOwner {
  readonly symbols: Symbols;
  /** The connection's handle (SQLite's error state lives there). */
  readonly handle: Deno.PointerObject;
  /** Builds the error for a failed call's result code. */
  failure(code: number): Error;
  /** Forgets a finalized statement. */
  forget(stmt: FfiStatement): void;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** Scratch for text binds: SQLITE_TRANSIENT copies it before bind returns, so one buffer serves all. */
let scratch = new Uint8Array(4096);
/** Scratch for non-ASCII text reads, decoded before the next read. */
let readScratch = new Uint8Array(4096);

function encode(text: string): number {
  // UTF-8 takes at most 3 bytes per UTF-16 unit.
  if (text.length * 3 > scratch.length) scratch = new Uint8Array(text.length * 3);
  return encoder.encodeInto(text, scratch).written;
}

export class FfiStatement implements Statement {
  readonly #owner: StatementOwner;
  readonly #sym: Symbols;
  #handle: Deno.PointerObject | null;
  readonly #params: number;
  #arrays = false;
  #names: string[] | undefined;

  constructor(owner: StatementOwner, handle: Deno.PointerObject) {
    this.#owner = owner;
    this.#sym = owner.symbols;
    this.#handle = handle;
    this.#params = this.#sym.sqlite3_bind_parameter_count(handle);
  }

  setReturnArrays(enabled: boolean): void {
    this.#arrays = enabled;
  }

  run(...params: SqlValue[]): RunResult {
    const h = this.#bind(params);
    try {
      let rc;
      while ((rc = this.#sym.sqlite3_step(h)) === SQLITE_ROW);
      if (rc !== SQLITE_DONE) throw this.#owner.failure(rc);
      return { changes: Number(this.#sym.sqlite3_changes64(this.#owner.handle)) };
    } finally {
      this.#sym.sqlite3_reset(h);
    }
  }

  get(...params: SqlValue[]): Record<string, SqlValue> | undefined {
    const h = this.#bind(params);
    try {
      const rc = this.#sym.sqlite3_step(h);
      if (rc === SQLITE_ROW) return this.#row(h);
      if (rc !== SQLITE_DONE) throw this.#owner.failure(rc);
      return undefined;
    } finally {
      this.#sym.sqlite3_reset(h);
    }
  }

  all(...params: SqlValue[]): Record<string, SqlValue>[] {
    const h = this.#bind(params);
    try {
      const rows: Record<string, SqlValue>[] = [];
      let rc;
      while ((rc = this.#sym.sqlite3_step(h)) === SQLITE_ROW) rows.push(this.#row(h));
      if (rc !== SQLITE_DONE) throw this.#owner.failure(rc);
      return rows;
    } finally {
      this.#sym.sqlite3_reset(h);
    }
  }

  /** Releases the statement; any later call throws. Idempotent. */
  finalize(): void {
    const h = this.#handle;
    if (h === null) return;
    this.#handle = null;
    this.#sym.sqlite3_finalize(h);
    this.#owner.forget(this);
  }

  #live(): Deno.PointerObject {
    if (this.#handle === null) {
      throw new TypeError("Cannot use the statement: it has been finalized");
    }
    return this.#handle;
  }

  /** Binds `params` to ?1..?n, and NULL to any parameter left over. */
  #bind(params: SqlValue[]): Deno.PointerObject {
    const h = this.#live();
    const sym = this.#sym;
    const n = Math.max(params.length, this.#params);
    for (let i = 0; i < n; i++) {
      const rc = i < params.length
        ? this.#bindOne(h, i + 1, params[i])
        : sym.sqlite3_bind_null(h, i + 1);
      if (rc !== SQLITE_OK) {
        const error = this.#owner.failure(rc);
        sym.sqlite3_reset(h);
        throw error;
      }
    }
    return h;
  }

  #bindOne(h: Deno.PointerObject, i: number, v: SqlValue): number {
    const sym = this.#sym;
    switch (typeof v) {
      case "number":
        // As node:sqlite does; SQLite stores an integral double in an INTEGER column as an integer.
        return sym.sqlite3_bind_double(h, i, v);
      case "string": {
        const n = encode(v); // may replace `scratch`: read it after
        return sym.sqlite3_bind_text(h, i, scratch, n, SQLITE_TRANSIENT);
      }
      case "bigint":
        return sym.sqlite3_bind_int64(h, i, v);
      case "object":
        if (v === null) return sym.sqlite3_bind_null(h, i);
        if (v instanceof Uint8Array) {
          // An empty buffer may reach SQLite as a NULL pointer, which would bind NULL.
          return v.byteLength === 0
            ? sym.sqlite3_bind_zeroblob(h, i, 0)
            : sym.sqlite3_bind_blob(h, i, v, v.byteLength, SQLITE_TRANSIENT);
        }
    }
    sym.sqlite3_reset(h);
    throw new TypeError(
      `Cannot bind parameter ${i}: current value is of type ${
        typeof v === "object" ? (v as object).constructor?.name ?? "object" : typeof v
      }, expected a number, bigint, string, Uint8Array or null`,
    );
  }

  #columnNames(h: Deno.PointerObject): string[] {
    const count = this.#sym.sqlite3_column_count(h);
    let names = this.#names;
    if (names === undefined || names.length !== count) {
      names = [];
      for (let i = 0; i < count; i++) names.push(cString(this.#sym.sqlite3_column_name(h, i)));
      this.#names = names;
    }
    return names;
  }

  #row(h: Deno.PointerObject): Record<string, SqlValue> {
    const names = this.#columnNames(h);
    if (this.#arrays) {
      const row: SqlValue[] = new Array(names.length);
      for (let i = 0; i < names.length; i++) row[i] = this.#value(h, i);
      return row as unknown as Record<string, SqlValue>;
    }
    // Null-prototype rows, as node:sqlite returns.
    const row: Record<string, SqlValue> = Object.create(null);
    for (let i = 0; i < names.length; i++) row[names[i]] = this.#value(h, i);
    return row;
  }

  #value(h: Deno.PointerObject, i: number): SqlValue {
    const sym = this.#sym;
    switch (sym.sqlite3_column_type(h, i)) {
      case SQLITE_INTEGER: {
        // A double holds every safe integer exactly, and avoids a BigInt per value.
        const d = sym.sqlite3_column_double(h, i);
        if (Number.isSafeInteger(d)) return d;
        const big = sym.sqlite3_column_int64(h, i) as bigint;
        const n = Number(big);
        return Number.isSafeInteger(n) ? n : big;
      }
      case SQLITE_FLOAT:
        return sym.sqlite3_column_double(h, i);
      case SQLITE_TEXT: {
        const p = sym.sqlite3_column_text(h, i);
        const len = sym.sqlite3_column_bytes(h, i);
        if (p === null || len === 0) return "";
        // As many UTF-16 units as bytes means all ASCII and no NUL cut it short.
        const text = Deno.UnsafePointerView.getCString(p);
        if (text.length === len) return text;
        if (len > readScratch.length) readScratch = new Uint8Array(len * 2);
        const bytes = readScratch.subarray(0, len);
        Deno.UnsafePointerView.copyInto(p, bytes);
        return decoder.decode(bytes);
      }
      case SQLITE_BLOB: {
        const p = sym.sqlite3_column_blob(h, i);
        const len = sym.sqlite3_column_bytes(h, i);
        const out = new Uint8Array(len);
        if (p !== null && len > 0) Deno.UnsafePointerView.copyInto(p, out);
        return out;
      }
      default:
        return null;
    }
  }
}
