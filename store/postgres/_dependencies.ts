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
import { decodeRef } from "./_edges.ts";
import { checkGroupKind, checkId, describe, rejectWith } from "./_rows.ts";
import type { Session } from "./_session.ts";

const STALE_SQL = `SELECT t.resource_version AS tv, t.id AS tid, d.id AS id, d."group" AS "group",
    d.kind AS kind
  FROM objects t
  JOIN edges e ON e.to_id = t.id AND e.relation = 'depends_on'
  JOIN objects d ON d.id = e.from_id
  LEFT JOIN dependency_watermarks w ON w.object_id = d.id
  WHERE t.resource_version >= ? AND t.resource_version <= ?
    AND (t.resource_version, t.id, d.id) > (?::bigint, ?::bigint, ?::bigint)
    AND d.id <> t.id
    AND (d."group", d.kind) IN (SELECT * FROM unnest(?::text[], ?::text[]))
    AND (w.reconciled_against IS NULL OR w.reconciled_against < t.resource_version)
  ORDER BY t.resource_version, t.id, d.id
  LIMIT ?`;

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

export class PostgresDependencies implements Dependencies {
  readonly #s: Session;

  constructor(session: Session) {
    this.#s = session;
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
      return this.#s.read(async (db) => {
        const rows = await db.all(
          STALE_SQL,
          after.targetVersion,
          through,
          after.targetVersion,
          after.targetId,
          after.dependentId,
          kinds.map((k) => k.group),
          kinds.map((k) => k.kind),
          limit,
        );
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
      });
    });
  }

  watermarkSet(id: ObjectId, cursor: number): Promise<void> {
    return rejectWith(() => {
      checkId(id);
      checkCount(cursor, "cursor");
      return this.#s.write(async ({ db, now }) => {
        // Gated on an outgoing depends_on edge: a dependency-free object is never stale,
        // and the gate closes by itself once the object is collected.
        await db.run(
          `INSERT INTO dependency_watermarks (object_id, reconciled_against, reconciled_at)
           SELECT ?::bigint, ?::bigint, ?::bigint WHERE EXISTS (
             SELECT 1 FROM edges WHERE from_id = ? AND relation = 'depends_on')
           ON CONFLICT (object_id) DO UPDATE SET
             reconciled_against = excluded.reconciled_against,
             reconciled_at = excluded.reconciled_at
           WHERE excluded.reconciled_against > dependency_watermarks.reconciled_against`,
          id,
          cursor,
          now,
          id,
        );
      });
    });
  }
}
