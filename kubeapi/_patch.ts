/**
 * The two patch formats this server applies to a resource: JSON merge patch
 * (RFC 7396, `application/merge-patch+json`) and JSON patch (RFC 6902,
 * `application/json-patch+json`). A patch that does not apply throws a
 * `KubeApiFailure` (422 `Invalid` for a failed `test` or a missing path).
 * A JSON patch is bounded while it applies: it may add at most a given
 * number of bytes to the document, checked before each value is built, so
 * `copy` operations that double an array cannot take the memory.
 *
 * @module
 */
import { KubeApiFailure } from "./_status.ts";

type Json = unknown;
type JsonObject = Record<string, Json>;

const isObject = (v: Json): v is JsonObject =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Sets `key` of `object` as an own member: assigning `"__proto__"` would set the prototype instead. */
function setMember(object: JsonObject, key: string, value: Json): void {
  Object.defineProperty(object, key, {
    value,
    writable: true,
    enumerable: true,
    configurable: true,
  });
}

/** RFC 7396: `null` removes a member, an object merges, anything else replaces. */
export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return patch;
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) {
      delete out[key];
      continue;
    }
    const merged = mergePatch(Object.hasOwn(out, key) ? out[key] : undefined, value);
    setMember(out, key, merged);
  }
  return out;
}

function invalid(path: string, message: string): KubeApiFailure {
  return new KubeApiFailure("Invalid", `the JSON patch does not apply: ${message}`, {
    causes: [{ field: path, message, reason: "FieldValueInvalid" }],
  });
}

function bad(message: string): KubeApiFailure {
  return new KubeApiFailure("BadRequest", `the JSON patch is malformed: ${message}`);
}

