/**
 * Row decoding and the argument checks every family shares.
 *
 * @module
 */
import {
  ConflictError,
  InvalidNameError,
  InvalidOptionError,
  NotFoundError,
  StoreError,
  WrongKindError,
} from "../../src/model/errors.ts";
import type {
  ConditionStatus,
  GroupKind,
  ObjectId,
  ObjectRef,
  RawCondition,
  RawObject,
  RawObjectMeta,
} from "../../src/store.ts";
import type { Db, Row, RowArray } from "./_core.ts";
import { isStorableText } from "../../src/model/_text.ts";
import { describe } from "../../src/model/_values.ts";
import { kindName } from "../../src/model/_kind_keys.ts";

/** The object columns every full-row read selects, in decode order. */
export const OBJECT_COLUMNS = `id, "group", kind, name, spec, status, spec_version,
  status_version, generation, observed_generation, observed_at, resource_version,
  deletion_requested_at, reconcile_owed, finalizers, created_at, updated_at`;

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
  };
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

const CONDITION_COLUMNS =
  "object_id, type, status, reason, message, liveness, open_epoch, transitioned_at, updated_at";

/** Decodes a conditions row (CONDITION_COLUMNS order), downgrading a liveness row from an earlier open. */
export function decodeCondition(r: RowArray, epoch: number): RawCondition {
  const liveness = r[5] === 1;
  const unconfirmed = liveness && Number(r[6]) < epoch;
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

const CONDITIONS_OF_ONE =
  `SELECT ${CONDITION_COLUMNS} FROM conditions WHERE object_id = ? ORDER BY type`;
const CONDITIONS_OF_IDS = `SELECT ${CONDITION_COLUMNS} FROM conditions
  WHERE object_id IN (SELECT value FROM json_each(?)) ORDER BY object_id, type`;
const CONDITIONS_OF_KIND = `SELECT ${CONDITION_COLUMNS} FROM conditions
  WHERE object_id IN (SELECT id FROM objects WHERE "group" = ? AND kind = ?)
  ORDER BY object_id, type`;

/** Reads one object's conditions, ordered by type. */
export function readConditions(db: Db, id: ObjectId, epoch: number): RawCondition[] {
  return db.rows(CONDITIONS_OF_ONE, id).map((row) => decodeCondition(row, epoch));
}

/** Ids per batched statement: bounds the JSON array bound as one parameter. */
export const ID_CHUNK = 30_000;

/** Turns metas into objects by attaching their conditions (in place: the metas are fresh). */
function attach(
  metas: RawObjectMeta[],
  byId: Map<ObjectId, RawCondition[]>,
): RawObject[] {
  for (const m of metas) {
    (m as { conditions?: RawCondition[] }).conditions = byId.get(m.id) ?? [];
  }
  return metas as RawObject[];
}

function group(rows: RowArray[], epoch: number, into: Map<ObjectId, RawCondition[]>): void {
  for (const row of rows) {
    const id = Number(row[0]);
    let list = into.get(id);
    if (list === undefined) into.set(id, list = []);
    list.push(decodeCondition(row, epoch));
  }
}

/** Attaches conditions to freshly decoded rows, with one batched query per chunk. */
export function withConditions(db: Db, metas: RawObjectMeta[], epoch: number): RawObject[] {
  if (metas.length === 1) {
    (metas[0] as { conditions?: RawCondition[] }).conditions = readConditions(
      db,
      metas[0].id,
      epoch,
    );
    return metas as RawObject[];
  }
  const byId = new Map<ObjectId, RawCondition[]>();
  for (let i = 0; i < metas.length; i += ID_CHUNK) {
    const ids = JSON.stringify(metas.slice(i, i + ID_CHUNK).map((m) => m.id));
    group(db.rows(CONDITIONS_OF_IDS, ids), epoch, byId);
  }
  return attach(metas, byId);
}

/** Attaches conditions to every row of one kind, read by kind in one query. */
export function withConditionsOfKind(
  db: Db,
  metas: RawObjectMeta[],
  gk: GroupKind,
  epoch: number,
): RawObject[] {
  const byId = new Map<ObjectId, RawCondition[]>();
  if (metas.length > 0) group(db.rows(CONDITIONS_OF_KIND, gk.group, gk.kind), epoch, byId);
  return attach(metas, byId);
}

const META_BY_ID = `SELECT ${OBJECT_COLUMNS} FROM objects WHERE id = ?`;
/** Every object of one kind, in id order. */
export const OBJECTS_OF_KIND =
  `SELECT ${OBJECT_COLUMNS} FROM objects WHERE "group" = ? AND kind = ? ORDER BY id`;

/** Reads one object row by id, or `undefined`. */
export function readMeta(db: Db, id: ObjectId): RawObjectMeta | undefined {
  const row = db.row(META_BY_ID, id);
  return row === undefined ? undefined : decodeMeta(row);
}

/** Reads one object row by id with conditions. @throws {NotFoundError} */
export function readObject(db: Db, id: ObjectId, epoch: number): RawObject {
  const meta = readMeta(db, id);
  if (meta === undefined) throw objectNotFound(id);
  (meta as { conditions?: RawCondition[] }).conditions = readConditions(db, id, epoch);
  return meta as RawObject;
}

/** The error for an id that names nothing. */
export function objectNotFound(id: ObjectId): NotFoundError {
  return new NotFoundError(`Cannot find object ${id}: no object has that id`);
}

/** The error for a name not held within a kind. */
export function nameNotFound(gk: GroupKind, name: string): NotFoundError {
  return new NotFoundError(
    `Cannot find ${kindName(gk)} "${name}": no object of that kind has that name`,
  );
}

/**
 * Checks that `id` is an object of `ref`'s kind, from a row's kind columns.
 * @throws {NotFoundError} `row` is undefined.
 * @throws {WrongKindError} the row is of another kind.
 */
export function assertKind(ref: ObjectRef, row: Row | undefined): asserts row is Row {
  if (row === undefined) throw objectNotFound(ref.id);
  if (row.group !== ref.group || row.kind !== ref.kind) {
    throw new WrongKindError(
      `Cannot use object ${ref.id} as ${kindName(ref)}: it is a ${
        kindName({ group: row.group as string, kind: row.kind as string })
      }`,
    );
  }
}

export { isStorableText } from "../../src/model/_text.ts";

/** Checks an id argument. @throws {TypeError} not a positive safe integer. */
export function checkId(id: unknown, what = "id"): asserts id is ObjectId {
  if (typeof id !== "number" || !Number.isSafeInteger(id) || id < 1) {
    throw new TypeError(
      `Cannot use ${what}: current value is ${describe(id)}, expected a positive safe integer`,
    );
  }
}

/** Checks a list of ids. @throws {TypeError} */
export function checkIds(ids: unknown, what = "ids"): asserts ids is ObjectId[] {
  if (!Array.isArray(ids)) {
    throw new TypeError(`Cannot use ${what}: current value is ${describe(ids)}, expected an array`);
  }
  for (const id of ids) checkId(id, `an element of ${what}`);
}

/** Checks a kind argument. @throws {InvalidOptionError} */
export function checkGroupKind(gk: unknown): asserts gk is GroupKind {
  const value = gk as GroupKind;
  if (
    typeof value !== "object" || value === null || typeof value.group !== "string" ||
    typeof value.kind !== "string"
  ) {
    throw new InvalidOptionError(
      `Cannot use kind: current value is ${describe(gk)}, expected { group, kind } strings`,
    );
  }
  if (value.kind === "") {
    throw new InvalidOptionError(`Cannot use kind: the kind must not be empty`);
  }
  if (!isStorableText(value.group) || !isStorableText(value.kind)) {
    throw new InvalidOptionError(
      `Cannot use kind ${
        JSON.stringify(value)
      }: group and kind must be well-formed UTF-16 without NUL`,
    );
  }
}

/** Checks an id-keyed, kind-scoped reference. */
export function checkRef(ref: unknown): asserts ref is ObjectRef {
  checkGroupKind(ref);
  checkId((ref as ObjectRef).id);
}

/** Checks a name. @throws {InvalidNameError} empty or not well-formed UTF-16. */
export function checkName(name: unknown): asserts name is string {
  if (typeof name !== "string") {
    throw new TypeError(`Cannot use name: current value is ${describe(name)}, expected a string`);
  }
  if (name === "") throw new InvalidNameError("Cannot use name: it must not be empty");
  if (!isStorableText(name)) {
    throw new InvalidNameError(
      `Cannot use name ${JSON.stringify(name)}: it must be well-formed UTF-16 without NUL`,
    );
  }
}

/** Checks a JSON text argument. @throws {TypeError} */
export function checkJsonText(text: unknown, what: string): asserts text is string {
  if (typeof text !== "string") {
    throw new TypeError(
      `Cannot write ${what}: current value is ${describe(text)}, expected JSON text`,
    );
  }
}

/** Checks a schema version. @throws {TypeError} */
export function checkSchemaVersion(v: unknown, what: string): number {
  if (v === undefined) return 0;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) {
    throw new TypeError(
      `Cannot use ${what}: current value is ${describe(v)}, expected an integer >= 0`,
    );
  }
  return v;
}

