/**
 * What `apply -f` reads, as the objects to apply: JSON or YAML (one or
 * several documents, read by the `yaml` library), each document an object,
 * an array of them, or a Kubernetes `List`; each object either a Kubernetes
 * manifest (`apiVersion: <group>/v1`, `kind`, `metadata.{name, namespace,
 * labels, annotations}`, `spec`) or the CLI's own form (`group`, `kind`,
 * `name`, `spec`, `namespace`, `labels`, `annotations`), which is also what
 * `get -o json|yaml` prints: the fields a store sets (id, status, generation,
 * conditions, timestamps…) are ignored, any other field is refused.
 *
 * @module
 */
import { parseAllDocuments } from "yaml";
import type { GroupKind } from "@beehive/beehive";
import { isJsonObject, type JsonObject } from "../src/model/_json_object.ts";

type StringMap = Readonly<Record<string, string>>;

/** One object to create or update. */
export interface ApplyItem extends GroupKind {
  /** Where the item is in the input (`stdin`, a file, `document 1, item 0`), for errors. */
  readonly at: string;
  readonly name: string;
  readonly spec: unknown;
  /** A namespaced kind's namespace; `undefined` (or `""` as printed for a cluster-scoped kind): `-n`. */
  readonly namespace: string | undefined;
  /** The labels to set (merged into an object found); `undefined` when the item names none. */
  readonly labels: StringMap | undefined;
  /** The annotations to set, as `labels`. */
  readonly annotations: StringMap | undefined;
}

/** A YAML alias may be expanded at most this many times per document (an alias bomb is refused). */
const MAX_ALIASES = 100;

/**
 * The longest text read as YAML, in UTF-16 code units: a YAML parser holds a
 * document's syntax tree, many times the text's size. Longer input must be JSON.
 */
export const YAML_MAX_LENGTH = 8 * 1_048_576;

/** What `get -o json|yaml` prints that the store sets: read back, ignored. */
const VIEW_FIELDS = new Set([
  "id",
  "status",
  "generation",
  "observedGeneration",
  "observedAt",
  "resourceVersion",
  "deletionRequestedAt",
  "finalizers",
  "conditions",
  "createdAt",
  "updatedAt",
]);
const OWN_FIELDS = new Set(["group", "kind", "name", "spec", "namespace", "labels", "annotations"]);

/** What Kubernetes sets in `metadata` (or a controller does): read back, ignored. */
const SERVER_METADATA = new Set([
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "managedFields",
  "selfLink",
  "finalizers",
  "ownerReferences",
]);
const METADATA_FIELDS = new Set(["name", "namespace", "labels", "annotations"]);
const MANIFEST_FIELDS = new Set(["apiVersion", "kind", "metadata", "spec", "status"]);

/**
 * The documents of `text`: one when it is JSON, else each YAML document
 * (empty ones skipped, as kubectl skips them) of a text up to
 * {@linkcode YAML_MAX_LENGTH}.
 * @throws {Error} neither JSON nor YAML (the message names `source` and the line).
 */
export function readDocuments(text: string, source: string): unknown[] {
  try {
    return [JSON.parse(text)];
  } catch {
    // YAML is a superset of JSON: its parser names the line of what is wrong.
  }
  if (text.length > YAML_MAX_LENGTH) {
    throw new Error(
      `${source} is not JSON, and at ${text.length} characters it is above the ${
        YAML_MAX_LENGTH / 1_048_576
      } Mi read as YAML: write it as JSON, or split it into several files`,
    );
  }
  const out: unknown[] = [];
  try {
    const docs = parseAllDocuments(text, { uniqueKeys: true, prettyErrors: true });
    for (const doc of Array.isArray(docs) ? docs : [docs]) {
      const problem = doc.errors[0];
      if (problem !== undefined) throw problem;
      const value: unknown = doc.toJS({ maxAliasCount: MAX_ALIASES });
      if (value === null || value === undefined) continue;
      // An alias inside its own anchor makes a cycle, which no JSON value holds.
      JSON.stringify(value);
      out.push(value);
    }
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new Error(`${source} is not JSON or YAML: ${detail}`);
  }
  return out;
}

/**
 * The objects `documents` hold, in order: an array's items, a `List`'s
 * `items`, or the document itself. `source` names a lone document in errors;
 * several are named `document N`, and the items of a list `item N`.
 * @throws {Error} an object that is neither a manifest nor the CLI's own form (the message says where and why).
 */
export function applyItems(documents: readonly unknown[], source: string): ApplyItem[] {
  const items: ApplyItem[] = [];
  documents.forEach((doc, d) => {
    const at = documents.length === 1 ? source : `document ${d}`;
    const list = listItems(doc, at);
    if (list === undefined) items.push(applyItem(doc, at));
    else {
      const prefix = documents.length === 1 ? "" : `${at}, `;
      list.forEach((item, i) => items.push(applyItem(item, `${prefix}item ${i}`)));
    }
  });
  return items;
}

