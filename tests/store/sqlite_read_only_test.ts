/**
 * `openSqliteStore(path, { readOnly: true })`, what is SQLite's own (the store
 * contract's `read_only` cases hold both stores to the rest): an open that
 * writes nothing — no migration, no open epoch, no lock file, not a byte of the
 * file — refuses a file that is missing, empty or not a beehive store, reads
 * while another connection holds the write lock and where the WAL files cannot
 * be created. And a writable open refuses another application's database
 * without changing it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
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
      await assert.rejects(store.leases.hold("leader", "h"), StoreError);
      assert.deepEqual((await store.objects.list(Widget)).map((o) => o.name), ["w"]);
    } finally {
      await store.close();
    }
    assert.equal(storedEpoch(file), epoch);
    assert.equal(digest(file), before);
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

test("openSqliteStore readOnly: refused for :memory: and for a non-boolean value", async () => {
  await assert.rejects(openSqliteStore(":memory:", { readOnly: true }), /readOnly/);
  await assert.rejects(
    // deno-lint-ignore no-explicit-any
    openSqliteStore(":memory:", { readOnly: "yes" as any }),
    /expected a boolean/,
  );
});

test("openSqliteStore readOnly: where the WAL index cannot be created beside the file (read-only media), it opens the file immutable and reads it (on Deno's node:sqlite without --allow-all, it says how to)", async () => {
  await withDir(async (file) => {
    await seeded(file);
    // Directories where SQLite would create its -wal and -shm files: it cannot, as on a
    // read-only mount (which a test cannot make, and permissions do not stop root).
    mkdirSync(`${file}-shm`);
    mkdirSync(`${file}-wal`);
    const before = digest(file);
    if (testDriver === "node" && !uriOpensWork()) {
      await assert.rejects(
        openSqliteStore(file, { readOnly: true }),
        (error: unknown) =>
          error instanceof StoreError &&
          /--allow-all, or open it with \{ driver: "ffi" \}/.test(error.message),
      );
      assert.equal(digest(file), before);
      return;
    }
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

/**
 * Whether this runtime's node:sqlite opens a `file:` URI: Node does, and Deno with
 * `--allow-all`; Deno with granular permissions resolves it as a relative path.
 */
function uriOpensWork(): boolean {
  const dir = mkdtempSync(join(tmpdir(), "beehive-uri-"));
  try {
    new DatabaseSync(join(dir, "probe.db")).close();
    try {
      new DatabaseSync(`${pathToFileURL(join(dir, "probe.db")).href}?immutable=1`, {
        readOnly: true,
      }).close();
      return true;
    } catch {
      return false;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
