/**
 * `openSqliteStore(path, { readOnly: true })`: an open that writes nothing —
 * no migration, no open epoch, no lock file — refuses every write, refuses a
 * file that is missing or not a beehive store, reads while another connection
 * holds the write lock, and reads liveness conditions as the store's latest
 * writable open does. And a writable open refuses another application's
 * database without changing it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import { SchemaVersionDowngradeError, StoreError } from "../../src/model/errors.ts";
import { openSqliteStore, type SqliteStore, testDriver } from "../_sqlite_driver.ts";
import { tempDir } from "../_beehive_harness.ts";
import { test } from "../_test.ts";

const Widget = { group: "test.beehive.dev", kind: "Widget" };

async function withDir(fn: (file: string, dir: string) => Promise<void>): Promise<void> {
  const dir = tempDir();
  try {
    await fn(dir.file("beehive.db"), dir.path);
  } finally {
    dir.remove();
  }
}

function digest(file: string): string {
  return createHash("sha256").update(readFileSync(file)).digest("hex");
}

/** The store's open counter, read without opening the store. */
function storedEpoch(file: string): number {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    return Number(db.prepare("SELECT value FROM store_epoch").get()!.value);
  } finally {
    db.close();
  }
}

/** A store at `file` with one object carrying a liveness condition, closed again. */
async function seeded(file: string): Promise<void> {
  const store = await openSqliteStore(file);
  const w = await store.objects.create(Widget, { name: "w", spec: "{}" });
  await store.conditions.set(w, [{ type: "Connected", status: "True", liveness: true }]);
  await store.close();
}

/** Another application's database: one table, rollback journal. */
function foreignDatabase(file: string): void {
  const db = new DatabaseSync(file);
  db.exec("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)");
  db.exec("INSERT INTO customers (name) VALUES ('Ada')");
  db.close();
}

test("openSqliteStore readOnly: reads the store and writes nothing (no epoch bump, no lock file, same bytes)", async () => {
  await withDir(async (file, dir) => {
    await seeded(file);
    const before = digest(file);
    const epoch = storedEpoch(file);
    const store = await openSqliteStore(file, { readOnly: true });
    try {
      const w = await store.objects.getByName({ ...Widget, name: "w" });
      assert.equal(w.spec, "{}");
      assert.equal(await store.leases.get("leader"), undefined);
      assert.deepEqual((await store.objects.list(Widget)).map((o) => o.name), ["w"]);
    } finally {
      await store.close();
    }
    assert.equal(storedEpoch(file), epoch);
    assert.equal(digest(file), before);
    assert.deepEqual(readdirSync(dir).filter((f) => f.includes("-lease-")), []);
  });
});

test("openSqliteStore readOnly: every write rejects with a StoreError saying the store is read-only", async () => {
  await withDir(async (file, dir) => {
    await seeded(file);
    const store = await openSqliteStore(file, { readOnly: true });
    try {
      const w = await store.objects.getByName({ ...Widget, name: "w" });
      const readOnly = (error: unknown) =>
        error instanceof StoreError && /opened read-only/.test(error.message);
      await assert.rejects(store.objects.create(Widget, { name: "x", spec: "{}" }), readOnly);
      await assert.rejects(store.objects.updateSpec(w, { spec: "{}" }), readOnly);
      await assert.rejects(store.conditions.set(w, [{ type: "A", status: "True" }]), readOnly);
      await assert.rejects(store.within(() => Promise.resolve(1)), readOnly);
      await assert.rejects(
        store.leases.acquire({ name: "l", holder: "h", duration: 1000 }),
        readOnly,
      );
      await assert.rejects(store.leases.hold("leader", "h"), readOnly);
      await assert.rejects(store.reclaimSpace(10), readOnly);
      assert.equal((await store.objects.list(Widget)).length, 1);
    } finally {
      await store.close();
    }
    assert.deepEqual(readdirSync(dir).filter((f) => f.includes("-lease-")), []);
  });
});

test("openSqliteStore readOnly: a missing file is refused and not created", async () => {
  await withDir(async (file) => {
    await assert.rejects(
      openSqliteStore(file, { readOnly: true }),
      (e) => e instanceof StoreError && /no such file/.test(e.message),
    );
    assert.equal(existsSync(file), false);
  });
});

