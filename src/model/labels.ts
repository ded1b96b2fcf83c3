/**
 * Labels and annotations: Kubernetes' rules for their keys and values, the
 * checks every writer runs before it writes, and the JSON-merge a metadata
 * update applies.
 *
 * @module
 */
import { utf8Length } from "./_codec.ts";
import { InvalidMetadataError } from "./errors.ts";
import { isStorableText } from "./_text.ts";
import { describe, quote } from "./_values.ts";

/** An object's labels or annotations: frozen, `{}` when none. */
export type Labels = Readonly<Record<string, string>>;

/** A metadata patch: a string sets the key, `null` removes it. */
export type MetadataPatch = Readonly<Record<string, string | null>>;

/** What `updateMetadata` takes: a JSON-merge patch of each map (a string sets a key, `null` removes it). */
export interface MetadataUpdate {
  /** Label keys to set or remove. @default {undefined} (labels unchanged) */
  readonly labels?: Readonly<Record<string, string | null>>;
  /** Annotation keys to set or remove. @default {undefined} (annotations unchanged) */
  readonly annotations?: Readonly<Record<string, string | null>>;
}

/** Which map a check is about. */
export type MetadataField = "labels" | "annotations";

/** The most UTF-8 bytes a map's keys and values may hold together (Kubernetes' 256 KiB). */
export const METADATA_BYTES = 256 * 1024;

/** The most characters of a label value and of a key's name part. */
export const NAME_CHARS = 63;

/** The most characters of a key's DNS-subdomain prefix. */
export const PREFIX_CHARS = 253;

const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const PREFIX = new RegExp(`^${DNS_LABEL}(\\.${DNS_LABEL})*$`);

/** The frozen empty map every object without labels (or annotations) shares. */
export const NO_LABELS: Labels = Object.freeze({});

/** Why `key` is not a qualified key, or `undefined` when it is one. */
export function keyProblem(key: string): string | undefined {
  const slash = key.indexOf("/");
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (slash >= 0) {
    const prefix = key.slice(0, slash);
    if (prefix === "") return "its prefix before '/' is empty";
    if (prefix.length > PREFIX_CHARS) {
      return `its prefix is ${prefix.length} characters, above ${PREFIX_CHARS}`;
    }
    if (!PREFIX.test(prefix)) {
      return "its prefix must be a DNS subdomain (lowercase alphanumerics, '-' and '.')";
    }
  }
  if (name === "") return "its name is empty";
  if (name.length > NAME_CHARS) return `its name is ${name.length} characters, above ${NAME_CHARS}`;
  if (!NAME.test(name)) {
    return "its name must be alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric";
  }
  return undefined;
}

/** Why `value` is not a label value, or `undefined` when it is one (`""` is). */
export function labelValueProblem(value: string): string | undefined {
  if (value === "") return undefined;
  if (value.length > NAME_CHARS) return `it is ${value.length} characters, above ${NAME_CHARS}`;
  if (!NAME.test(value)) {
    return "it must be empty or alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric";
  }
  return undefined;
}

function invalid(field: MetadataField, key: string, why: string): InvalidMetadataError {
  const singular = field === "labels" ? "label" : "annotation";
  return new InvalidMetadataError(`Cannot use ${singular} ${quote(key)}: ${why}`, field, key);
}

function checkMap(value: unknown, field: MetadataField): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new InvalidMetadataError(
      `Cannot use ${field}: current value is ${describe(value)}, expected an object of strings`,
      field,
      "",
    );
  }
  return value as Record<string, unknown>;
}

/**
 * Keys, and label values, already found well-formed: labels repeat across a
 * kind's objects, so most checks are a lookup. Bounded: each starts over at
 * {@linkcode MAX_REMEMBERED} entries.
 */
const wellFormed = { keys: new Set<string>(), values: new Set<string>() };

/** How many well-formed keys (and label values) are remembered. */
export const MAX_REMEMBERED = 1_024;

function remember(set: Set<string>, text: string): void {
  if (set.size >= MAX_REMEMBERED) set.clear();
  set.add(text);
}

/** Checks one entry; `null` passes when `allowNull` (a removal). Returns the entry's bytes. */
function checkEntry(field: MetadataField, key: string, value: unknown, allowNull: boolean): number {
  if (!wellFormed.keys.has(key)) {
    const keyWhy = keyProblem(key);
    if (keyWhy !== undefined) throw invalid(field, key, `the key is malformed: ${keyWhy}`);
    remember(wellFormed.keys, key);
  }
  if (value === null && allowNull) return 0;
  if (typeof value !== "string") {
    throw invalid(
      field,
      key,
      `its value is ${describe(value)}, expected a string${allowNull ? " or null" : ""}`,
    );
  }
  if (field === "labels") {
    if (!wellFormed.values.has(value)) {
      const why = labelValueProblem(value);
      if (why !== undefined) {
        throw invalid(field, key, `its value ${quote(value)} is malformed: ${why}`);
      }
      remember(wellFormed.values, value);
    }
  } else if (!isStorableText(value)) {
    throw invalid(field, key, "its value must be well-formed UTF-16 without NUL");
  }
  return key.length + utf8Length(value);
}

