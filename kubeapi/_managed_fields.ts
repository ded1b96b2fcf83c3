/**
 * Managed fields (`metadata.managedFields`): which manager set which fields,
 * per manager and operation, as Kubernetes records them
 * (docs/adr/2026-12-07-managed-fields.md). An `Update` (create, replace, a
 * merge or JSON patch) gives its manager the fields it changed and takes them
 * from every other manager; an `Apply` (server-side apply) owns exactly the
 * fields its configuration sets, conflicts with another manager over a field
 * whose value it would change (unless forced, which takes the field), and
 * removes the fields it set before and no longer sets when no other manager
 * owns them. The store keeps the entries as JSON text with the object.
 *
 * @module
 */
import { rfc3339 } from "./_objects.ts";
import {
  type FieldPath,
  FieldSet,
  fieldSetOf,
  fromFieldsV1,
  mergeApplied,
  removeAt,
  sameJson,
  toFieldsV1,
  valueAt,
} from "./_field_sets.ts";
import type { OpenApiSchema } from "./_openapi_schema.ts";
import { param } from "./_request.ts";
import { invalidFailure, KubeApiFailure, type StatusDetails } from "./_status.ts";
import { isJsonObject, type JsonObject } from "../src/model/_json_object.ts";
import { utf8Length } from "../src/model/_codec.ts";

/** What a write records. */
export type Operation = "Apply" | "Update";

/** One manager's entry, its fields as a set. */
export interface ManagerEntry {
  readonly manager: string;
  readonly operation: Operation;
  readonly apiVersion: string;
  readonly time: string;
  readonly fields: FieldSet;
}

/** The most entries one object keeps: past it, the oldest `Update` entries go. */
export const MAX_MANAGERS = 32;
/** The longest manager name, as the API server bounds `fieldManager`. */
export const MAX_MANAGER_CHARS = 128;

/**
 * The request's manager: `?fieldManager`, else the `User-Agent`'s program
 * name (`kubectl/v1.32.0 …` is `kubectl`), as the API server defaults it.
 * @throws {KubeApiFailure} BadRequest: a `fieldManager` over 128 characters or with control characters.
 */
export function fieldManagerOf(request: Request, url: URL): string {
  const given = param(url, "fieldManager");
  if (given !== undefined && given !== "") {
    // deno-lint-ignore no-control-regex
    if (given.length > MAX_MANAGER_CHARS || /[\u0000-\u001f\u007f]/.test(given)) {
      throw new KubeApiFailure(
        "BadRequest",
        `fieldManager must be at most ${MAX_MANAGER_CHARS} printable characters`,
      );
    }
    return given;
  }
  const agent = (request.headers.get("user-agent") ?? "").split("/")[0].trim();
  // deno-lint-ignore no-control-regex
  const clean = agent.replace(/[\u0000-\u001f\u007f]/g, "").slice(0, MAX_MANAGER_CHARS);
  return clean === "" ? "unknown" : clean;
}

/** The entries stored as `text` (malformed entries are dropped: they are the server's own). */
export function parseManagedFields(text: string): ManagerEntry[] {
  if (text === "[]") return [];
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(value)) return [];
  const out: ManagerEntry[] = [];
  for (const e of value.slice(0, MAX_MANAGERS)) {
    if (!isJsonObject(e) || typeof e.manager !== "string") continue;
    if (e.operation !== "Apply" && e.operation !== "Update") continue;
    out.push({
      manager: e.manager,
      operation: e.operation,
      apiVersion: typeof e.apiVersion === "string" ? e.apiVersion : "",
      time: typeof e.time === "string" ? e.time : "",
      fields: fromFieldsV1(e.fieldsV1),
    });
  }
  return out;
}

/** `entries` as `metadata.managedFields` shows them. */
export function managedFieldsJson(entries: readonly ManagerEntry[]): JsonObject[] {
  return entries.map((e) => ({
    manager: e.manager,
    operation: e.operation,
    apiVersion: e.apiVersion,
    time: e.time,
    fieldsType: "FieldsV1",
    fieldsV1: toFieldsV1(e.fields),
  }));
}

