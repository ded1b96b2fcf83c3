/**
 * The deletion-request family: the soft-delete mark and the owner cascade.
 *
 * @module
 */
import type {
  DeletionCascadeResult,
  DeletionRequestResult,
  DeletionRequests,
  DeletionRequestsCreateOptions,
  ObjectId,
  ObjectNameRef,
  ObjectRef,
  ObjectsListIdsOptions,
} from "../../src/store.ts";
import {
  assertKind,
  assertVersion,
  checkExcludeStalled,
  checkId,
  checkNameRef,
  checkPrecondition,
  checkRef,
  nameNotFound,
  rejectWith,
} from "./_checks.ts";
import type { Dialect } from "./_dialect.ts";
import { decodeRef, unblockedTargets } from "./_edges.ts";
import { type Q, q } from "./_query.ts";
import { type Row, truthy } from "./_rows.ts";
import type { SqlSession, WriteScope } from "./_session.ts";
import { OP_CODE } from "./_write_image.ts";
import { appendWrite, journalWrite } from "./_write_log.ts";

const UNMARKED: DeletionRequestResult = { id: undefined, marked: false, unblocked: [] };

const MARK_SQL = `UPDATE objects SET deletion_requested_at = ?, resource_version = ?, updated_at = ?
  WHERE id = ? AND deletion_requested_at IS NULL`;

/**
 * Marks `refs`, `refs[i]` at version `first + i`, and logs their updates: one
 * statement for them all where the dialect binds arrays (its entries
 * journaled from what it returns), else one mark and one log entry per row.
 */
function* mark(
  d: Dialect,
  scope: WriteScope,
  refs: readonly ObjectRef[],
  first: number,
): Q<void> {
  const now = scope.now;
  if (d.unnest !== undefined) {
    const ids = refs.map((r) => r.id);
    const logged = yield* q.all(
      `WITH marked AS (
         UPDATE objects o SET deletion_requested_at = ?, resource_version = m.rv, updated_at = ?
         ${d.unnest(["bigint", "bigint"], "m", ["id", "rv"])}
         WHERE o.id = m.id AND o.deletion_requested_at IS NULL
         RETURNING o.id, o."group", o.kind, o.resource_version)
       INSERT INTO object_writes
         (resource_version, object_id, "group", kind, op, written_at, final, origin)
       SELECT resource_version, id, "group", kind, ${OP_CODE.update}, ?, NULL, ? FROM marked
       RETURNING resource_version, object_id, "group", kind`,
      now,
      now,
      ids,
      ids.map((_, i) => first + i),
      now,
      scope.origin,
    );
    // In version order, as the journal keeps them.
    logged.sort((a, b) => Number(a.resource_version) - Number(b.resource_version));
    for (const r of logged) {
      const ref = { id: Number(r.object_id), group: String(r.group), kind: String(r.kind) };
      journalWrite(scope, Number(r.resource_version), ref, "update");
    }
    return;
  }
  for (let i = 0; i < refs.length; i++) {
    yield* q.run(MARK_SQL, now, first + i, now, refs[i].id);
    yield* appendWrite(scope, first + i, refs[i], "update");
  }
}

function* children(ownerId: ObjectId): Q<Row[]> {
  return yield* q.all(
    `SELECT e.from_id AS id, o."group" AS "group", o.kind AS kind,
       o.deletion_requested_at IS NOT NULL AS pending
     FROM edges e JOIN objects o ON o.id = e.from_id
     WHERE e.to_id = ? AND e.relation = 'owned_by' ORDER BY e.from_id`,
    ownerId,
  );
}

export class SqlDeletionRequests implements DeletionRequests {
  readonly #s: SqlSession;
  readonly #list: string;
  readonly #listActive: string;

