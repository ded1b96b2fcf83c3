/**
 * SQLite-store cases: opening, identity, options, schema, close and space
 * reclaim. They inspect the database file with `node:sqlite` directly, so they
 * run only under the SQLite runners.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { resolve } from "node:path";
import { DatabaseSync } from "node:sqlite";
import {
  BeehiveError,
  InvalidOptionError,
  SchemaVersionDowngradeError,
  StoreClosedError,
  StoreError,
} from "../../../src/errors.ts";
import { openSqliteStore } from "../../_sqlite_driver.ts";
import { migrations } from "../../../store/sqlite/_schema.ts";
import { type ContractCase, make, Widget } from "./harness.ts";

function pragma(path: string, name: string): unknown {
  const db = new DatabaseSync(path);
  try {
    return Object.values(db.prepare(`PRAGMA ${name}`).get()!)[0];
  } finally {
    db.close();
  }
}

/** The temp directories of the memory store with this identity. */
function memoryDirs(identity: string): string[] {
  const uuid = identity.slice("memory:".length);
  return readdirSync(tmpdir()).filter((d) => d.startsWith(`beehive-${uuid}-`));
}

export const sqliteAdapterCases: ContractCase[] = [
  {
    name: "openSqliteStore creates the file with WAL, incremental auto-vacuum and the schema",
    async fn(h) {
      const path = h.tempPath("new.db");
      const s = await h.openPath(path);
      await make(s, Widget, "a");
      assert.equal(pragma(path, "journal_mode"), "wal");
      assert.equal(pragma(path, "auto_vacuum"), 2);
      const db = new DatabaseSync(path);
      try {
        const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all()
          .map((r) => r.name);
        for (
          const t of [
            "objects",
            "conditions",
            "edges",
            "events",
            "object_writes",
            "dependency_watermarks",
            "leases",
          ]
        ) {
          assert.ok(tables.includes(t), `missing table ${t}`);
        }
        assert.equal(db.prepare("SELECT MAX(version) AS v FROM schema_migrations").get()!.v, 4);
      } finally {
        db.close();
      }
    },
  },
  {
    name: "identity is the absolute path, the same for two opens of one file",
    async fn(h) {
      const path = h.tempPath("id.db");
      const a = await h.openPath(path);
      assert.equal(a.identity, resolve(path));
      await a.close();
      const b = await h.openPath(path);
      assert.equal(b.identity, a.identity);
    },
  },
  {
    name: "a memory store is a private temp file with a unique identity, removed on close",
    async fn() {
      const a = await openSqliteStore(":memory:");
      const b = await openSqliteStore(":memory:");
      try {
        assert.match(a.identity, /^memory:/);
        assert.notEqual(a.identity, b.identity);
        assert.equal(memoryDirs(a.identity).length, 1);
        assert.equal(memoryDirs(b.identity).length, 1);
        await make(a, Widget, "only-in-a");
        assert.deepEqual(await b.objects.list(Widget), []);
      } finally {
        await a.close();
        await b.close();
      }
      assert.deepEqual(memoryDirs(a.identity), []);
      assert.deepEqual(memoryDirs(b.identity), []);
    },
  },
  {
    name: "openSqliteStore refuses bad options and paths before touching the disk",
    async fn() {
      await assert.rejects(
        openSqliteStore(":memory:", { synchronous: "off" as "full" }),
        InvalidOptionError,
      );
      await assert.rejects(openSqliteStore(":memory:", { busyTimeout: -1 }), InvalidOptionError);
      await assert.rejects(openSqliteStore(":memory:", { busyTimeout: 1.5 }), InvalidOptionError);
      await assert.rejects(openSqliteStore(""), TypeError);
      await assert.rejects(openSqliteStore(42 as unknown as string), TypeError);
    },
  },
  {
    name: "an unopenable path fails with StoreError",
    async fn(h) {
      const dir = h.tempPath("missing-dir");
      await assert.rejects(openSqliteStore(`${dir}/nested/x.db`), StoreError);
    },
  },
  {
    name: "synchronous full opens and persists like normal",
    async fn(h) {
      const path = h.tempPath("full.db");
      const s = await openSqliteStore(path, { synchronous: "full" });
      await make(s, Widget, "a");
      await s.close();
      const r = await h.openPath(path);
      assert.equal((await r.objects.list(Widget)).length, 1);
    },
  },
  {
    name: "a database written by a newer schema is refused with SchemaVersionDowngradeError",
    async fn(h) {
      const path = h.tempPath("newer.db");
      const s = await h.openPath(path);
      await s.close();
      const db = new DatabaseSync(path);
      db.exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)");
      db.close();
      await assert.rejects(openSqliteStore(path), SchemaVersionDowngradeError);
    },
  },
  {
    name:
      "a database at schema version 3 migrates to 4: its rows are not stalled and stay listed as unsettled",
    async fn(h) {
      const path = h.tempPath("v3.db");
      const db = new DatabaseSync(path);
      db.exec("PRAGMA journal_mode = WAL");
      db.exec(`CREATE TABLE schema_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`);
      for (const m of migrations.filter((m) => m.version <= 3)) {
        db.exec(m.sql);
        db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, 0)")
          .run(m.version, m.name);
      }
      db.prepare(
        `INSERT INTO objects ("group", kind, name, spec, resource_version, created_at, updated_at)
         VALUES (?, ?, 'old', '{}', 1, 0, 0)`,
      ).run(Widget.group, Widget.kind);
      db.exec("UPDATE resource_version_seq SET value = 1");
      db.close();
      const s = await h.openPath(path);
      const [id] = await s.objects.listIds(Widget);
      assert.equal((await s.objects.getForReconcile(id)).stalledGeneration, undefined);
      assert.deepEqual(await s.objects.listUnsettledIds(Widget), [id]);
      assert.deepEqual(await s.objects.listIds(Widget, { excludeStalled: true }), [id]);
      await s.objects.setStalledGeneration({ ...Widget, id }, 1);
      assert.deepEqual(await s.objects.listUnsettledIds(Widget), []);
    },
  },
  {
    name: "a corrupt finalizers column fails the read with StoreError, not a raw error",
    async fn(h) {
      const path = h.tempPath("corrupt.db");
      const s = await h.openPath(path);
      const a = await make(s, Widget, "a");
      await s.close();
      const db = new DatabaseSync(path);
      db.prepare("UPDATE objects SET finalizers = 'not json' WHERE id = ?").run(a.id);
      db.close();
      const r = await h.openPath(path);
      await assert.rejects(r.objects.get(a.id), StoreError);
      await assert.rejects(r.objects.list(Widget), StoreError);
    },
  },
  {
    name: "close is idempotent and every later call rejects with StoreClosedError",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await Promise.all([s.close(), s.close()]);
      await s.close();
      const calls: Promise<unknown>[] = [
        s.objects.get(a.id),
        s.objects.create(Widget, { name: "b", spec: "{}" }),
        s.objects.list(Widget),
        s.conditions.set(a, [{ type: "Ready", status: "True" }]),
        s.events.list(a.id),
        s.edges.hasIncoming(a.id),
        s.objectWrites.maxVersion(Widget),
        s.getLatestResourceVersion(),
        s.reclaimSpace(10),
        s.within(() => Promise.resolve()),
      ];
      for (const call of calls) await assert.rejects(call, StoreClosedError);
    },
  },
  {
    name: "close lets the transaction in flight commit and refuses the write queued behind it",
    async fn(h) {
      const path = h.tempPath("closing.db");
      const s = await h.openPath(path);
      const release = Promise.withResolvers<void>();
      const entered = Promise.withResolvers<void>();
      const tx = s.within(async (t) => {
        entered.resolve();
        await release.promise;
        await make(t, Widget, "inside");
      });
      await entered.promise;
      const queued = s.objects.create(Widget, { name: "queued", spec: "{}" });
      const closing = s.close();
      release.resolve();
      await tx;
      await assert.rejects(queued, StoreClosedError);
      await closing;
      const r = await h.openPath(path);
      assert.deepEqual((await r.objects.list(Widget)).map((o) => o.name), ["inside"]);
    },
  },
  {
    name: "close through a transaction handle is refused",
    async fn(h) {
      const s = await h.open();
      await s.within(async (tx) => {
        await assert.rejects(tx.close(), BeehiveError);
      });
      await make(s, Widget, "still-open");
    },
  },
  {
    name: "reclaimSpace releases free pages after bulk deletes, never more than asked",
    async fn(h) {
      const s = await h.open();
      assert.equal(await s.reclaimSpace(0), 0);
      assert.equal(await s.reclaimSpace(-5), 0);
      const big = "x".repeat(4000);
      const ids: number[] = [];
      await s.within(async (tx) => {
        for (let i = 0; i < 400; i++) {
          ids.push((await make(tx, Widget, `o${i}`, { big })).id);
        }
      });
      assert.equal(await s.reclaimSpace(1000), 0, "nothing is free yet");
      await s.within(async (tx) => {
        for (const id of ids) await tx.objects.delete(id);
      });
      await s.objectWrites.sweep({ perKind: 1, maxAge: 0 });
      const first = await s.reclaimSpace(50);
      assert.ok(first > 0 && first <= 50, `released ${first}`);
      const rest = await s.reclaimSpace(100_000);
      assert.ok(rest > 0);
      assert.equal(await s.reclaimSpace(100_000), 0, "back under the floor");
      await assert.rejects(s.reclaimSpace(1.5), TypeError);
    },
  },
];
