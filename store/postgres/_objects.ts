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
import { kindName } from "../../src/_engine_keys.ts";
import { checkRelation, nameTaken, stampVersion } from "../sql/_checks.ts";
import type { Db, PgRow } from "./_core.ts";
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
import { encodeImage } from "../sql/_write_image.ts";

export class PostgresObjects implements Objects {
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
      const finalizers = JSON.stringify(checkFinalizers(input.finalizers));
      const { group, kind } = gk;
      return this.#s.write(async ({ db, now, draw }) => {
        const rv = draw();
        let row: PgRow;
        try {
          row = (await db.get(
            `INSERT INTO objects ("group", kind, name, spec, spec_version, resource_version,
               finalizers, created_at, updated_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${OBJECT_COLUMNS}`,
            group,
            kind,
            input.name,
            input.spec,
            specVersion,
            rv,
            finalizers,
            now,
            now,
          ))!;
        } catch (error) {
          if (this.#s.core.isUniqueViolation(error)) {
            throw nameTaken(group, kind, input.name, error);
          }
          throw error;
        }
        const meta = decodeMeta(row);
        await appendWrite(db, rv, meta, "create", now);
        return { ...meta, conditions: [] };
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
      return this.#s.read(async (db) =>
        (await withConditions(db, [await readMetaByName(db, ref)], this.#s.core.epoch))[0]
      );
    });
  }

  getMeta(id: ObjectId): Promise<RawObjectMeta> {
    return rejectWith(() => {
      checkId(id);
      return this.#s.read(async (db) => {
        const meta = await readMeta(db, id);
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
      return this.#s.read(async (db) => {
        // The cursor is sampled before the row (a separate statement, so a later
        // snapshot): it may lag the row, never lead it.
        const cursor = await this.#s.core.latestVersion(db);
        const row = await db.row(
          `SELECT ${OBJECT_COLUMNS}, EXISTS (SELECT 1 FROM edges
             WHERE from_id = objects.id AND relation = 'depends_on') AS has_dependencies,
             stalled_generation
           FROM objects WHERE id = ?`,
          id,
        );
        if (row === undefined) throw objectNotFound(id);
        const object = (await withConditions(db, [decodeMeta(row)], this.#s.core.epoch))[0];
        // has_dependencies and stalled_generation follow the 17 object columns.
        return {
          object,
          cursor,
          hasDependencies: row[17] === true,
          stalledGeneration: row[18] === null ? undefined : Number(row[18]),
        };
      });
    });
  }

  list(gk: GroupKind, page?: ObjectsListPage): Promise<RawObject[]> {
    return rejectWith(() => {
      checkGroupKind(gk);
      const p = checkListPage(page);
      return this.#s.read(async (db) => {
        if (p.after === 0 && p.limit === undefined) {
          const metas = (await db.rows(OBJECTS_OF_KIND, gk.group, gk.kind)).map(decodeMeta);
          return withConditionsOfKind(db, metas, gk, this.#s.core.epoch);
        }
        const metas = (await db.rows(
          `SELECT ${OBJECT_COLUMNS} FROM objects WHERE "group" = ? AND kind = ? AND id > ?
           ORDER BY id LIMIT ?`,
          gk.group,
          gk.kind,
          p.after,
          p.limit ?? null,
        )).map(decodeMeta);
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
      return this.#s.read(async (db) => {
        const metas = (await db.rows(
          `SELECT ${OBJECT_COLUMNS} FROM objects
           WHERE id IN (SELECT from_id FROM edges WHERE to_id = ? AND relation = ?)
             AND "group" = ? AND kind = ? AND id > ?
           ORDER BY id LIMIT ?`,
          edge.toId,
          edge.relation,
          gk.group,
          gk.kind,
          p.after,
          p.limit ?? null,
        )).map(decodeMeta);
        return withConditions(db, metas, this.#s.core.epoch);
      });
    });
  }

  listIds(gk: GroupKind, options?: ObjectsListIdsOptions): Promise<ObjectId[]> {
    return rejectWith(() => {
      checkGroupKind(gk);
      const excludeStalled = checkExcludeStalled(options, "list ids");
      return this.#s.read(async (db) =>
        (await db.rows(
          `SELECT id FROM objects WHERE "group" = ? AND kind = ?${
            excludeStalled ? " AND stalled_generation IS DISTINCT FROM generation" : ""
          } ORDER BY id`,
          gk.group,
          gk.kind,
        )).map((r) => Number(r[0]))
      );
    });
  }

  listUnsettledIds(gk: GroupKind): Promise<ObjectId[]> {
    return rejectWith(() => {
      checkGroupKind(gk);
      return this.#s.read(async (db) =>
        (await db.rows(
          `SELECT id FROM objects WHERE "group" = ? AND kind = ?
             AND (observed_generation IS NULL OR observed_generation < generation)
             AND stalled_generation IS DISTINCT FROM generation
           ORDER BY id`,
          gk.group,
          gk.kind,
        )).map((r) => Number(r[0]))
      );
    });
  }

  updateSpec(ref: ObjectRef, input: ObjectsUpdateSpecInput): Promise<ObjectsUpdateSpecResult> {
    return rejectWith(() => {
      checkRef(ref);
      checkJsonText(input?.spec, "spec");
      const version = checkSchemaVersion(input.specVersion, "specVersion");
      const expected = checkPrecondition(input.resourceVersion);
      return this.#s.write(async (scope) => {
        const row = await scope.db.row(
          `SELECT ${OBJECT_COLUMNS} FROM objects WHERE id = ?`,
          ref.id,
        );
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
      return this.#s.write(async (scope) => {
        const meta = await readMetaByName(scope.db, ref);
        return this.#updateSpec(scope.db, scope, meta, input.spec, version, expected);
      });
    });
  }

  async #updateSpec(
    db: Db,
    scope: { now: number; draw(): number },
    stored: RawObjectMeta,
    spec: string,
    incoming: number,
    expected: number | undefined,
  ): Promise<ObjectsUpdateSpecResult> {
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
        object: { ...stored, conditions: await readConditions(db, stored.id, epoch) },
        changed: false,
      };
    }
    const rv = scope.draw();
    const row = (await db.row(
      `UPDATE objects SET spec = ?, spec_version = ?, generation = generation + 1,
         resource_version = ?, updated_at = ?
       WHERE id = ? RETURNING ${OBJECT_COLUMNS}`,
      spec,
      version,
      rv,
      scope.now,
      stored.id,
    ))!;
    await appendWrite(db, rv, stored, "update", scope.now);
    const meta = decodeMeta(row);
    return {
      object: { ...meta, conditions: await readConditions(db, meta.id, epoch) },
      changed: true,
    };
  }

  updateStatus(ref: ObjectRef, input: ObjectsUpdateStatusInput): Promise<boolean> {
    return rejectWith(() => {
      checkRef(ref);
      checkJsonText(input?.status, "status");
      const incoming = checkSchemaVersion(input.statusVersion, "statusVersion");
      return this.#s.write(async ({ db, now, draw }) => {
        const row = await db.get(
          `SELECT "group", kind, status, status_version FROM objects WHERE id = ?`,
          ref.id,
        );
        assertKind(ref, row);
        const stored = Number(row.status_version);
        const version = stampVersion(stored, incoming, "status", ref.id);
        if (version === stored && input.status === row.status) return false;
        const rv = draw();
        await db.run(
          `UPDATE objects SET status = ?, status_version = ?, resource_version = ?, updated_at = ?
           WHERE id = ?`,
          input.status,
          version,
          rv,
          now,
          ref.id,
        );
        await appendWrite(db, rv, ref, "update", now);
        return true;
      });
    });
  }

  addFinalizer(ref: ObjectRef, finalizer: string): Promise<boolean> {
    return rejectWith(() => {
      checkRef(ref);
      const [checked] = checkFinalizers([finalizer]);
      return this.#s.write(async ({ db, now, draw }) => {
        const row = await db.get(
          `SELECT "group", kind, name, finalizers, deletion_requested_at FROM objects
           WHERE id = ? FOR UPDATE`,
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
        const finalizers = decodeFinalizers(row.finalizers as string, ref.id);
        if (finalizers.includes(checked)) return false;
        const rv = draw();
        await db.run(
          "UPDATE objects SET finalizers = ?, resource_version = ?, updated_at = ? WHERE id = ?",
          JSON.stringify([...finalizers, checked]),
          rv,
          now,
          ref.id,
        );
        await appendWrite(db, rv, ref, "update", now);
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
      return this.#s.write(async ({ db }) => {
        const row = await db.get(
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
        await db.run(
          "UPDATE objects SET stalled_generation = ? WHERE id = ?",
          generation ?? null,
          ref.id,
        );
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
      return this.#s.write(async ({ db, now, draw }) => {
        const row = await db.get(
          `SELECT "group", kind, generation, observed_generation FROM objects WHERE id = ?`,
          ref.id,
        );
        assertKind(ref, row);
        if (generation > Number(row.generation)) {
          throw new ObservedGenerationFutureError(
            `Cannot record observed generation ${generation} for object ${ref.id}: its generation is ${row.generation}`,
          );
        }
        if (row.observed_generation !== null && Number(row.observed_generation) >= generation) {
          return false;
        }
        const rv = draw();
        await db.run(
          `UPDATE objects SET observed_generation = ?, observed_at = ?, resource_version = ?
           WHERE id = ?`,
          generation,
          now,
          rv,
          ref.id,
        );
        await appendWrite(db, rv, ref, "update", now);
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
      return this.#s.write(async ({ db, now, draw }) => {
        const row = await db.get(
          `SELECT "group", kind, finalizers, deletion_requested_at FROM objects WHERE id = ?`,
          ref.id,
        );
        assertKind(ref, row);
        const finalizers = decodeFinalizers(row.finalizers, ref.id);
        if (!finalizers.includes(finalizer)) return false;
        const remaining = finalizers.filter((f) => f !== finalizer);
        const rv = draw();
        await db.run(
          "UPDATE objects SET finalizers = ?, resource_version = ?, updated_at = ? WHERE id = ?",
          JSON.stringify(remaining),
          rv,
          now,
          ref.id,
        );
        await appendWrite(db, rv, ref, "update", now);
        return remaining.length === 0 && row.deletion_requested_at !== null;
      });
    });
  }

  delete(id: ObjectId): Promise<void> {
    return rejectWith(() => {
      checkId(id);
      return this.#s.write(async ({ db, now, draw }) => {
        // The image is read before the delete cascades its conditions and edges away.
        const object = await readObject(db, id, this.#s.core.epoch);
        const ownerRow = await db.get(
          `SELECT e.to_id AS id, o."group" AS "group", o.kind AS kind
           FROM edges e JOIN objects o ON o.id = e.to_id
           WHERE e.from_id = ? AND e.relation = 'owned_by' ORDER BY e.to_id LIMIT 1`,
          id,
        );
        await db.run("DELETE FROM edges WHERE from_id = ? AND to_id = ?", id, id);
        try {
          await db.run("DELETE FROM objects WHERE id = ?", id);
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
        await appendWrite(db, rv, object, "delete", now, encodeImage(image));
      });
    });
  }
}

function checkNameRef(ref: unknown): asserts ref is ObjectNameRef {
  checkGroupKind(ref);
  checkName((ref as ObjectNameRef).name);
}

async function readMetaByName(db: Db, ref: ObjectNameRef): Promise<RawObjectMeta> {
  const row = await db.row(
    `SELECT ${OBJECT_COLUMNS} FROM objects WHERE "group" = ? AND kind = ? AND name = ?`,
    ref.group,
    ref.kind,
    ref.name,
  );
  if (row === undefined) throw nameNotFound(ref, ref.name);
  return decodeMeta(row);
}

/** The objects of kind `gk` among `ids`, ordered by id, with conditions. */
export async function listByIds(
  db: Db,
  gk: GroupKind,
  ids: readonly ObjectId[],
  epoch: number,
): Promise<RawObject[]> {
  if (ids.length === 0) return [];
  const metas = (await db.rows(
    `SELECT ${OBJECT_COLUMNS} FROM objects
     WHERE id = ANY(?::bigint[]) AND "group" = ? AND kind = ? ORDER BY id`,
    ids,
    gk.group,
    gk.kind,
  )).map(decodeMeta);
  return withConditions(db, metas, epoch);
}
