/**
 * The objects family.
 *
 * @module
 */
import {
  DeletionPendingError,
  InvalidObservedGenerationError,
  ObservedGenerationFutureError,
  StoreError,
} from "../../src/errors.ts";
import type {
  GroupKind,
  IncomingEdgeQuery,
  ObjectId,
  ObjectNameRef,
  ObjectRef,
  Objects,
  ObjectsCreateInput,
  ObjectsListIdsOptions,
  ObjectsListPage,
  ObjectsUpdateSpecInput,
  ObjectsUpdateSpecResult,
  ObjectsUpdateStatusInput,
  RawObject,
  RawObjectMeta,
  ReconcileLoad,
} from "../../src/store.ts";
import type { Db } from "./_core.ts";
import { checkRelation, nameTaken, stampVersion } from "../sql/_checks.ts";
import { kindName } from "../../src/_engine_keys.ts";
import {
  assertKind,
  assertVersion,
  checkExcludeStalled,
  checkFinalizers,
  checkGroupKind,
  checkId,
  checkIds,
  checkJsonText,
  checkListPage,
  checkName,
  checkPrecondition,
  checkRef,
  checkSchemaVersion,
  decodeFinalizers,
  decodeMeta,
  describe,
  ID_CHUNK,
  nameNotFound,
  OBJECT_COLUMNS,
  objectNotFound,
  OBJECTS_OF_KIND,
  readConditions,
  readMeta,
  readObject,
  rejectWith,
  withConditions,
  withConditionsOfKind,
} from "./_rows.ts";
import type { Session } from "./_session.ts";
import { appendWrite } from "./_write_log.ts";

// Lands only on a row of the ref's kind, at or past the generation, not yet observed at it.
const SETTLE_SQL =
  `UPDATE objects SET observed_generation = ?, observed_at = ?, resource_version = ?
  WHERE id = ? AND "group" = ? AND kind = ? AND generation >= ?
    AND (observed_generation IS NULL OR observed_generation < ?)`;

export class SqliteObjects implements Objects {
  readonly #s: Session;

  constructor(session: Session) {
    this.#s = session;
  }