test("openSqliteStore: another application's database is refused, read-only or not, and left untouched", async () => {
  await withDir(async (file, dir) => {
    foreignDatabase(file);
    const before = digest(file);
    const notOurs = (e: unknown) =>
      e instanceof StoreError && /not a beehive store/.test(e.message) &&
      e.message.includes('"customers"');
    await assert.rejects(openSqliteStore(file, { readOnly: true }), notOurs);
    await assert.rejects(openSqliteStore(file), notOurs);
    assert.equal(digest(file), before);
    assert.deepEqual(readdirSync(dir), ["beehive.db"]);
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      assert.equal(db.prepare("PRAGMA journal_mode").get()!.journal_mode, "delete");
    } finally {
      db.close();
    }
  });
});

test("openSqliteStore readOnly: an empty database, or a newer schema, is refused", async () => {
  await withDir(async (file) => {
    new DatabaseSync(file).close();
    await assert.rejects(
      openSqliteStore(file, { readOnly: true }),
      (e) => e instanceof StoreError && /empty/.test(e.message),
    );
    await seeded(file);
    const db = new DatabaseSync(file);
    db.exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'x', 0)");
    db.close();
    await assert.rejects(
      openSqliteStore(file, { readOnly: true }),
      SchemaVersionDowngradeError,
    );
  });
});

test("openSqliteStore readOnly: opens and reads while another connection holds the write lock", async () => {
  await withDir(async (file) => {
    await seeded(file);
    const holder = new DatabaseSync(file);
    holder.exec("PRAGMA busy_timeout = 0");
    holder.exec("BEGIN IMMEDIATE");
    holder.exec(`UPDATE objects SET spec = '{"uncommitted":1}'`);
    let store: SqliteStore | undefined;
    try {
      // No wait for any lock: with busyTimeout 0, a write or a lock wait would fail at once.
      store = await openSqliteStore(file, { readOnly: true, busyTimeout: 0 });
      const w = await store.objects.getByName({ ...Widget, name: "w" });
      assert.equal(w.spec, "{}");
      // A writable open does wait (the holder is node:sqlite, whose locks another library in
      // this process does not see: checked on that driver only).
      if (testDriver === "node") {
        await assert.rejects(openSqliteStore(file, { busyTimeout: 0 }), /locked/);
      }
    } finally {
      await store?.close();
      holder.exec("ROLLBACK");
      holder.close();
    }
  });
});

test("openSqliteStore readOnly: liveness conditions read as in the store's latest open, which it follows", async () => {
  await withDir(async (file) => {
    const live = await openSqliteStore(file);
    let observer: SqliteStore | undefined;
    let restarted: SqliteStore | undefined;
    try {
      const w = await live.objects.create(Widget, { name: "w", spec: "{}" });
      await live.conditions.set(w, [{ type: "Connected", status: "True", liveness: true }]);
      const status = async (s: SqliteStore) => {
        const [c] = (await s.objects.get(w.id)).conditions;
        return c.unconfirmed ? "Unknown" : c.status;
      };
      observer = await openSqliteStore(file, { readOnly: true });
      assert.equal(await status(live), "True");
      assert.equal(await status(observer), "True");
      // A restart (a new writable open) leaves the row unconfirmed until re-confirmed.
      await live.close();
      restarted = await openSqliteStore(file);
      assert.equal(await status(restarted), "Unknown");
      assert.equal(await status(observer), "Unknown");
      await restarted.conditions.set(w, [{ type: "Connected", status: "True", liveness: true }]);
      assert.equal(await status(restarted), "True");
      assert.equal(await status(observer), "True");
    } finally {
      await observer?.close();
      await restarted?.close();
      await live.close();
    }
  });
});

test("openSqliteStore readOnly: refused for :memory: and for a non-boolean value", async () => {
  await assert.rejects(openSqliteStore(":memory:", { readOnly: true }), /readOnly/);
  await assert.rejects(
    // deno-lint-ignore no-explicit-any
    openSqliteStore(":memory:", { readOnly: "yes" as any }),
    /expected a boolean/,
  );
});

test("openSqliteStore readOnly: where the WAL index cannot be created beside the file (read-only media), it opens the file immutable and reads it", async () => {
  await withDir(async (file) => {
    await seeded(file);
    // Directories where SQLite would create its -wal and -shm files: it cannot, as on a
    // read-only mount (which a test cannot make, and permissions do not stop root).
    mkdirSync(`${file}-shm`);
    mkdirSync(`${file}-wal`);
    const before = digest(file);
    const store = await openSqliteStore(file, { readOnly: true });
    try {
      assert.equal((await store.objects.getByName({ ...Widget, name: "w" })).spec, "{}");
      await assert.rejects(store.objects.create(Widget, { name: "x", spec: "{}" }), StoreError);
    } finally {
      await store.close();
    }
    assert.equal(digest(file), before);
  });
});
