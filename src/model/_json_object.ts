/**
 * A JSON object — not an array, not null — as decoded JSON holds one: what a
 * manifest, a request body, a patch or a schema is checked to be before its
 * fields are read.
 *
 * @module
 */

/** A decoded JSON object, its values not yet checked. */
export type JsonObject = Record<string, unknown>;

/** Whether `v` is a JSON object: an object, neither null nor an array. */
export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
