/**
 * The raw floor a throughput benchmark quotes beehive against: per unit, one
 * create commit and one settle commit on beehive's own schema and pragmas,
 * each with its write-log append, straight on a driver with no engine.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrations, PAGE_SIZE } from "../store/sqlite/_schema.ts";
import type { Driver } from "../store/sqlite/_driver.ts";

/** The kind every floor row is written under. */
export const FLOOR_KIND = { group: "bench.beehive.dev", kind: "Item" };
/** The spec every floor row carries. */
export const FLOOR_SPEC = { image: "example.com/app:1.0", replicas: 3 };

/** A database path in a fresh temporary directory, and the call that removes the directory. */
export function tempFile(): { path: string; done: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "beehive-bench-"));
  return { path: join(dir, "bench.db"), done: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The floor, in units/s: n creates, one commit each, then n settles, one commit each. */
export function floor(n: number, driver: Driver): number {
  const Kind = FLOOR_KIND;
  const { path, done } = tempFile();
  const db = driver.open(path);
  try {
    db.exec(`PRAGMA page_size = ${PAGE_SIZE}; PRAGMA auto_vacuum = INCREMENTAL;
      PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;`);
    for (const m of migrations) db.exec(m.sql);
    const insert = db.prepare(`INSERT INTO objects ("group", kind, name, spec, resource_version,
      created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`);
    const log = db.prepare(`INSERT INTO object_writes (resource_version, object_id, "group", kind,
      op, written_at) VALUES (?, ?, ?, ?, ?, ?)`);
    const settle = db.prepare(`UPDATE objects SET observed_generation = 1, observed_at = ?,
      resource_version = ? WHERE id = ?`);
    const spec = JSON.stringify(FLOOR_SPEC);
    let rv = 0;
    const t0 = performance.now();
    const ids: number[] = [];
    for (let i = 0; i < n; i++) {
      const now = Date.now();
      db.exec("BEGIN IMMEDIATE");
      const id = Number(insert.get(Kind.group, Kind.kind, `item-${i}`, spec, ++rv, now, now)!.id);
      log.run(rv, id, Kind.group, Kind.kind, 1, now);
      db.exec("COMMIT");
      ids.push(id);
    }
    for (const id of ids) {
      const now = Date.now();
      db.exec("BEGIN IMMEDIATE");
      settle.run(now, ++rv, id);
      log.run(rv, id, Kind.group, Kind.kind, 2, now);
      db.exec("COMMIT");
    }
    return n / ((performance.now() - t0) / 1000);
  } finally {
    db.close();
    done();
  }
}

/**
 * The minimal floor, in units/s: the same two commits per unit (n creates, one
 * commit each, then n settles, one commit each) with the same pragmas, on a
 * table that has only its primary key and its name key — no write log, no
 * counter row, no secondary index. What any durable create-then-settle costs
 * on this SQLite.
 */
export function minimalFloor(n: number, driver: Driver): number {
  const { path, done } = tempFile();
  const db = driver.open(path);
  try {
    db.exec(`PRAGMA page_size = ${PAGE_SIZE}; PRAGMA journal_mode = WAL;
      PRAGMA synchronous = NORMAL;
      CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, spec TEXT NOT NULL,
        status TEXT, observed_generation INTEGER NOT NULL DEFAULT 0)`);
    const insert = db.prepare("INSERT INTO items (name, spec) VALUES (?, ?) RETURNING id");
    const settle = db.prepare("UPDATE items SET status = ?, observed_generation = 1 WHERE id = ?");
    const spec = JSON.stringify(FLOOR_SPEC);
    const status = JSON.stringify({ done: true });
    const t0 = performance.now();
    const ids: number[] = [];
    for (let i = 0; i < n; i++) {
      db.exec("BEGIN IMMEDIATE");
      ids.push(Number(insert.get(`item-${i}`, spec)!.id));
      db.exec("COMMIT");
    }
    for (const id of ids) {
      db.exec("BEGIN IMMEDIATE");
      settle.run(status, id);
      db.exec("COMMIT");
    }
    return n / ((performance.now() - t0) / 1000);
  } finally {
    db.close();
    done();
  }
}