/** Checks a list of finalizers. @throws {InvalidOptionError} */
export function checkFinalizers(finalizers: unknown): string[] {
  if (finalizers === undefined) return [];
  if (!Array.isArray(finalizers)) {
    throw new InvalidOptionError(
      `Cannot use finalizers: current value is ${describe(finalizers)}, expected an array`,
    );
  }
  for (const f of finalizers) {
    if (typeof f !== "string" || f === "" || !isStorableText(f)) {
      throw new InvalidOptionError(
        `Cannot use finalizer ${
          describe(f)
        }: expected a non-empty string, well-formed UTF-16 without NUL`,
      );
    }
  }
  return [...new Set(finalizers as string[])];
}

export { attempt as rejectWith, describe } from "../../src/model/_values.ts";

function checkInteger(value: unknown, what: string, min: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
    throw new TypeError(
      `Cannot use ${what}: current value is ${describe(value)}, expected an integer >= ${min}`,
    );
  }
  return value;
}

/** Checks a tail page's bounds: a position >= 0 and an integer limit. */
export function checkPage(options: unknown): { after: number; limit: number } {
  const o = options as { after?: unknown; limit?: unknown } | undefined;
  if (typeof o !== "object" || o === null) {
    throw new TypeError(
      `Cannot read a page: current options are ${describe(options)}, expected { after, limit }`,
    );
  }
  return {
    after: checkInteger(o.after, "after", 0),
    limit: checkInteger(o.limit, "limit", Number.MIN_SAFE_INTEGER),
  };
}

