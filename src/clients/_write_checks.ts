/**
 * The checks every spec, status, condition and event write passes before it
 * reaches the store: schema validation, strict JSON, and the size limits.
 *
 * @module
 */
import { encodeJson, exceedsBytes, utf8Length } from "../model/_codec.ts";
import { kindName } from "../model/_kind_keys.ts";
import {
  InvalidSpecError,
  InvalidStatusError,
  TooLargeError,
  type ValidationIssue,
} from "../model/errors.ts";
import type { StandardSchema } from "../model/standard_schema.ts";
import type { GroupKind } from "../store.ts";
import { describe } from "../model/_values.ts";

/** The size limits, in UTF-8 bytes. */
export interface Limits {
  readonly nameBytes: number;
  readonly objectBytes: number;
  readonly messageBytes: number;
}

/** The validators of one kind. */
export interface KindSchemas {
  readonly spec: StandardSchema | undefined;
  readonly status: StandardSchema | undefined;
}

/** No validators. */
export const NO_SCHEMAS: KindSchemas = Object.freeze({ spec: undefined, status: undefined });

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === "object" || typeof value === "function") && value !== null &&
    typeof (value as { then?: unknown }).then === "function";
}

function renderPath(path: ValidationIssue["path"]): string {
  if (!Array.isArray(path) || path.length === 0) return "";
  const keys = path.map((p) =>
    typeof p === "object" && p !== null && "key" in p ? String(p.key) : String(p)
  );
  return `${keys.join(".")}: `;
}

function renderIssues(issues: readonly ValidationIssue[]): string {
  if (issues.length === 0) return "the validator reported a failure with no issues";
  const shown = issues.slice(0, 3).map((i) =>
    typeof i === "object" && i !== null ? `${renderPath(i.path)}${String(i.message)}` : String(i)
  );
  const more = issues.length > 3 ? ` (and ${issues.length - 3} more)` : "";
  return shown.join("; ") + more;
}

/**
 * Runs `schema` over `value` and resolves to its output; no schema passes the
 * value through. A validator that throws rejects with what it threw.
 * @throws {InvalidSpecError} @throws {InvalidStatusError} the value failed.
 * @throws {TypeError} the validator returned something that is not a Standard Schema result.
 */
export async function validate(
  schema: StandardSchema | undefined,
  value: unknown,
  what: "spec" | "status",
  gk: GroupKind,
): Promise<unknown> {
  if (schema === undefined) return value;
  let result: unknown = schema["~standard"].validate(value);
  if (isThenable(result)) result = await result;
  const r = result as { value?: unknown; issues?: unknown } | null;
  if (typeof r !== "object" || r === null) {
    throw new TypeError(
      `Cannot validate the ${what} of ${kindName(gk)}: the schema's validate returned ${
        describe(result)
      }, expected { value } or { issues }`,
    );
  }
  if (r.issues !== undefined) {
    if (!Array.isArray(r.issues)) {
      throw new TypeError(
        `Cannot validate the ${what} of ${kindName(gk)}: the schema's issues are ${
          describe(r.issues)
        }, expected an array`,
      );
    }
    const issues = [...r.issues] as ValidationIssue[];
    const message = `Cannot write the ${what} of ${kindName(gk)}: ${renderIssues(issues)}`;
    throw what === "spec"
      ? new InvalidSpecError(message, { issues })
      : new InvalidStatusError(message, { issues });
  }
  if (!("value" in r)) {
    throw new TypeError(
      `Cannot validate the ${what} of ${
        kindName(gk)
      }: the schema's validate returned an object with neither value nor issues`,
    );
  }
  return r.value;
}

/**
 * Encodes a JSON value strictly and checks its size against `limit`.
 * @throws {TypeError} not encodable, or a non-finite number (the message names the path).
 * @throws {TooLargeError} the JSON is longer than `limit` UTF-8 bytes.
 */
export function encodeBounded(value: unknown, what: string, gk: GroupKind, limit: number): string {
  const text = encodeJson(value, what);
  if (exceedsBytes(text, limit)) {
    const bytes = utf8Length(text);
    throw new TooLargeError(
      `Cannot write the ${what} of ${
        kindName(gk)
      }: its JSON is ${bytes} bytes, above limits.objectBytes (${limit})`,
      { bytes, limit },
    );
  }
  return text;
}

/**
 * Validates, encodes and bounds one spec or status write.
 * @throws {InvalidSpecError} @throws {InvalidStatusError} @throws {TooLargeError} @throws {TypeError}
 */
export async function prepareValue(
  schema: StandardSchema | undefined,
  value: unknown,
  what: "spec" | "status",
  gk: GroupKind,
  limits: Limits,
): Promise<string> {
  const output = await validate(schema, value, what, gk);
  return encodeBounded(output, what, gk, limits.objectBytes);
}

/** Whether a text field is longer than `limit` UTF-8 bytes (non-strings are left to the store). */
export function tooLong(text: unknown, limit: number): boolean {
  return typeof text === "string" && exceedsBytes(text, limit);
}
