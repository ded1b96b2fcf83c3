/**
 * The object reads every family shares: a row with its conditions, a page of
 * rows with theirs (one batched statement per chunk), every row of a kind.
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
import { objectNotFound } from "./_checks.ts";
import type { Dialect } from "./_dialect.ts";
import { type Q, q } from "./_query.ts";
import { goneWriters, type Viewer } from "./_live_opens.ts";
import {
  CONDITION_COLUMNS,
  decodeCondition,
  decodeMeta,
  ID_CHUNK,
  OBJECT_COLUMNS,
  type RowArray,
} from "./_rows.ts";

const CONDITIONS_OF_ONE =
  `SELECT ${CONDITION_COLUMNS} FROM conditions WHERE object_id = ? ORDER BY type`;
const CONDITIONS_OF_KIND = `SELECT ${CONDITION_COLUMNS} FROM conditions
  WHERE object_id IN (SELECT id FROM objects WHERE "group" = ? AND kind = ?)
  ORDER BY object_id, type`;

/** The conditions of a bound id list, ordered by object then type. */
function conditionsOfIds(d: Dialect): string {
  return `SELECT ${CONDITION_COLUMNS} FROM conditions
  WHERE object_id${d.inIds} ORDER BY object_id, type`;
}

/** Reads one object's conditions, ordered by type. */
export function* readConditions(id: ObjectId, viewer: Viewer): Q<RawCondition[]> {
  return yield* decodeConditions(yield* q.rows(CONDITIONS_OF_ONE, id), viewer);
}

/** Decodes one object's condition rows (CONDITION_COLUMNS order), as `viewer` sees their liveness. */
export function* decodeConditions(
  rows: readonly RowArray[],
  viewer: Viewer,
): Q<RawCondition[]> {
  const gone = yield* goneWriters([rows], viewer);
  return rows.map((row) => decodeCondition(row, gone));
}

/** Turns metas into objects by attaching their conditions (in place: the metas are fresh). */
function attach(metas: RawObjectMeta[], byId: Map<ObjectId, RawCondition[]>): RawObject[] {
  for (const m of metas) {
    (m as { conditions?: RawCondition[] }).conditions = byId.get(m.id) ?? [];
  }
  return metas as RawObject[];
}

function group(rows: RowArray[], gone: ReadonlySet<number>, into: Map<ObjectId, RawCondition[]>) {
  for (const row of rows) {
    const id = Number(row[0]);
    let list = into.get(id);
    if (list === undefined) into.set(id, list = []);
    list.push(decodeCondition(row, gone));
  }
}

/** Attaches conditions to freshly decoded rows, with one batched query per chunk. */
export function* withConditions(
  d: Dialect,
  metas: RawObjectMeta[],
  viewer: Viewer,
): Q<RawObject[]> {
  if (metas.length === 1) {
    (metas[0] as { conditions?: RawCondition[] }).conditions = yield* readConditions(
      metas[0].id,
      viewer,
    );
    return metas as RawObject[];
  }
  const byId = new Map<ObjectId, RawCondition[]>();
  if (metas.length === 0) return [];
  const sql = conditionsOfIds(d);
  const chunks: RowArray[][] = [];
  for (let i = 0; i < metas.length; i += ID_CHUNK) {
    chunks.push(yield* q.rows(sql, d.ids(metas.slice(i, i + ID_CHUNK).map((m) => m.id))));
  }
  const gone = yield* goneWriters(chunks, viewer);
  for (const rows of chunks) group(rows, gone, byId);
  return attach(metas, byId);
}

/** Attaches conditions to every row of one kind, read by kind in one query. */
export function* withConditionsOfKind(
  metas: RawObjectMeta[],
  gk: GroupKind,
  viewer: Viewer,
): Q<RawObject[]> {
  const byId = new Map<ObjectId, RawCondition[]>();
  if (metas.length > 0) {
    const rows = yield* q.rows(CONDITIONS_OF_KIND, gk.group, gk.kind);
    group(rows, yield* goneWriters([rows], viewer), byId);
  }
  return attach(metas, byId);
}

const META_BY_ID = `SELECT ${OBJECT_COLUMNS} FROM objects WHERE id = ?`;
/** Every object of one kind, in id order. */
export const OBJECTS_OF_KIND =
  `SELECT ${OBJECT_COLUMNS} FROM objects WHERE "group" = ? AND kind = ? ORDER BY id`;

/** Reads one object row by id, or `undefined`. */
export function* readMeta(id: ObjectId): Q<RawObjectMeta | undefined> {
  const row = yield* q.row(META_BY_ID, id);
  return row === undefined ? undefined : decodeMeta(row);
}

/** Reads one object row by id with conditions. @throws {NotFoundError} */
export function* readObject(id: ObjectId, viewer: Viewer): Q<RawObject> {
  const row = yield* q.row(META_BY_ID, id);
  if (row === undefined) throw objectNotFound(id);
  const meta = decodeMeta(row);
  (meta as { conditions?: RawCondition[] }).conditions = yield* readConditions(id, viewer);
  return meta as RawObject;
}
