/**
 * The dependency-watermark family and the stale-dependents scan.
 *
 * @module
 */
import type {
  Dependencies,
  GroupKind,
  ListStaleSinceOptions,
  ListStaleSinceResult,
  ObjectId,
  StalePos,
} from "../../src/store.ts";
import { checkGroupKind, checkId, describe, rejectWith } from "./_checks.ts";
import type { Dialect } from "./_dialect.ts";
import { decodeRef } from "./_edges.ts";
import { q } from "./_query.ts";
import type { SqlSession, WriteScope } from "./_session.ts";

// Every write is in the log above its highest horizon, and a row's version is its
// latest write's: the targets moved in a window are the log's entries in it that
// are still their object's current version. Cost tracks the window's writes
// (an in-order join pins the log as the driving table).
const staleFromLog = (d: Dialect) =>
  `SELECT l.resource_version AS tv, l.object_id AS tid,
    d.id AS id, d."group" AS "group", d.kind AS kind
  FROM object_writes l
  ${d.joinInOrder} objects t ON t.id = l.object_id AND t.resource_version = l.resource_version
  ${d.joinInOrder} edges e ON e.to_id = l.object_id AND e.relation = 'depends_on'
  ${d.joinInOrder} objects d ON d.id = e.from_id
  LEFT JOIN dependency_watermarks w ON w.object_id = d.id
  WHERE l.resource_version >= ? AND l.resource_version <= ?
    AND (l.resource_version, l.object_id, d.id) > (${d.bigint}, ${d.bigint}, ${d.bigint})
    AND d.id <> l.object_id
    AND (d."group", d.kind)${d.inKinds}
    AND (w.reconciled_against IS NULL OR w.reconciled_against < l.resource_version)
  ORDER BY l.resource_version, d.id
  LIMIT ?`;

// At or below the horizon the log may have lost a target's latest write: the
// depends_on edges lead to every target. Cost tracks the dependency graph.
const staleFromEdges = (d: Dialect) =>
  `SELECT t.resource_version AS tv, t.id AS tid,
    d.id AS id, d."group" AS "group", d.kind AS kind
  FROM edges e
  JOIN objects t ON t.id = e.to_id
  JOIN objects d ON d.id = e.from_id
  LEFT JOIN dependency_watermarks w ON w.object_id = d.id
  WHERE e.relation = 'depends_on'
    AND t.resource_version >= ? AND t.resource_version <= ?
    AND (t.resource_version, t.id, d.id) > (${d.bigint}, ${d.bigint}, ${d.bigint})
    AND d.id <> t.id
    AND (d."group", d.kind)${d.inKinds}
    AND (w.reconciled_against IS NULL OR w.reconciled_against < t.resource_version)
  ORDER BY t.resource_version, t.id, d.id
  LIMIT ?`;

const HORIZON_SQL = "SELECT MAX(trimmed_through) AS h FROM object_writes_horizon";

function checkCount(value: unknown, what: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new TypeError(
      `Cannot use ${what}: current value is ${describe(value)}, expected an integer >= 0`,
    );
  }
  return value;
}

function checkPos(pos: unknown): StalePos {
  const p = pos as StalePos;
  if (typeof p !== "object" || p === null) {
    throw new TypeError(
      `Cannot use after: current value is ${
        describe(pos)
      }, expected { targetVersion, targetId, dependentId }`,
    );
  }
  return {
    targetVersion: checkCount(p.targetVersion, "after.targetVersion"),
    targetId: checkCount(p.targetId, "after.targetId"),
    dependentId: checkCount(p.dependentId, "after.dependentId"),
  };
}

export class SqlDependencies implements Dependencies {
  readonly #s: SqlSession;
  readonly #fromLog: string;
  readonly #fromEdges: string;
  readonly #watermark: string;

