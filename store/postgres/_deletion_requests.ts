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
import type { Db, PgRow } from "./_core.ts";
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
import { OP_CODE } from "../sql/_write_image.ts";

const UNMARKED: DeletionRequestResult = { id: undefined, marked: false, unblocked: [] };

/** Marks rows and logs their updates in one statement: ids[i] takes rvs[i]. */
const MARK_SQL = `WITH marked AS (
    UPDATE objects o SET deletion_requested_at = ?, resource_version = m.rv, updated_at = ?
    FROM unnest(?::bigint[], ?::bigint[]) AS m (id, rv)
    WHERE o.id = m.id AND o.deletion_requested_at IS NULL
    RETURNING o.id, o."group", o.kind, o.resource_version)
  INSERT INTO object_writes (resource_version, object_id, "group", kind, op, written_at, final, origin)
  SELECT resource_version, id, "group", kind, ${OP_CODE.update}, ?, NULL, ? FROM marked`;

async function mark(scope: WriteScope, ids: ObjectId[], first: number): Promise<void> {
  await scope.db.run(
    MARK_SQL,
    scope.now,
    scope.now,
    ids,
    ids.map((_, i) => first + i),
    scope.now,
    scope.db.origin,
  );
}

function children(db: Db, ownerId: ObjectId): Promise<PgRow[]> {
  return db.all(
    `SELECT e.from_id AS id, o."group" AS "group", o.kind AS kind,
       o.deletion_requested_at IS NOT NULL AS pending
     FROM edges e JOIN objects o ON o.id = e.from_id
     WHERE e.to_id = ? AND e.relation = 'owned_by' ORDER BY e.from_id`,
    ownerId,
  );
}

export class PostgresDeletionRequests implements DeletionRequests {
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
      const probe = async (db: Db) => {
        const row = await db.get(
          `SELECT "group", kind, deletion_requested_at, resource_version FROM objects WHERE id = ?`,
          ref.id,
        );
        assertKind(ref, row);
        assertVersion(ref.id, Number(row.resource_version), expected);
        return row.deletion_requested_at !== null;
      };
      // The idempotent answer needs no write transaction.
      if (await this.#s.read(probe)) return UNMARKED;
      return this.#s.write(async (scope) => {
        if (await probe(scope.db)) return UNMARKED;
        await mark(scope, [ref.id], scope.draw());
        return { id: ref.id, marked: true, unblocked: await unblockedTargets(scope.db, [ref.id]) };
      });
    });
  }

  createByName(ref: ObjectNameRef): Promise<DeletionRequestResult> {
    return rejectWith(async () => {
      checkGroupKind(ref);
      checkName(ref.name);
      const probe = async (db: Db): Promise<ObjectRef | undefined> => {
        const row = await db.get(
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
      return this.#s.write(async (scope) => {
        const target = await probe(scope.db);
        if (target === undefined) return UNMARKED;
        await mark(scope, [target.id], scope.draw());
        return {
          id: target.id,
          marked: true,
          unblocked: await unblockedTargets(scope.db, [target.id]),
        };
      });
    });
  }

  createFromOwner(ownerId: ObjectId): Promise<DeletionCascadeResult> {
    return rejectWith(async () => {
      checkId(ownerId, "ownerId");
      const read = (rows: PgRow[]): DeletionCascadeResult => ({
        children: rows.map((r) => ({ ref: decodeRef(r), marked: false })),
        unblocked: [],
      });
      const probe = await this.#s.read((db) => children(db, ownerId));
      // A re-cascade over a deleting subtree costs one read and no write.
      if (probe.every((r) => r.pending === true)) return read(probe);
      return this.#s.write(async (scope) => {
        const rows = await children(scope.db, ownerId);
        const toMark = rows.filter((r) => r.pending !== true).map((r) => Number(r.id));
        if (toMark.length === 0) return read(rows);
        await mark(scope, toMark, scope.drawMany(toMark.length));
        const marked = new Set(toMark);
        return {
          children: rows.map((r) => ({ ref: decodeRef(r), marked: marked.has(Number(r.id)) })),
          unblocked: await unblockedTargets(scope.db, toMark),
        };
      });
    });
  }

  list(options?: ObjectsListIdsOptions): Promise<ObjectRef[]> {
    return rejectWith(() => {
      const excludeStalled = checkExcludeStalled(options, "list deletion requests");
      return this.#s.read(async (db) =>
        (await db.all(
          `SELECT id, "group", kind FROM objects
           WHERE deletion_requested_at IS NOT NULL${
            excludeStalled ? " AND stalled_generation IS DISTINCT FROM generation" : ""
          } ORDER BY id`,
        )).map(decodeRef)
      );
    });
  }
}
