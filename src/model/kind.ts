/**
 * Typed kinds: {@linkcode defineKind} names a kind once, with its spec and
 * status types, its resource names and printer columns, and (optionally) the
 * Standard Schema validators that check every write of them.
 *
 * @module
 */
import { checkKind } from "../engine/_engine.ts";
import { InvalidOptionError, StoreError } from "./errors.ts";
import type { StandardSchema } from "./standard_schema.ts";
import type { KindSchemas } from "../clients/_write_checks.ts";
import type { GroupKind, KindsPutInput, RawKind } from "../store.ts";
import { encodeJson, exceedsBytes } from "./_codec.ts";
import { isStorableText } from "./_text.ts";
import { describe, quote } from "./_values.ts";
import { jsonSchemaProblem } from "./_json_schema.ts";

/** A printer column: what `kubectl get` (and the CLI) shows of each object. */
export interface KindColumn {
  /** The column's header; non-empty, at most 63 UTF-8 bytes. */
  readonly name: string;
  /** Where the value is, from the object's root: `.spec.replicas`, `.status.phase`. */
  readonly jsonPath: string;
  /** How the value is shown. @default {"string"} */
  readonly type?: "string" | "integer" | "number" | "boolean" | "date";
}

/** What {@linkcode defineKind} takes. */
export interface KindDefinition<Spec, Status> {
  /** The API group; `""` is the core group. */
  readonly group: string;
  /** The kind within the group; non-empty. */
  readonly kind: string;
  /** The plural resource name, a lowercase DNS label. @default {the lowercased kind + "s"} */
  readonly plural?: string;
  /** The singular resource name, a lowercase DNS label. @default {the lowercased kind} */
  readonly singular?: string;
  /** Short names the CLI accepts (`["wk"]`), each a lowercase DNS label. @default {[]} */
  readonly shortNames?: readonly string[];
  /** Whether objects of the kind live in namespaces (stored with the kind). @default {false} */
  readonly namespaced?: boolean;
  /** Printer columns. @default {[]} */
  readonly columns?: readonly KindColumn[];
  /** Validates (and may transform) every spec write. @default {undefined} (no validation) */
  readonly spec?: StandardSchema<unknown, Spec>;
  /** Validates (and may transform) every status write. @default {undefined} (no validation) */
  readonly status?: StandardSchema<unknown, Status>;
}

/**
 * A kind token: usable wherever `{ group, kind }` is, and carrying the spec
 * and status types into `register`, `client`, `adminClient` and watches.
 */
export interface Kind<Spec, Status> extends GroupKind {
  /** The plural resource name. */
  readonly plural: string;
  /** The singular resource name. */
  readonly singular: string;
  /** The short names. */
  readonly shortNames: readonly string[];
  /** Whether objects of the kind live in namespaces. */
  readonly namespaced: boolean;
  /** The printer columns. */
  readonly columns: readonly KindColumn[];
  /** The spec validator, if any. */
  readonly spec: StandardSchema<unknown, Spec> | undefined;
  /** The status validator, if any. */
  readonly status: StandardSchema<unknown, Status> | undefined;
}

/** The tokens `defineKind` made: only these carry validators the engine trusts. */
const tokens = new WeakSet<object>();

/** The JSON Schemas (as JSON text) `defineKind` read from each token's validators. */
const jsonSchemas = new WeakMap<object, { spec?: string; status?: string }>();

/** How many short names and printer columns a kind may have. */
const MAX_SHORT_NAMES = 32;
const MAX_COLUMNS = 32;
/** The longest JSON Schema (as JSON text, UTF-8 bytes) a kind stores. */
const MAX_SCHEMA_BYTES = 1024 * 1024;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const COLUMN_TYPES = new Set(["string", "integer", "number", "boolean", "date"]);

