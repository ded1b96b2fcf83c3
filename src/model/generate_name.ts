/**
 * Names for objects with no natural name.
 *
 * @module
 */

/**
 * Returns `prefix` joined by `-` to a fresh UUIDv7: time-ordered, so names
 * sharing a prefix sort by creation. Collision-resistant, not collision-proof:
 * a caller generating names should retry a bounded number of times on
 * `NameTakenError` (and no other error).
 *
 * @example
 * ```ts
 * import { generateName } from "@beehive/beehive";
 * const name = generateName("cache"); // "cache-019..."
 * console.assert(name.startsWith("cache-"));
 * ```
 * @throws {TypeError} `prefix` is not a string.
 */
export function generateName(prefix: string): string {
  if (typeof prefix !== "string") {
    throw new TypeError(`Cannot generate a name: prefix is ${typeof prefix}, expected a string`);
  }
  return `${prefix}-${uuidv7()}`;
}

/** A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. */
export function uuidv7(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  let ms = Date.now();
  for (let i = 5; i >= 0; i--) {
    bytes[i] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  bytes[6] = (bytes[6] & 0x0f) | 0x70;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${
    hex.slice(20)
  }`;
}
