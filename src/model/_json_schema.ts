/**
 * JSON Schema (draft 2020-12) as a Standard Schema validator: a kind's stored
 * schema checks the writes of a process that lacks the kind's own validator.
 * Checked once against a compact meta-schema (the keywords' shapes), then
 * compiled once; `@cfworker/json-schema` does the validating.
 *
 * @module
 */
import { dereference, type OutputUnit, Validator } from "@cfworker/json-schema";
import type { ValidationIssue } from "./errors.ts";
import { defaulterOf } from "./_schema_defaults.ts";
import type { StandardSchema } from "./standard_schema.ts";

const TYPES = ["array", "boolean", "integer", "null", "number", "object", "string"];
const SCHEMA = { $ref: "#/$defs/schema" };
const SCHEMA_MAP = { type: "object", additionalProperties: SCHEMA };
const SCHEMA_LIST = { type: "array", minItems: 1, items: SCHEMA };
const COUNT = { type: "integer", minimum: 0 };
const STRINGS = { type: "array", items: { type: "string" }, uniqueItems: true };

/** The shapes of the draft 2020-12 keywords: enough to refuse what is not a schema. */
const META = {
  $ref: "#/$defs/schema",
  $defs: {
    schema: {
      type: ["object", "boolean"],
      properties: {
        type: {
          anyOf: [{ enum: TYPES }, { type: "array", items: { enum: TYPES }, uniqueItems: true }],
        },
        properties: SCHEMA_MAP,
        patternProperties: {
          type: "object",
          propertyNames: { format: "regex" },
          additionalProperties: SCHEMA,
        },
        $defs: SCHEMA_MAP,
        definitions: SCHEMA_MAP,
        dependentSchemas: SCHEMA_MAP,
        dependentRequired: { type: "object", additionalProperties: STRINGS },
        items: SCHEMA,
        additionalProperties: SCHEMA,
        unevaluatedProperties: SCHEMA,
        unevaluatedItems: SCHEMA,
        contains: SCHEMA,
        propertyNames: SCHEMA,
        not: SCHEMA,
        if: SCHEMA,
        then: SCHEMA,
        else: SCHEMA,
        prefixItems: SCHEMA_LIST,
        allOf: SCHEMA_LIST,
        anyOf: SCHEMA_LIST,
        oneOf: SCHEMA_LIST,
        required: STRINGS,
        enum: { type: "array" },
        minimum: { type: "number" },
        maximum: { type: "number" },
        exclusiveMinimum: { type: "number" },
        exclusiveMaximum: { type: "number" },
        multipleOf: { type: "number", exclusiveMinimum: 0 },
        minLength: COUNT,
        maxLength: COUNT,
        minItems: COUNT,
        maxItems: COUNT,
        minProperties: COUNT,
        maxProperties: COUNT,
        minContains: COUNT,
        maxContains: COUNT,
        uniqueItems: { type: "boolean" },
        pattern: { type: "string", format: "regex" },
        format: { type: "string" },
        $ref: { type: "string" },
        $id: { type: "string" },
        $schema: { type: "string" },
        $anchor: { type: "string" },
        $comment: { type: "string" },
        title: { type: "string" },
        description: { type: "string" },
      },
    },
  },
};

const metaValidator = new Validator(META, "2020-12", false);

/** The errors that are not only a summary of deeper ones (the leaves of the output). */
function leaves(errors: readonly OutputUnit[]): OutputUnit[] {
  return errors.filter((e, i) =>
    !errors.some((f, j) => j !== i && f.keywordLocation.startsWith(`${e.keywordLocation}/`))
  );
}

/** `#/a/0/b~1c` as `["a", "0", "b/c"]`. */
function pointerPath(location: string): string[] {
  const pointer = location.startsWith("#") ? location.slice(1) : location;
  if (pointer === "") return [];
  return pointer.slice(1).split("/").map((s) =>
    decodeURIComponent(s).replaceAll("~1", "/").replaceAll("~0", "~")
  );
}

function issuesOf(errors: readonly OutputUnit[]): ValidationIssue[] {
  return leaves(errors).map((e) => ({ message: e.error, path: pointerPath(e.instanceLocation) }));
}

/** The first `$ref` in `schema` that names no schema in it, as a problem; `undefined` when none. */
function unresolvedRef(schema: unknown): string | undefined {
  // `dereference` annotates what it walks: work on a copy.
  const copy = structuredClone(schema) as object | boolean;
  let lookup: Record<string, unknown>;
  try {
    lookup = dereference(copy as object);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  const pending: unknown[] = [copy];
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node !== "object" || node === null) continue;
    const n = node as Record<string, unknown>;
    if (typeof n.$ref === "string") {
      const target = typeof n.__absolute_ref__ === "string" ? n.__absolute_ref__ : n.$ref;
      if (lookup[target] === undefined) return `$ref ${JSON.stringify(n.$ref)} names no schema`;
    }
    for (const value of Object.values(n)) pending.push(value);
  }
  return undefined;
}

/** Why `schema` is not a usable JSON Schema, or `undefined` when it is. */
export function jsonSchemaProblem(schema: unknown): string | undefined {
  let result;
  try {
    result = metaValidator.validate(schema);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  if (result.valid) return unresolvedRef(schema);
  return issuesOf(result.errors).slice(0, 3).map((i) => {
    const at = (i.path ?? []).join("/");
    return `${at === "" ? "" : `at /${at}: `}${i.message}`;
  }).join("; ");
}

/** Thrown by a compiled schema whose references do not resolve, or by {@linkcode compileJsonSchema}. */
export class JsonSchemaProblem extends Error {
  override readonly name = "JsonSchemaProblem";
}

/**
 * Compiles `schema` (a parsed draft 2020-12 JSON Schema) into a Standard
 * Schema v1 validator whose issues carry `{ message, path }`. A value first
 * gets the schema's `default`s, structurally (`defaulterOf`), and is then
 * validated: the output is the defaulted value (a new one when a default was
 * filled; the value given is never changed).
 * @throws {JsonSchemaProblem} `schema` is not a usable JSON Schema.
 */
export function compileJsonSchema(schema: unknown): StandardSchema {
  const problem = jsonSchemaProblem(schema);
  if (problem !== undefined) throw new JsonSchemaProblem(problem);
  const validator = new Validator(schema as object, "2020-12", false);
  const defaults = defaulterOf(schema);
  return {
    "~standard": {
      version: 1,
      vendor: "beehive-json-schema",
      validate(given: unknown) {
        const value = defaults === undefined ? given : defaults(given);
        let result;
        try {
          result = validator.validate(value);
        } catch (error) {
          throw new JsonSchemaProblem(error instanceof Error ? error.message : String(error));
        }
        return result.valid ? { value } : { issues: issuesOf(result.errors) };
      },
    },
  };
}
