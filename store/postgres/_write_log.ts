/**
 * Appends to the object write log.
 *
 * @module
 */
import type { ObjectRef, WriteOp } from "../../src/store.ts";
import { OP_CODE } from "../sql/_write_image.ts";
import type { Db } from "./_core.ts";

const APPEND_SQL = `INSERT INTO object_writes
  (resource_version, object_id, "group", kind, op, written_at, final, origin)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?)`;

/** Appends one entry at `rv`. */
export async function appendWrite(
  db: Db,
  rv: number,
  ref: ObjectRef,
  op: WriteOp,
  now: number,
  final?: string,
): Promise<void> {
  await db.run(
    APPEND_SQL,
    rv,
    ref.id,
    ref.group,
    ref.kind,
    OP_CODE[op],
    now,
    final ?? null,
    db.origin,
  );
}

/** Bumps a row's resource version and `updated_at`, logging an update (a condition change). */
export async function bumpObject(db: Db, ref: ObjectRef, rv: number, now: number): Promise<void> {
  await db.run(
    "UPDATE objects SET resource_version = ?, updated_at = ? WHERE id = ?",
    rv,
    now,
    ref.id,
  );
  await appendWrite(db, rv, ref, "update", now);
}
