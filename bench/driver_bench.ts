/**
 * The two SQLite drivers on their own, below the store: the cost of one
 * statement call, of reading integer, ASCII and non-ASCII text columns, and
 * of one small on-disk WAL commit. Explains where each driver is faster in
 * `bench:store` and `bench:engine` (docs/performance.md).
 *
 * Run: `deno run -A bench/driver_bench.ts` (Deno with FFI access).
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Connection } from "../store/sqlite/_driver.ts";
import { benchDrivers, sqliteVersion } from "./_drivers.ts";

const ROUNDS = 7;

/** Median µs per call of `fn` over `ROUNDS` batches of `n`. */
function time(n: number, fn: () => unknown): number {
  for (let i = 0; i < n; i++) fn();
  const per: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) fn();
    per.push(((performance.now() - t0) * 1000) / n);
  }
  per.sort((a, b) => a - b);
  return per[ROUNDS >> 1];
}

function rows(db: Connection, sql: string) {
  const s = db.prepare(sql);
  s.setReturnArrays?.(true);
  return () => s.all();
}

function measure(db: Connection): Record<string, number> {
  db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
    CREATE TABLE t (a INTEGER, b INTEGER, ascii TEXT, other TEXT) STRICT;
    CREATE TABLE w (x INTEGER) STRICT`);
  db.exec("BEGIN");
  const ins = db.prepare("INSERT INTO t VALUES (?, ?, ?, ?)");
  const json = '{"image":"example.com/app:1.0","replicas":3,"ports":[80,443]}';
  for (let i = 0; i < 1000; i++) ins.run(i, i * 7, json, `ünïcödé ${json}`);
  db.exec("COMMIT");
  const one = db.prepare("SELECT 1");
  const write = db.prepare("INSERT INTO w VALUES (?)");
  let k = 0;
  return {
    "one statement call (`get` of SELECT 1), µs": time(20_000, () => one.get()),
    "1,000 rows × 2 INTEGER columns, µs": time(200, rows(db, "SELECT a, b FROM t")),
    "1,000 rows × 1 ASCII TEXT column (60 B), µs": time(200, rows(db, "SELECT ascii FROM t")),
    "1,000 rows × 1 non-ASCII TEXT column, µs": time(200, rows(db, "SELECT other FROM t")),
    "BEGIN IMMEDIATE; INSERT; COMMIT on disk, µs": time(2_000, () => {
      db.exec("BEGIN IMMEDIATE");
      write.run(k++);
      db.exec("COMMIT");
    }),
  };
}

const { drivers, notes } = await benchDrivers();
for (const note of notes) console.log(`(${note})`);
const results = drivers.map((d) => {
  const dir = mkdtempSync(join(tmpdir(), "beehive-bench-"));
  const db = d.raw.open(join(dir, "driver.db"));
  try {
    return { name: `${d.name} (SQLite ${sqliteVersion(d.raw)})`, figures: measure(db) };
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
console.log(`| measurement | ${results.map((r) => r.name).join(" | ")} |`);
console.log(`| --- | ${results.map(() => "---:").join(" | ")} |`);
for (const key of Object.keys(results[0].figures)) {
  console.log(`| ${key} | ${results.map((r) => r.figures[key].toFixed(2)).join(" | ")} |`);
}
