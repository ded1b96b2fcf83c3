/**
 * A stored draft 2020-12 JSON Schema as the OpenAPI 3.0 schema Kubernetes
 * publishes for a custom resource: `$ref`s inlined, `type: [T, "null"]` as
 * `nullable`, numeric `exclusiveMinimum` as OpenAPI's flag, `const` as a
 * one-value `enum`, and the keywords OpenAPI 3.0 does not know dropped.
 * kubectl reads it for `explain` and to learn that the server validates;
 * the server itself still validates writes against the stored schema.
 *
 * @module
 */
import { isJsonObject, type JsonObject } from "../src/model/_json_object.ts";

/** An OpenAPI 3.0 schema object. */
export type OpenApiSchema = JsonObject;

/** The most schema nodes one conversion emits: `$ref`s inlined into a DAG could grow without end. */
const MAX_NODES = 10_000;
/** How deep a converted schema nests. */
const MAX_DEPTH = 64;

/** Marks a schema whose contents are not described: anything is kept. */
export const FREE_FORM: OpenApiSchema = { "x-kubernetes-preserve-unknown-fields": true };

const COPIED = [
  "title",
  "description",
  "format",
  "pattern",
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
  "uniqueItems",
  "minProperties",
  "maxProperties",
  "multipleOf",
  "default",
  // How server-side apply merges a list or a map (atomic when a list names none).
  "x-kubernetes-list-type",
  "x-kubernetes-list-map-keys",
  "x-kubernetes-map-type",
] as const;
const TYPES = new Set(["object", "array", "string", "number", "integer", "boolean"]);

class Converter {
  #nodes = 0;
  readonly #root: unknown;
  constructor(root: unknown) {
    this.#root = root;
  }

  /** The schema a local `$ref` (`#`, `#/$defs/…`, `#/definitions/…`) points at. */
  #resolve(ref: string): unknown {
    if (ref === "#") return this.#root;
    if (!ref.startsWith("#/")) return undefined;
    let at: unknown = this.#root;
    for (const raw of ref.slice(2).split("/")) {
      const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
      if (!isJsonObject(at) || !Object.hasOwn(at, key)) return undefined;
      at = at[key];
    }
    return at;
  }

  convert(schema: unknown, refs: readonly string[], depth: number): OpenApiSchema {
    if (++this.#nodes > MAX_NODES || depth > MAX_DEPTH || !isJsonObject(schema)) return FREE_FORM;
    const out: OpenApiSchema = {};
    if (typeof schema.$ref === "string") {
      const ref = schema.$ref;
      const target = refs.includes(ref) ? undefined : this.#resolve(ref);
      // A recursive or unresolvable reference describes nothing more here.
      Object.assign(
        out,
        target === undefined ? FREE_FORM : this.convert(target, [...refs, ref], depth + 1),
      );
    }
    for (const key of COPIED) if (schema[key] !== undefined) out[key] = schema[key];
    this.#type(schema, out);
    this.#bounds(schema, out);
    if (Array.isArray(schema.enum)) out.enum = schema.enum;
    if (Object.hasOwn(schema, "const")) out.enum = [schema.const];
    if (Array.isArray(schema.examples) && schema.examples.length > 0) {
      out.example = schema.examples[0];
    }
    if (isJsonObject(schema.properties)) {
      // fromEntries defines own members, a property named "__proto__" included.
      out.properties = Object.fromEntries(
        Object.entries(schema.properties).map(([name, sub]) => [
          name,
          this.convert(sub, refs, depth + 1),
        ]),
      );
    }
    if (Array.isArray(schema.required)) {
      const required = schema.required.filter((r) => typeof r === "string");
      if (required.length > 0) out.required = required;
    }
    if (isJsonObject(schema.additionalProperties)) {
      out.additionalProperties = this.convert(schema.additionalProperties, refs, depth + 1);
    } else if (schema.additionalProperties === true && !isJsonObject(schema.properties)) {
      out["x-kubernetes-preserve-unknown-fields"] = true;
    }
    if (isJsonObject(schema.items)) out.items = this.convert(schema.items, refs, depth + 1);
    for (const key of ["allOf", "anyOf", "oneOf"] as const) {
      const list = schema[key];
      if (Array.isArray(list) && list.length > 0) {
        out[key] = list.map((sub) => this.convert(sub, refs, depth + 1));
      }
    }
    return out;
  }

  #type(schema: JsonObject, out: OpenApiSchema): void {
    const type = schema.type;
    const types = typeof type === "string" ? [type] : Array.isArray(type) ? type : [];
    if (types.includes("null")) out.nullable = true;
    const kept = types.filter((t): t is string => typeof t === "string" && TYPES.has(t));
    if (kept.length === 1) out.type = kept[0];
  }

  /** Draft 2020-12's numeric `exclusiveMinimum`/`exclusiveMaximum` as OpenAPI 3.0's bound and flag. */
  #bounds(schema: JsonObject, out: OpenApiSchema): void {
    for (
      const [bound, exclusive] of [["minimum", "exclusiveMinimum"], [
        "maximum",
        "exclusiveMaximum",
      ]] as const
    ) {
      if (typeof schema[exclusive] === "number") {
        out[bound] = schema[exclusive];
        out[exclusive] = true;
      } else if (typeof schema[bound] === "number") {
        out[bound] = schema[bound];
      }
    }
  }
}

/**
 * `schema` (a stored draft 2020-12 JSON Schema, `true`/`false`, or
 * `undefined`) as an OpenAPI 3.0 schema; `undefined` and booleans describe
 * nothing, so they are free-form.
 */
export function toOpenApiSchema(schema: unknown): OpenApiSchema {
  if (!isJsonObject(schema)) return { ...FREE_FORM };
  return new Converter(schema).convert(schema, [], 0);
}
