/**
 * Row decoding both SQL stores share: a row comes back as an array in column
 * order (or keyed by column name) from either dialect's driver.
 *
 * @module
 */
import { StoreError } from "../../src/model/errors.ts";
import type { ConditionStatus, ObjectId, RawCondition, RawObjectMeta } from "../../src/store.ts";
import { type Labels, NO_LABELS } from "../../src/model/labels.ts";

/** A row keyed by column name. */
export type Row = Record<string, unknown>;

/** A row as an array, in column order. */
export type RowArray = unknown[];

/** The object columns every full-row read selects, in decode order. */
export const OBJECT_COLUMNS = `id, "group", kind, name, spec, status, spec_version,
  status_version, generation, observed_generation, observed_at, resource_version,
  deletion_requested_at, reconcile_owed, finalizers, created_at, updated_at, labels, annotations, namespace,
  managed_fields`;

/** How many columns {@linkcode OBJECT_COLUMNS} selects: a read's extra columns follow them. */
export const OBJECT_COLUMN_COUNT = 21;

/** Decodes an objects row (an array in OBJECT_COLUMNS order, or an object). @throws {StoreError} the finalizers column is not a JSON string array. */
export function decodeMeta(row: Row | RowArray): RawObjectMeta {
  const r = Array.isArray(row) ? row : [
    row.id,
    row.group,
    row.kind,
    row.name,
    row.spec,
    row.status,
    row.spec_version,
    row.status_version,
    row.generation,
    row.observed_generation,
    row.observed_at,
    row.resource_version,
    row.deletion_requested_at,
    row.reconcile_owed,
    row.finalizers,
    row.created_at,
    row.updated_at,
    row.labels,
    row.annotations,
    row.namespace,
    row.managed_fields,
  ];
  const id = Number(r[0]);
  return {
    id,
    group: r[1] as string,
    kind: r[2] as string,
    name: r[3] as string,
    spec: r[4] as string,
    status: r[5] === null ? undefined : r[5] as string,
    specVersion: Number(r[6]),
    statusVersion: Number(r[7]),
    generation: Number(r[8]),
    observedGeneration: r[9] === null ? undefined : Number(r[9]),
    observedAt: r[10] === null ? undefined : new Date(Number(r[10])),
    resourceVersion: Number(r[11]),
    deletionRequestedAt: r[12] === null ? undefined : new Date(Number(r[12])),
    reconcileOwed: Number(r[13]),
    finalizers: r[14] === "[]" ? [] : decodeFinalizers(r[14], id),
    createdAt: new Date(Number(r[15])),
    updatedAt: new Date(Number(r[16])),
    labels: r[17] === "{}" ? NO_LABELS : decodeLabels(r[17], id, "labels"),
    annotations: r[18] === "{}" ? NO_LABELS : decodeLabels(r[18], id, "annotations"),
    namespace: r[19] as string,
    managedFields: r[20] === undefined || r[20] === null ? "[]" : String(r[20]),
  };
}

/**
 * Recently decoded labels and annotations columns, by their text: objects of
 * one label set carry the same text, and a frozen map can be shared. Bounded;
 * the oldest entry goes first.
 */
const decoded = new Map<string, Labels>();
/** How many decoded columns {@linkcode decoded} keeps. */
const DECODED_KEPT = 256;
/** Longer columns are decoded every time: caching them would hold large strings. */
const DECODED_CHARS = 1_024;

/** Parses a labels or annotations column into a frozen map. @throws {StoreError} not a JSON object of strings. */
export function decodeLabels(text: unknown, id: ObjectId, column: string): Labels {
  const cached = decoded.get(text as string);
  if (cached !== undefined) return cached;
  let value: unknown;
  try {
    value = JSON.parse(text as string);
  } catch (cause) {
    throw new StoreError(`Cannot read object ${id}: its ${column} column is not JSON`, { cause });
  }
  if (
    typeof value !== "object" || value === null || Array.isArray(value) ||
    !Object.values(value).every((v) => typeof v === "string")
  ) {
    throw new StoreError(
      `Cannot read object ${id}: its ${column} column is not an object of strings`,
    );
  }
  const labels = Object.freeze(value as Record<string, string>);
  if ((text as string).length <= DECODED_CHARS) {
    if (decoded.size >= DECODED_KEPT) decoded.delete(decoded.keys().next().value!);
    decoded.set(text as string, labels);
  }
  return labels;
}

/** Parses a finalizers column. */
export function decodeFinalizers(text: unknown, id: ObjectId): string[] {
  let value: unknown;
  try {
    value = JSON.parse(text as string);
  } catch (cause) {
    throw new StoreError(`Cannot read object ${id}: its finalizers column is not JSON`, {
      cause,
    });
  }
  if (!Array.isArray(value) || !value.every((f) => typeof f === "string")) {
    throw new StoreError(
      `Cannot read object ${id}: its finalizers column is not an array of strings`,
    );
  }
  return value;
}

/** The conditions columns every conditions read selects, in decode order. */
export const CONDITION_COLUMNS =
  "object_id, type, status, reason, message, liveness, open_epoch, transitioned_at, updated_at";

/**
 * Decodes a conditions row (CONDITION_COLUMNS order), downgrading a liveness
 * row whose writer is among the opens `gone`.
 */
export function decodeCondition(r: RowArray, gone: ReadonlySet<number>): RawCondition {
  const liveness = r[5] === 1;
  const unconfirmed = liveness && gone.has(Number(r[6]));
  return {
    type: r[1] as string,
    status: unconfirmed ? "Unknown" : r[2] as ConditionStatus,
    reason: r[3] as string,
    message: r[4] as string,
    liveness,
    unconfirmed,
    transitionedAt: new Date(Number(r[7])),
    updatedAt: new Date(Number(r[8])),
  };
}

/** Ids per batched statement: bounds the JSON array bound as one parameter. */
export const ID_CHUNK = 30_000;

/** A boolean column as either driver returns it (SQLite 1/0, PostgreSQL true/false). */
export function truthy(value: unknown): boolean {
  return value === 1 || value === true;
}
