/**
 * Structural defaulting from a JSON Schema, as the Kubernetes API server
 * defaults a custom resource from its CRD: a member an object's schema
 * declares in `properties` with a `default`, and that the value lacks, gets a
 * copy of that default; then the walk goes on into every member the schema
 * declares (the defaulted ones too), into each member an object schema's
 * `additionalProperties` covers, and into each element of an array under
 * `items` and `prefixItems`. Local `$ref`s (`#/...`) and `allOf` branches are
 * followed; `anyOf`/`oneOf` are not (which branch holds is not known before
 * validation, and the API server allows no defaults there). A value is never
 * changed in place: what is defaulted is copied along its path.
 *
 * @module
 */

type JsonObject = Record<string, unknown>;

const isObject = (v: unknown): v is JsonObject =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** How deep into a value defaults are filled; below it a value is left as given (the write's nesting limit refuses such depths anyway). */
const MAX_DEPTH = 256;
/** How many `$ref`s one schema position may follow before it stops (a reference loop). */
const MAX_REF_HOPS = 32;

/** Fills the defaults of a schema into a value; returns the value itself when nothing is filled. */
export type Defaulter = (value: unknown) => unknown;

/** `#/a/b~1c` resolved in `root`, or `undefined` when it names nothing (or is not local). */
function resolvePointer(root: unknown, ref: string): unknown {
  if (!ref.startsWith("#")) return undefined;
  const pointer = ref.slice(1);
  if (pointer === "") return root;
  if (!pointer.startsWith("/")) return undefined;
  let node: unknown = root;
  for (const raw of pointer.slice(1).split("/")) {
    const key = decodeURIComponent(raw).replaceAll("~1", "/").replaceAll("~0", "~");
    if (typeof node !== "object" || node === null || !Object.hasOwn(node, key)) return undefined;
    node = (node as JsonObject)[key];
  }
  return node;
}

/** A copy of a JSON value (a default is parsed JSON: no cycles, no exotic objects). */
function copyJson(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return value;
  return JSON.parse(JSON.stringify(value));
}

/** Whether any schema position under `schema` declares a `default` (a cheap over-approximation). */
function mayDefault(schema: unknown): boolean {
  return JSON.stringify(schema).includes('"default"');
}

/**
 * A defaulter for `schema` (a parsed JSON Schema), or `undefined` when it
 * declares no default: the common schema costs nothing per write.
 */
export function defaulterOf(schema: unknown): Defaulter | undefined {
  if (!isObject(schema) || !mayDefault(schema)) return undefined;
  const root = schema;

  /** `schema` and what its `$ref`s and `allOf` branches add at the same position. */
  function facets(node: unknown, out: JsonObject[] = [], hops = 0): JsonObject[] {
    if (!isObject(node) || out.includes(node)) return out;
    out.push(node);
    if (typeof node.$ref === "string" && hops < MAX_REF_HOPS) {
      facets(resolvePointer(root, node.$ref), out, hops + 1);
    }
    if (Array.isArray(node.allOf)) { for (const branch of node.allOf) facets(branch, out, hops); }
    return out;
  }

  /** The default `node` declares for the position, own first, else through a `$ref`. */
  function defaultOf(node: unknown): { value: unknown } | undefined {
    for (const facet of facets(node)) {
      if (Object.hasOwn(facet, "default")) return { value: facet.default };
    }
    return undefined;
  }

  function fill(node: unknown, value: unknown, depth: number): unknown {
    if (depth >= MAX_DEPTH) return value;
    const all = facets(node);
    if (all.length === 0) return value;
    if (Array.isArray(value)) return fillArray(all, value, depth);
    if (isObject(value)) return fillObject(all, value, depth);
    return value;
  }

  function fillArray(all: JsonObject[], value: unknown[], depth: number): unknown[] {
    let out = value;
    for (const facet of all) {
      const prefix = Array.isArray(facet.prefixItems) ? facet.prefixItems : [];
      const items = isObject(facet.items) ? facet.items : undefined;
      if (prefix.length === 0 && items === undefined) continue;
      for (let i = 0; i < out.length; i++) {
        const sub = i < prefix.length ? prefix[i] : items;
        if (sub === undefined) continue;
        const next = fill(sub, out[i], depth + 1);
        if (next === out[i]) continue;
        if (out === value) out = [...value];
        out[i] = next;
      }
    }
    return out;
  }

  function fillObject(all: JsonObject[], value: JsonObject, depth: number): JsonObject {
    let out = value;
    const set = (key: string, member: unknown) => {
      if (out === value) out = { ...value };
      // A member named `__proto__` must stay a member, never the prototype.
      Object.defineProperty(out, key, {
        value: member,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    };
    const declared = new Set<string>();
    for (const facet of all) {
      if (!isObject(facet.properties)) continue;
      for (const [key, sub] of Object.entries(facet.properties)) {
        declared.add(key);
        if (!Object.hasOwn(out, key)) {
          const found = defaultOf(sub);
          if (found === undefined) continue;
          set(key, copyJson(found.value));
        }
        const next = fill(sub, out[key], depth + 1);
        if (next !== out[key]) set(key, next);
      }
    }
    for (const facet of all) {
      if (!isObject(facet.additionalProperties)) continue;
      for (const key of Object.keys(out)) {
        if (declared.has(key)) continue;
        const next = fill(facet.additionalProperties, out[key], depth + 1);
        if (next !== out[key]) set(key, next);
      }
    }
    return out;
  }

  return (value) => fill(root, value, 0);
}
