/**
 * The owed-count family: a durable stamp that an object is owed a pass.
 *
 * @module
 */
import type { GroupKind, ObjectId, ObjectRef, ReconcileOwed } from "../../src/store.ts";
import { assertKind, checkGroupKind, checkId, checkRef, describe, rejectWith } from "./_checks.ts";
import { ID_CHUNK } from "./_rows.ts";
import { q } from "./_query.ts";
import type { SqlSession } from "./_session.ts";
import type { Dialect } from "./_dialect.ts";

export class SqlReconcileOwed implements ReconcileOwed {
  readonly #s: SqlSession;
  readonly #decrement: string;
  readonly #owed: string;
  readonly #stamp: string;

  constructor(session: SqlSession) {
    this.#s = session;
    const d = session.dialect;
    this.#decrement =
      `UPDATE objects SET reconcile_owed = ${d.greatest}(reconcile_owed - ?, 0) WHERE id = ?`;
    this.#owed = `SELECT id FROM objects${d.indexedBy("idx_objects_owed")}
      WHERE "group" = ? AND kind = ? AND reconcile_owed <> 0 ORDER BY id`;
    // The rows are found by their keys (`./_keyed.ts`), then each updated through its key.
    this.#stamp = `UPDATE objects SET reconcile_owed = reconcile_owed + 1
      WHERE id IN (SELECT id FROM${d.objectsOfIds})`;
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
      const decrement = this.#decrement;
      return this.#s.write(() => decrementBody(decrement, ref, observed));
    });
  }

  listIds(gk: GroupKind): Promise<ObjectId[]> {
    return rejectWith(() => {
      checkGroupKind(gk);
      const owed = this.#owed;
      return this.#s.read(() => owedBody(owed, gk));
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
      const d = this.#s.dialect;
      const stamp = this.#stamp;
      return this.#s.write(() => stampBody(d, stamp, ids));
    });
  }

  sweep(keep: readonly GroupKind[]): Promise<number> {
    return rejectWith(() => {
      if (!Array.isArray(keep)) {
        throw new TypeError(`Cannot sweep: current value is ${describe(keep)}, expected an array`);
      }
      keep.forEach(checkGroupKind);
      const d = this.#s.dialect;
      const kinds = d.kinds(keep);
      const where = `reconcile_owed <> 0 AND ("group", kind) NOT${d.inKinds}`;
      // An idle sweep is a read: the write transaction opens only when a row is due.
      return this.#s.read(() => q.get(`SELECT 1 FROM objects WHERE ${where} LIMIT 1`, ...kinds))
        .then((due) =>
          due === undefined
            ? 0
            : this.#s.write(() =>
              q.run(`UPDATE objects SET reconcile_owed = 0 WHERE ${where}`, ...kinds)
            )
        );
    });
  }
}

function* decrementBody(decrement: string, ref: ObjectRef, observed: number) {
  const row = yield* q.get(
    `SELECT "group", kind, reconcile_owed FROM objects WHERE id = ?`,
    ref.id,
  );
  if (row === undefined) return; // collected: nothing is owed any more
  assertKind(ref, row);
  if (observed === 0 || Number(row.reconcile_owed) === 0) return;
  yield* q.run(decrement, observed, ref.id);
}

function* owedBody(owed: string, gk: GroupKind) {
  return (yield* q.rows(owed, gk.group, gk.kind)).map((r) => Number(r[0]));
}

function* stampBody(d: Dialect, stamp: string, ids: ObjectId[]) {
  for (let i = 0; i < ids.length; i += ID_CHUNK) {
    yield* q.run(stamp, d.ids(ids.slice(i, i + ID_CHUNK)));
  }
}
