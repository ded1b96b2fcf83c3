/**
 * JSON encoding of user values, and per-kind decoding through a migrator.
 *
 * @module
 */
import { SchemaVersionDowngradeError } from "./errors.ts";
import type { Migrator } from "./migrator.ts";

/**
 * Encodes a JSON value strictly. Anything `JSON.stringify` cannot encode (a
 * BigInt, a cycle, `undefined`, a function) is refused, and so is a
 * non-finite number (`NaN`, `±Infinity`), which it would silently turn into
 * `null`: the error names the path, rooted at `what` (`spec.items[2].size`).
 * Containers nested deeper than `maxDepth` (`{}` is depth 1) are refused
 * before the encoder recurses into them.
 * @throws {TypeError} not encodable, or a non-finite number.
 * @throws {NestingDepthError} nested deeper than `maxDepth`.
 */
export function encodeJson(value: unknown, what: string, maxDepth = MAX_NESTING_DEPTH): string {
  let plain = false;
  try {
    plain = isPlainAndFinite(value, 0, maxDepth);
  } catch {
    // A throwing getter: the exact path below reports it as stringify would.
  }
  if (plain) return encodePlain(value, what);
  return encodeExact(value, what, maxDepth);
}

/** The deepest nesting `encodeJson` accepts at most, whatever it is asked: far below a stack overflow. */
export const MAX_NESTING_DEPTH = 1_000;

/** A value nests containers deeper than the limit it was encoded under. */
export class NestingDepthError extends RangeError {
  /** The limit, in nested containers. */
  readonly limit: number;
  /** Creates the error for `what` nested beyond `limit`. */
  constructor(what: string, limit: number) {
    super(`Cannot encode ${what} as JSON: it nests containers more than ${limit} deep`);
    this.limit = limit;
  }
}

/** The deepest plain structure the fast check walks; deeper (or cyclic) takes the exact path. */
const PLAIN_DEPTH = 256;

/**
 * Whether `value` is plain JSON data (primitives, arrays, objects of the
 * Object or null prototype without `toJSON`) holding no non-finite number:
 * then plain `JSON.stringify` is exact, and about 7x cheaper than a replacer.
 */
function isPlainAndFinite(value: unknown, depth: number, maxDepth: number): boolean {
  if (typeof value === "number") return Number.isFinite(value);
  if (typeof value !== "object" || value === null) return true;
  // Too deep, or cyclic: the exact path tells which, and names it.
  if (depth >= maxDepth || depth > PLAIN_DEPTH) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (!isPlainAndFinite(value[i], depth + 1, maxDepth)) return false;
    }
    return true;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  const o = value as Record<string, unknown>;
  if ("toJSON" in o) return false;
  for (const k in o) {
    if (!isPlainAndFinite(o[k], depth + 1, maxDepth)) return false;
  }
  return true;
}

function encodePlain(value: unknown, what: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (cause) {
    throw new TypeError(
      `Cannot encode ${what} as JSON: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
  if (text === undefined) {
    throw new TypeError(`Cannot encode ${what} as JSON: current value is ${typeof value}`);
  }
  return text;
}

/** Encodes through a replacer that tracks each container's path and refuses non-finite numbers. */
function encodeExact(value: unknown, what: string, maxDepth: number): string {
  // Each container's path, so the replacer can name where a bad number sits.
  const paths = new Map<object, string>();
  // Each container's nesting depth, so a deep value is refused before stringify recurses into it.
  const depths = new Map<object, number>();
  function replacer(this: unknown, key: string, v: unknown): unknown {
    const base = paths.get(this as object);
    const depth = (depths.get(this as object) ?? 0) + 1;
    // The one holder without a path is stringify's own wrapper of the root.
    const at = base === undefined
      ? what
      : Array.isArray(this)
      ? `${base}[${key}]`
      : `${base}${propertyPath(key)}`;
    if (typeof v === "number" || v instanceof Number) {
      const n = Number(v);
      if (!Number.isFinite(n)) {
        throw new NonFiniteError(
          `Cannot encode ${at} as JSON: current value is ${n}, and JSON has no non-finite numbers`,
        );
      }
    } else if (typeof v === "object" && v !== null) {
      if (depth > maxDepth) throw new NestingDepthError(what, maxDepth);
      paths.set(v, at);
      depths.set(v, depth);
    }
    return v;
  }
  let text: string | undefined;
  try {
    text = JSON.stringify(value, replacer);
  } catch (cause) {
    if (cause instanceof NonFiniteError) throw new TypeError(cause.message);
    if (cause instanceof NestingDepthError) throw cause;
    throw new TypeError(
      `Cannot encode ${what} as JSON: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
  if (text === undefined) {
    throw new TypeError(`Cannot encode ${what} as JSON: current value is ${typeof value}`);
  }
  return text;
}

class NonFiniteError extends TypeError {}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function propertyPath(key: string): string {
  return IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/** The UTF-8 length of `text`, without encoding it (a lone surrogate counts 3, as U+FFFD). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** Whether `text` is longer than `limit` UTF-8 bytes, counting only when it must. */
export function exceedsBytes(text: string, limit: number): boolean {
  if (text.length > limit) return true;
  if (text.length * 3 <= limit) return false;
  return utf8Length(text) > limit;
}

/** Why a stored value did not decode. */
export class DecodeError extends Error {}

/** Decodes one kind's stored values, converting older schema versions. */
export class KindCodec {
  readonly #migrator: Migrator | undefined;

  constructor(migrator: Migrator | undefined) {
    this.#migrator = migrator;
  }

  /** The version this build stamps on a spec write (0 = no opinion). */
  get specVersion(): number {
    return this.#migrator?.specVersion ?? 0;
  }

  /** The version this build stamps on a status write (0 = no opinion). */
  get statusVersion(): number {
    return this.#migrator?.statusVersion ?? 0;
  }

  /** @throws {DecodeError} */
  decodeSpec(text: string, version: number): unknown {
    return this.#decode(text, version, "spec");
  }

  /** @throws {DecodeError} */
  decodeStatus(text: string, version: number): unknown {
    return this.#decode(text, version, "status");
  }

  #decode(text: string, stored: number, column: "spec" | "status"): unknown {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (cause) {
      throw new DecodeError(`the stored ${column} is not JSON`, { cause });
    }
    const m = this.#migrator;
    const current = column === "spec" ? this.specVersion : this.statusVersion;
    if (m === undefined || current === 0 || stored === current) return value;
    if (stored > current) {
      throw new DecodeError(
        `the stored ${column} was written at schema version ${stored}, newer than this build's ${current}`,
        { cause: new SchemaVersionDowngradeError(`${column} version ${stored} > ${current}`) },
      );
    }
    let converted: unknown;
    try {
      converted = column === "spec" ? m.convertSpec(stored, value) : m.convertStatus(stored, value);
    } catch (cause) {
      throw new DecodeError(`converting the stored ${column} from version ${stored} failed`, {
        cause,
      });
    }
    if (isThenable(converted)) {
      // Converters are synchronous: a promise is not a value to hand a controller.
      Promise.resolve(converted).catch(() => {});
      throw new DecodeError(
        `converting the stored ${column} from version ${stored} returned a promise; migrator converters must be synchronous`,
      );
    }
    return converted;
  }
}

function isThenable(value: unknown): boolean {
  return (typeof value === "object" || typeof value === "function") && value !== null &&
    typeof (value as { then?: unknown }).then === "function";
}