/** `entries` as the store keeps them. */
export function managedFieldsText(entries: readonly ManagerEntry[]): string {
  return JSON.stringify(managedFieldsJson(entries));
}

/**
 * `entries` as the store keeps them, refused past `limit` bytes (the object
 * size limit): each entry is encoded alone and counted, so no more than one
 * entry beyond the limit is ever built. Every manager's `fieldsV1` mirrors the
 * fields it owns; without the bound, 32 managers of a large spec make one
 * object tens of megabytes, read and rewritten on every write.
 * @throws {KubeApiFailure} Invalid on `metadata.managedFields`.
 */
export function boundedManagedFieldsText(
  entries: readonly ManagerEntry[],
  limit: number,
  details: StatusDetails,
): string {
  const parts: string[] = [];
  let bytes = 2;
  for (const entry of entries) {
    const part = JSON.stringify(managedFieldsJson([entry])[0]);
    bytes += utf8Length(part) + (parts.length === 0 ? 0 : 1);
    if (bytes > limit) {
      throw invalidFailure(details, [{
        field: "metadata.managedFields",
        message: `Too long: the managed fields of ${entries.length} manager${
          entries.length === 1 ? "" : "s"
        } take more than ${limit} bytes (the object size limit)`,
      }]);
    }
    parts.push(part);
  }
  return `[${parts.join(",")}]`;
}

/** `entries` with `mine` in place of the entry of its manager and operation (appended when new), empty ones dropped. */
function replaced(entries: readonly ManagerEntry[], mine: ManagerEntry): ManagerEntry[] {
  const same = (e: ManagerEntry) => e.manager === mine.manager && e.operation === mine.operation;
  const out = entries.some(same) ? entries.map((e) => same(e) ? mine : e) : [...entries, mine];
  const kept = out.filter((e) => e.fields.size > 0);
  // Past the bound, the oldest updates go first: an apply's entry is what conflicts are judged by.
  while (kept.length > MAX_MANAGERS) {
    const i = kept.findIndex((e) => e.operation === "Update" && e !== mine);
    kept.splice(i < 0 ? 0 : i, 1);
  }
  return kept;
}

/** `entry` with `fields`; its time moves only when its fields change. */
function withFields(entry: ManagerEntry, fields: FieldSet, now: Date): ManagerEntry {
  return entry.fields.equals(fields) ? entry : { ...entry, fields, time: rfc3339(now) };
}

/** What a write judges its fields by. */
export interface FieldsContext {
  readonly schema: OpenApiSchema;
  readonly apiVersion: string;
  readonly now: Date;
}

/**
 * The entries after an `Update` by `manager` that took the resource from
 * `before` (`undefined` on create) to `after`: the manager gains the fields
 * it set or changed and loses those it removed; every other entry loses both.
 */
export function recordUpdate(
  entries: readonly ManagerEntry[],
  manager: string,
  before: unknown,
  after: unknown,
  c: FieldsContext,
): ManagerEntry[] {
  const afterSet = fieldSetOf(after, c.schema);
  const beforeSet = before === undefined ? new FieldSet() : fieldSetOf(before, c.schema);
  const changed = [...afterSet].filter((p) => {
    if (before === undefined) return true;
    const was = valueAt(before, p);
    return !was.found || !sameJson(was.value, valueAt(after, p).value);
  });
  const removed = [...beforeSet].filter((p) => !afterSet.has(p));
  const touched = FieldSet.of([...changed, ...removed]);
  if (touched.size === 0) return [...entries];
  const others = entries.map((e) =>
    e.manager === manager && e.operation === "Update"
      ? e
      : withFields(e, FieldSet.of([...e.fields].filter((p) => !touched.has(p))), c.now)
  );
  const prior = entries.find((e) => e.manager === manager && e.operation === "Update");
  const mine: ManagerEntry = prior ?? {
    manager,
    operation: "Update",
    apiVersion: c.apiVersion,
    time: rfc3339(c.now),
    fields: new FieldSet(),
  };
  const gone = FieldSet.of(removed);
  const fields = FieldSet.of([...mine.fields].filter((p) => !gone.has(p)));
  for (const p of changed) fields.add(p);
  return replaced(others, withFields(mine, fields, c.now));
}

