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
import type { Db, Row } from "./_core.ts";
import { decodeRef, unblockedTargets } from "./_edges.ts";
import {
  assertKind,
  assertVersion,
  checkExcludeStalled,
  checkGroupKind,
  checkId,
  checkName,
  checkPrecondition,
  checkRef,
  nameNotFound,
  rejectWith,
} from "./_rows.ts";
import type { Session, WriteScope } from "./_session.ts";
import { appendWrite } from "./_write_log.ts";

const UNMARKED: DeletionRequestResult = { id: undefined, marked: false, unblocked: [] };

const MARK_SQL = `UPDATE objects SET deletion_requested_at = ?, resource_version = ?, updated_at = ?
  WHERE id = ? AND deletion_requested_at IS NULL`;

function mark(scope: WriteScope, ref: ObjectRef, rv: number): void {
  scope.db.run(MARK_SQL, scope.now, rv, scope.now, ref.id);
  appendWrite(scope.db, rv, ref, "update", scope.now);
}

function children(db: Db, ownerId: ObjectId): Row[] {
  return db.all(
    `SELECT e.from_id AS id, o."group" AS "group", o.kind AS kind,
       o.deletion_requested_at IS NOT NULL AS pending
     FROM edges e JOIN objects o ON o.id = e.from_id
     WHERE e.to_id = ? AND e.relation = 'owned_by' ORDER BY e.from_id`,
    ownerId,
  );
}

export class SqliteDeletionRequests implements DeletionRequests {
  readonly #s: Session;

  constructor(session: Session) {
    this.#s = session;
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
      const probe = (db: Db) => {
        const row = db.get(
          `SELECT "group", kind, deletion_requested_at, resource_version FROM objects WHERE id = ?`,
          ref.id,
        );
        assertKind(ref, row);
        assertVersion(ref.id, Number(row.resource_version), expected);
        return row.deletion_requested_at !== null;
      };
      // The idempotent answer needs no write transaction.
      if (await this.#s.read(probe)) return UNMARKED;
      return this.#s.write((scope) => {
        if (probe(scope.db)) return UNMARKED;
        mark(scope, ref, scope.draw());
        return { id: ref.id, marked: true, unblocked: unblockedTargets(scope.db, [ref.id]) };
      });
    });
  }

  createByName(ref: ObjectNameRef): Promise<DeletionRequestResult> {
    return rejectWith(async () => {
      checkGroupKind(ref);
      checkName(ref.name);
      const probe = (db: Db): ObjectRef | undefined => {
        const row = db.get(
          `SELECT id, "group", kind, deletion_requested_at FROM objects
           WHERE "group" = ? AND kind = ? AND name = ?`,
          ref.group,
          ref.kind,
          ref.name,
        );
        if (row === undefined) throw nameNotFound(ref, ref.name);
        return row.deletion_requested_at === null ? decodeRef(row) : undefined;
      };
      if (await this.#s.read(probe) === undefined) return UNMARKED;
      return this.#s.write((scope) => {
        const target = probe(scope.db);
        if (target === undefined) return UNMARKED;
        mark(scope, target, scope.draw());
        return {
          id: target.id,
          marked: true,
          unblocked: unblockedTargets(scope.db, [target.id]),
        };
      });
    });
  }

  createFromOwner(ownerId: ObjectId): Promise<DeletionCascadeResult> {
    return rejectWith(async () => {
      checkId(ownerId, "ownerId");
      const read = (rows: Row[]): DeletionCascadeResult => ({
        children: rows.map((r) => ({ ref: decodeRef(r), marked: false })),
        unblocked: [],
      });
      const probe = await this.#s.read((db) => children(db, ownerId));
      // A re-cascade over a deleting subtree costs one read and no write.
      if (probe.every((r) => r.pending === 1)) return read(probe);
      return this.#s.write((scope) => {
        const rows = children(scope.db, ownerId);
        const toMark = rows.filter((r) => r.pending !== 1);
        if (toMark.length === 0) return read(rows);
        const first = scope.drawMany(toMark.length);
        const marked = new Set<ObjectId>();
        toMark.forEach((r, i) => {
          const ref = decodeRef(r);
          mark(scope, ref, first + i);
          marked.add(ref.id);
        });
        return {
          children: rows.map((r) => ({ ref: decodeRef(r), marked: marked.has(Number(r.id)) })),
          unblocked: unblockedTargets(scope.db, [...marked]),
        };
      });
    });
  }

  list(options?: ObjectsListIdsOptions): Promise<ObjectRef[]> {
    return rejectWith(() => {
      const excludeStalled = checkExcludeStalled(options, "list deletion requests");
      return this.#s.read((db) =>
        db.all(
          `SELECT id, "group", kind FROM objects INDEXED BY idx_objects_deleting
           WHERE deletion_requested_at IS NOT NULL${
            excludeStalled ? " AND stalled_generation IS NOT generation" : ""
          } ORDER BY id`,
        ).map(decodeRef)
      );
    });
  }
}
