/**
 * The object write log family: tails, positions, snapshots and retention.
 *
 * @module
 */
import { InvalidOptionError } from "../../src/model/errors.ts";
import type {
  GroupKind,
  LabelRequirement,
  ObjectId,
  ObjectWrite,
  ObjectWrites,
  ObjectWritesListSinceOptions,
  ObjectWritesListSinceResult,
  ObjectWritesMaxVersionAllResult,
  ObjectWritesSnapshotOptions,
  ObjectWritesSweepOptions,
  RawObject,
  Snapshot,
} from "../../src/store.ts";
import {
  checkGroupKind,
  checkId,
  checkNamespace,
  checkPage,
  checkRetention,
  checkSelector,
  rejectWith,
} from "./_checks.ts";
import { selectRows } from "./_labels.ts";
import { namespaceFilter } from "./_namespace_filter.ts";
import type { Dialect } from "./_dialect.ts";
import type { Viewer } from "./_live_opens.ts";
import { kindOfRow } from "./_keyed.ts";
import { type Q, q } from "./_query.ts";
import { OBJECTS_OF_KIND, readMeta, withConditions, withConditionsOfKind } from "./_reads.ts";
import { decodeMeta, OBJECT_COLUMNS, type Row } from "./_rows.ts";
import type { SqlSession, WriteScope } from "./_session.ts";
import { decodeImage, OP_NAME } from "./_write_image.ts";