/** One field another manager owns and an apply would change. */
export interface ApplyConflict {
  readonly manager: string;
  readonly path: FieldPath;
}

/** The outcome of an apply: the resource to write and the entries to store. */
export interface Applied {
  readonly resource: unknown;
  readonly entries: ManagerEntry[];
}

/** A path as Kubernetes names a conflicting field: `.spec.replicas`, `.metadata.labels.app`. */
export function fieldName(path: FieldPath): string {
  return path.map((e) => e.startsWith("f:") ? `.${e.slice(2)}` : `[${e.slice(2)}]`).join("");
}

/**
 * Server-side apply of `config` by `manager` over `live` (`undefined`: the
 * object is created). With conflicts and no `force`, throws 409 `Conflict`
 * naming each manager and field; with `force`, the manager takes them.
 * @throws {KubeApiFailure} Conflict.
 */
export function applyConfig(
  entries: readonly ManagerEntry[],
  manager: string,
  live: unknown,
  config: unknown,
  o: FieldsContext & { force: boolean; details: StatusDetails },
): Applied {
  const applied = fieldSetOf(config, o.schema);
  const base = live ?? {};
  const merged = mergeApplied(base, config, o.schema) as JsonObject;
  const mine = (e: ManagerEntry) => e.manager === manager && e.operation === "Apply";
  const conflicts: ApplyConflict[] = [];
  for (const e of entries) {
    if (mine(e)) continue;
    for (const p of e.fields) {
      if (!applied.has(p)) continue;
      const was = valueAt(base, p);
      const now = valueAt(merged, p);
      if (was.found && !sameJson(was.value, now.value)) {
        conflicts.push({ manager: e.manager, path: p });
      }
    }
  }
  if (conflicts.length > 0 && !o.force) throw conflictFailure(conflicts, o.apiVersion, o.details);
  const lost = FieldSet.of(conflicts.map((c) => c.path));
  const others = entries.filter((e) => !mine(e)).map((e) =>
    lost.size === 0
      ? e
      : withFields(e, FieldSet.of([...e.fields].filter((p) => !lost.has(p))), o.now)
  );
  // What this manager applied before and no longer does goes, unless another manager holds it.
  const prior = entries.find(mine);
  for (const p of prior?.fields ?? []) {
    if (applied.has(p) || others.some((e) => e.fields.hasUnder(p))) continue;
    removeAt(merged, p);
  }
  const entry: ManagerEntry = prior ?? {
    manager,
    operation: "Apply",
    apiVersion: o.apiVersion,
    time: rfc3339(o.now),
    fields: new FieldSet(),
  };
  return {
    resource: merged,
    entries: replaced(others.length === entries.length ? others : [...others], {
      ...withFields(entry, applied, o.now),
    }).sort((a, b) => order(entries, a) - order(entries, b)),
  };
}

/** Where `e` stood among `entries` (a new entry last). */
function order(entries: readonly ManagerEntry[], e: ManagerEntry): number {
  const i = entries.findIndex((x) => x.manager === e.manager && x.operation === e.operation);
  return i < 0 ? entries.length : i;
}

function conflictFailure(
  conflicts: readonly ApplyConflict[],
  apiVersion: string,
  details: StatusDetails,
): KubeApiFailure {
  const shown = conflicts.slice(0, 32);
  const lines = shown.map((c) =>
    `conflict with "${c.manager}" using ${apiVersion}: ${fieldName(c.path)}`
  );
  const message =
    `Apply failed with ${conflicts.length} conflict${conflicts.length === 1 ? "" : "s"}: ` +
    lines.join("\n");
  return new KubeApiFailure("Conflict", message, {
    ...details,
    causes: shown.map((c) => ({
      reason: "FieldManagerConflict",
      message: `conflict with "${c.manager}" using ${apiVersion}`,
      field: fieldName(c.path),
    })),
  });
}
