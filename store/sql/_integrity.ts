/**
 * The store's integrity check, written once: the schema version and the
 * invariants beehive's own bookkeeping keeps (versions under the counter,
 * relations and rows that point at objects that exist, generations that make
 * sense), after the dialect's own checks (SQLite's `integrity_check` and
 * `foreign_key_check`). Reads only.
 *
 * @module
 */
import { type Q, q } from "./_query.ts";

/** One thing a check found wrong. */
export interface IntegrityFinding {
  /** Which check found it, e.g. `"integrity_check"` or `"dangling edges"`. */
  readonly check: string;
  /** What it found, in one bounded line. */
  readonly detail: string;
}

/** What a SQL store's `check()` found. */
export interface IntegrityReport {
  /** Whether every check passed. */
  readonly ok: boolean;
  /** The database's schema version. */
  readonly schemaVersion: number;
  /** The checks run, by name, in order. */
  readonly checks: readonly string[];
  /** Everything found wrong; empty when `ok`. */
  readonly findings: readonly IntegrityFinding[];
}

/** A dialect's own checks: their names and a body reporting what they find. */
export interface DialectChecks {
  /** The schema version this build writes. */
  readonly latestSchema: number;
  /** The names of the dialect's checks, run first. */
  readonly names: readonly string[];
  /** The dialect's checks. */
  run(): Q<IntegrityFinding[]>;
}

/** The most example ids a finding lists. */
const EXAMPLES = 5;

/** An invariant: a query returning the ids of the rows that break it (at most EXAMPLES + 1). */
export interface Invariant {
  readonly check: string;
  /** What each id is. */
  readonly what: string;
  readonly sql: string;
}

/** The tail of an invariant's query: its first ids, enough to show and to say there are more. */
export const LIMIT = ` ORDER BY 1 LIMIT ${EXAMPLES + 1}`;

const INVARIANTS: readonly Invariant[] = [
  {
    check: "versions under the counter",
    what: "objects whose resource version is above the store's counter",
    sql: `SELECT id FROM objects
      WHERE resource_version > (SELECT value FROM resource_version_seq WHERE id = 1)${LIMIT}`,
  },
  {
    check: "versions under the counter",
    what: "write-log entries above the store's counter",
    sql: `SELECT resource_version FROM object_writes
      WHERE resource_version > (SELECT value FROM resource_version_seq WHERE id = 1)${LIMIT}`,
  },
  {
    check: "generations",
    what: "objects with a generation below 1 or observed ahead of it",
    sql: `SELECT id FROM objects
      WHERE generation < 1 OR observed_generation > generation OR spec_version < 0${LIMIT}`,
  },
  {
    check: "dangling edges",
    what: "objects with an owner or dependency edge to an object that does not exist",
    sql: `SELECT DISTINCT e.from_id FROM edges e
      WHERE NOT EXISTS (SELECT 1 FROM objects o WHERE o.id = e.to_id)
        OR NOT EXISTS (SELECT 1 FROM objects o WHERE o.id = e.from_id)${LIMIT}`,
  },
  {
    check: "dangling rows",
    what: "objects missing for their conditions, events or dependency watermarks",
    sql: `SELECT object_id FROM (
        SELECT object_id FROM conditions UNION SELECT object_id FROM events
        UNION SELECT object_id FROM dependency_watermarks) r
      WHERE NOT EXISTS (SELECT 1 FROM objects o WHERE o.id = r.object_id)${LIMIT}`,
  },
];

/** The names of the shared checks, in order. */
const SHARED = ["schema version", ...new Set(INVARIANTS.map((i) => i.check))];

/** The finding of a check whose statement failed (a damaged page it had to read). */
export function unreadable(check: string, error: unknown): IntegrityFinding {
  const message = error instanceof Error ? error.message : String(error);
  return { check, detail: `could not run: ${message.slice(0, 200)}` };
}

/** Runs one invariant: its finding naming the first ids that break it, or undefined. */
export function* runInvariant(invariant: Invariant): Q<IntegrityFinding | undefined> {
  let ids: string[];
  try {
    ids = (yield* q.rows(invariant.sql)).map((r) => String(r[0]));
  } catch (error) {
    // A page too damaged to read is itself a finding; the other checks still run.
    return unreadable(invariant.check, error);
  }
  if (ids.length === 0) return undefined;
  const shown = ids.slice(0, EXAMPLES).join(", ");
  return {
    check: invariant.check,
    detail: `${invariant.what}: ${shown}${ids.length > EXAMPLES ? ", …" : ""}`,
  };
}

/** Runs the dialect's checks, then the shared ones: one read. */
export function* checkBody(dialect: DialectChecks): Q<IntegrityReport> {
  const findings = yield* dialect.run();
  const row = yield* q.get("SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations");
  const schemaVersion = Number(row?.v ?? 0);
  if (schemaVersion !== dialect.latestSchema) {
    findings.push({
      check: "schema version",
      detail: `the schema is at version ${schemaVersion}, this build's is ${dialect.latestSchema}`,
    });
  }
  for (const invariant of INVARIANTS) {
    const found = yield* runInvariant(invariant);
    if (found !== undefined) findings.push(found);
  }
  return {
    ok: findings.length === 0,
    schemaVersion,
    checks: [...dialect.names, ...SHARED],
    findings,
  };
}
