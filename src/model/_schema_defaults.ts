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
import { isJsonObject, type JsonObject } from "./_json_object.ts";

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

/** Sets member `key` of `target`: a member named `__proto__` stays a member, never the prototype. */
function setMember(target: JsonObject, key: string, member: unknown): void {
  if (key !== "__proto__") target[key] = member;
  else {
    Object.defineProperty(target, key, {
      value: member,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
}

/** A copy of a JSON value (a default is parsed JSON: no cycles, no exotic objects). */
function copyJson(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map(copyJson);
  const out: JsonObject = {};
  for (const [key, member] of Object.entries(value)) setMember(out, key, copyJson(member));
  return out;
}

/** Whether any schema position under `schema` declares a `default` (a cheap over-approximation). */
function mayDefault(schema: unknown): boolean {
  return JSON.stringify(schema).includes('"default"');
}

/**
 * What one schema position does to a value, compiled once: the defaults of
 * its declared members, the plans of its members, of the members
 * `additionalProperties` covers, and of array elements. Built lazily, one
 * per schema position, so a recursive schema compiles to a cyclic plan.
 */
interface Plan {
  /** Declared members with a default, and the default. */
  defaults: [string, unknown][];
  /** Declared members (those with a plan of their own map to it). */
  members: Map<string, Plan | undefined>;
  additional: Plan | undefined;
  items: Plan | undefined;
  prefix: (Plan | undefined)[];
}

/**
 * A defaulter for `schema` (a parsed JSON Schema), or `undefined` when it
 * declares no default: the common schema costs nothing per write.
 */
export function defaulterOf(schema: unknown): Defaulter | undefined {
  if (!isJsonObject(schema) || !mayDefault(schema)) return undefined;
  const root = schema;
  const plans = new Map<JsonObject, Plan>();

  /** `node` and what its `$ref`s and `allOf` branches add at the same position. */
  function facets(node: unknown, out: JsonObject[] = [], hops = 0): JsonObject[] {
    if (!isJsonObject(node) || out.includes(node)) return out;
    out.push(node);
    if (typeof node.$ref === "string" && hops < MAX_REF_HOPS) {
      facets(resolvePointer(root, node.$ref), out, hops + 1);
    }
    if (Array.isArray(node.allOf)) { for (const branch of node.allOf) facets(branch, out, hops); }
    return out;
  }

  /** The default `node` declares for its position, own first, else through a `$ref`. */
  function defaultOf(node: unknown): { value: unknown } | undefined {
    for (const facet of facets(node)) {
      if (Object.hasOwn(facet, "default")) return { value: facet.default };
    }
    return undefined;
  }

  /** The plan of `node`'s position; `undefined` when it is not a schema object. */
  function planOf(node: unknown): Plan | undefined {
    if (!isJsonObject(node)) return undefined;
    const known = plans.get(node);
    if (known !== undefined) return known;
    const plan: Plan = {
      defaults: [],
      members: new Map(),
      additional: undefined,
      items: undefined,
      prefix: [],
    };
    // Set before the members are planned: a member that refers back finds it.
    plans.set(node, plan);
    for (const facet of facets(node)) {
      if (isJsonObject(facet.properties)) {
        for (const [key, sub] of Object.entries(facet.properties)) {
          if (plan.members.has(key)) continue;
          const found = defaultOf(sub);
          if (found !== undefined) plan.defaults.push([key, found.value]);
          plan.members.set(key, planOf(sub));
        }
      }
      if (plan.additional === undefined && isJsonObject(facet.additionalProperties)) {
        plan.additional = planOf(facet.additionalProperties);
      }
      if (plan.items === undefined && isJsonObject(facet.items)) plan.items = planOf(facet.items);
      if (plan.prefix.length === 0 && Array.isArray(facet.prefixItems)) {
        plan.prefix = facet.prefixItems.map(planOf);
      }
    }
    return plan;
  }

  function fill(plan: Plan, value: unknown, depth: number): unknown {
    if (depth >= MAX_DEPTH) return value;
    if (Array.isArray(value)) return fillArray(plan, value, depth);
    if (isJsonObject(value)) return fillObject(plan, value, depth);
    return value;
  }

  function fillArray(plan: Plan, value: unknown[], depth: number): unknown[] {
    let out = value;
    for (let i = 0; i < value.length; i++) {
      const sub = i < plan.prefix.length ? plan.prefix[i] : plan.items;
      if (sub === undefined) continue;
      const next = fill(sub, value[i], depth + 1);
      if (next === value[i]) continue;
      if (out === value) out = [...value];
      out[i] = next;
    }
    return out;
  }

  function fillObject(plan: Plan, value: JsonObject, depth: number): JsonObject {
    let out = value;
    const set = (key: string, member: unknown) => {
      if (out === value) out = { ...value };
      setMember(out, key, member);
    };
    for (const [key, fallback] of plan.defaults) {
      if (!Object.hasOwn(value, key)) set(key, copyJson(fallback));
    }
    for (const key of Object.keys(out)) {
      const sub = plan.members.has(key) ? plan.members.get(key) : plan.additional;
      if (sub === undefined) continue;
      const next = fill(sub, out[key], depth + 1);
      if (next !== out[key]) set(key, next);
    }
    return out;
  }

  const top = planOf(root)!;
  return (value) => fill(top, value, 0);
}