function checkBytes(field: MetadataField, bytes: number): void {
  if (bytes > METADATA_BYTES) {
    throw new InvalidMetadataError(
      `Cannot use ${field}: they hold ${bytes} bytes in all, above ${METADATA_BYTES} (256 KiB)`,
      field,
      "",
    );
  }
}

/** The maps {@linkcode checkMetadata} returned, per field (the rules differ). */
const checked: Record<MetadataField, WeakSet<object>> = {
  labels: new WeakSet(),
  annotations: new WeakSet(),
};

/**
 * Checks a full map (a create's labels or annotations) and returns it frozen,
 * keys sorted; `undefined` reads as none.
 * @throws {InvalidMetadataError} a key or value breaks the rules, or the map is above 256 KiB.
 */
export function checkMetadata(value: unknown, field: MetadataField): Labels {
  if (value === undefined) return NO_LABELS;
  // A map this function returned is frozen: checked once, it needs no second check (a client's,
  // then the store's).
  if (checked[field].has(value as object)) return value as Labels;
  const map = checkMap(value, field);
  const keys = Object.keys(map);
  if (keys.length === 0) return NO_LABELS;
  let bytes = 0;
  for (const key of keys) {
    bytes += checkEntry(field, key, map[key], false);
    checkBytes(field, bytes);
  }
  const out: Record<string, string> = {};
  for (const key of keys.sort()) out[key] = map[key] as string;
  Object.freeze(out);
  checked[field].add(out);
  return out;
}

/**
 * Checks a patch (`null` removes a key) and returns it as a plain copy;
 * `undefined` reads as no change.
 * @throws {InvalidMetadataError} a key or value breaks the rules, or the patch is above 256 KiB.
 */
export function checkMetadataPatch(
  value: unknown,
  field: MetadataField,
): MetadataPatch | undefined {
  if (value === undefined) return undefined;
  const map = checkMap(value, field);
  let bytes = 0;
  const out: Record<string, string | null> = {};
  for (const key of Object.keys(map)) {
    bytes += checkEntry(field, key, map[key], true);
    checkBytes(field, bytes);
    out[key] = map[key] as string | null;
  }
  return out;
}

/**
 * Checks an `updateMetadata` argument: both patches, as {@linkcode checkMetadataPatch}.
 * @throws {TypeError} `update` is not an object.
 * @throws {InvalidMetadataError} a key or value breaks the rules.
 */
export function checkMetadataUpdate(
  update: unknown,
  call: string,
): { labels: MetadataPatch | undefined; annotations: MetadataPatch | undefined } {
  if (typeof update !== "object" || update === null || Array.isArray(update)) {
    throw new TypeError(
      `Cannot ${call}: current value is ${describe(update)}, expected { labels?, annotations? }`,
    );
  }
  const u = update as MetadataUpdate;
  return {
    labels: checkMetadataPatch(u.labels, "labels"),
    annotations: checkMetadataPatch(u.annotations, "annotations"),
  };
}

/**
 * Applies a patch to a stored map (JSON-merge: a string sets, `null` removes)
 * and returns the result frozen, keys sorted.
 * @throws {InvalidMetadataError} the result is above 256 KiB.
 */
export function mergeMetadata(
  stored: Labels,
  patch: MetadataPatch | undefined,
  field: MetadataField,
): Labels {
  if (patch === undefined) return stored;
  const merged: Record<string, string> = { ...stored };
  for (const key of Object.keys(patch)) {
    const v = patch[key];
    if (v === null) delete merged[key];
    else merged[key] = v;
  }
  const keys = Object.keys(merged).sort();
  if (keys.length === 0) return NO_LABELS;
  let bytes = 0;
  const out: Record<string, string> = {};
  for (const key of keys) {
    out[key] = merged[key];
    bytes += key.length + utf8Length(merged[key]);
  }
  checkBytes(field, bytes);
  return Object.freeze(out);
}

/** Whether two maps hold the same entries. */
export function sameMetadata(a: Labels, b: Labels): boolean {
  const ak = Object.keys(a);
  if (ak.length !== Object.keys(b).length) return false;
  return ak.every((k) => Object.hasOwn(b, k) && b[k] === a[k]);
}
