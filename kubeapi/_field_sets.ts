/**
 * Field sets, as server-side apply tracks them: the leaf fields a resource
 * sets, by path, in the `FieldsV1` spelling — `f:<name>` for a member,
 * `k:<json>` for an item of a list keyed by `x-kubernetes-list-map-keys`,
 * `v:<json>` for an item of an `x-kubernetes-list-type: set` list. A list
 * with no list type is atomic (one leaf), as Kubernetes treats a custom
 * resource's lists; a map is granular unless `x-kubernetes-map-type: atomic`.
 * Tracked: `metadata.labels`, `metadata.annotations` and `spec`.
 *
 * @module
 */
import { branches, declaredAt } from "./_field_validation.ts";
import type { OpenApiSchema } from "./_openapi_schema.ts";
import { isJsonObject, type JsonObject } from "../src/model/_json_object.ts";

/** A field's path, in `FieldsV1` elements (`["f:spec", "f:replicas"]`). */
export type FieldPath = readonly string[];

/** The most paths one set holds: a resource is bounded in bytes, this bounds the set built from stored text. */
export const MAX_PATHS = 100_000;

/** A set of field paths. */
export class FieldSet {
  readonly #paths = new Map<string, FieldPath>();

  /** A set holding `paths`. */
  static of(paths: Iterable<FieldPath>): FieldSet {
    const set = new FieldSet();
    for (const p of paths) set.add(p);
    return set;
  }

