/**
 * The checks every spec, status, condition, event, finalizer and kind passes
 * before a write reaches the store: schema validation, strict JSON, and the
 * limits on every user-supplied string and collection. Every writer (the
 * clients, the controller client, the CLI and the console) goes through here.
 *
 * @module
 */
import { encodeJson, exceedsBytes, NestingDepthError, utf8Length } from "../model/_codec.ts";
import { kindName } from "../model/_kind_keys.ts";
import { isStorableText } from "../model/_text.ts";
import {
  InvalidConditionError,
  InvalidEventError,
  InvalidOptionError,
  InvalidSpecError,
  InvalidStatusError,
  TooLargeError,
  type ValidationIssue,
} from "../model/errors.ts";
import type { StandardSchema } from "../model/standard_schema.ts";
import type { GroupKind } from "../store.ts";
import { describe, quote } from "../model/_values.ts";

/** The limits, resolved (see the public `Limits` option for each). */
export interface Limits {
  readonly nameBytes: number;
  readonly objectBytes: number;
  readonly messageBytes: number;
  readonly fieldBytes: number;
  readonly conditionsPerObject: number;
  readonly finalizersPerObject: number;
  readonly nestingDepth: number;
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
export function encodeBounded(value: unknown, what: string, gk: GroupKind, limits: Limits): string {
  const limit = limits.objectBytes;
  let text: string;
  try {
    text = encodeJson(value, what, limits.nestingDepth);
  } catch (error) {
    if (!(error instanceof NestingDepthError)) throw error;
    throw new TooLargeError(
      `Cannot write the ${what} of ${
        kindName(gk)
      }: it nests objects and arrays more than limits.nestingDepth (${error.limit}) deep`,
      { bytes: 0, limit: error.limit, field: "nestingDepth" },
    );
  }
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
 * Validates, encodes and bounds one spec or status write with the kind's
 * validators (`schemas`, as the engine finds them: at hand, or a read away):
 * at once when they are at hand and hold no schema for `what` (a kind with no
 * validator, the common write), else once found and validated.
 * @throws {InvalidSpecError} @throws {InvalidStatusError} @throws {TooLargeError} @throws {TypeError}
 */
export function prepareValue(
  schemas: KindSchemas | Promise<KindSchemas>,
  value: unknown,
  what: "spec" | "status",
  gk: GroupKind,
  limits: Limits,
): string | Promise<string> {
  if (schemas instanceof Promise) {
    return schemas.then((found) => prepareValue(found, value, what, gk, limits));
  }
  const schema = schemas[what];
  if (schema === undefined) return encodeBounded(value, what, gk, limits);
  return validate(schema, value, what, gk).then((output) =>
    encodeBounded(output, what, gk, limits)
  );
}

/** Whether a text field is longer than `limit` UTF-8 bytes (non-strings are left to the store). */
function tooLong(text: unknown, limit: number): boolean {
  return typeof text === "string" && exceedsBytes(text, limit);
}

/** `text` quoted for a message (bounded), or its type when it is not a string. */
function shown(text: unknown): string {
  return typeof text === "string" ? quote(text) : describe(text);
}

/**
 * Bounds a kind's group and kind by `limits.fieldBytes`.
 * @throws {InvalidOptionError} either is longer.
 */
export function checkKindBounds(gk: GroupKind, limits: Limits): void {
  for (const field of ["group", "kind"] as const) {
    if (tooLong(gk[field], limits.fieldBytes)) {
      throw new InvalidOptionError(
        `Cannot use kind ${field} ${
          shown(gk[field])
        }: it is above limits.fieldBytes (${limits.fieldBytes} UTF-8 bytes)`,
      );
    }
  }
}

/**
 * Bounds a condition write: at most `limits.conditionsPerObject` conditions,
 * each type and reason within `limits.fieldBytes`, each message within
 * `limits.messageBytes`. Malformed entries are left to the store's checks.
 * @throws {InvalidConditionError}
 */
export function checkConditionBounds(conditions: unknown, limits: Limits): void {
  if (!Array.isArray(conditions)) return;
  if (conditions.length > limits.conditionsPerObject) {
    throw new InvalidConditionError(
      `Cannot set ${conditions.length} conditions: above limits.conditionsPerObject (${limits.conditionsPerObject})`,
    );
  }
  for (const c of conditions) {
    if (typeof c !== "object" || c === null) continue;
    for (const field of ["type", "reason"] as const) {
      if (tooLong(c[field], limits.fieldBytes)) {
        throw new InvalidConditionError(
          `Cannot set condition ${field} ${
            shown(c[field])
          }: it is above limits.fieldBytes (${limits.fieldBytes} UTF-8 bytes)`,
        );
      }
    }
    if (tooLong(c.message, limits.messageBytes)) {
      throw new InvalidConditionError(
        `Cannot set condition ${
          shown(c.type)
        }: its message is above limits.messageBytes (${limits.messageBytes} UTF-8 bytes)`,
      );
    }
  }
}

/**
 * Bounds an event: reason and category within `limits.fieldBytes`, message
 * within `limits.messageBytes` (the detail is bounded where it is encoded).
 * @throws {InvalidEventError}
 */
export function checkEventBounds(event: Record<string, unknown>, limits: Limits): void {
  for (const field of ["reason", "category"] as const) {
    if (tooLong(event[field], limits.fieldBytes)) {
      throw new InvalidEventError(
        `Cannot add event: its ${field} ${
          shown(event[field])
        } is above limits.fieldBytes (${limits.fieldBytes} UTF-8 bytes)`,
      );
    }
  }
  if (tooLong(event.message, limits.messageBytes)) {
    throw new InvalidEventError(
      `Cannot add event ${
        shown(event.reason)
      }: its message is above limits.messageBytes (${limits.messageBytes} UTF-8 bytes)`,
    );
  }
}

/**
 * Checks that `list`, given as `what` (an option's name), is an array of
 * finalizer names: non-empty strings, well-formed UTF-16 without NUL.
 * @throws {InvalidOptionError}
 */
export function checkFinalizerNames(list: unknown, what: string): asserts list is string[] {
  if (
    !Array.isArray(list) ||
    !list.every((f) => typeof f === "string" && f !== "" && isStorableText(f))
  ) {
    throw new InvalidOptionError(
      `Cannot use ${what}: expected an array of non-empty strings, well-formed UTF-16 without NUL`,
    );
  }
}

/**
 * Bounds finalizer names by `limits.fieldBytes` and their number (with
 * `existing` already on the object) by `limits.finalizersPerObject`.
 * @throws {InvalidOptionError}
 */
export function checkFinalizerBounds(
  finalizers: readonly unknown[],
  limits: Limits,
  existing = 0,
): void {
  if (existing + finalizers.length > limits.finalizersPerObject) {
    throw new InvalidOptionError(
      `Cannot add finalizers: the object would hold ${
        existing + finalizers.length
      }, above limits.finalizersPerObject (${limits.finalizersPerObject})`,
    );
  }
  for (const f of finalizers) {
    if (tooLong(f, limits.fieldBytes)) {
      throw new InvalidOptionError(
        `Cannot add finalizer ${
          shown(f)
        }: it is above limits.fieldBytes (${limits.fieldBytes} UTF-8 bytes)`,
      );
    }
  }
}

/**
 * `text` cut to at most `bytes` UTF-8 bytes (a prefix, well-formed): for text
 * the engine writes on a caller's behalf and must land, like a stall's reason.
 */
export function clipText(text: string, bytes: number): string {
  if (!exceedsBytes(text, bytes)) return text;
  // A UTF-16 unit is at most 3 UTF-8 bytes.
  return text.slice(0, Math.floor(bytes / 3)).toWellFormed();
}
