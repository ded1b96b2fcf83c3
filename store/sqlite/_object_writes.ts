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
import type { Db, Row } from "./_core.ts";
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

function kindHorizon(db: Db, gk: GroupKind): number {
  const row = db.get(
    `SELECT trimmed_through FROM object_writes_horizon WHERE "group" = ? AND kind = ?`,
    gk.group,
    gk.kind,
  );
  return row === undefined ? 0 : Number(row.trimmed_through);
}

/** A kind's position: its newest entry or its horizon, whichever is higher. */
export function kindPosition(db: Db, gk: GroupKind): number {
  const row = db.get(
    `SELECT MAX(resource_version) AS at FROM object_writes WHERE "group" = ? AND kind = ?`,
    gk.group,
    gk.kind,
  );
  const at = row?.at === null || row === undefined ? 0 : Number(row.at);
  return Math.max(at, kindHorizon(db, gk));
}

function decodeWrite(row: Row, final: RawObject | undefined): ObjectWrite {
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

function raiseHorizon(db: Db, group: string, kind: string, through: number): void {
  db.run(
    `INSERT INTO object_writes_horizon ("group", kind, trimmed_through) VALUES (?, ?, ?)
     ON CONFLICT ("group", kind) DO UPDATE SET trimmed_through = excluded.trimmed_through
     WHERE excluded.trimmed_through > object_writes_horizon.trimmed_through`,
    group,
    kind,
    through,
  );
}

const OLDEST_SQL = "SELECT written_at FROM object_writes ORDER BY resource_version LIMIT 1";
// Walks the log in version order from its oldest entry, so it reads only what the sweep removes.
const AGE_CUT_SQL = `SELECT resource_version FROM object_writes WHERE written_at >= ?
  ORDER BY resource_version LIMIT 1`;
const NEWEST_SQL = "SELECT MAX(resource_version) AS rv FROM object_writes";

/** Whether the log's oldest entry was written before `cutoff`. */
function oldestBefore(db: Db, cutoff: number): boolean {
  const oldest = db.get(OLDEST_SQL);
  return oldest !== undefined && Number(oldest.written_at) < cutoff;
}

/**
 * The highest version of the log's prefix written before `cutoff`, or 0. The
 * log is in version (commit) order and `written_at` grows with it, so the
 * entries older than the cutoff are a prefix; should the clock step back, an
 * entry stays until every entry before it ages out, never going early.
 */
function agedThrough(db: Db, cutoff: number): number {
  if (!oldestBefore(db, cutoff)) return 0;
  const young = db.get(AGE_CUT_SQL, cutoff);
  if (young !== undefined) return Number(young.resource_version) - 1;
  return Number(db.get(NEWEST_SQL)!.rv);
}

/**
 * Kind `gk`'s entries above `after` (at most `limit`), its horizon and the
 * delete entries' images; run it in one snapshot.
 */
export function readKindPage(
  db: Db,
  gk: GroupKind,
  after: number,
  limit: number,
): ObjectWritesListSinceResult {
  const trimmedThrough = kindHorizon(db, gk);
  if (limit <= 0) return { writes: [], trimmedThrough };
  const rows = db.all(
    `SELECT resource_version, object_id, "group", kind, op FROM object_writes
     WHERE "group" = ? AND kind = ? AND resource_version > ?
     ORDER BY resource_version LIMIT ?`,
    gk.group,
    gk.kind,
    after,
    limit,
  );
  const deletes = rows.filter((r) => Number(r.op) === 3).map((r) => Number(r.resource_version));
  const images = new Map<number, unknown>();
  if (deletes.length > 0) {
    for (
      const r of db.all(
        `SELECT resource_version, final FROM object_writes
         WHERE resource_version IN (SELECT value FROM json_each(?))`,
        JSON.stringify(deletes),
      )
    ) images.set(Number(r.resource_version), r.final);
  }
  const writes = rows.map((r) => {
    const rv = Number(r.resource_version);
    return decodeWrite(r, Number(r.op) === 3 ? decodeImage(images.get(rv), rv) : undefined);
  });
  return { writes, trimmedThrough };
}

export class SqliteObjectWrites implements ObjectWrites {
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
      return this.#s.readSnapshot((db) => readKindPage(db, gk, after, limit));
    });
  }

  listSinceAll(options: ObjectWritesListSinceOptions): Promise<ObjectWritesListSinceResult> {
    return rejectWith(() => {
      const { after, limit } = checkPage(options);
      return this.#s.read((db) => {
        if (limit <= 0) return { writes: [], trimmedThrough: 0 };
        const rows = db.all(
          `SELECT resource_version, object_id, "group", kind, op, origin FROM object_writes
           WHERE resource_version > ? ORDER BY resource_version LIMIT ?`,
          after,
          limit,
        );
        if (rows.length === 0) return { writes: [], trimmedThrough: 0 };
        const h = db.get("SELECT MAX(trimmed_through) AS t FROM object_writes_horizon");
        return {
          writes: rows.map((r) => decodeWrite(r, undefined)),
          trimmedThrough: h?.t === null || h === undefined ? 0 : Number(h.t),
        };
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
    return this.#s.read((db) => {
      const at = db.get("SELECT MAX(resource_version) AS v FROM object_writes")?.v;
      const trimmed = db.get("SELECT MAX(trimmed_through) AS v FROM object_writes_horizon")?.v;
      return {
        at: at === null || at === undefined ? 0 : Number(at),
        trimmedThrough: trimmed === null || trimmed === undefined ? 0 : Number(trimmed),
      };
    });
  }

  snapshot(gk: GroupKind): Promise<Snapshot<RawObject>> {
    return rejectWith(() => {
      checkGroupKind(gk);
      return this.#snapshot(gk, (db, epoch) =>
        withConditionsOfKind(
          db,
          db.rows(OBJECTS_OF_KIND, gk.group, gk.kind).map(decodeMeta),
          gk,
          epoch,
        ));
    });
  }

  snapshotById(gk: GroupKind, id: ObjectId): Promise<Snapshot<RawObject>> {
    return rejectWith(() => {
      checkGroupKind(gk);
      checkId(id);
      return this.#snapshot(gk, (db, epoch) => {
        const meta = readMeta(db, id);
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
      return this.#snapshot(gk, (db, epoch) => {
        const metas = db.rows(
          `SELECT ${OBJECT_COLUMNS} FROM objects
           WHERE id IN (SELECT from_id FROM edges WHERE to_id = ? AND relation = 'owned_by')
             AND "group" = ? AND kind = ?
           ORDER BY id`,
          ownerId,
          gk.group,
          gk.kind,
        ).map(decodeMeta);
        return withConditions(db, metas, epoch);
      });
    });
  }

  /** Rows and the kind's position, read in one snapshot. */
  #snapshot(
    gk: GroupKind,
    read: (db: Db, epoch: number) => RawObject[],
  ): Promise<Snapshot<RawObject>> {
    return this.#s.readSnapshot((db) => ({
      items: read(db, this.#s.core.epoch),
      resourceVersion: kindPosition(db, gk),
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
    const due = await this.#s.read((db) =>
      (maxAge > 0 && oldestBefore(db, Date.now() - maxAge)) ||
      (perKind > 0 &&
        db.get(
            `SELECT 1 FROM object_writes GROUP BY "group", kind HAVING COUNT(*) > ? LIMIT 1`,
            perKind,
          ) !== undefined)
    );
    if (!due) return 0;
    return this.#s.write(({ db, now }) => {
      let deleted = 0;
      if (maxAge > 0) {
        const through = agedThrough(db, now - maxAge);
        const removed = through === 0 ? [] : db.all(
          `DELETE FROM object_writes WHERE resource_version <= ?
           RETURNING "group", kind, resource_version`,
          through,
        );
        const highest = new Map<string, [string, string, number]>();
        for (const r of removed) {
          const key = JSON.stringify([r.group, r.kind]);
          const rv = Number(r.resource_version);
          const seen = highest.get(key);
          if (seen === undefined || rv > seen[2]) {
            highest.set(key, [r.group as string, r.kind as string, rv]);
          }
        }
        for (const [group, kind, rv] of highest.values()) raiseHorizon(db, group, kind, rv);
        deleted += removed.length;
      }
      if (perKind > 0) {
        const kinds = db.all(`SELECT DISTINCT "group", kind FROM object_writes`);
        for (const k of kinds) {
          const cut = db.get(
            `SELECT resource_version FROM object_writes WHERE "group" = ? AND kind = ?
               ORDER BY resource_version DESC LIMIT 1 OFFSET ?`,
            k.group,
            k.kind,
            perKind,
          );
          if (cut === undefined) continue;
          const through = Number(cut.resource_version);
          raiseHorizon(db, k.group as string, k.kind as string, through);
          deleted += db.run(
            `DELETE FROM object_writes WHERE "group" = ? AND kind = ? AND resource_version <= ?`,
            k.group,
            k.kind,
            through,
          );
        }
      }
      return deleted;
    });
  }
}
