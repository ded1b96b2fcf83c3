/**
 * Row reads every family shares; decoding and argument checks are the SQL
 * stores' (`../sql/`).
 *
 * @module
 */
import type {
  GroupKind,
  ObjectId,
  ObjectRef,
  RawCondition,
  RawObject,
  RawObjectMeta,
} from "../../src/store.ts";
import type { Row, RowArray } from "../sql/_rows.ts";
import {
  decodeCondition as decodeConditionRow,
  decodeMeta as decodeMetaRow,
  OBJECT_COLUMNS,
} from "../sql/_rows.ts";
import { assertKind as assertRowKind, objectNotFound } from "../sql/_checks.ts";
import type { Db, PgRow, PgRowArray } from "./_core.ts";

export { decodeFinalizers, OBJECT_COLUMNS } from "../sql/_rows.ts";
export {
  assertVersion,
  checkExcludeStalled,
  checkFinalizers,
  checkGroupKind,
  checkId,
  checkIds,
  checkJsonText,
  checkListPage,
  checkName,
  checkPage,
  checkPrecondition,
  checkRef,
  checkRetention,
  checkSchemaVersion,
  describe,
  isStorableText,
  nameNotFound,
  objectNotFound,
  rejectWith,
} from "../sql/_checks.ts";

/** Decodes an objects row (OBJECT_COLUMNS order, or keyed). */
export function decodeMeta(row: PgRow | PgRowArray): RawObjectMeta {
  return decodeMetaRow(row as Row | RowArray);
}

/** Decodes a conditions row, downgrading a liveness row from an earlier open. */
export function decodeCondition(row: PgRowArray, epoch: number): RawCondition {
  return decodeConditionRow(row as RowArray, epoch);
}

/**
 * Checks that a row's kind columns are `ref`'s kind.
 * @throws {NotFoundError} `row` is undefined.
 * @throws {WrongKindError} the row is of another kind.
 */
export function assertKind(ref: ObjectRef, row: PgRow | undefined): asserts row is PgRow {
  assertRowKind(ref, row as Row | undefined);
}

const CONDITION_COLUMNS =
  "object_id, type, status, reason, message, liveness, open_epoch, transitioned_at, updated_at";

const CONDITIONS_OF_ONE =
  `SELECT ${CONDITION_COLUMNS} FROM conditions WHERE object_id = ? ORDER BY type`;
const CONDITIONS_OF_IDS = `SELECT ${CONDITION_COLUMNS} FROM conditions
  WHERE object_id = ANY(?::bigint[]) ORDER BY object_id, type`;
const CONDITIONS_OF_KIND = `SELECT c.object_id, c.type, c.status, c.reason, c.message,
    c.liveness, c.open_epoch, c.transitioned_at, c.updated_at
  FROM conditions c JOIN objects o ON o.id = c.object_id
  WHERE o."group" = ? AND o.kind = ? ORDER BY c.object_id, c.type`;

/** Reads one object's conditions, ordered by type. */
export async function readConditions(
  db: Db,
  id: ObjectId,
  epoch: number,
): Promise<RawCondition[]> {
  return (await db.rows(CONDITIONS_OF_ONE, id)).map((row) => decodeCondition(row, epoch));
}

function attach(metas: RawObjectMeta[], byId: Map<ObjectId, RawCondition[]>): RawObject[] {
  for (const m of metas) {
    (m as { conditions?: RawCondition[] }).conditions = byId.get(m.id) ?? [];
  }
  return metas as RawObject[];
}

function group(rows: PgRowArray[], epoch: number, into: Map<ObjectId, RawCondition[]>): void {
  for (const row of rows) {
    const id = Number(row[0]);
    let list = into.get(id);
    if (list === undefined) into.set(id, list = []);
    list.push(decodeCondition(row, epoch));
  }
}

/** Attaches conditions to freshly decoded rows, with one query. */
export async function withConditions(
  db: Db,
  metas: RawObjectMeta[],
  epoch: number,
): Promise<RawObject[]> {
  if (metas.length === 0) return [];
  if (metas.length === 1) {
    (metas[0] as { conditions?: RawCondition[] }).conditions = await readConditions(
      db,
      metas[0].id,
      epoch,
    );
    return metas as RawObject[];
  }
  const byId = new Map<ObjectId, RawCondition[]>();
  group(await db.rows(CONDITIONS_OF_IDS, metas.map((m) => m.id)), epoch, byId);
  return attach(metas, byId);
}

/** Attaches conditions to every row of one kind, read by kind in one query. */
export async function withConditionsOfKind(
  db: Db,
  metas: RawObjectMeta[],
  gk: GroupKind,
  epoch: number,
): Promise<RawObject[]> {
  const byId = new Map<ObjectId, RawCondition[]>();
  if (metas.length > 0) group(await db.rows(CONDITIONS_OF_KIND, gk.group, gk.kind), epoch, byId);
  return attach(metas, byId);
}

const META_BY_ID = `SELECT ${OBJECT_COLUMNS} FROM objects WHERE id = ?`;
/** Every object of one kind, in id order. */
export const OBJECTS_OF_KIND =
  `SELECT ${OBJECT_COLUMNS} FROM objects WHERE "group" = ? AND kind = ? ORDER BY id`;

/** Reads one object row by id, or `undefined`. */
export async function readMeta(db: Db, id: ObjectId): Promise<RawObjectMeta | undefined> {
  const row = await db.row(META_BY_ID, id);
  return row === undefined ? undefined : decodeMeta(row);
}

/** Reads one object row by id with conditions. @throws {NotFoundError} */
export async function readObject(db: Db, id: ObjectId, epoch: number): Promise<RawObject> {
  const meta = await readMeta(db, id);
  if (meta === undefined) throw objectNotFound(id);
  (meta as { conditions?: RawCondition[] }).conditions = await readConditions(db, id, epoch);
  return meta as RawObject;
}