function checkSchema(value: unknown, what: string): StandardSchema | undefined {
  if (value === undefined) return undefined;
  const props = (value as { "~standard"?: { version?: unknown; validate?: unknown } } | null)
    ?.["~standard"];
  if (
    (typeof value !== "object" && typeof value !== "function") || value === null ||
    typeof props !== "object" || props === null || props.version !== 1 ||
    typeof props.validate !== "function"
  ) {
    throw new InvalidOptionError(
      `Cannot use ${what}: expected a Standard Schema v1 validator (an object whose "~standard" has version 1 and a validate function)`,
    );
  }
  return value as StandardSchema;
}

/**
 * The draft 2020-12 JSON Schema of a validator that implements Standard JSON
 * Schema (`~standard.jsonSchema.input`), as JSON text; `undefined` for one that does not.
 */
function jsonSchemaOf(schema: StandardSchema | undefined, what: string): string | undefined {
  const converter = (schema?.["~standard"] as { jsonSchema?: unknown } | undefined)?.jsonSchema;
  if (converter === undefined) return undefined;
  const input = (converter as { input?: unknown } | null)?.input;
  if (typeof input !== "function") {
    throw new InvalidOptionError(
      `Cannot use ${what}: its "~standard".jsonSchema is ${
        describe(converter)
      }, expected a Standard JSON Schema converter with an input function`,
    );
  }
  let json: unknown;
  let text: string;
  try {
    json = input.call(converter, { target: "draft-2020-12" });
    text = encodeJson(json, `${what} JSON Schema`, 100);
  } catch (cause) {
    throw new InvalidOptionError(
      `Cannot use ${what}: its JSON Schema could not be made: ${
        cause instanceof Error ? cause.message : String(cause)
      }`,
      { cause },
    );
  }
  if (exceedsBytes(text, MAX_SCHEMA_BYTES)) {
    throw new InvalidOptionError(
      `Cannot use ${what}: its JSON Schema is above ${MAX_SCHEMA_BYTES} bytes`,
    );
  }
  const problem = jsonSchemaProblem(json);
  if (problem !== undefined) {
    throw new InvalidOptionError(
      `Cannot use ${what}: its JSON Schema is not valid JSON Schema (draft 2020-12): ${problem}`,
    );
  }
  return text;
}

function checkLabel(value: unknown, what: string, gk: GroupKind): string {
  if (typeof value !== "string" || value.length > 63 || !DNS_LABEL.test(value)) {
    throw new InvalidOptionError(
      `Cannot define kind ${gk.kind}: its ${what} is ${
        typeof value === "string" ? quote(value) : describe(value)
      }, expected a lowercase DNS label (a-z, 0-9 and "-", at most 63 characters)`,
    );
  }
  return value;
}

function checkShortNames(value: unknown, gk: GroupKind): readonly string[] {
  if (value === undefined) return Object.freeze([]);
  if (!Array.isArray(value) || value.length > MAX_SHORT_NAMES) {
    throw new InvalidOptionError(
      `Cannot define kind ${gk.kind}: shortNames is ${
        describe(value)
      }, expected an array of at most ${MAX_SHORT_NAMES} names`,
    );
  }
  return Object.freeze(value.map((n) => checkLabel(n, "short name", gk)));
}

