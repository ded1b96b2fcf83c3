/**
 * JSON encoding of user values, and per-kind decoding through a migrator.
 *
 * @module
 */
import { SchemaVersionDowngradeError } from "./errors.ts";
import type { Migrator } from "./migrator.ts";

/**
 * Encodes a JSON value. Anything `JSON.stringify` cannot encode (a BigInt, a
 * cycle, `undefined`, a function) is refused.
 * @throws {TypeError}
 */
export function encodeJson(value: unknown, what: string): string {
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
