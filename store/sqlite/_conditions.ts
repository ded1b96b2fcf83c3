/**
 * The conditions family.
 *
 * @module
 */
import type { ConditionInput, Conditions, ObjectRef } from "../../src/store.ts";
import { normalizeConditions } from "../sql/_checks.ts";
import { assertKind, checkRef, describe, rejectWith } from "./_rows.ts";
import type { Session } from "./_session.ts";
import { bumpObject } from "./_write_log.ts";

const UPSERT_SQL = `INSERT INTO conditions
  (object_id, type, status, reason, message, liveness, open_epoch, transitioned_at, updated_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (object_id, type) DO UPDATE SET
    status = excluded.status, reason = excluded.reason, message = excluded.message,
    liveness = excluded.liveness, open_epoch = excluded.open_epoch,
    transitioned_at = CASE WHEN conditions.status = excluded.status
      THEN conditions.transitioned_at ELSE excluded.transitioned_at END,
    updated_at = excluded.updated_at`;

export class SqliteConditions implements Conditions {
  readonly #s: Session;

  constructor(session: Session) {
    this.#s = session;
  }

  set(ref: ObjectRef, conditions: readonly ConditionInput[]): Promise<void> {
    return rejectWith(() => {
      checkRef(ref);
      const batch = normalizeConditions(conditions);
      if (batch.length === 0) {
        // Nothing to write, but the scope is still checked (and a closed store refuses).
        return this.#s.read((db) => {
          assertKind(ref, db.get(`SELECT "group", kind FROM objects WHERE id = ?`, ref.id));
        });
      }
      const epoch = this.#s.core.epoch;
      return this.#s.write(({ db, now, draw }) => {
        assertKind(ref, db.get(`SELECT "group", kind FROM objects WHERE id = ?`, ref.id));
        const stored = new Map(
          db.all(
            `SELECT type, status, reason, message, liveness, open_epoch FROM conditions
             WHERE object_id = ? AND type IN (SELECT value FROM json_each(?))`,
            ref.id,
            JSON.stringify(batch.map((c) => c.type)),
          ).map((row) => [row.type as string, row]),
        );
        const changed = batch.filter((c) => {
          const s = stored.get(c.type);
          // A liveness row from an earlier open is never a match: re-confirming must rewrite it.
          return s === undefined || (s.liveness === 1 && Number(s.open_epoch) < epoch) ||
            s.status !== c.status || s.reason !== c.reason || s.message !== c.message ||
            s.liveness !== c.liveness;
        });
        if (changed.length === 0) return;
        for (const c of changed) {
          db.run(
            UPSERT_SQL,
            ref.id,
            c.type,
            c.status,
            c.reason,
            c.message,
            c.liveness,
            epoch,
            now,
            now,
          );
        }
        bumpObject(db, ref, draw(), now);
      });
    });
  }

  delete(ref: ObjectRef, type: string): Promise<void> {
    return rejectWith(() => {
      checkRef(ref);
      if (typeof type !== "string") {
        throw new TypeError(
          `Cannot delete condition: current value is ${describe(type)}, expected a string`,
        );
      }
      return this.#s.write(({ db, now, draw }) => {
        assertKind(ref, db.get(`SELECT "group", kind FROM objects WHERE id = ?`, ref.id));
        if (db.run("DELETE FROM conditions WHERE object_id = ? AND type = ?", ref.id, type) > 0) {
          bumpObject(db, ref, draw(), now);
        }
      });
    });
  }
}