/** A kind's position: its newest entry or its horizon, whichever is higher. */
export function* kindPosition(gk: GroupKind): Q<number> {
  const row = yield* q.row(
    `SELECT COALESCE((SELECT MAX(resource_version) FROM object_writes
         WHERE "group" = ? AND kind = ?), 0),
       COALESCE((SELECT trimmed_through FROM object_writes_horizon
         WHERE "group" = ? AND kind = ?), 0)`,
    gk.group,
    gk.kind,
    gk.group,
    gk.kind,
  );
  return Math.max(Number(row![0]), Number(row![1]));
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

function* raiseHorizon(group: string, kind: string, through: number): Q<void> {
  yield* q.run(
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

/** The integer instant `written_at < cutoff` compares with, for a fractional age too. */
function cutoff(now: number, maxAge: number): number {
  return Math.ceil(now - maxAge);
}

/** Whether the log's oldest entry was written before `cutoff`. */
function* oldestBefore(at: number): Q<boolean> {
  const oldest = yield* q.get(OLDEST_SQL);
  return oldest !== undefined && Number(oldest.written_at) < at;
}

/**
 * The highest version of the log's prefix written before `at`, or 0. The log
 * is in version (commit) order and `written_at` grows with it, so the entries
 * older than the cutoff are a prefix; should the clock step back, an entry
 * stays until every entry before it ages out, never going early.
 */
function* agedThrough(at: number): Q<number> {
  if (!(yield* oldestBefore(at))) return 0;
  const young = yield* q.get(AGE_CUT_SQL, at);
  if (young !== undefined) return Number(young.resource_version) - 1;
  return Number((yield* q.get(NEWEST_SQL))!.rv);
}

const PAGE_COLUMNS = `resource_version, object_id, "group", kind, op`;

/**
 * Kind `gk`'s entries above `after` (at most `limit`), its horizon and the
 * delete entries' images; run it in one snapshot. In-process, the page is
 * read from the log's covering index and the images in a second statement;
 * over a network, the images come with the page.
 */
export function* readKindPage(
  d: Dialect,
  gk: GroupKind,
  after: number,
  limit: number,
): Q<ObjectWritesListSinceResult> {
  const h = yield* q.get(
    `SELECT trimmed_through FROM object_writes_horizon WHERE "group" = ? AND kind = ?`,
    gk.group,
    gk.kind,
  );
  const trimmedThrough = h === undefined ? 0 : Number(h.trimmed_through);
  if (limit <= 0) return { writes: [], trimmedThrough };
  const rows = yield* q.all(
    `SELECT ${PAGE_COLUMNS}${d.inProcess ? "" : ", final"} FROM object_writes
     WHERE "group" = ? AND kind = ? AND resource_version > ?
     ORDER BY resource_version LIMIT ?`,
    gk.group,
    gk.kind,
    after,
    limit,
  );
  const images = new Map<number, unknown>();
  if (d.inProcess) {
    const deletes = rows.filter((r) => Number(r.op) === 3).map((r) => Number(r.resource_version));
    if (deletes.length > 0) {
      const finals = yield* q.all(
        `SELECT resource_version, final FROM object_writes WHERE resource_version${d.inIds}`,
        d.ids(deletes),
      );
      for (const r of finals) images.set(Number(r.resource_version), r.final);
    }
  } else {
    for (const r of rows) {
      if (Number(r.op) === 3) images.set(Number(r.resource_version), r.final);
      delete r.final;
    }
  }
  const writes = rows.map((r) => {
    const rv = Number(r.resource_version);
    return decodeWrite(r, Number(r.op) === 3 ? decodeImage(images.get(rv), rv) : undefined);
  });
  return { writes, trimmedThrough };
}

export class SqlObjectWrites implements ObjectWrites {
  readonly #s: SqlSession;

  constructor(session: SqlSession) {
    this.#s = session;
  }

  listSince(
    gk: GroupKind,
    options: ObjectWritesListSinceOptions,
  ): Promise<ObjectWritesListSinceResult> {
    return rejectWith(() => {
      checkGroupKind(gk);
      const { after, limit } = checkPage(options);
      const d = this.#s.dialect;
      // Page, horizon and images describe one instant, or a sweep between them lies.
      return this.#s.readSnapshot(() => readKindPage(d, gk, after, limit));
    });
  }

  listSinceAll(options: ObjectWritesListSinceOptions): Promise<ObjectWritesListSinceResult> {
    return rejectWith(() => {
      const { after, limit } = checkPage(options);
      // One statement, so the page and the horizon come from one snapshot: over a network,
      // one round trip where a snapshot transaction took four.
      return this.#s.read(() => sinceAllBody(after, limit));
    });
  }

  maxVersion(gk: GroupKind): Promise<number> {
    return rejectWith(() => {
      checkGroupKind(gk);
      return this.#s.read(() => kindPosition(gk));
    });
  }

  maxVersionAll(): Promise<ObjectWritesMaxVersionAllResult> {
    return this.#s.read(() => maxVersionAllBody());
  }

  snapshot(gk: GroupKind, options?: ObjectWritesSnapshotOptions): Promise<Snapshot<RawObject>> {
    return rejectWith(() => {
      checkGroupKind(gk);
      const selector = checkSelector(options?.labelSelector);
      const ns = options?.namespace;
      const namespace = ns === undefined ? undefined : checkNamespace(ns);
      if (selector === undefined && namespace === undefined) {
        return this.#snapshot(gk, (viewer) => kindRows(gk, viewer));
      }
      const d = this.#s.dialect;
      return this.#snapshot(gk, (viewer) => selectedRows(d, gk, selector, namespace, viewer));
    });
  }

  snapshotById(gk: GroupKind, id: ObjectId): Promise<Snapshot<RawObject>> {
    return rejectWith(() => {
      checkGroupKind(gk);
      checkId(id);
      const d = this.#s.dialect;
      return this.#snapshot(gk, (viewer) => rowById(d, gk, id, viewer));
    });
  }

  snapshotByOwner(gk: GroupKind, ownerId: ObjectId): Promise<Snapshot<RawObject>> {
    return rejectWith(() => {
      checkGroupKind(gk);
      checkId(ownerId, "ownerId");
      const d = this.#s.dialect;
      return this.#snapshot(gk, (viewer) => ownedRows(d, gk, ownerId, viewer));
    });
  }

  /** Rows and the kind's position, read in one snapshot. */
  #snapshot(
    gk: GroupKind,
    read: (viewer: Viewer) => Q<RawObject[]>,
  ): Promise<Snapshot<RawObject>> {
    const viewer = this.#s.viewer;
    return this.#s.readSnapshot(() => snapshotBody(gk, read, viewer));
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
    const due = await this.#s.read(() => sweepDue(perKind, maxAge));
    if (!due) return 0;
    return this.#s.write((scope) => sweepBody(scope, perKind, maxAge));
  }
}

function* sinceAllBody(after: number, limit: number): Q<ObjectWritesListSinceResult> {
  if (limit <= 0) return { writes: [], trimmedThrough: 0 };
  const rows = yield* q.all(
    `SELECT resource_version, object_id, "group", kind, op, origin,
       (SELECT COALESCE(MAX(trimmed_through), 0) FROM object_writes_horizon) AS trimmed
     FROM object_writes WHERE resource_version > ? ORDER BY resource_version LIMIT ?`,
    after,
    limit,
  );
  if (rows.length === 0) return { writes: [], trimmedThrough: 0 };
  return {
    writes: rows.map((r) => decodeWrite(r, undefined)),
    trimmedThrough: Number(rows[0].trimmed),
  };
}

function* maxVersionAllBody() {
  const row = (yield* q.row(
    `SELECT COALESCE((SELECT MAX(resource_version) FROM object_writes), 0),
       COALESCE((SELECT MAX(trimmed_through) FROM object_writes_horizon), 0)`,
  ))!;
  return { at: Number(row[0]), trimmedThrough: Number(row[1]) };
}

function* kindRows(gk: GroupKind, viewer: Viewer) {
  const metas = (yield* q.rows(OBJECTS_OF_KIND, gk.group, gk.kind)).map(decodeMeta);
  return yield* withConditionsOfKind(metas, gk, viewer);
}

function* selectedRows(
  d: Dialect,
  gk: GroupKind,
  selector: readonly LabelRequirement[] | undefined,
  namespace: string | undefined,
  viewer: Viewer,
) {
  const where = selector === undefined
    ? { sql: `"group" = ? AND kind = ?`, params: [gk.group, gk.kind] }
    : selectRows(d, gk, selector);
  const ns = namespace === undefined ? "" : namespaceFilter(namespace, "namespace");
  const metas = (yield* q.rows(
    `SELECT ${OBJECT_COLUMNS} FROM objects WHERE ${where.sql}${ns} ORDER BY id`,
    ...where.params,
    ...(namespace === undefined ? [] : [namespace]),
  )).map(decodeMeta);
  return yield* withConditions(d, metas, viewer);
}

function* rowById(d: Dialect, gk: GroupKind, id: ObjectId, viewer: Viewer) {
  const meta = yield* readMeta(id);
  const metas = meta !== undefined && meta.group === gk.group && meta.kind === gk.kind
    ? [meta]
    : [];
  return yield* withConditions(d, metas, viewer);
}

function* ownedRows(d: Dialect, gk: GroupKind, ownerId: ObjectId, viewer: Viewer) {
  const metas = (yield* q.rows(
    `SELECT ${OBJECT_COLUMNS} FROM edges${d.objectAt("edges.from_id")}
     WHERE to_id = ? AND relation = 'owned_by' AND ${kindOfRow()}
     ORDER BY id`,
    ownerId,
    gk.group,
    gk.kind,
  )).map(decodeMeta);
  return yield* withConditions(d, metas, viewer);
}

function* snapshotBody(gk: GroupKind, read: (viewer: Viewer) => Q<RawObject[]>, viewer: Viewer) {
  const items = yield* read(viewer);
  return { items, resourceVersion: yield* kindPosition(gk) };
}

function* sweepDue(perKind: number, maxAge: number) {
  if (maxAge > 0 && (yield* oldestBefore(cutoff(Date.now(), maxAge)))) return true;
  return perKind > 0 &&
    (yield* q.get(
        `SELECT 1 FROM object_writes GROUP BY "group", kind HAVING COUNT(*) > ? LIMIT 1`,
        perKind,
      )) !== undefined;
}

function* sweepBody({ now }: WriteScope, perKind: number, maxAge: number) {
  let deleted = 0;
  if (maxAge > 0) {
    const through = yield* agedThrough(cutoff(now, maxAge));
    if (through > 0) {
      // Each kind's horizon rises to its highest entry the cut removes.
      const highest = yield* q.all(
        `SELECT "group", kind, MAX(resource_version) AS through FROM object_writes
         WHERE resource_version <= ? GROUP BY "group", kind`,
        through,
      );
      for (const r of highest) {
        yield* raiseHorizon(r.group as string, r.kind as string, Number(r.through));
      }
      deleted += yield* q.run("DELETE FROM object_writes WHERE resource_version <= ?", through);
    }
  }
  if (perKind > 0) {
    const kinds = yield* q.all(`SELECT DISTINCT "group", kind FROM object_writes`);
    for (const k of kinds) {
      const cut = yield* q.get(
        `SELECT resource_version FROM object_writes WHERE "group" = ? AND kind = ?
           ORDER BY resource_version DESC LIMIT 1 OFFSET ?`,
        k.group,
        k.kind,
        perKind,
      );
      if (cut === undefined) continue;
      const through = Number(cut.resource_version);
      yield* raiseHorizon(k.group as string, k.kind as string, through);
      deleted += yield* q.run(
        `DELETE FROM object_writes WHERE "group" = ? AND kind = ? AND resource_version <= ?`,
        k.group,
        k.kind,
        through,
      );
    }
  }
  return deleted;
}
