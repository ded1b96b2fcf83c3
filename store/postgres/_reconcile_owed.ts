/**
 * The owed-count family: a durable stamp that an object is owed a pass.
 *
 * @module
 */
import type { GroupKind, ObjectId, ObjectRef, ReconcileOwed } from "../../src/store.ts";
import { assertKind, checkGroupKind, checkId, checkRef, describe, rejectWith } from "./_rows.ts";
import type { Session } from "./_session.ts";

export class PostgresReconcileOwed implements ReconcileOwed {
  readonly #s: Session;

  constructor(session: Session) {
    this.#s = session;
  }

  decrement(ref: ObjectRef, observed: number): Promise<void> {
    return rejectWith(() => {
      checkRef(ref);
      if (typeof observed !== "number" || !Number.isSafeInteger(observed) || observed < 0) {
        throw new TypeError(
          `Cannot decrement the owed count of object ${ref.id} by ${
            describe(observed)
          }: expected an integer >= 0`,
        );
      }
      return this.#s.write(async ({ db }) => {
        const row = await db.get(
          `SELECT "group", kind, reconcile_owed FROM objects WHERE id = ?`,
          ref.id,
        );
        if (row === undefined) return; // collected: nothing is owed any more
        assertKind(ref, row);
        if (observed === 0 || row.reconcile_owed === 0) return;
        await db.run(
          "UPDATE objects SET reconcile_owed = GREATEST(reconcile_owed - ?, 0) WHERE id = ?",
          observed,
          ref.id,
        );
      });
    });
  }

  listIds(gk: GroupKind): Promise<ObjectId[]> {
    return rejectWith(() => {
      checkGroupKind(gk);
      return this.#s.read(async (db) =>
        (await db.rows(
          `SELECT id FROM objects
           WHERE "group" = ? AND kind = ? AND reconcile_owed <> 0 ORDER BY id`,
          gk.group,
          gk.kind,
        )).map((r) => Number(r[0]))
      );
    });
  }

  stamp(refs: readonly ObjectRef[]): Promise<void> {
    return rejectWith(() => {
      if (!Array.isArray(refs)) {
        throw new TypeError(`Cannot stamp: current value is ${describe(refs)}, expected an array`);
      }
      const ids = [...new Set(refs.map((r) => r?.id))];
      ids.forEach((id) => checkId(id));
      if (ids.length === 0) return Promise.resolve();
      return this.#s.write(async ({ db }) => {
        await db.run(
          `UPDATE objects SET reconcile_owed = reconcile_owed + 1 WHERE id = ANY(?::bigint[])`,
          ids,
        );
      });
    });
  }

  sweep(keep: readonly GroupKind[]): Promise<number> {
    return rejectWith(async () => {
      if (!Array.isArray(keep)) {
        throw new TypeError(`Cannot sweep: current value is ${describe(keep)}, expected an array`);
      }
      keep.forEach(checkGroupKind);
      const groups = keep.map((k) => k.group);
      const kinds = keep.map((k) => k.kind);
      const where = `reconcile_owed <> 0
        AND ("group", kind) NOT IN (SELECT * FROM unnest(?::text[], ?::text[]))`;
      // An idle sweep is a read: the write transaction opens only when a row is due.
      const due = await this.#s.read((db) =>
        db.get(`SELECT 1 FROM objects WHERE ${where} LIMIT 1`, groups, kinds)
      );
      if (due === undefined) return 0;
      return this.#s.write(({ db }) =>
        db.run(`UPDATE objects SET reconcile_owed = 0 WHERE ${where}`, groups, kinds)
      );
    });
  }
}