function checkColumns(value: unknown, gk: GroupKind): readonly KindColumn[] {
  if (value === undefined) return Object.freeze([]);
  if (!Array.isArray(value) || value.length > MAX_COLUMNS) {
    throw new InvalidOptionError(
      `Cannot define kind ${gk.kind}: columns is ${
        describe(value)
      }, expected an array of at most ${MAX_COLUMNS} { name, jsonPath, type? }`,
    );
  }
  return Object.freeze(value.map((c: unknown, i) => {
    const col = c as KindColumn;
    const bad = (why: string) =>
      new InvalidOptionError(`Cannot define kind ${gk.kind}: column ${i} ${why}`);
    if (typeof col !== "object" || col === null) throw bad(`is ${describe(c)}, expected an object`);
    if (
      typeof col.name !== "string" || col.name === "" || exceedsBytes(col.name, 63) ||
      !isStorableText(col.name)
    ) throw bad(`has name ${describe(col.name)}, expected a non-empty string of at most 63 bytes`);
    if (
      typeof col.jsonPath !== "string" || !col.jsonPath.startsWith(".") ||
      exceedsBytes(col.jsonPath, 256) || !isStorableText(col.jsonPath)
    ) {
      throw bad(
        `has jsonPath ${
          describe(col.jsonPath)
        }, expected a path like ".spec.replicas" (at most 256 bytes)`,
      );
    }
    if (col.type !== undefined && !COLUMN_TYPES.has(col.type as string)) {
      throw bad(`has type ${describe(col.type)}, expected one of ${[...COLUMN_TYPES].join(", ")}`);
    }
    return Object.freeze(
      col.type === undefined
        ? { name: col.name, jsonPath: col.jsonPath }
        : { name: col.name, jsonPath: col.jsonPath, type: col.type },
    );
  }));
}

/**
 * Defines a kind: a frozen token holding `group`, `kind` and the optional
 * `spec` and `status` validators (any [Standard Schema](https://standardschema.dev)
 * v1 validator — zod, valibot, arktype…). Every spec write (`create`,
 * `update`, `updateByName`, `createOrUpdate`, `getOrCreate`) and every status
 * write through a client, controller or admin client of this token — or of
 * any client of the kind once the token is registered — is validated first:
 * a failure rejects with `InvalidSpecError` / `InvalidStatusError` and writes
 * nothing, and the validator's output is what is stored.
 *
 * The names, scope, columns and — for a validator that also implements
 * [Standard JSON Schema](https://standardschema.dev/json-schema) — the
 * draft 2020-12 JSON Schema are stored with the kind when a Beehive that
 * registered it (or lists it in its `kinds` option) starts: a process, CLI
 * or tool without the token then checks its writes against that schema.
 *
 * @throws {InvalidOptionError} `group`/`kind` are malformed, a name or column is malformed, a validator is not a Standard Schema v1, or its JSON Schema cannot be made or is not valid JSON Schema.
 *
 * @example Types flow from the token
 * ```ts
 * import { Beehive, defineKind, settled } from "@beehive/beehive";
 * import { openSqliteStore } from "@beehive/beehive/sqlite";
 *
 * const Cluster = defineKind<{ replicas: number }, { ready: boolean }>({
 *   group: "kstack.sh",
 *   kind: "Cluster",
 * });
 * const store = await openSqliteStore(":memory:");
 * const bh = new Beehive(store);
 * bh.register(Cluster, async (obj, cc) => {
 *   await cc.updateStatus({ ready: obj.spec.replicas > 0 });
 *   return settled();
 * });
 * const created = await bh.client(Cluster).create("prod", { replicas: 3 });
 * console.assert(created.spec.replicas === 3);
 * await store.close();
 * ```
 */
export function defineKind<Spec = unknown, Status = unknown>(
  definition: KindDefinition<Spec, Status>,
): Kind<Spec, Status> {
  const gk = checkKind(definition);
  const d = definition as KindDefinition<Spec, Status>;
  const singular = d.singular === undefined
    ? gk.kind.toLowerCase()
    : checkLabel(d.singular, "singular", gk);
  const plural = d.plural === undefined ? `${singular}s` : checkLabel(d.plural, "plural", gk);
  if (d.namespaced !== undefined && typeof d.namespaced !== "boolean") {
    throw new InvalidOptionError(
      `Cannot define kind ${gk.kind}: namespaced is ${describe(d.namespaced)}, expected a boolean`,
    );
  }
  const spec = checkSchema(d.spec, "spec") as StandardSchema<unknown, Spec> | undefined;
  const status = checkSchema(d.status, "status") as StandardSchema<unknown, Status> | undefined;
  const token: Kind<Spec, Status> = Object.freeze({
    group: gk.group,
    kind: gk.kind,
    plural,
    singular,
    shortNames: checkShortNames(d.shortNames, gk),
    namespaced: d.namespaced ?? false,
    columns: checkColumns(d.columns, gk),
    spec,
    status,
  });
  tokens.add(token);
  jsonSchemas.set(token, {
    spec: jsonSchemaOf(spec, "spec"),
    status: jsonSchemaOf(status, "status"),
  });
  return token;
}

