/**
 * The upgrade of a large SQLite database to the latest schema: a version-7
 * database (labels, before namespaces) holding n objects of one kind, each
 * with a spec, a status, a condition, a write-log entry and (one in ten) two
 * labels and an owner edge, is opened by `openSqliteStore`, which applies
 * migration 8 (namespaces). Each round builds a fresh copy, so rounds are
 * independent; `--phases` also times migration 8's statements one by one on a
 * copy with bare `node:sqlite` (where the time goes).
 *
 * Run: `deno run -A bench/migration_bench.ts` (`--quick` for 10,000 objects,
 * `--objects N` for another size). Figures go in docs/performance.md.
 *
 * @module
 */
import { copyFileSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { DatabaseSync } from "node:sqlite";
import { openSqliteStore } from "../store/sqlite/mod.ts";
import { migrations } from "../store/sqlite/_schema.ts";
import { databaseAt } from "../tests/store/_sqlite_at_version.ts";

const argv = process.argv;
const sized = argv.indexOf("--objects");
const OBJECTS = sized >= 0 ? Number(argv[sized + 1]) : argv.includes("--quick") ? 10_000 : 100_000;
const ROUNDS = argv.includes("--quick") ? 2 : 3;
const FROM = 7;

/** A database at schema version `FROM` holding `n` objects. */
function buildV7(path: string, n: number): void {
  const db = databaseAt(path, FROM);
  try {
    db.exec("BEGIN");
    db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${n})
      INSERT INTO objects (id, "group", kind, name, spec, status, resource_version, created_at,
        updated_at, observed_generation, labels)
      SELECT i, 'bench.beehive.dev', 'Widget', printf('widget-%07d', i),
        json_object('image', 'example.com/app:1.0', 'replicas', 3, 'note', printf('%0200d', i)),
        json_object('phase', 'Running', 'ready', i % 7), i, 1700000000000, 1700000000000, 1,
        CASE WHEN i % 10 = 0 THEN '{"app":"web","tier":"front"}' ELSE '{}' END
      FROM n`);
    db.exec(`INSERT INTO object_labels ("group", kind, key, value, object_id)
      SELECT "group", kind, 'app', 'web', id FROM objects WHERE id % 10 = 0
      UNION ALL SELECT "group", kind, 'tier', 'front', id FROM objects WHERE id % 10 = 0`);
    db.exec(`INSERT INTO conditions (object_id, type, status, open_epoch, transitioned_at,
        updated_at) SELECT id, 'Ready', 'True', 1, 1700000000000, 1700000000000 FROM objects`);
    db.exec(`INSERT INTO edges (from_id, to_id, relation)
      SELECT id, id - 1, 'owned_by' FROM objects WHERE id % 10 = 0`);
    db.exec(`INSERT INTO object_writes (resource_version, object_id, "group", kind, op, written_at)
      SELECT id, id, "group", kind, 1, 1700000000000 FROM objects`);
    db.exec(`UPDATE resource_version_seq SET value = ${n}, last_object_id = ${n}`);
    db.exec("COMMIT");
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  } finally {
    db.close();
  }
}

/** Milliseconds `openSqliteStore` takes to open (and so migrate) `path`. */
async function timeOpen(path: string): Promise<number> {
  const started = performance.now();
  const store = await openSqliteStore(path);
  const took = performance.now() - started;
  await store.close();
  return took;
}

/** The size of the free pages in the file at `path`, in MiB. */
function freeMib(path: string): string {
  const db = new DatabaseSync(path);
  try {
    const { free, size } = db.prepare(
      "SELECT (SELECT freelist_count FROM pragma_freelist_count) AS free, (SELECT page_size FROM pragma_page_size) AS size",
    ).get() as { free: number; size: number };
    return (free * size / 2 ** 20).toFixed(1);
  } finally {
    db.close();
  }
}

/** Milliseconds per statement of the latest migration, run as the migrator runs it. */
function phases(path: string): [string, number][] {
  const db = new DatabaseSync(path);
  const out: [string, number][] = [];
  try {
    const m = migrations[migrations.length - 1];
    db.exec("PRAGMA foreign_keys = OFF");
    db.exec("BEGIN IMMEDIATE");
    const statements = m.sql.split(";\n").map((s) => s.trim()).filter((s) => s !== "");
    for (const sql of statements) {
      const t = performance.now();
      db.exec(sql);
      out.push([sql.replace(/\s+/g, " ").slice(0, 60), performance.now() - t]);
    }
    let t = performance.now();
    db.prepare("PRAGMA foreign_key_check").get();
    out.push(["PRAGMA foreign_key_check", performance.now() - t]);
    t = performance.now();
    db.exec("COMMIT");
    out.push(["COMMIT", performance.now() - t]);
  } finally {
    db.close();
  }
  return out;
}

const dir = mkdtempSync(join(tmpdir(), "beehive-migration-bench-"));
try {
  const source = join(dir, "v7.db");
  buildV7(source, OBJECTS);
  const mib = (statSync(source).size / 2 ** 20).toFixed(1);
  console.log(`${OBJECTS} objects, a ${mib} MiB version-${FROM} database`);
  const times: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const copy = join(dir, `round-${round}.db`);
    copyFileSync(source, copy);
    times.push(await timeOpen(copy));
    console.log(`  open + migrate ${FROM}→${migrations.length}: ${times.at(-1)!.toFixed(0)} ms`);
    console.log(
      `  file afterwards: ${(statSync(copy).size / 2 ** 20).toFixed(1)} MiB, ${
        freeMib(copy)
      } MiB free`,
    );
  }
  console.log(`min ${Math.min(...times).toFixed(0)} ms over ${ROUNDS} rounds`);
  if (argv.includes("--phases")) {
    const copy = join(dir, "phases.db");
    copyFileSync(source, copy);
    for (const [sql, ms] of phases(copy)) console.log(`  ${ms.toFixed(0).padStart(6)} ms  ${sql}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
