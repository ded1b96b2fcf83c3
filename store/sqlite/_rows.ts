/**
 * Row reads every SQLite family shares; decoding and argument checks are the
 * SQL stores' (`../sql/`), re-exported here for the families.
 *
 * @module
 */
import type {
  GroupKind,
  ObjectId,
  RawCondition,
  RawObject,
  RawObjectMeta,
} from "../../src/store.ts";
import type { Db, RowArray } from "./_core.ts";
import {
  CONDITION_COLUMNS,
  decodeCondition,
  decodeMeta,
  ID_CHUNK,
  OBJECT_COLUMNS,
} from "../sql/_rows.ts";
import { objectNotFound } from "../sql/_checks.ts";

export {
  CONDITION_COLUMNS,
  decodeCondition,
  decodeFinalizers,
  decodeMeta,
  ID_CHUNK,
  OBJECT_COLUMNS,
} from "../sql/_rows.ts";
export {
  assertKind,
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