  constructor(session: SqlSession) {
    this.#s = session;
    const d = session.dialect;
    this.#list = `SELECT id, "group", kind FROM objects${d.indexedBy("idx_objects_deleting")}
      WHERE deletion_requested_at IS NOT NULL`;
    this.#listActive = `${this.#list} AND stalled_generation ${d.isDistinct} generation`;
  }

  create(
    ref: ObjectRef,
    options?: DeletionRequestsCreateOptions,
  ): Promise<DeletionRequestResult> {
    return rejectWith(async () => {
      checkRef(ref);
      if (options !== undefined && (typeof options !== "object" || options === null)) {
        throw new TypeError("Cannot request deletion: options must be an object");
      }
      const expected = checkPrecondition(options?.resourceVersion);
      const d = this.#s.dialect;
      const probe = () => createProbe(ref, expected);
      // The idempotent answer needs no write transaction.
      if (await this.#s.read(probe)) return UNMARKED;
      return this.#s.write((scope) => createBody(scope, d, ref, probe));
    });
  }

  createByName(ref: ObjectNameRef): Promise<DeletionRequestResult> {
    return rejectWith(async () => {
      const namespace = checkNameRef(ref);
      const d = this.#s.dialect;
      const probe = () => byNameProbe(ref, namespace);
      if (await this.#s.read(probe) === undefined) return UNMARKED;
      return this.#s.write((scope) => createByNameBody(scope, d, probe));
    });
  }

  createFromOwner(ownerId: ObjectId): Promise<DeletionCascadeResult> {
    return rejectWith(async () => {
      checkId(ownerId, "ownerId");
      const d = this.#s.dialect;
      const read = (rows: Row[]): DeletionCascadeResult => ({
        children: rows.map((r) => ({ ref: decodeRef(r), marked: false })),
        unblocked: [],
      });
      const probe = await this.#s.read(() => children(ownerId));
      // A re-cascade over a deleting subtree costs one read and no write.
      if (probe.every((r) => truthy(r.pending))) return read(probe);
      return this.#s.write((scope) => cascadeBody(scope, d, ownerId, read));
    });
  }

  list(options?: ObjectsListIdsOptions): Promise<ObjectRef[]> {
    return rejectWith(() => {
      const excludeStalled = checkExcludeStalled(options, "list deletion requests");
      const sql = `${excludeStalled ? this.#listActive : this.#list} ORDER BY id`;
      return this.#s.read(() => listBody(sql));
    });
  }
}

function* createProbe(ref: ObjectRef, expected: number | undefined): Q<boolean> {
  const row = yield* q.get(
    `SELECT "group", kind, deletion_requested_at, resource_version FROM objects WHERE id = ?`,
    ref.id,
  );
  assertKind(ref, row);
  assertVersion(ref.id, Number(row.resource_version), expected);
  return row.deletion_requested_at !== null;
}

function* createBody(scope: WriteScope, d: Dialect, ref: ObjectRef, probe: () => Q<boolean>) {
  if (yield* probe()) return UNMARKED;
  yield* mark(d, scope, [ref], scope.draw());
  return { id: ref.id, marked: true, unblocked: yield* unblockedTargets(d, [ref.id]) };
}

function* byNameProbe(ref: ObjectNameRef, namespace: string): Q<ObjectRef | undefined> {
  const row = yield* q.get(
    `SELECT id, "group", kind, deletion_requested_at FROM objects
     WHERE "group" = ? AND kind = ? AND namespace = ? AND name = ?`,
    ref.group,
    ref.kind,
    namespace,
    ref.name,
  );
  if (row === undefined) throw nameNotFound(ref, ref.name, namespace);
  return row.deletion_requested_at === null ? decodeRef(row) : undefined;
}

function* createByNameBody(scope: WriteScope, d: Dialect, probe: () => Q<ObjectRef | undefined>) {
  const target = yield* probe();
  if (target === undefined) return UNMARKED;
  yield* mark(d, scope, [target], scope.draw());
  return {
    id: target.id,
    marked: true,
    unblocked: yield* unblockedTargets(d, [target.id]),
  };
}

function* cascadeBody(
  scope: WriteScope,
  d: Dialect,
  ownerId: ObjectId,
  read: (rows: Row[]) => DeletionCascadeResult,
) {
  const rows = yield* children(ownerId);
  const toMark = rows.filter((r) => !truthy(r.pending)).map(decodeRef);
  if (toMark.length === 0) return read(rows);
  yield* mark(d, scope, toMark, scope.drawMany(toMark.length));
  const marked = new Set(toMark.map((r) => r.id));
  return {
    children: rows.map((r) => ({ ref: decodeRef(r), marked: marked.has(Number(r.id)) })),
    unblocked: yield* unblockedTargets(d, [...marked]),
  };
}

function* listBody(sql: string) {
  return (yield* q.all(sql)).map(decodeRef);
}