  constructor(session: SqlSession) {
    this.#s = session;
    const d = session.dialect;
    this.#fromLog = staleFromLog(d);
    this.#fromEdges = staleFromEdges(d);
    this.#watermark =
      `INSERT INTO dependency_watermarks (object_id, reconciled_against, reconciled_at)
       SELECT ${d.bigint}, ${d.bigint}, ${d.bigint} WHERE EXISTS (
         SELECT 1 FROM edges WHERE from_id = ? AND relation = 'depends_on')
       ON CONFLICT (object_id) DO UPDATE SET
         reconciled_against = excluded.reconciled_against,
         reconciled_at = excluded.reconciled_at
       WHERE excluded.reconciled_against > dependency_watermarks.reconciled_against`;
  }

  listStaleSince(
    kinds: readonly GroupKind[],
    options: ListStaleSinceOptions,
  ): Promise<ListStaleSinceResult> {
    return rejectWith(() => {
      if (!Array.isArray(kinds)) {
        throw new TypeError(
          `Cannot use kinds: current value is ${describe(kinds)}, expected an array`,
        );
      }
      kinds.forEach(checkGroupKind);
      const after = checkPos(options?.after);
      const through = checkCount(options.through, "through");
      const limit = options.limit;
      if (typeof limit !== "number" || !Number.isSafeInteger(limit)) {
        throw new TypeError(
          `Cannot use limit: current value is ${describe(limit)}, expected an integer`,
        );
      }
      if (kinds.length === 0 || limit <= 0) {
        return Promise.resolve({ dependents: [], position: after });
      }
      const s = this.#s;
      const d = s.dialect;
      const kindList = d.kinds(kinds);
      const fromLog = this.#fromLog;
      const fromEdges = this.#fromEdges;
      // In-process, the log answers a recent window cheaply, and the horizon and the scans
      // see one snapshot (or a sweep between them could hide a target). Over a network, the
      // edges scan answers the whole window in one statement and one round trip.
      const body = () => staleBody(d, fromLog, fromEdges, kindList, after, through, limit);
      return d.inProcess ? s.readSnapshot(body) : s.read(body);
    });
  }

  watermarkSet(id: ObjectId, cursor: number): Promise<void> {
    return rejectWith(() => {
      checkId(id);
      checkCount(cursor, "cursor");
      const watermark = this.#watermark;
      return this.#s.write((scope) => watermarkBody(scope, watermark, id, cursor));
    });
  }
}

function* staleBody(
  d: Dialect,
  fromLog: string,
  fromEdges: string,
  kindList: unknown[],
  after: StalePos,
  through: number,
  limit: number,
) {
  let horizon = Infinity;
  if (d.inProcess) {
    const h = (yield* q.get(HORIZON_SQL))?.h;
    horizon = h === null || h === undefined ? 0 : Number(h);
  }
  const scan = (sql: string, low: number, high: number, n: number) =>
    q.all(
      sql,
      low,
      high,
      after.targetVersion,
      after.targetId,
      after.dependentId,
      ...kindList,
      n,
    );
  const low = after.targetVersion;
  const rows = low <= horizon ? yield* scan(fromEdges, low, Math.min(through, horizon), limit) : [];
  if (rows.length < limit && through > horizon) {
    rows.push(
      ...(yield* scan(fromLog, Math.max(low, horizon + 1), through, limit - rows.length)),
    );
  }
  if (rows.length === 0) return { dependents: [], position: after };
  const last = rows[rows.length - 1];
  return {
    dependents: rows.map(decodeRef),
    position: {
      targetVersion: Number(last.tv),
      targetId: Number(last.tid),
      dependentId: Number(last.id),
    },
  };
}

function* watermarkBody({ now }: WriteScope, watermark: string, id: ObjectId, cursor: number) {
  // Gated on an outgoing depends_on edge: a dependency-free object is never stale,
  // and the gate closes by itself once the object is collected.
  yield* q.run(watermark, id, cursor, now, id);
}