/** The items of an array or a `List` document; `undefined` for a single object. */
function listItems(doc: unknown, at: string): unknown[] | undefined {
  if (Array.isArray(doc)) return doc;
  if (!isJsonObject(doc) || doc.kind !== "List" || "group" in doc || !("items" in doc)) {
    return undefined;
  }
  if (doc.apiVersion !== undefined && doc.apiVersion !== "v1") {
    throw new Error(`${at}: a List's apiVersion must be v1`);
  }
  if (!Array.isArray(doc.items)) throw new Error(`${at}: a List's items must be an array`);
  return doc.items;
}

function applyItem(value: unknown, at: string): ApplyItem {
  if (!isJsonObject(value)) {
    throw new Error(`${at}: expected an object with group, kind, name and spec, or a manifest`);
  }
  return "apiVersion" in value ? fromManifest(value, at) : fromOwnForm(value, at);
}

function stringMap(value: unknown, what: string, at: string): StringMap | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isJsonObject(value) || !Object.values(value).every((v) => typeof v === "string")) {
    throw new Error(`${at}: ${what} must be a map of strings`);
  }
  return value as StringMap;
}

function unknownField(o: JsonObject, known: Set<string>, ignored: Set<string>): string | undefined {
  return Object.keys(o).find((k) => !known.has(k) && !ignored.has(k));
}

/** A Kubernetes manifest: `apiVersion: <group>/v1` (`v1`: the core group), kind, metadata, spec. */
function fromManifest(o: JsonObject, at: string): ApplyItem {
  if (typeof o.apiVersion !== "string") throw new Error(`${at}: apiVersion must be a string`);
  let group: string;
  if (o.apiVersion === "v1") group = "";
  else if (o.apiVersion.endsWith("/v1") && o.apiVersion.length > 3) {
    group = o.apiVersion.slice(0, -3);
  } else {
    throw new Error(
      `${at}: apiVersion ${
        JSON.stringify(o.apiVersion)
      }: expected <group>/v1 (v1 for the core group)`,
    );
  }
  if (typeof o.kind !== "string" || o.kind === "") {
    throw new Error(`${at}: kind must be a non-empty string`);
  }
  const extra = unknownField(o, MANIFEST_FIELDS, new Set());
  if (extra !== undefined) throw new Error(`${at}: unknown field ${JSON.stringify(extra)}`);
  const metadata = o.metadata ?? {};
  if (!isJsonObject(metadata)) throw new Error(`${at}: metadata must be an object`);
  if (metadata.generateName !== undefined) {
    throw new Error(`${at}: metadata.generateName is not supported: give metadata.name`);
  }
  const extraMeta = unknownField(metadata, METADATA_FIELDS, SERVER_METADATA);
  if (extraMeta !== undefined) {
    throw new Error(`${at}: unknown field ${JSON.stringify(`metadata.${extraMeta}`)}`);
  }
  if (typeof metadata.name !== "string" || metadata.name === "") {
    throw new Error(`${at}: metadata.name must be a non-empty string`);
  }
  if (metadata.namespace !== undefined && typeof metadata.namespace !== "string") {
    throw new Error(`${at}: metadata.namespace must be a string`);
  }
  return {
    at,
    group,
    kind: o.kind,
    name: metadata.name,
    namespace: metadata.namespace === "" ? undefined : metadata.namespace,
    spec: o.spec === undefined || o.spec === null ? {} : o.spec,
    labels: stringMap(metadata.labels, "metadata.labels", at),
    annotations: stringMap(metadata.annotations, "metadata.annotations", at),
  };
}

/** The CLI's own form, and what `get -o json|yaml` prints. */
function fromOwnForm(o: JsonObject, at: string): ApplyItem {
  if (typeof o.group !== "string") throw new Error(`${at}: "group" must be a string`);
  if (typeof o.kind !== "string" || o.kind === "") {
    throw new Error(`${at}: "kind" must be a non-empty string`);
  }
  if (typeof o.name !== "string" || o.name === "") {
    throw new Error(`${at}: "name" must be a non-empty string`);
  }
  if (!("spec" in o) || o.spec === undefined) throw new Error(`${at}: "spec" is missing`);
  if (o.namespace !== undefined && typeof o.namespace !== "string") {
    throw new Error(`${at}: "namespace" must be a string`);
  }
  const extra = unknownField(o, OWN_FIELDS, VIEW_FIELDS);
  if (extra !== undefined) throw new Error(`${at}: unknown field ${JSON.stringify(extra)}`);
  return {
    at,
    group: o.group,
    kind: o.kind,
    name: o.name,
    namespace: o.namespace === "" ? undefined : o.namespace,
    spec: o.spec,
    labels: stringMap(o.labels, '"labels"', at),
    annotations: stringMap(o.annotations, '"annotations"', at),
  };
}
