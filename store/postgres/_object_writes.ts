/**
 * The object write log family: tails, positions, snapshots and retention.
 *
 * @module
 */
import { InvalidOptionError } from "../../src/errors.ts";
import type {
  GroupKind,
  ObjectId,
  ObjectWrite,
  ObjectWrites,
  ObjectWritesListSinceOptions,
  ObjectWritesListSinceResult,
  ObjectWritesMaxVersionAllResult,
  ObjectWritesSweepOptions,
  RawObject,
  Snapshot,
} from "../../src/store.ts";
import type { Db, PgRow } from "./_core.ts";
import {
  checkGroupKind,
  checkId,
  checkPage,
  checkRetention,
  decodeMeta,
  OBJECT_COLUMNS,
  OBJECTS_OF_KIND,
  readMeta,
  rejectWith,
  withConditions,
  withConditionsOfKind,
} from "./_rows.ts";
import type { Session } from "./_session.ts";
import { decodeImage, OP_NAME } from "../sql/_write_image.ts";

/** A kind's position: its newest entry or its horizon, whichever is higher. */
export async function kindPosition(db: Db, gk: GroupKind): Promise<number> {
  const row = await db.row(
    `SELECT GREATEST(
       COALESCE((SELECT MAX(resource_version) FROM object_writes WHERE "group" = ? AND kind = ?), 0),
       COALESCE((SELECT trimmed_through FROM object_writes_horizon WHERE "group" = ? AND kind = ?), 0))`,
    gk.group,
    gk.kind,
    gk.group,
    gk.kind,
  );
  return Number(row![0]);
}

function decodeWrite(row: PgRow, final: RawObject | undefined): ObjectWrite {
  const write: ObjectWrite = {
    id: Number(row.object_id),
    resourceVersion: Number(row.resource_version),
    group: row.group as string,
    kind: row.kind as string,
    op: OP_NAME[Number(row.op)],
    final,
  };
  return row.origin === undefined ? write : { ...write, origin: Number(row.origin) };
}

async function raiseHorizon(db: Db, group: string, kind: string, through: number): Promise<void> {
  await db.run(
    `INSERT INTO object_writes_horizon ("group", kind, trimmed_through) VALUES (?, ?, ?)
     ON CONFLICT ("group", kind) DO UPDATE SET trimmed_through = excluded.trimmed_through
     WHERE excluded.trimmed_through > object_writes_horizon.trimmed_through`,
    group,
    kind,
    through,
  );
}

/** The integer instant `written_at < cutoff` compares with, for a fractional age too. */
export function cutoff(now: number, maxAge: number): number {
  return Math.ceil(now - maxAge);
}

export class PostgresObjectWrites implements ObjectWrites {
  readonly #s: Session;

  constructor(session: Session) {
    this.#s = session;
  }