  /** Adds `path`. */
  add(path: FieldPath): void {
    if (this.#paths.size < MAX_PATHS) this.#paths.set(JSON.stringify(path), path);
  }

  /** Whether it holds `path`. */
  has(path: FieldPath): boolean {
    return this.#paths.has(JSON.stringify(path));
  }

  /** Removes `path`. */
  delete(path: FieldPath): void {
    this.#paths.delete(JSON.stringify(path));
  }

  /** How many paths it holds. */
  get size(): number {
    return this.#paths.size;
  }

  /** Whether it holds a path that starts with `prefix` (`prefix` itself included). */
  hasUnder(prefix: FieldPath): boolean {
    for (const p of this.#paths.values()) {
      if (p.length >= prefix.length && prefix.every((e, i) => p[i] === e)) return true;
    }
    return false;
  }

  /** Whether both hold the same paths. */
  equals(other: FieldSet): boolean {
    return this.size === other.size && [...this].every((p) => other.has(p));
  }

  /** Its paths. */
  [Symbol.iterator](): IterableIterator<FieldPath> {
    return this.#paths.values();
  }
}

/** The schema of member `key` under `schema`: declared, else `additionalProperties`, else free. */
function memberSchema(schema: OpenApiSchema, key: string): OpenApiSchema {
  const all = branches(schema);
  const own = all.map((s) => declaredAt(s, key)).find(isJsonObject);
  if (own !== undefined) return own;
  return all.map((s) => s.additionalProperties).find(isJsonObject) ?? {};
}

function itemSchema(schema: OpenApiSchema): OpenApiSchema {
  return branches(schema).map((s) => s.items).find(isJsonObject) ?? {};
}

/** How a list merges: `"map"` with its keys, `"set"`, or `"atomic"`. */
type ListType = { type: "map"; keys: string[] } | { type: "set" } | { type: "atomic" };

function listType(schema: OpenApiSchema): ListType {
  const all = branches(schema);
  const type = all.map((s) => s["x-kubernetes-list-type"]).find((t) => typeof t === "string");
  if (type === "set") return { type: "set" };
  if (type === "map") {
    const keys = all.map((s) => s["x-kubernetes-list-map-keys"]).find(Array.isArray);
    if (keys !== undefined && keys.length > 0 && keys.every((k) => typeof k === "string")) {
      return { type: "map", keys: keys as string[] };
    }
  }
  return { type: "atomic" };
}

function atomicMap(schema: OpenApiSchema): boolean {
  return branches(schema).some((s) => s["x-kubernetes-map-type"] === "atomic");
}

/** The `k:` element of a map-list item: its keys, in the list's key order. */
function itemKey(item: unknown, keys: readonly string[]): string | undefined {
  if (!isJsonObject(item)) return undefined;
  const picked: JsonObject = {};
  for (const k of keys) {
    if (!Object.hasOwn(item, k)) return undefined;
    picked[k] = item[k];
  }
  return `k:${JSON.stringify(picked)}`;
}

function walk(value: unknown, schema: OpenApiSchema, path: FieldPath, out: FieldSet): void {
  if (isJsonObject(value)) {
    const keys = Object.keys(value);
    if (keys.length === 0 || atomicMap(schema)) return out.add(path);
    for (const key of keys) walk(value[key], memberSchema(schema, key), [...path, `f:${key}`], out);
    return;
  }
  if (Array.isArray(value)) {
    const list = listType(schema);
    if (list.type === "atomic" || value.length === 0) return out.add(path);
    if (list.type === "set") {
      for (const item of value) out.add([...path, `v:${JSON.stringify(item)}`]);
      return;
    }
    const items = itemSchema(schema);
    for (const item of value) {
      const key = itemKey(item, list.keys);
      // An item without its keys cannot be addressed: the list is owned whole.
      if (key === undefined) return out.add(path);
      out.add([...path, key]);
      walk(item, items, [...path, key], out);
    }
    return;
  }
  out.add(path);
}

/** The tracked fields `resource` sets, judged by the resource schema `schema`. */
export function fieldSetOf(resource: unknown, schema: OpenApiSchema): FieldSet {
  const out = new FieldSet();
  if (!isJsonObject(resource)) return out;
  const metadata = resource.metadata;
  for (const field of ["labels", "annotations"]) {
    const map = isJsonObject(metadata) ? metadata[field] : undefined;
    if (isJsonObject(map)) {
      for (const key of Object.keys(map)) out.add(["f:metadata", `f:${field}`, `f:${key}`]);
    }
  }
  if (Object.hasOwn(resource, "spec") && resource.spec !== undefined) {
    walk(resource.spec, memberSchema(schema, "spec"), ["f:spec"], out);
  }
  return out;
}

/** Where one path element leads from `at`: the container, and the member or index. */
function step(at: unknown, element: string): { found: boolean; value?: unknown } {
  if (element.startsWith("f:")) {
    const key = element.slice(2);
    return isJsonObject(at) && Object.hasOwn(at, key)
      ? { found: true, value: at[key] }
      : { found: false };
  }
  if (!Array.isArray(at)) return { found: false };
  const i = indexOf(at, element);
  return i < 0 ? { found: false } : { found: true, value: at[i] };
}

function indexOf(list: readonly unknown[], element: string): number {
  let wanted: unknown;
  try {
    wanted = JSON.parse(element.slice(2));
  } catch {
    return -1;
  }
  if (element.startsWith("v:")) return list.findIndex((item) => sameJson(item, wanted));
  if (!element.startsWith("k:") || !isJsonObject(wanted)) return -1;
  const keys = Object.entries(wanted);
  return list.findIndex((item) =>
    isJsonObject(item) && keys.every(([k, v]) => Object.hasOwn(item, k) && sameJson(item[k], v))
  );
}

/** The value at `path` in `doc`, if it is there. */
export function valueAt(doc: unknown, path: FieldPath): { found: boolean; value?: unknown } {
  let at: { found: boolean; value?: unknown } = { found: true, value: doc };
  for (const element of path) {
    at = step(at.value, element);
    if (!at.found) return at;
  }
  return at;
}

/** Removes the field at `path` from `doc` (in place); a missing one is left alone. */
export function removeAt(doc: unknown, path: FieldPath): void {
  if (path.length === 0) return;
  const parent = valueAt(doc, path.slice(0, -1));
  if (!parent.found) return;
  const last = path[path.length - 1];
  if (last.startsWith("f:")) {
    if (isJsonObject(parent.value)) delete parent.value[last.slice(2)];
  } else if (Array.isArray(parent.value)) {
    const i = indexOf(parent.value, last);
    if (i >= 0) parent.value.splice(i, 1);
  }
}

/** `set` as a `FieldsV1` tree: leaves are `{}`, a path that also has children holds `"."`. */
export function toFieldsV1(set: FieldSet): JsonObject {
  const root: JsonObject = {};
  const sorted = [...set].sort((a, b) => a.length - b.length);
  for (const path of sorted) {
    let node = root;
    for (const element of path) {
      if (!isJsonObject(node[element])) node[element] = {};
      node = node[element] as JsonObject;
    }
  }
  // A path in the set that also has children (a map-list item) marks itself with ".".
  const mark = (node: JsonObject, path: FieldPath) => {
    for (const [key, child] of Object.entries(node)) {
      if (key === "." || !isJsonObject(child)) continue;
      const childPath = [...path, key];
      if (Object.keys(child).length > 0 && set.has(childPath)) child["."] = {};
      mark(child, childPath);
    }
  };
  mark(root, []);
  return root;
}

/** The set a `FieldsV1` tree holds; malformed parts are skipped, and it is bounded in paths and depth. */
export function fromFieldsV1(tree: unknown): FieldSet {
  const out = new FieldSet();
  const visit = (node: unknown, path: FieldPath) => {
    if (!isJsonObject(node) || path.length > 64) return;
    const children = Object.keys(node).filter((k) => k !== ".");
    if (path.length > 0 && (children.length === 0 || Object.hasOwn(node, "."))) out.add(path);
    for (const key of children) {
      if (/^[fkv]:/.test(key)) visit(node[key], [...path, key]);
    }
  };
  visit(tree, []);
  return out;
}

/** Whether two JSON values hold the same data, member order aside. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => sameJson(v, b[i]));
  }
  if (!isJsonObject(a) || !isJsonObject(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length &&
    keys.every((k) => Object.hasOwn(b, k) && sameJson(a[k], b[k]));
}

/**
 * `applied` merged over `live` as server-side apply merges: a granular map
 * member by member, a map-list item by item (by key), a set by union, and
 * anything else (atomic lists and maps, scalars) replaced. A `null` member
 * removes it. Neither input is changed.
 */
export function mergeApplied(live: unknown, applied: unknown, schema: OpenApiSchema): unknown {
  if (isJsonObject(applied) && isJsonObject(live) && !atomicMap(schema)) {
    const out: JsonObject = { ...live };
    for (const [key, value] of Object.entries(applied)) {
      if (value === null) {
        delete out[key];
        continue;
      }
      const merged = mergeApplied(
        Object.hasOwn(out, key) ? out[key] : undefined,
        value,
        memberSchema(schema, key),
      );
      Object.defineProperty(out, key, {
        value: merged,
        writable: true,
        enumerable: true,
        configurable: true,
      });
    }
    return out;
  }
  if (Array.isArray(applied) && Array.isArray(live)) {
    const list = listType(schema);
    if (list.type === "set") {
      return [...live, ...applied.filter((a) => !live.some((l) => sameJson(l, a)))];
    }
    if (list.type === "map") {
      const out = [...live];
      for (const item of applied) {
        const key = itemKey(item, list.keys);
        const i = key === undefined ? -1 : indexOf(out, key);
        if (i < 0) out.push(item);
        else out[i] = mergeApplied(out[i], item, itemSchema(schema));
      }
      return out;
    }
  }
  return structuredClone(applied);
}
