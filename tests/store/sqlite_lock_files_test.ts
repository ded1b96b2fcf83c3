/**
 * SQLite's held leases live on lock files beside the database: a lock file
 * deleted or replaced while held is found by its holder, whose held lease
 * signals `lost`, rather than leaving two holders unaware of each other. Each
 * writable open holds an open-slot lock file too, the lowest one free.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { StoreError } from "../../src/model/errors.ts";
import { openSqliteStore } from "../_sqlite_driver.ts";
import { tempDir } from "../_beehive_harness.ts";
import { test } from "../_test.ts";

function lockFiles(db: string): string[] {
  return readdirSync(dirname(db)).filter((f) => f.startsWith(`${basename(db)}-lease-`))
    .map((f) => join(dirname(db), f));
}

/** Resolves with the signal's reason once it aborts; rejects after `ms`. */
function aborted(signal: AbortSignal, ms = 10_000): Promise<unknown> {
  const { promise, resolve, reject } = Promise.withResolvers<unknown>();
  const timer = setTimeout(() => reject(new Error(`not aborted within ${ms} ms`)), ms);
  signal.addEventListener("abort", () => {
    clearTimeout(timer);
    resolve(signal.reason);
  }, { once: true });
  return promise;
}

test("SQLite leases.hold: a lock file deleted while held signals lost, and a second open can then hold it", async () => {
  const dir = tempDir();
  const db = dir.file("beehive.db");
  const a = await openSqliteStore(db);
  const b = await openSqliteStore(db);
  try {
    const held = await a.leases.hold("beehive", "a");
    assert.ok(held.lost !== undefined && !held.lost.aborted);
    await assert.rejects(b.leases.hold("beehive", "b"));
    for (const f of lockFiles(db)) rmSync(f);
    const reason = await aborted(held.lost);
    assert.ok(reason instanceof StoreError);
    assert.match(reason.message, /lease "beehive".*deleted or replaced/);
    const second = await b.leases.hold("beehive", "b");
    assert.equal(second.lease.epoch, held.lease.epoch + 1);
    await second.release();
    await held.release();
  } finally {
    await b.close();
    await a.close();
    dir.remove();
  }
});

test("SQLite leases.hold: a lock file replaced while held signals lost; a release never does", async () => {
  const dir = tempDir();
  const db = dir.file("beehive.db");
  const store = await openSqliteStore(db);
  try {
    const kept = await store.leases.hold("kept", "a");
    const held = await store.leases.hold("beehive", "a");
    const [file] = lockFiles(db).filter((f) => f.endsWith("-lease-beehive"));
    writeFileSync(`${file}.new`, "");
    renameSync(`${file}.new`, file);
    await aborted(held.lost!);
    await kept.release();
    assert.equal(kept.lost!.aborted, false);
    await held.release();
  } finally {
    await store.close();
    dir.remove();
  }
});

test("SQLite opens: each writable open takes the lowest free open slot, so slot files never outnumber the opens alive at once", async () => {
  const dir = tempDir();
  const db = dir.file("beehive.db");
  const slots = () =>
    readdirSync(dirname(db))
      // A held slot's rollback journal is SQLite's own.
      .filter((f) => f.startsWith(`${basename(db)}-open-`) && !f.endsWith("-journal")).sort();
  try {
    const a = await openSqliteStore(db);
    const b = await openSqliteStore(db);
    assert.deepEqual(slots(), ["beehive.db-open-0", "beehive.db-open-1"]);
    await a.close();
    // A restart takes the slot the closed open left; a read-only open takes none.
    for (let i = 0; i < 5; i++) await (await openSqliteStore(db)).close();
    const observer = await openSqliteStore(db, { readOnly: true });
    const c = await openSqliteStore(db);
    assert.deepEqual(slots(), ["beehive.db-open-0", "beehive.db-open-1"]);
    await Promise.all([b.close(), c.close(), observer.close()]);
  } finally {
    dir.remove();
  }
});