/** The validators of `kind` when it is a `defineKind` token. */
export function schemasOf(kind: unknown): KindSchemas | undefined {
  if (typeof kind !== "object" || kind === null || !tokens.has(kind)) return undefined;
  const k = kind as Kind<unknown, unknown>;
  return { spec: k.spec, status: k.status };
}

/** Whether `kind` is a `defineKind` token. */
export function isKindToken(kind: unknown): kind is Kind<unknown, unknown> {
  return typeof kind === "object" && kind !== null && tokens.has(kind);
}

/**
 * The definition to store for `kind`: a token's names, scope, columns and
 * JSON Schemas; for a plain `{ group, kind }`, the default names alone.
 */
export function kindDefinitionOf(kind: GroupKind): KindsPutInput {
  if (isKindToken(kind)) {
    const schemas = jsonSchemas.get(kind)!;
    return {
      group: kind.group,
      kind: kind.kind,
      plural: kind.plural,
      singular: kind.singular,
      shortNames: kind.shortNames,
      namespaced: kind.namespaced,
      columns: JSON.stringify(kind.columns),
      specSchema: schemas.spec,
      statusSchema: schemas.status,
    };
  }
  const singular = kind.kind.toLowerCase();
  return {
    group: kind.group,
    kind: kind.kind,
    plural: `${singular}s`,
    singular,
    shortNames: [],
    namespaced: false,
    columns: "[]",
    specSchema: undefined,
    statusSchema: undefined,
  };
}

/** A JSON Schema as stored: a schema object (or `true`/`false`). */
export type JsonSchema = { readonly [key: string]: unknown } | boolean;

/** A kind's definition as stored (`AdminClient.listKinds`, `AdminClient.getKind`). */
export interface StoredKind extends GroupKind {
  /** The plural resource name. */
  readonly plural: string;
  /** The singular resource name. */
  readonly singular: string;
  /** The short names; `[]` when none. */
  readonly shortNames: readonly string[];
  /** Whether objects of the kind live in namespaces. */
  readonly namespaced: boolean;
  /** The printer columns; `[]` when none. */
  readonly columns: readonly KindColumn[];
  /** The spec's draft 2020-12 JSON Schema; absent when the kind's validator provides none. */
  readonly specSchema?: JsonSchema;
  /** The status's draft 2020-12 JSON Schema; absent when the kind's validator provides none. */
  readonly statusSchema?: JsonSchema;
}

function parseStored(text: string, what: string, gk: GroupKind): unknown {
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new StoreError(`Cannot read kind ${gk.kind}: its stored ${what} is not JSON`, { cause });
  }
}

/**
 * A stored row as a {@linkcode StoredKind}.
 * @throws {StoreError} a JSON column is not JSON.
 */
export function storedKindOf(raw: RawKind): StoredKind {
  const columns = parseStored(raw.columns, "columns", raw);
  const out: {
    -readonly [K in keyof StoredKind]: StoredKind[K];
  } = {
    group: raw.group,
    kind: raw.kind,
    plural: raw.plural,
    singular: raw.singular,
    shortNames: [...raw.shortNames],
    namespaced: raw.namespaced,
    columns: Array.isArray(columns) ? columns as KindColumn[] : [],
  };
  if (raw.specSchema !== undefined) {
    out.specSchema = parseStored(raw.specSchema, "spec schema", raw) as JsonSchema;
  }
  if (raw.statusSchema !== undefined) {
    out.statusSchema = parseStored(raw.statusSchema, "status schema", raw) as JsonSchema;
  }
  return out;
}