/** A JSON pointer's reference tokens. */
function tokens(pointer: unknown): string[] {
  if (typeof pointer !== "string" || (pointer !== "" && !pointer.startsWith("/"))) {
    throw bad(`path ${JSON.stringify(pointer)} is not a JSON pointer`);
  }
  if (pointer === "") return [];
  return pointer.slice(1).split("/").map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function clone(v: Json): Json {
  return v === undefined ? undefined : JSON.parse(JSON.stringify(v));
}

/** The container holding the pointer's last token, and that token. */
function parentOf(doc: Json, path: string[], pointer: string): [JsonObject | Json[], string] {
  let at: Json = doc;
  for (const t of path.slice(0, -1)) {
    if (Array.isArray(at)) at = at[Number(t)];
    else if (isObject(at) && Object.hasOwn(at, t)) at = at[t];
    else throw invalid(pointer, `${pointer} does not exist`);
  }
  if (!Array.isArray(at) && !isObject(at)) throw invalid(pointer, `${pointer} does not exist`);
  return [at, path[path.length - 1]];
}

function index(array: Json[], token: string, pointer: string, adding: boolean): number {
  if (adding && token === "-") return array.length;
  if (!/^(0|[1-9]\d{0,8})$/.test(token)) throw invalid(pointer, `${token} is not an array index`);
  const i = Number(token);
  if (i > array.length || (!adding && i === array.length)) {
    throw invalid(pointer, `index ${i} is out of bounds`);
  }
  return i;
}

function read(doc: Json, pointer: string): Json {
  const path = tokens(pointer);
  if (path.length === 0) return doc;
  const [parent, last] = parentOf(doc, path, pointer);
  if (Array.isArray(parent)) return parent[index(parent, last, pointer, false)];
  if (!Object.hasOwn(parent, last)) throw invalid(pointer, `${pointer} does not exist`);
  return parent[last];
}

function remove(doc: Json, pointer: string): Json {
  const path = tokens(pointer);
  if (path.length === 0) throw invalid(pointer, "the whole document cannot be removed");
  const [parent, last] = parentOf(doc, path, pointer);
  if (Array.isArray(parent)) return parent.splice(index(parent, last, pointer, false), 1)[0];
  if (!Object.hasOwn(parent, last)) throw invalid(pointer, `${pointer} does not exist`);
  const value = parent[last];
  delete parent[last];
  return value;
}

/**
 * Adds `value` at `pointer`; `size` is the value's JSON size, charged to
 * `budget` (less what a replaced member held) before anything is linked in.
 */
function add(doc: Json, pointer: string, value: Json, size: number, budget: Budget): Json {
  const path = tokens(pointer);
  if (path.length === 0) {
    budget.set(size, pointer);
    return value;
  }
  const [parent, last] = parentOf(doc, path, pointer);
  if (Array.isArray(parent)) {
    const at = index(parent, last, pointer, true);
    budget.charge(size + 1, pointer);
    parent.splice(at, 0, value);
  } else {
    const replaced = Object.hasOwn(parent, last) ? sizeOf(parent[last]) + last.length + 4 : 0;
    budget.charge(size + last.length + 4 - replaced, pointer);
    setMember(parent, last, value);
  }
  return doc;
}

/**
 * The length of `value`'s JSON text, counted without building it (strings
 * without their escapes); stops counting once past `cap`.
 */
function sizeOf(value: Json, cap = Number.MAX_SAFE_INTEGER): number {
  let size = 0;
  const stack: Json[] = [value];
  while (stack.length > 0 && size <= cap) {
    const v = stack.pop();
    if (typeof v === "string") size += v.length + 2;
    else if (typeof v === "number") size += String(v).length;
    else if (typeof v === "boolean") size += v ? 4 : 5;
    else if (v === null || v === undefined) size += 4;
    else if (Array.isArray(v)) {
      size += 2 + Math.max(0, v.length - 1);
      for (const item of v) stack.push(item);
    } else {
      const entries = Object.entries(v as JsonObject);
      size += 2 + Math.max(0, entries.length - 1);
      for (const [key, item] of entries) {
        size += key.length + 3;
        stack.push(item);
      }
    }
  }
  return size;
}

/** The document's running size against its bound. */
class Budget {
  #size: number;
  readonly #limit: number;
  readonly #growth: number;
  /** Bytes copied (`copy`) and compared (`test`) so far: the patch's work, never given back. */
  #work = 0;
  readonly #workLimit: number;
  constructor(size: number, growth: number) {
    this.#size = size;
    this.#growth = growth;
    this.#limit = size + growth;
    this.#workLimit = 2 * growth;
  }
  /** How many more bytes the patch may copy or compare. */
  get workLeft(): number {
    return this.#workLimit - this.#work;
  }
  /** @throws {KubeApiFailure} Invalid: copying or comparing `bytes` more would pass the bound. */
  work(bytes: number, pointer: string): void {
    this.#work += bytes;
    if (this.#work <= this.#workLimit) return;
    const message = `the JSON patch copies and compares more than ${this.#workLimit} bytes ` +
      "(twice the object size limit)";
    throw new KubeApiFailure("Invalid", message, {
      causes: [{ field: pointer, message, reason: "RequestEntityTooLarge" }],
    });
  }
  /** How many more bytes the document may take. */
  get left(): number {
    return this.#limit - this.#size;
  }
  /** @throws {KubeApiFailure} Invalid: `bytes` more would pass the bound. */
  charge(bytes: number, pointer: string): void {
    if (this.#size + bytes > this.#limit) throw this.#tooLarge(pointer);
    this.#size += bytes;
  }
  /** The document is replaced by one of `bytes`. */
  set(bytes: number, pointer: string): void {
    if (bytes > this.#limit) throw this.#tooLarge(pointer);
    this.#size = bytes;
  }
  #tooLarge(pointer: string): KubeApiFailure {
    const message =
      `the JSON patch grows the object by more than ${this.#growth} bytes (the object size limit)`;
    return new KubeApiFailure("Invalid", message, {
      causes: [{ field: pointer, message, reason: "RequestEntityTooLarge" }],
    });
  }
}

/** Whether `a` and `b` are the same JSON value; objects compare by members, in any order. */
function jsonEqual(a: Json, b: Json): boolean {
  const stack: [Json, Json][] = [[a, b]];
  while (stack.length > 0) {
    const [x, y] = stack.pop()!;
    if (x === y) continue;
    if (typeof x !== "object" || typeof y !== "object" || x === null || y === null) return false;
    if (Array.isArray(x) || Array.isArray(y)) {
      if (!Array.isArray(x) || !Array.isArray(y) || x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) stack.push([x[i], y[i]]);
      continue;
    }
    const keys = Object.keys(x);
    if (keys.length !== Object.keys(y).length) return false;
    for (const key of keys) {
      if (!Object.hasOwn(y, key)) return false;
      stack.push([(x as JsonObject)[key], (y as JsonObject)[key]]);
    }
  }
  return true;
}

/** The most operations one JSON patch may hold. */
export const MAX_OPERATIONS = 1000;

/**
 * RFC 6902 over a copy of `target`: add, remove, replace, move, copy, test.
 * The document may grow by at most `maxGrowth` bytes of JSON over the
 * operations (a removal gives its bytes back), and the operations may copy
 * and compare at most twice that in all; an operation that would pass either
 * is refused before its value is copied. `test` compares JSON values (member
 * order aside).
 * @throws {KubeApiFailure} BadRequest: a malformed patch; Invalid: an operation does not apply, or
 *   the document would grow past the bound.
 */
export function jsonPatch(target: Json, patch: Json, maxGrowth: number): Json {
  if (!Array.isArray(patch)) throw bad("expected an array of operations");
  if (patch.length > MAX_OPERATIONS) throw bad(`more than ${MAX_OPERATIONS} operations`);
  let doc = clone(target);
  const budget = new Budget(sizeOf(doc), maxGrowth);
  const value = (v: Json, pointer: string): [Json, number] => {
    const size = sizeOf(v, budget.left);
    if (size > budget.left) budget.charge(size, pointer);
    return [clone(v), size];
  };
  for (const op of patch) {
    if (!isObject(op)) throw bad("an operation is not an object");
    const path = op.path;
    if (typeof path !== "string") throw bad("an operation has no path");
    const needValue = () => {
      if (!Object.hasOwn(op, "value")) throw bad(`${op.op} at ${path} has no value`);
      return op.value;
    };
    switch (op.op) {
      case "add":
        doc = add(doc, path, ...value(needValue(), path), budget);
        break;
      case "remove":
        budget.charge(-sizeOf(remove(doc, path)), path);
        break;
      case "replace":
        read(doc, path);
        if (tokens(path).length === 0) {
          const [replacement, size] = value(needValue(), path);
          budget.set(size, path);
          doc = replacement;
        } else {
          budget.charge(-sizeOf(remove(doc, path)), path);
          doc = add(doc, path, ...value(needValue(), path), budget);
        }
        break;
      case "move": {
        if (typeof op.from !== "string") throw bad("move has no from");
        const moved = remove(doc, op.from);
        const size = sizeOf(moved);
        budget.charge(-size, op.from);
        doc = add(doc, path, moved, size, budget);
        break;
      }
      case "copy": {
        if (typeof op.from !== "string") throw bad("copy has no from");
        const source = read(doc, op.from);
        budget.work(sizeOf(source, budget.workLeft), path);
        doc = add(doc, path, ...value(source, path), budget);
        break;
      }
      case "test": {
        const actual = read(doc, path);
        budget.work(sizeOf(actual, budget.workLeft), path);
        if (!jsonEqual(actual, needValue())) throw invalid(path, `test failed at ${path}`);
        break;
      }
      default:
        throw bad(`unknown operation ${JSON.stringify(op.op)}`);
    }
  }
  return doc;
}