  create(gk: GroupKind, input: ObjectsCreateInput): Promise<RawObject> {
    return rejectWith(() => {
      checkGroupKind(gk);
      checkName(input?.name);
      checkJsonText(input.spec, "spec");
      const specVersion = checkSchemaVersion(input.specVersion, "specVersion");
      const finalizerList = checkFinalizers(input.finalizers);
      const finalizers = JSON.stringify(finalizerList);
      const { group, kind } = gk;
      return this.#s.write(({ db, now, draw, insertWithId }) => {
        const rv = draw();
        let id: ObjectId;
        try {
          id = insertWithId("objects", (id) =>
            db.run(
              `INSERT INTO objects (id, "group", kind, name, spec, spec_version, resource_version,
                 finalizers, created_at, updated_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
              id,
              group,
              kind,
              input.name,
              input.spec,
              specVersion,
              rv,
              finalizers,
              now,
              now,
            ));
        } catch (error) {
          if (this.#s.core.isUniqueViolation(error)) {
            throw nameTaken(group, kind, input.name, error);
          }
          throw error;
        }
        // The row is what was just inserted, with the columns' defaults.
        const object: RawObject = {
          id,
          group,
          kind,
          name: input.name,
          spec: input.spec,
          status: undefined,
          specVersion,
          statusVersion: 0,
          generation: 1,
          observedGeneration: undefined,
          observedAt: undefined,
          resourceVersion: rv,
          deletionRequestedAt: undefined,
          reconcileOwed: 0,
          finalizers: finalizerList,
          createdAt: new Date(now),
          updatedAt: new Date(now),
          conditions: [],
        };
        appendWrite(db, rv, object, "create", now, object);
        return object;
      });
    });
  }

  get(id: ObjectId): Promise<RawObject> {
    return rejectWith(() => {
      checkId(id);
      return this.#s.read((db) => readObject(db, id, this.#s.core.epoch));
    });
  }

  getByName(ref: ObjectNameRef): Promise<RawObject> {
    return rejectWith(() => {
      checkNameRef(ref);
      return this.#s.read((db) => {
        return withConditions(db, [readMetaByName(db, ref)], this.#s.core.epoch)[0];
      });
    });
  }

  getMeta(id: ObjectId): Promise<RawObjectMeta> {
    return rejectWith(() => {
      checkId(id);
      return this.#s.read((db) => {
        const meta = readMeta(db, id);
        if (meta === undefined) throw objectNotFound(id);
        return meta;
      });
    });
  }

  getMetaByName(ref: ObjectNameRef): Promise<RawObjectMeta> {
    return rejectWith(() => {
      checkNameRef(ref);
      return this.#s.read((db) => readMetaByName(db, ref));
    });
  }

  getForReconcile(id: ObjectId): Promise<ReconcileLoad> {
    return rejectWith(() => {
      checkId(id);
      return this.#s.readSnapshot((db) => {
        // One snapshot: the cursor read with the row can lag it, never lead it.
        const row = db.row(
          `SELECT ${OBJECT_COLUMNS}, EXISTS (SELECT 1 FROM edges
             WHERE from_id = objects.id AND relation = 'depends_on') AS has_dependencies,
             stalled_generation, (SELECT value FROM resource_version_seq WHERE id = 1) AS cursor
           FROM objects WHERE id = ?`,
          id,
        );
        if (row === undefined) throw objectNotFound(id);
        const object = withConditions(db, [decodeMeta(row)], this.#s.core.epoch)[0];
        // has_dependencies, stalled_generation and cursor follow the 17 object columns.
        return {
          object,
          cursor: Number(row[19]),
          hasDependencies: row[17] === 1,
          stalledGeneration: row[18] === null ? undefined : Number(row[18]),
        };
      });
    });
  }

  list(gk: GroupKind, page?: ObjectsListPage): Promise<RawObject[]> {
    return rejectWith(() => {
      checkGroupKind(gk);
      const p = checkListPage(page);
      return this.#s.read((db) => {
        if (p.after === 0 && p.limit === undefined) {
          const metas = db.rows(OBJECTS_OF_KIND, gk.group, gk.kind).map(decodeMeta);
          return withConditionsOfKind(db, metas, gk, this.#s.core.epoch);
        }
        const metas = db.rows(
          `SELECT ${OBJECT_COLUMNS} FROM objects WHERE "group" = ? AND kind = ? AND id > ?
           ORDER BY id LIMIT ?`,
          gk.group,
          gk.kind,
          p.after,
          p.limit ?? -1,
        ).map(decodeMeta);
        return withConditions(db, metas, this.#s.core.epoch);
      });
    });
  }

  listByIds(gk: GroupKind, ids: readonly ObjectId[]): Promise<RawObject[]> {
    return rejectWith(() => {
      checkGroupKind(gk);
      checkIds(ids);
      return this.#s.read((db) => listByIds(db, gk, ids, this.#s.core.epoch));
    });
  }

  listByIncomingEdge(
    gk: GroupKind,
    edge: IncomingEdgeQuery,
    page?: ObjectsListPage,
  ): Promise<RawObject[]> {
    return rejectWith(() => {
      checkGroupKind(gk);
      checkId(edge?.toId, "toId");
      checkRelation(edge.relation);
      const p = checkListPage(page);
      return this.#s.read((db) => {
        // Driven by the edges into toId, already in from_id order: cost tracks those edges.
        const metas = db.rows(
          `SELECT ${OBJECT_COLUMNS} FROM edges CROSS JOIN objects ON id = from_id
           WHERE to_id = ? AND relation = ? AND from_id > ? AND "group" = ? AND kind = ?
           ORDER BY from_id LIMIT ?`,
          edge.toId,
          edge.relation,
          p.after,
          gk.group,
          gk.kind,
          p.limit ?? -1,
        ).map(decodeMeta);
        return withConditions(db, metas, this.#s.core.epoch);
      });
    });
  }

  listIds(gk: GroupKind, options?: ObjectsListIdsOptions): Promise<ObjectId[]> {
    return rejectWith(() => {
      checkGroupKind(gk);
      const excludeStalled = checkExcludeStalled(options, "list ids");
      return this.#s.read((db) =>
        db.all(
          `SELECT id FROM objects WHERE "group" = ? AND kind = ?${
            excludeStalled ? " AND stalled_generation IS NOT generation" : ""
          } ORDER BY id`,
          gk.group,
          gk.kind,
        )
          .map((r) => Number(r.id))
      );
    });
  }

  listUnsettledIds(gk: GroupKind): Promise<ObjectId[]> {
    return rejectWith(() => {
      checkGroupKind(gk);
      return this.#s.read((db) =>
        db.all(
          `SELECT id FROM objects INDEXED BY idx_objects_unsettled
           WHERE "group" = ? AND kind = ?
             AND (observed_generation IS NULL OR observed_generation < generation)
             AND stalled_generation IS NOT generation
           ORDER BY id`,
          gk.group,
          gk.kind,
        ).map((r) => Number(r.id))
      );
    });
  }

  updateSpec(ref: ObjectRef, input: ObjectsUpdateSpecInput): Promise<ObjectsUpdateSpecResult> {
    return rejectWith(() => {
      checkRef(ref);
      checkJsonText(input?.spec, "spec");
      const version = checkSchemaVersion(input.specVersion, "specVersion");
      const expected = checkPrecondition(input.resourceVersion);
      return this.#s.write((scope) => {
        const row = scope.db.row(`SELECT ${OBJECT_COLUMNS} FROM objects WHERE id = ?`, ref.id);
        assertKind(ref, row && { group: row[1], kind: row[2] });
        const meta = decodeMeta(row!);
        return this.#updateSpec(scope.db, scope, meta, input.spec, version, expected);
      });
    });
  }

  updateSpecByName(
    ref: ObjectNameRef,
    input: ObjectsUpdateSpecInput,
  ): Promise<ObjectsUpdateSpecResult> {
    return rejectWith(() => {
      checkNameRef(ref);
      checkJsonText(input?.spec, "spec");
      const version = checkSchemaVersion(input.specVersion, "specVersion");
      const expected = checkPrecondition(input.resourceVersion);
      return this.#s.write((scope) => {
        const meta = readMetaByName(scope.db, ref);
        return this.#updateSpec(scope.db, scope, meta, input.spec, version, expected);
      });
    });
  }

  #updateSpec(
    db: Db,
    scope: { now: number; draw(): number },
    stored: RawObjectMeta,
    spec: string,
    incoming: number,
    expected: number | undefined,
  ): ObjectsUpdateSpecResult {
    // The order is contractual: precondition, deletion mark, version stamp, byte compare.
    assertVersion(stored.id, stored.resourceVersion, expected);
    if (stored.deletionRequestedAt !== undefined) {
      throw new DeletionPendingError(
        `Cannot update the spec of ${
          kindName(stored)
        } "${stored.name}" (id ${stored.id}): its deletion is pending`,
      );
    }
    const version = stampVersion(stored.specVersion, incoming, "spec", stored.id);
    const epoch = this.#s.core.epoch;
    if (version === stored.specVersion && spec === stored.spec) {
      return {
        object: { ...stored, conditions: readConditions(db, stored.id, epoch) },
        changed: false,
      };
    }
    const rv = scope.draw();
    db.run(
      `UPDATE objects SET spec = ?, spec_version = ?, generation = ?, resource_version = ?,
         updated_at = ?
       WHERE id = ?`,
      spec,
      version,
      stored.generation + 1,
      rv,
      scope.now,
      stored.id,
    );
    const object: RawObject = {
      ...stored,
      spec,
      specVersion: version,
      generation: stored.generation + 1,
      resourceVersion: rv,
      updatedAt: new Date(scope.now),
      conditions: readConditions(db, stored.id, epoch),
    };
    appendWrite(db, rv, stored, "update", scope.now, object);
    return { object, changed: true };
  }

  updateStatus(ref: ObjectRef, input: ObjectsUpdateStatusInput): Promise<boolean> {
    return rejectWith(() => {
      checkRef(ref);
      checkJsonText(input?.status, "status");
      const incoming = checkSchemaVersion(input.statusVersion, "statusVersion");
      return this.#s.write(({ db, now, draw }) => {
        const row = db.get(
          `SELECT "group", kind, status, status_version FROM objects WHERE id = ?`,
          ref.id,
        );
        assertKind(ref, row);
        const stored = Number(row.status_version);
        const version = stampVersion(stored, incoming, "status", ref.id);
        if (version === stored && input.status === row.status) return false;
        const rv = draw();
        db.run(
          `UPDATE objects SET status = ?, status_version = ?, resource_version = ?, updated_at = ?
           WHERE id = ?`,
          input.status,
          version,
          rv,
          now,
          ref.id,
        );
        appendWrite(db, rv, ref, "update", now);
        return true;
      });
    });
  }

  setObservedGeneration(ref: ObjectRef, generation: number): Promise<boolean> {
    return rejectWith(() => {
      checkRef(ref);
      if (typeof generation !== "number" || !Number.isSafeInteger(generation) || generation < 1) {
        throw new InvalidObservedGenerationError(
          `Cannot record observed generation ${
            describe(generation)
          } for object ${ref.id}: a generation is an integer >= 1`,
        );
      }
      return this.#s.write(({ db, now, drawIf }) => {
        // One statement when it lands; the gate read below only explains a write that did not.
        const rv = drawIf((rv) =>
          db.run(
            SETTLE_SQL,
            generation,
            now,
            rv,
            ref.id,
            ref.group,
            ref.kind,
            generation,
            generation,
          ) ===
            1
        );
        if (rv !== undefined) {
          appendWrite(db, rv, ref, "update", now);
          return true;
        }
        const row = db.get(`SELECT "group", kind, generation FROM objects WHERE id = ?`, ref.id);
        assertKind(ref, row);
        if (generation > Number(row.generation)) {
          throw new ObservedGenerationFutureError(
            `Cannot record observed generation ${generation} for object ${ref.id}: its generation is ${row.generation}`,
          );
        }
        return false;
      });
    });
  }

  addFinalizer(ref: ObjectRef, finalizer: string): Promise<boolean> {
    return rejectWith(() => {
      checkRef(ref);
      const [checked] = checkFinalizers([finalizer]);
      return this.#s.write(({ db, now, draw }) => {
        const row = db.get(
          `SELECT "group", kind, name, finalizers, deletion_requested_at FROM objects WHERE id = ?`,
          ref.id,
        );
        assertKind(ref, row);
        if (row.deletion_requested_at !== null) {
          throw new DeletionPendingError(
            `Cannot add finalizer ${JSON.stringify(checked)} to ${
              kindName(ref)
            } "${row.name}" (id ${ref.id}): its deletion is pending`,
          );
        }
        const finalizers = decodeFinalizers(row.finalizers, ref.id);
        if (finalizers.includes(checked)) return false;
        const rv = draw();
        db.run(
          "UPDATE objects SET finalizers = ?, resource_version = ?, updated_at = ? WHERE id = ?",
          JSON.stringify([...finalizers, checked]),
          rv,
          now,
          ref.id,
        );
        appendWrite(db, rv, ref, "update", now);
        return true;
      });
    });
  }

  setStalledGeneration(ref: ObjectRef, generation: number | undefined): Promise<boolean> {
    return rejectWith(() => {
      checkRef(ref);
      if (
        generation !== undefined &&
        (typeof generation !== "number" || !Number.isSafeInteger(generation) || generation < 1)
      ) {
        throw new InvalidObservedGenerationError(
          `Cannot record stalled generation ${
            describe(generation)
          } for object ${ref.id}: a generation is an integer >= 1 or undefined`,
        );
      }
      return this.#s.write(({ db }) => {
        const row = db.get(
          `SELECT "group", kind, generation, stalled_generation FROM objects WHERE id = ?`,
          ref.id,
        );
        assertKind(ref, row);
        if (generation !== undefined && generation > Number(row.generation)) {
          throw new ObservedGenerationFutureError(
            `Cannot record stalled generation ${generation} for object ${ref.id}: its generation is ${row.generation}`,
          );
        }
        const stored = row.stalled_generation === null ? undefined : Number(row.stalled_generation);
        if (stored === generation) return false;
        db.run(
          "UPDATE objects SET stalled_generation = ? WHERE id = ?",
          generation ?? null,
          ref.id,
        );
        return true;
      });
    });
  }

  deleteFinalizer(ref: ObjectRef, finalizer: string): Promise<boolean> {
    return rejectWith(() => {
      checkRef(ref);
      if (typeof finalizer !== "string") {
        throw new TypeError(
          `Cannot delete finalizer: current value is ${describe(finalizer)}, expected a string`,
        );
      }
      return this.#s.write(({ db, now, draw }) => {
        const row = db.get(
          `SELECT "group", kind, finalizers, deletion_requested_at FROM objects WHERE id = ?`,
          ref.id,
        );
        assertKind(ref, row);
        const finalizers = decodeFinalizers(row.finalizers, ref.id);
        if (!finalizers.includes(finalizer)) return false;
        const remaining = finalizers.filter((f) => f !== finalizer);
        const rv = draw();
        db.run(
          "UPDATE objects SET finalizers = ?, resource_version = ?, updated_at = ? WHERE id = ?",
          JSON.stringify(remaining),
          rv,
          now,
          ref.id,
        );
        appendWrite(db, rv, ref, "update", now);
        return remaining.length === 0 && row.deletion_requested_at !== null;
      });
    });
  }

  delete(id: ObjectId): Promise<void> {
    return rejectWith(() => {
      checkId(id);
      return this.#s.write(({ db, now, draw }) => {
        // The image is read before the delete cascades its conditions and edges away.
        const object = readObject(db, id, this.#s.core.epoch);
        const ownerRow = db.get(
          `SELECT e.to_id AS id, o."group" AS "group", o.kind AS kind
           FROM edges e JOIN objects o ON o.id = e.to_id
           WHERE e.from_id = ? AND e.relation = 'owned_by' ORDER BY e.to_id LIMIT 1`,
          id,
        );
        db.run("DELETE FROM edges WHERE from_id = ? AND to_id = ?", id, id);
        try {
          db.run("DELETE FROM objects WHERE id = ?", id);
        } catch (error) {
          if (this.#s.core.isForeignKeyViolation(error)) {
            throw new StoreError(
              `Cannot delete object ${id}: other objects still hold edges pointing at it`,
              { cause: error },
            );
          }
          throw error;
        }
        const rv = draw();
        const owner = ownerRow === undefined ? undefined : {
          id: Number(ownerRow.id),
          group: ownerRow.group as string,
          kind: ownerRow.kind as string,
        };
        const image = { ...object, resourceVersion: rv, ...(owner ? { owner } : {}) };
        appendWrite(db, rv, object, "delete", now, image);
      });
    });
  }
}

function checkNameRef(ref: unknown): asserts ref is ObjectNameRef {
  checkGroupKind(ref);
  checkName((ref as ObjectNameRef).name);
}

function readMetaByName(db: Db, ref: ObjectNameRef): RawObjectMeta {
  const row = db.row(
    `SELECT ${OBJECT_COLUMNS} FROM objects WHERE "group" = ? AND kind = ? AND name = ?`,
    ref.group,
    ref.kind,
    ref.name,
  );
  if (row === undefined) throw nameNotFound(ref, ref.name);
  return decodeMeta(row);
}

/** The objects of kind `gk` among `ids`, ordered by id, with conditions. */
export function listByIds(
  db: Db,
  gk: GroupKind,
  ids: readonly ObjectId[],
  epoch: number,
): RawObject[] {
  const metas: RawObjectMeta[] = [];
  for (let i = 0; i < ids.length; i += ID_CHUNK) {
    const rows = db.rows(
      `SELECT ${OBJECT_COLUMNS} FROM objects
       WHERE id IN (SELECT value FROM json_each(?)) AND "group" = ? AND kind = ?
       ORDER BY id`,
      JSON.stringify(ids.slice(i, i + ID_CHUNK)),
      gk.group,
      gk.kind,
    );
    for (const row of rows) metas.push(decodeMeta(row));
  }
  if (ids.length > ID_CHUNK) metas.sort((a, b) => a.id - b.id);
  return withConditions(db, metas, epoch);
}
