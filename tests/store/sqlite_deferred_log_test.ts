/**
 * The SQLite writer's deferred write-log entries on their own connection:
 * held until a statement touches `object_writes`, inserted 16 to a statement
 * and counted as writing statements, and cut back by a savepoint's mark.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Db } from "../../store/sqlite/_core.ts";
import { nodeSqliteDriver } from "../../store/sqlite/_node_sqlite.ts";
import { test } from "../_test.ts";

function withDb(fn: (db: Db) => void): void {
  const dir = mkdtempSync(join(tmpdir(), "beehive-deferred-"));
  const db = new Db(nodeSqliteDriver.open(join(dir, "log.db")));
  try {
    db.exec(`CREATE TABLE object_writes (
      resource_version INTEGER PRIMARY KEY, object_id INTEGER NOT NULL, "group" TEXT NOT NULL,
      kind TEXT NOT NULL, op INTEGER NOT NULL, written_at INTEGER NOT NULL, final TEXT,
      origin INTEGER NOT NULL) STRICT`);
    fn(db);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const count = (db: Db) => Number(db.get("SELECT COUNT(*) AS n FROM object_writes")!.n);

test("deferred log entries wait until a statement touches object_writes, then go in 16 to a statement, each counted as a write", () => {
  withDb((db) => {
    const log = db.deferLog();
    db.exec("BEGIN IMMEDIATE");
    for (let rv = 1; rv <= 20; rv++) log.append(rv, rv, "g", "K", 1, 1000, null, 7);
    assert.equal(log.pending, true);
    const before = db.writes;
    assert.equal(Number(db.get("SELECT 1 AS one")!.one), 1, "a statement elsewhere");
    assert.equal(db.writes, before, "nothing inserted for it");
    assert.equal(count(db), 20, "a statement on the log inserts them first");
    assert.equal(db.writes - before, 2, "16 and 4");
    assert.equal(log.pending, false);
    db.exec("COMMIT");
    log.clear();
  });
});

test("a deferred log cut back to a savepoint's mark drops what was appended since, and what was inserted since waits again", () => {
  withDb((db) => {
    const log = db.deferLog();
    db.exec("BEGIN IMMEDIATE");
    log.append(1, 1, "g", "K", 1, 1000, null, 7);
    assert.equal(count(db), 1, "entry 1 inserted before the savepoint");
    log.append(2, 2, "g", "K", 1, 1000, null, 7);
    db.exec("SAVEPOINT s");
    const mark = log.mark();
    log.append(3, 3, "g", "K", 2, 1000, null, 7);
    assert.equal(count(db), 3, "entries 2 and 3 inserted inside the savepoint");
    log.append(4, 4, "g", "K", 2, 1000, null, 7);
    db.exec("ROLLBACK TO s");
    db.exec("RELEASE s");
    log.rollbackTo(mark);
    assert.equal(log.pending, true, "entry 2 went in inside the savepoint, was undone, and waits");
    assert.equal(count(db), 2, "entries 1 and 2; 3 and 4 never happened");
    log.append(5, 5, "g", "K", 3, 1000, '{"image":true}', 7);
    log.flush();
    db.exec("COMMIT");
    log.clear();
    assert.deepEqual(
      db.all("SELECT resource_version AS rv, final FROM object_writes ORDER BY 1").map((r) => ({
        ...r,
      })),
      [{ rv: 1, final: null }, { rv: 2, final: null }, { rv: 5, final: '{"image":true}' }],
    );
  });
});
