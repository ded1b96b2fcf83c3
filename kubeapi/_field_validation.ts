/**
 * `fieldValidation` on writes: the fields of a body the kind's schema does
 * not declare. `Strict` refuses them (422 `Invalid`, each field named),
 * `Warn` (the default) drops them and says so in a `Warning` header kubectl
 * prints, `Ignore` drops them silently — as the API server prunes a
 * structural schema. Which fields are declared is read from the resource's
 * OpenAPI schema: under an object that declares `properties`, a member it
 * does not declare is unknown, unless the object takes `additionalProperties`
 * or preserves unknown fields. A write is judged on the unknown fields it
 * adds: one the object already holds (the app may store what its own schema
 * takes) is kept.
 *
 * @module
 */
import type { StoredKind } from "@beehive/beehive";
import type { ServedKind } from "./_kinds.ts";
import { OBJECT_META_SCHEMA, resourceSchema } from "./_openapi.ts";
import { FREE_FORM, type OpenApiSchema } from "./_openapi_schema.ts";
import { param } from "./_request.ts";
import { invalidFailure, KubeApiFailure, type StatusDetails } from "./_status.ts";
import { isJsonObject, type JsonObject } from "../src/model/_json_object.ts";

/** What `fieldValidation` asks for. */
export type FieldValidation = "Ignore" | "Warn" | "Strict";

/** The most unknown fields one answer names. */
const MAX_REPORTED = 32;

/**
 * `?fieldValidation=`: `Warn` when absent.
 * @throws {KubeApiFailure} BadRequest: another value.
 */
export function fieldValidationParam(url: URL): FieldValidation {
  const value = param(url, "fieldValidation");
  if (value === undefined || value === "") return "Warn";
  if (value === "Ignore" || value === "Warn" || value === "Strict") return value;
  throw new KubeApiFailure(
    "BadRequest",
    `fieldValidation must be Ignore, Warn or Strict: current value is ${JSON.stringify(value)}`,
  );
}

/** `schema` and the schemas its `allOf`/`anyOf`/`oneOf` branches add to it. */
export function branches(schema: OpenApiSchema): OpenApiSchema[] {
  const out = [schema];
  for (const key of ["allOf", "anyOf", "oneOf"]) {
    const list = schema[key];
    if (Array.isArray(list)) {
      for (const sub of list) if (isJsonObject(sub)) out.push(...branches(sub));
    }
  }
  return out;
}

/** The schema `schema` declares for member `key`, if any (own members only: not `__proto__`'s). */
export function declaredAt(schema: OpenApiSchema, key: string): unknown {
  const properties = schema.properties;
  return isJsonObject(properties) && Object.hasOwn(properties, key) ? properties[key] : undefined;
}

/**
 * Collects the unknown fields under `value` into `out`, and removes from
 * `value` (a copy the caller owns) each one `keep` does not hold.
 */
function walk(
  value: unknown,
  schema: OpenApiSchema,
  path: string,
  out: string[],
  keep: ReadonlySet<string> | undefined,
): void {
  const all = branches(schema);
  if (Array.isArray(value)) {
    const items = all.map((s) => s.items).find(isJsonObject);
    if (items !== undefined) value.forEach((v, i) => walk(v, items, `${path}[${i}]`, out, keep));
    return;
  }
  if (!isJsonObject(value)) return;
  const free = all.some((s) => s["x-kubernetes-preserve-unknown-fields"] === true);
  const additional = all.map((s) => s.additionalProperties).find(isJsonObject);
  const declared = all.some((s) => isJsonObject(s.properties));
  for (const [key, member] of Object.entries(value)) {
    const at = path === "" ? key : `${path}.${key}`;
    const own = all.map((s) => declaredAt(s, key)).find(isJsonObject);
    if (own !== undefined) walk(member, own, at, out, keep);
    else if (additional !== undefined) walk(member, additional, at, out, keep);
    else if (declared && !free) {
      out.push(at);
      if (keep !== undefined && !keep.has(at)) delete value[key];
    }
  }
}

/** The resource schema writes are judged by: the kind's, with a free-form status. */
export function schemaOf(kind: ServedKind, definition: StoredKind | undefined): OpenApiSchema {
  const schema = resourceSchema(kind, definition, OBJECT_META_SCHEMA);
  (schema.properties as JsonObject).status = FREE_FORM;
  return schema;
}

/**
 * The fields of `body` (a resource, or a merge patch shaped like one) that
 * `kind`'s schema does not declare, as dotted paths (`spec.replicaz`). The
 * status is not checked: a write ignores it.
 */
export function unknownFields(schema: OpenApiSchema, body: unknown): string[] {
  const out: string[] = [];
  walk(body, schema, "", out, undefined);
  return out;
}

/**
 * `body` without the fields `kind`'s schema does not declare, but those in
 * `kept`; and the fields it dropped. `body` is not changed.
 */
export function pruneUnknown(
  schema: OpenApiSchema,
  body: unknown,
  kept: ReadonlySet<string>,
): { body: unknown; dropped: string[] } {
  const copy = structuredClone(body);
  const out: string[] = [];
  walk(copy, schema, "", out, kept);
  return { body: copy, dropped: out.filter((f) => !kept.has(f)) };
}

/**
 * Applies `mode` to the unknown fields `fields`: `Strict` throws, `Warn`
 * answers the `Warning` header values to send, `Ignore` none.
 * @throws {KubeApiFailure} Invalid: `Strict` and at least one unknown field.
 */
export function judgeUnknown(
  mode: FieldValidation,
  fields: readonly string[],
  details: StatusDetails,
): string[] {
  if (fields.length === 0 || mode === "Ignore") return [];
  const shown = fields.slice(0, MAX_REPORTED);
  const messages = shown.map((f) => `unknown field ${JSON.stringify(f)}`);
  if (mode === "Warn") return messages;
  throw invalidFailure(
    details,
    shown.map((field) => ({ field, message: `unknown field ${JSON.stringify(field)}` })),
  );
}

/** `messages` as a `Warning` header (RFC 7234 code 299, as Kubernetes sends them); none when empty. */
export function warningHeader(messages: readonly string[]): Record<string, string> {
  if (messages.length === 0) return {};
  return { warning: messages.map((m) => `299 - ${JSON.stringify(m)}`).join(", ") };
}
