/**
 * The conditions family.
 *
 * @module
 */
import type { ConditionInput, Conditions, ObjectRef } from "../../src/store.ts";
import {
  assertKind,
  checkRef,
  describe,
  type NormalCondition,
  normalizeConditions,
  rejectWith,
} from "./_checks.ts";
import { q } from "./_query.ts";
import type { SqlSession, WriteScope } from "./_session.ts";
import type { Dialect } from "./_dialect.ts";
import { bumpObject } from "./_write_log.ts";

const UPSERT_INTO = `INSERT INTO conditions
  (object_id, type, status, reason, message, liveness, open_epoch, transitioned_at, updated_at)`;
const UPSERT_SET = `ON CONFLICT (object_id, type) DO UPDATE SET
    status = excluded.status, reason = excluded.reason, message = excluded.message,
    liveness = excluded.liveness, open_epoch = excluded.open_epoch,
    transitioned_at = CASE WHEN conditions.status = excluded.status
      THEN conditions.transitioned_at ELSE excluded.transitioned_at END,
    updated_at = excluded.updated_at`;
/** One condition per statement. */
const UPSERT_ONE = `${UPSERT_INTO} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ${UPSERT_SET}`;

const KIND_SQL = `SELECT "group", kind FROM objects WHERE id = ?`;

export class SqlConditions implements Conditions {
  readonly #s: SqlSession;
  readonly #stored: string;
  /** Every changed condition in one statement, where the dialect binds arrays. */
  readonly #upsertMany: string | undefined;

  constructor(session: SqlSession) {
    this.#s = session;
    const d = session.dialect;
    this.#stored = `SELECT type, status, reason, message, liveness, open_epoch FROM conditions
      WHERE object_id = ? AND type${d.inTexts}`;
    this.#upsertMany = d.unnest === undefined ? undefined : `${UPSERT_INTO}
      SELECT ?, t.type, t.status, t.reason, t.message, t.liveness, ?, ?, ?${
      d.unnest(["text", "text", "text", "text", "smallint"], "t", [
        "type",
        "status",
        "reason",
        "message",
        "liveness",
      ])
    } ${UPSERT_SET}`;
  }

  set(ref: ObjectRef, conditions: readonly ConditionInput[]): Promise<void> {
    return rejectWith(() => {
      checkRef(ref);
      const batch = normalizeConditions(conditions);
      if (batch.length === 0) {
        // Nothing to write, but the scope is still checked (and a closed store refuses).
        return this.#s.read(() => kindCheckBody(ref));
      }
      const d = this.#s.dialect;
      const epoch = this.#s.epoch;
      const storedSql = this.#stored;
      const upsertMany = this.#upsertMany;
      return this.#s.write((scope) => setBody(scope, d, ref, batch, epoch, storedSql, upsertMany));
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
      return this.#s.write((scope) => deleteBody(scope, ref, type));
    });
  }
}

function* setBody(
  scope: WriteScope,
  d: Dialect,
  ref: ObjectRef,
  batch: NormalCondition[],
  epoch: number,
  storedSql: string,
  upsertMany: string | undefined,
) {
  assertKind(ref, yield* q.get(KIND_SQL, ref.id));
  const stored = new Map(
    (yield* q.all(storedSql, ref.id, d.texts(batch.map((c) => c.type)))).map((
      row,
    ) => [row.type as string, row]),
  );
  const changed = batch.filter((c) => {
    const s = stored.get(c.type);
    // A liveness row another open wrote is never a match: confirming it makes it this open's.
    return s === undefined || (s.liveness === 1 && Number(s.open_epoch) !== epoch) ||
      s.status !== c.status || s.reason !== c.reason || s.message !== c.message ||
      s.liveness !== c.liveness;
  });
  if (changed.length === 0) return;
  const now = scope.now;
  if (upsertMany !== undefined) {
    yield* q.run(
      upsertMany,
      ref.id,
      epoch,
      now,
      now,
      changed.map((c) => c.type),
      changed.map((c) => c.status),
      changed.map((c) => c.reason),
      changed.map((c) => c.message),
      changed.map((c) => c.liveness),
    );
  } else {
    for (const c of changed) {
      yield* q.run(
        UPSERT_ONE,
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
  }
  yield* bumpObject(scope, ref, scope.draw());
}

function* deleteBody(scope: WriteScope, ref: ObjectRef, type: string) {
  assertKind(ref, yield* q.get(KIND_SQL, ref.id));
  const removed = yield* q.run(
    "DELETE FROM conditions WHERE object_id = ? AND type = ?",
    ref.id,
    type,
  );
  if (removed > 0) yield* bumpObject(scope, ref, scope.draw());
}

function* kindCheckBody(ref: ObjectRef) {
  assertKind(ref, yield* q.get(KIND_SQL, ref.id));
}