  listSince(
    gk: GroupKind,
    options: ObjectWritesListSinceOptions,
  ): Promise<ObjectWritesListSinceResult> {
    return rejectWith(() => {
      checkGroupKind(gk);
      const { after, limit } = checkPage(options);
      // Page, horizon and images describe one instant, or a sweep between them lies.
      return this.#s.readSnapshot(async (db) => {
        const h = await db.get(
          `SELECT trimmed_through FROM object_writes_horizon WHERE "group" = ? AND kind = ?`,
          gk.group,
          gk.kind,
        );
        const trimmedThrough = h === undefined ? 0 : Number(h.trimmed_through);
        if (limit <= 0) return { writes: [], trimmedThrough };
        const rows = await db.all(
          `SELECT resource_version, object_id, "group", kind, op, final FROM object_writes
           WHERE "group" = ? AND kind = ? AND resource_version > ?
           ORDER BY resource_version LIMIT ?`,
          gk.group,
          gk.kind,
          after,
          limit,
        );
        const writes = rows.map((r) => {
          const rv = Number(r.resource_version);
          const final = Number(r.op) === 3 ? decodeImage(r.final, rv) : undefined;
          delete r.final;
          return decodeWrite(r, final);
        });
        return { writes, trimmedThrough };
      });
    });
  }

  listSinceAll(options: ObjectWritesListSinceOptions): Promise<ObjectWritesListSinceResult> {
    return rejectWith(() => {
      const { after, limit } = checkPage(options);
      return this.#s.readSnapshot(async (db) => {
        if (limit <= 0) return { writes: [], trimmedThrough: 0 };
        const rows = await db.all(
          `SELECT resource_version, object_id, "group", kind, op, origin FROM object_writes
           WHERE resource_version > ? ORDER BY resource_version LIMIT ?`,
          after,
          limit,
        );
        if (rows.length === 0) return { writes: [], trimmedThrough: 0 };
        const h = await db.get(
          "SELECT COALESCE(MAX(trimmed_through), 0) AS t FROM object_writes_horizon",
        );
        return { writes: rows.map((r) => decodeWrite(r, undefined)), trimmedThrough: Number(h!.t) };
      });
    });
  }

  maxVersion(gk: GroupKind): Promise<number> {
    return rejectWith(() => {
      checkGroupKind(gk);
      return this.#s.read((db) => kindPosition(db, gk));
    });
  }

  maxVersionAll(): Promise<ObjectWritesMaxVersionAllResult> {
    return this.#s.read(async (db) => {
      const row = (await db.row(
        `SELECT COALESCE((SELECT MAX(resource_version) FROM object_writes), 0),
           COALESCE((SELECT MAX(trimmed_through) FROM object_writes_horizon), 0)`,
      ))!;
      return { at: Number(row[0]), trimmedThrough: Number(row[1]) };
    });
  }

  snapshot(gk: GroupKind): Promise<Snapshot<RawObject>> {
    return rejectWith(() => {
      checkGroupKind(gk);
      return this.#snapshot(gk, async (db, epoch) =>
        withConditionsOfKind(
          db,
          (await db.rows(OBJECTS_OF_KIND, gk.group, gk.kind)).map(decodeMeta),
          gk,
          epoch,
        ));
    });
  }

  snapshotById(gk: GroupKind, id: ObjectId): Promise<Snapshot<RawObject>> {
    return rejectWith(() => {
      checkGroupKind(gk);
      checkId(id);
      return this.#snapshot(gk, async (db, epoch) => {
        const meta = await readMeta(db, id);
        const metas = meta !== undefined && meta.group === gk.group && meta.kind === gk.kind
          ? [meta]
          : [];
        return withConditions(db, metas, epoch);
      });
    });
  }

  snapshotByOwner(gk: GroupKind, ownerId: ObjectId): Promise<Snapshot<RawObject>> {
    return rejectWith(() => {
      checkGroupKind(gk);
      checkId(ownerId, "ownerId");
      return this.#snapshot(gk, async (db, epoch) => {
        const metas = (await db.rows(
          `SELECT ${OBJECT_COLUMNS} FROM objects
           WHERE id IN (SELECT from_id FROM edges WHERE to_id = ? AND relation = 'owned_by')
             AND "group" = ? AND kind = ?
           ORDER BY id`,
          ownerId,
          gk.group,
          gk.kind,
        )).map(decodeMeta);
        return withConditions(db, metas, epoch);
      });
    });
  }

  /** Rows and the kind's position, read in one snapshot. */
  #snapshot(
    gk: GroupKind,
    read: (db: Db, epoch: number) => Promise<RawObject[]>,
  ): Promise<Snapshot<RawObject>> {
    return this.#s.readSnapshot(async (db) => ({
      items: await read(db, this.#s.core.epoch),
      resourceVersion: await kindPosition(db, gk),
    }));
  }

  sweep(options: ObjectWritesSweepOptions): Promise<number> {
    return rejectWith(() => {
      const { perKind, maxAge } = checkRetention(options, ["perKind", "maxAge"]);
      if (!Number.isSafeInteger(perKind)) {
        throw new InvalidOptionError(
          `Cannot sweep with perKind: current value is ${perKind}, expected an integer >= 0`,
        );
      }
      return this.#sweep(perKind, maxAge);
    });
  }

  async #sweep(perKind: number, maxAge: number): Promise<number> {
    // An idle sweep is a read: the write transaction opens only when something is due.
    const due = await this.#s.read(async (db) =>
      (maxAge > 0 &&
        await db.get(
            "SELECT 1 FROM object_writes WHERE written_at < ? LIMIT 1",
            cutoff(Date.now(), maxAge),
          ) !==
          undefined) ||
      (perKind > 0 &&
        await db.get(
            `SELECT 1 FROM object_writes GROUP BY "group", kind HAVING COUNT(*) > ? LIMIT 1`,
            perKind,
          ) !== undefined)
    );
    if (!due) return 0;
    return this.#s.write(async ({ db, now }) => {
      let deleted = 0;
      if (maxAge > 0) {
        const removed = await db.all(
          `WITH removed AS (DELETE FROM object_writes WHERE written_at < ?
             RETURNING "group", kind, resource_version)
           SELECT "group", kind, MAX(resource_version) AS through, COUNT(*) AS n
           FROM removed GROUP BY "group", kind`,
          cutoff(now, maxAge),
        );
        for (const r of removed) {
          await raiseHorizon(db, r.group as string, r.kind as string, Number(r.through));
          deleted += Number(r.n);
        }
      }
      if (perKind > 0) {
        const kinds = await db.all(`SELECT DISTINCT "group", kind FROM object_writes`);
        for (const k of kinds) {
          const cut = await db.get(
            `SELECT resource_version FROM object_writes WHERE "group" = ? AND kind = ?
               ORDER BY resource_version DESC LIMIT 1 OFFSET ?`,
            k.group as string,
            k.kind as string,
            perKind,
          );
          if (cut === undefined) continue;
          const through = Number(cut.resource_version);
          await raiseHorizon(db, k.group as string, k.kind as string, through);
          deleted += await db.run(
            `DELETE FROM object_writes WHERE "group" = ? AND kind = ? AND resource_version <= ?`,
            k.group as string,
            k.kind as string,
            through,
          );
        }
      }
      return deleted;
    });
  }
}
