/**
 * Appends to the object write log. A delete stores the row image
 * (`_write_image.ts`); on a store that tails kinds from memory, each entry is
 * also journaled for the open transaction. Where the scope defers the log
 * (SQLite), an entry is held for one insert of the whole transaction's.
 *
 * @module
 */
import type { ObjectRef, RawObject, WriteOp } from "../../src/store.ts";
import { type Q, q } from "./_query.ts";
import type { WriteScope } from "./_session.ts";
import { encodeImage, OP_CODE } from "./_write_image.ts";

const APPEND_SQL = `INSERT INTO object_writes
  (resource_version, object_id, "group", kind, op, written_at, final, origin)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?)`;

/**
 * A data-modifying `WITH` part, named `w`, appending an entry `op` for each
 * row of the earlier part `source` (by its `id` column): a write that chains
 * its log entry into its own statement (`Dialect.chainsInserts`). It binds
 * {@linkcode appendedFromValues}, in place. Never a delete (no image).
 */
export function appendFrom(source: string, op: Exclude<WriteOp, "delete">): string {
  return `w AS (INSERT INTO object_writes
    (resource_version, object_id, "group", kind, op, written_at, final, origin)
    SELECT ?, id, ?, ?, ${OP_CODE[op]}, ?, NULL, ? FROM ${source})`;
}

/** What {@linkcode appendFrom} binds: the entry's version, kind, time and origin. */
export function appendedFromValues(
  scope: WriteScope,
  rv: number,
  gk: { readonly group: string; readonly kind: string },
): unknown[] {
  return [rv, gk.group, gk.kind, scope.now, scope.origin];
}

/**
 * Appends one entry at `rv`. `row` is the object's row as the write left it,
 * when the caller has it at hand; a delete must pass it, and the entry stores
 * it as the image.
 */
export function* appendWrite(
  scope: WriteScope,
  rv: number,
  ref: ObjectRef,
  op: WriteOp,
  row?: RawObject,
): Q<void> {
  const deleted = op === "delete";
  const final = deleted && row !== undefined ? encodeImage(row) : null;
  const origin = scope.origin;
  const deferred = scope.log;
  if (deferred !== undefined) {
    deferred.append(rv, ref.id, ref.group, ref.kind, OP_CODE[op], scope.now, final, origin);
  } else {
    yield* q.run(
      APPEND_SQL,
      rv,
      ref.id,
      ref.group,
      ref.kind,
      OP_CODE[op],
      scope.now,
      final,
      origin,
    );
  }
  journalWrite(scope, rv, ref, op, row);
}

/**
 * Journals an entry appended at `rv` for the open transaction, where anyone
 * tails its kind from memory: every statement that appends to the log calls
 * it for each entry it appended.
 */
export function journalWrite(
  scope: WriteScope,
  rv: number,
  ref: ObjectRef,
  op: WriteOp,
  row?: RawObject,
): void {
  const journal = scope.journal;
  if (journal === undefined || !journal.active || !journal.wants(ref.group, ref.kind)) return;
  const deleted = op === "delete";
  journal.logged({
    id: ref.id,
    resourceVersion: rv,
    group: ref.group,
    kind: ref.kind,
    op,
    final: deleted ? row : undefined,
    origin: scope.origin,
    row: deleted ? undefined : row,
  });
}

/** Bumps a row's resource version and `updated_at`, logging an update (a condition change). */
export function* bumpObject(scope: WriteScope, ref: ObjectRef, rv: number): Q<void> {
  yield* q.run(
    "UPDATE objects SET resource_version = ?, updated_at = ? WHERE id = ?",
    rv,
    scope.now,
    ref.id,
  );
  yield* appendWrite(scope, rv, ref, "update");
}
