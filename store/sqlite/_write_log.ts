/**
 * Appends to the object write log (the row image's encoding is the SQL
 * stores', in `../sql/_write_image.ts`).
 *
 * @module
 */
import type { ObjectRef, RawObject, WriteOp } from "../../src/store.ts";
import type { Db } from "./_core.ts";
import { encodeImage, OP_CODE } from "../sql/_write_image.ts";

const APPEND_SQL = `INSERT INTO object_writes
  (resource_version, object_id, "group", kind, op, written_at, final, origin)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?)`;

/**
 * Appends one entry at `rv`. `row` is the object's row as the write left it,
 * when the caller has it at hand; a delete must pass it, and the entry stores
 * it as the image. The entry is journaled for the kinds tailed from memory.
 */
export function appendWrite(
  db: Db,
  rv: number,
  ref: ObjectRef,
  op: WriteOp,
  now: number,
  row?: RawObject,
): void {
  const final = op === "delete" && row !== undefined ? encodeImage(row) : null;
  db.run(APPEND_SQL, rv, ref.id, ref.group, ref.kind, OP_CODE[op], now, final, db.origin);
  const journal = db.journal;
  if (journal !== undefined && journal.active) {
    const deleted = op === "delete";
    journal.logged({
      id: ref.id,
      resourceVersion: rv,
      group: ref.group,
      kind: ref.kind,
      op,
      final: deleted ? row : undefined,
      origin: db.origin,
      row: deleted ? undefined : row,
    });
  }
}

/** Bumps a row's resource version and `updated_at`, logging an update (a condition change). */
export function bumpObject(db: Db, ref: ObjectRef, rv: number, now: number): void {
  db.run("UPDATE objects SET resource_version = ?, updated_at = ? WHERE id = ?", rv, now, ref.id);
  appendWrite(db, rv, ref, "update", now);
}