/** Checks retention bounds: each a finite number >= 0. */
export function checkRetention<K extends string>(
  options: unknown,
  keys: readonly K[],
): Record<K, number> {
  const o = options as Record<string, unknown> | undefined;
  if (typeof o !== "object" || o === null) {
    throw new TypeError(
      `Cannot sweep: current options are ${describe(options)}, expected an object`,
    );
  }
  const out = {} as Record<K, number>;
  for (const k of keys) {
    const v = o[k] ?? 0;
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) {
      throw new InvalidOptionError(
        `Cannot sweep with ${k}: current value is ${describe(v)}, expected a finite number >= 0`,
      );
    }
    out[k] = v;
  }
  return out;
}

/** Checks a `resourceVersion` precondition: omitted, or an integer >= 1. @throws {TypeError} */
export function checkPrecondition(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  return checkInteger(value, "resourceVersion", 1);
}

/**
 * Refuses a write whose precondition names another resource version than the row's.
 * @throws {ConflictError}
 */
export function assertVersion(id: ObjectId, stored: number, expected: number | undefined): void {
  if (expected === undefined || expected === stored) return;
  throw new ConflictError(
    `Cannot write object ${id} at resource version ${expected}: it has moved on to ${stored}`,
    { resourceVersion: stored },
  );
}

/** Checks an id-ordered page: `after` >= 0 (default 0), `limit` >= 1 or omitted. @throws {TypeError} */
export function checkListPage(page: unknown): { after: number; limit: number | undefined } {
  if (page === undefined) return { after: 0, limit: undefined };
  const o = page as { after?: unknown; limit?: unknown };
  if (typeof o !== "object" || o === null) {
    throw new TypeError(
      `Cannot list a page: current options are ${describe(page)}, expected { after, limit }`,
    );
  }
  return {
    after: o.after === undefined ? 0 : checkInteger(o.after, "after", 0),
    limit: o.limit === undefined ? undefined : checkInteger(o.limit, "limit", 1),
  };
}

/** Checks options carrying `excludeStalled`; resolves it. @throws {TypeError} */
export function checkExcludeStalled(
  options: { readonly excludeStalled?: boolean } | undefined,
  what: string,
): boolean {
  if (options === undefined) return false;
  if (typeof options !== "object" || options === null) {
    throw new TypeError(
      `Cannot ${what}: current value of options is ${describe(options)}, expected an object`,
    );
  }
  const v = options.excludeStalled;
  if (v !== undefined && typeof v !== "boolean") {
    throw new TypeError(
      `Cannot ${what}: current value of excludeStalled is ${describe(v)}, expected a boolean`,
    );
  }
  return v === true;
}
