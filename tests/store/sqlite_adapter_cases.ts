/**
 * SQLite-store cases: opening, identity, options, schema, close and space
 * reclaim. They inspect the database file with `node:sqlite` directly, so they
 * run only under the SQLite runners.
 *
 * @module
 */
import assert from "node:assert/strict";
import { closeSync, openSync, readdirSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { resolve } from "node:path";
import { DatabaseSync } from "node:sqlite";
import {
  BeehiveError,
  InvalidOptionError,
  NameTakenError,
  SchemaVersionDowngradeError,
  StoreClosedError,
  StoreError,
} from "../../src/model/errors.ts";
import type { LabelRequirement } from "../../src/store.ts";
import { openSqliteStore } from "../_sqlite_driver.ts";
import { migrations } from "../../store/sqlite/_schema.ts";
import { databaseAt } from "./_sqlite_at_version.ts";
import {
  type ContractCase,
  Gadget,
  make,
  ref,
  Widget,
  withFakeDate,
} from "../../testing/_contract/harness.ts";

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
            "kinds",
          ]
        ) {
          assert.ok(tables.includes(t), `missing table ${t}`);
        }
        assert.equal(
          db.prepare("SELECT MAX(version) AS v FROM schema_migrations").get()!.v,
          migrations[migrations.length - 1].version,
        );
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
      "a database at schema version 5 migrates to the kinds table (version 6), keeping its rows",
    async fn(h) {
      const path = h.tempPath("v5.db");
      const db = databaseAt(path, 5);
      db.prepare(
        `INSERT INTO objects (id, "group", kind, name, spec, resource_version, created_at, updated_at)
         VALUES (1, ?, ?, 'old', '{}', 1, 0, 0)`,
      ).run(Widget.group, Widget.kind);
      db.exec("UPDATE resource_version_seq SET value = 1, last_object_id = 1");
      db.close();
      const s = await h.openPath(path);
      assert.equal((await s.objects.get(1)).name, "old");
      assert.equal((await s.objects.create(Widget, { name: "new", spec: "{}" })).id, 2);
      assert.deepEqual(await s.kinds.list(), []);
      await s.kinds.put({
        ...Widget,
        plural: "widgets",
        singular: "widget",
        shortNames: [],
        namespaced: false,
        columns: "[]",
        specSchema: "{}",
        statusSchema: undefined,
      });
      assert.equal((await s.kinds.get(Widget))?.specSchema, "{}");
      await s.close();
      const check = new DatabaseSync(path);
      try {
        const versions = check.prepare("SELECT version FROM schema_migrations ORDER BY version")
          .all().map((r) => Number(r.version));
        assert.deepEqual(versions, migrations.map((m) => m.version));
      } finally {
        check.close();
      }
    },
  },
  {
    name:
      "a database at schema version 3 migrates to 4: its rows are not stalled and stay listed as unsettled",
    async fn(h) {
      const path = h.tempPath("v3.db");
      const db = databaseAt(path, 3);
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
    name:
      "a database at schema version 4 migrates to 5 keeping every row, its foreign keys, and ids above every old one, deleted or not",
    async fn(h) {
      const path = h.tempPath("v4.db");
      const db = databaseAt(path, 4, { foreignKeys: true });
      const object = db.prepare(
        `INSERT INTO objects ("group", kind, name, spec, status, resource_version, finalizers,
           stalled_generation, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, 10, 20) RETURNING id`,
      );
      const put = (name: string, rv: number, stalled: number | null = null) =>
        Number(
          object.get(
            Widget.group,
            Widget.kind,
            name,
            `{"n":"${name}"}`,
            '{"ok":1}',
            rv,
            "[]",
            stalled,
          )!
            .id,
        );
      const owner = put("owner", 1);
      const child = put("child", 2, 1);
      const doomed = put("doomed", 3);
      db.exec(`INSERT INTO conditions (object_id, type, status, open_epoch, transitioned_at,
          updated_at) VALUES (${child}, 'Ready', 'True', 1, 5, 5);
        INSERT INTO edges (from_id, to_id, relation) VALUES
          (${child}, ${owner}, 'owned_by'), (${child}, ${owner}, 'depends_on');
        INSERT INTO dependency_watermarks (object_id, reconciled_against, reconciled_at)
          VALUES (${child}, 1, 5);
        INSERT INTO events (object_id, type, reason, first_at, last_at, resource_version)
          VALUES (${child}, 'Normal', 'Kept', 5, 5, 4), (${doomed}, 'Normal', 'Gone', 6, 6, 5);
        INSERT INTO object_writes (resource_version, object_id, "group", kind, op, written_at)
          VALUES (1, ${owner}, '${Widget.group}', '${Widget.kind}', 1, 10);
        UPDATE resource_version_seq SET value = 5;`);
      const eventMax = Number(db.prepare("SELECT MAX(id) AS m FROM events").get()!.m);
      // The highest object and event ids go: only sqlite_sequence still remembers them.
      db.prepare("DELETE FROM objects WHERE id = ?").run(doomed);
      db.close();

      const s = await h.openPath(path);
      const rows = await s.objects.list(Widget);
      assert.deepEqual(rows.map((o) => [o.id, o.name, o.spec, o.status, o.resourceVersion]), [
        [owner, "owner", '{"n":"owner"}', '{"ok":1}', 1],
        [child, "child", '{"n":"child"}', '{"ok":1}', 2],
      ]);
      assert.equal((await s.objects.getForReconcile(child)).stalledGeneration, 1);
      assert.deepEqual((await s.objects.get(child)).conditions.map((c) => c.type), ["Ready"]);
      for (const relation of ["owned_by", "depends_on"] as const) {
        const from = await s.objects.listByIncomingEdge(Widget, { toId: owner, relation });
        assert.deepEqual(from.map((o) => o.id), [child]);
      }
      assert.deepEqual((await s.events.list(child)).map((e) => e.reason), ["Kept"]);
      assert.deepEqual(
        (await s.objectWrites.listSince(Widget, { after: 0, limit: 9 })).writes
          .map((w) => w.id),
        [owner],
      );
      assert.equal(await s.getLatestResourceVersion(), 5);
      const next = await make(s, Widget, "next");
      assert.ok(next.id > doomed, `id ${next.id} reused at or below the deleted ${doomed}`);
      await s.events.add(next, { type: "Normal", reason: "New" });
      const [added] = await s.events.list(next.id);
      assert.ok(added.id > eventMax, `event id ${added.id} reused at or below ${eventMax}`);
      // ON DELETE RESTRICT still guards the owner; CASCADE still takes the child's rows.
      await assert.rejects(s.objects.delete(owner), StoreError);
      await s.objects.delete(child);
      await s.objects.delete(owner);
      await s.close();
      const check = new DatabaseSync(path);
      try {
        for (const table of ["conditions", "edges", "dependency_watermarks", "events"]) {
          const n = check.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE object_id IN (?, ?)`
            .replace("object_id", table === "edges" ? "from_id" : "object_id")).get(child, owner)!
            .n;
          assert.equal(n, 0, `${table} kept rows of deleted objects`);
        }
        assert.deepEqual(check.prepare("PRAGMA foreign_key_check").all(), []);
        assert.equal(check.prepare("PRAGMA integrity_check").get()!.integrity_check, "ok");
        assert.deepEqual(
          check.prepare("SELECT name FROM sqlite_sequence WHERE name IN ('objects', 'events')")
            .all(),
          [],
        );
      } finally {
        check.close();
      }
    },
  },
  {
    name:
      "schema 5 has no version or write-age index and no AUTOINCREMENT, and lists a kind in id order from its kind index",
    async fn(h) {
      const path = h.tempPath("lean.db");
      const s = await h.openPath(path);
      const ids = [];
      for (const name of ["c", "a", "b"]) ids.push((await make(s, Widget, name)).id);
      await make(s, Gadget, "other");
      assert.deepEqual((await s.objects.list(Widget)).map((o) => o.id), ids);
      assert.deepEqual(
        (await s.objects.list(Widget, { after: ids[0], limit: 1 })).map((o) => o.id),
        [
          ids[1],
        ],
      );
      assert.deepEqual(await s.objects.listIds(Widget), ids);
      const db = new DatabaseSync(path);
      try {
        const indexes = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index'").all()
          .map((r) => r.name);
        for (const gone of ["idx_objects_rv", "idx_object_writes_age"]) {
          assert.ok(!indexes.includes(gone), `${gone} is still there`);
        }
        const plan = (sql: string) =>
          db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all().map((r) => String(r.detail)).join("; ");
        // A page of a kind reads the page, not the kind: no sort over the kind's rows.
        assert.doesNotMatch(
          plan(`SELECT * FROM objects WHERE "group" = 'g' AND kind = 'k' AND id > 0
            ORDER BY id LIMIT 10`),
          /TEMP B-TREE/,
        );
        const sql = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table'").all()
          .map((r) => String(r.sql)).join("\n");
        assert.doesNotMatch(sql, /AUTOINCREMENT/);
      } finally {
        db.close();
      }
    },
  },
  {
    name:
      "a database at schema version 6 migrates to 7 (labels): its rows read with no labels and take new ones",
    async fn(h) {
      const path = h.tempPath("v6.db");
      const db = databaseAt(path, 6);
      db.exec(`INSERT INTO objects (id, "group", kind, name, spec, resource_version, created_at,
          updated_at) VALUES (1, '${Widget.group}', '${Widget.kind}', 'old', '{}', 1, 10, 20);
        UPDATE resource_version_seq SET value = 1, last_object_id = 1;`);
      db.close();
      const s = await h.openPath(path);
      const old = await s.objects.get(1);
      assert.deepEqual([old.name, old.labels, old.annotations], ["old", {}, {}]);
      await s.objects.updateMetadata(ref(Widget, 1), { labels: { app: "web" } });
      assert.deepEqual(
        (await s.objects.list(Widget, {
          labelSelector: [{ key: "app", operator: "In", values: ["web"] }],
        })).map((o) => o.name),
        ["old"],
      );
      await s.close();
    },
  },
  {
    name:
      "a database at schema version 7 migrates to 8 (namespaces): its rows, labels, edges and log keep, in the cluster scope",
    async fn(h) {
      const path = h.tempPath("v7.db");
      const db = databaseAt(path, 7);
      db.exec(`INSERT INTO objects (id, "group", kind, name, spec, resource_version, created_at,
          updated_at, labels) VALUES
          (1, '${Widget.group}', '${Widget.kind}', 'old', '{}', 1, 10, 20, '{"app":"web"}'),
          (2, '${Widget.group}', '${Widget.kind}', 'kid', '{}', 2, 10, 20, '{}');
        INSERT INTO object_labels ("group", kind, key, value, object_id)
          VALUES ('${Widget.group}', '${Widget.kind}', 'app', 'web', 1);
        INSERT INTO edges (from_id, to_id, relation) VALUES (2, 1, 'owned_by');
        INSERT INTO object_writes (resource_version, object_id, "group", kind, op, written_at)
          VALUES (1, 1, '${Widget.group}', '${Widget.kind}', 1, 10),
                 (2, 2, '${Widget.group}', '${Widget.kind}', 1, 10);
        UPDATE resource_version_seq SET value = 2, last_object_id = 2;`);
      db.close();
      const s = await h.openPath(path);
      const old = await s.objects.getByName({ ...Widget, name: "old" });
      assert.deepEqual([old.id, old.namespace, old.labels], [1, "", { app: "web" }]);
      assert.deepEqual(
        (await s.objects.list(Widget, {
          namespace: "",
          labelSelector: [{ key: "app", operator: "In", values: ["web"] }],
        })).map((o) => o.name),
        ["old"],
      );
      assert.deepEqual((await s.edges.listOutgoing(2, "owned_by")).map((r) => r.id), [1]);
      assert.equal(
        (await s.objectWrites.listSince(Widget, { after: 0, limit: 10 })).writes.length,
        2,
      );
      const mine = await s.objects.create(Widget, { name: "old", spec: "{}", namespace: "team-a" });
      assert.ok(mine.id > 2);
      await assert.rejects(s.objects.create(Widget, { name: "old", spec: "{}" }), NameTakenError);
      await s.close();
    },
  },
  {
    name:
      "a database at schema version 8 migrates to 9 (label sets): objects with the same labels in any key order share a set, and selectors read the same",
    async fn(h) {
      const path = h.tempPath("v8.db");
      const db = databaseAt(path, 8);
      const labelled: [number, string, string][] = [
        [1, "a", '{"tier":"front","app":"web"}'],
        [2, "b", '{"app":"web","tier":"front"}'],
        [3, "c", '{"app":"db"}'],
        [4, "d", "{}"],
      ];
      for (const [id, name, labels] of labelled) {
        db.prepare(`INSERT INTO objects (id, "group", kind, name, spec, resource_version,
            created_at, updated_at, labels) VALUES (?, ?, ?, ?, '{}', ?, 10, 20, ?)`)
          .run(id, Widget.group, Widget.kind, name, id, labels);
        for (const [key, value] of Object.entries(JSON.parse(labels) as Record<string, string>)) {
          db.prepare(`INSERT INTO object_labels ("group", kind, key, value, object_id)
              VALUES (?, ?, ?, ?, ?)`).run(Widget.group, Widget.kind, key, value, id);
        }
      }
      db.exec("UPDATE resource_version_seq SET value = 4, last_object_id = 4");
      db.close();
      const s = await h.openPath(path);
      const check = new DatabaseSync(path);
      try {
        assert.deepEqual(
          check.prepare("SELECT labels FROM label_sets ORDER BY labels").all()
            .map((r) => String(r.labels)),
          ['{"app":"db"}', '{"app":"web","tier":"front"}'],
        );
        assert.deepEqual(
          check.prepare("SELECT name FROM sqlite_master WHERE name = 'object_labels'").all(),
          [],
        );
      } finally {
        check.close();
      }
      const named = async (labelSelector: LabelRequirement[]) =>
        (await s.objects.list(Widget, { labelSelector })).map((o) => o.name);
      assert.deepEqual(await named([{ key: "app", operator: "In", values: ["web"] }]), [
        "a",
        "b",
      ]);
      assert.deepEqual(await named([{ key: "app", operator: "Exists", values: [] }]), [
        "a",
        "b",
        "c",
      ]);
      assert.deepEqual(await named([{ key: "app", operator: "DoesNotExist", values: [] }]), [
        "d",
      ]);
      await s.close();
    },
  },
  {
    name:
      "a namespace's page reads the namespace index in id order: no sort, no other namespace's rows",
    async fn(h) {
      const path = h.tempPath("ns-plan.db");
      const s = await h.openPath(path);
      await s.objects.create(Widget, { name: "a", spec: "{}", namespace: "team-a" });
      await s.close();
      const db = new DatabaseSync(path);
      try {
        const plan = db.prepare(`EXPLAIN QUERY PLAN SELECT * FROM objects
            WHERE "group" = 'g' AND kind = 'k' AND namespace = ? AND namespace <> '' AND id > 0
            ORDER BY id LIMIT 10`).all("team-a").map((r) => String(r.detail)).join("; ");
        assert.match(
          plan,
          /idx_objects_namespace \(group=\? AND kind=\? AND namespace=\? AND rowid>\?\)/,
        );
        assert.doesNotMatch(plan, /TEMP B-TREE/);
      } finally {
        db.close();
      }
    },
  },
  {
    name: "listNamespaces reads the namespace index, one probe per namespace, never the rows",
    async fn(h) {
      const path = h.tempPath("ns-list-plan.db");
      const s = await h.openPath(path);
      await s.objects.create(Widget, { name: "a", spec: "{}", namespace: "team-a" });
      await s.close();
      const db = new DatabaseSync(path);
      try {
        const plan = db.prepare(`EXPLAIN QUERY PLAN SELECT MIN(namespace) FROM objects
            WHERE "group" = 'g' AND kind = 'k' AND namespace > 'team-a' AND namespace <> ''`).all()
          .map((r) => String(r.detail)).join("; ");
        assert.match(
          plan,
          /COVERING INDEX idx_objects_namespace \(group=\? AND kind=\? AND namespace>\?\)/,
        );
      } finally {
        db.close();
      }
    },
  },
  {
    name:
      "a selector list reads the label-set index, never the kind's rows, when a requirement names a label",
    async fn(h) {
      const path = h.tempPath("plan.db");
      const s = await h.openPath(path);
      await s.objects.create(Widget, { name: "a", spec: "{}", labels: { app: "web" } });
      await s.close();
      const db = new DatabaseSync(path);
      try {
        const plan = (sql: string) =>
          db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all().map((r) => String(r.detail)).join("; ");
        const selected = plan(`SELECT * FROM objects WHERE label_set IN (SELECT set_id FROM
            label_set_entries WHERE "group" = 'g' AND kind = 'k' AND key = 'app' AND value = 'web')
          AND json_extract(objects.labels, '$."legacy"') IS NULL AND id > 0
          ORDER BY id LIMIT 10`);
        assert.match(
          selected,
          /SEARCH label_set_entries USING PRIMARY KEY \(group=\? AND kind=\? AND key=\? AND value=\?\)/,
        );
        assert.match(selected, /idx_objects_label_set \(label_set=\?/);
        assert.doesNotMatch(selected, /SCAN objects/);
        assert.doesNotMatch(selected, /idx_objects_kind/);
      } finally {
        db.close();
      }
    },
  },
  {
    name:
      "objects with the same labels share one label set, in any key order; a set no object uses is removed",
    async fn(h) {
      const path = h.tempPath("sets.db");
      // Read with another SQLite library only while the store is closed: two copies of the
      // library in one process do not share their file locks.
      const sets = () => {
        const db = new DatabaseSync(path);
        try {
          return db.prepare(`SELECT labels FROM label_sets ORDER BY labels`).all()
            .map((r) => String(r.labels));
        } finally {
          db.close();
        }
      };
      let s = await h.openPath(path);
      const a = await s.objects.create(Widget, {
        name: "a",
        spec: "{}",
        labels: { app: "web", tier: "front" },
      });
      const b = await s.objects.create(Widget, {
        name: "b",
        spec: "{}",
        labels: { tier: "front", app: "web" },
      });
      await s.objects.create(Widget, { name: "c", spec: "{}", labels: { app: "db" } });
      await s.objects.create(Widget, { name: "d", spec: "{}" });
      await s.close();
      assert.deepEqual(sets(), ['{"app":"db"}', '{"app":"web","tier":"front"}']);
      s = await h.openPath(path);
      await s.objects.updateMetadata(ref(Widget, a.id), { labels: { tier: "back" } });
      await s.close();
      assert.deepEqual(sets(), [
        '{"app":"db"}',
        '{"app":"web","tier":"back"}',
        '{"app":"web","tier":"front"}',
      ]);
      s = await h.openPath(path);
      await s.objects.delete(b.id);
      const web = await s.objects.list(Widget, {
        labelSelector: [{ key: "app", operator: "In", values: ["web"] }],
      });
      assert.deepEqual(web.map((o) => o.name), ["a"]);
      assert.deepEqual(
        (await s.objects.list(Widget, {
          labelSelector: [{ key: "tier", operator: "Exists", values: [] }],
        })).map((o) => o.name),
        ["a"],
      );
      await s.close();
      assert.deepEqual(sets(), ['{"app":"db"}', '{"app":"web","tier":"back"}']);
    },
  },
  {
    name: "two opens of one file taking turns never hand out the same id, even a deleted maximum",
    async fn(h) {
      const path = h.tempPath("two-opens.db");
      const a = await h.openPath(path);
      const b = await h.openPath(path);
      const ids: number[] = [];
      for (let i = 0; i < 3; i++) {
        ids.push((await make(a, Widget, `a${i}`)).id);
        const top = await make(b, Widget, `b${i}`);
        ids.push(top.id);
        // Each open's next create sees the other's commits, deletes included.
        await b.objects.delete(top.id);
      }
      assert.deepEqual([...ids].sort((x, y) => x - y), ids, "ids rise in commit order");
      assert.equal(new Set(ids).size, ids.length);
    },
  },
  {
    name: "an age sweep without a written_at index removes exactly the log's old prefix",
    async fn(h) {
      const s = await h.open();
      await withFakeDate(async (clock) => {
        const a = await make(s, Widget, "a");
        for (let i = 0; i < 300; i++) {
          await s.objects.updateStatus(a, { status: `{"i":${i}}` });
        }
        clock.tick(2 * 60_000);
        await s.objects.updateStatus(a, { status: '{"i":"fresh"}' });
        const young = await s.getLatestResourceVersion();
        assert.equal(await s.objectWrites.sweep({ perKind: 0, maxAge: 60_000 }), 301);
        const left = await s.objectWrites.listSince(Widget, { after: 0, limit: 10 });
        assert.deepEqual(left.writes.map((w) => w.resourceVersion), [young]);
        assert.equal(left.trimmedThrough, young - 1);
        assert.equal(await s.objectWrites.sweep({ perKind: 0, maxAge: 60_000 }), 0);
      });
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
  {
    name:
      "SqliteStore.check finds a dangling edge, a version above the counter and a damaged index page",
    async fn(h) {
      const path = h.tempPath("damaged.db");
      const s = await h.openPath(path);
      const objects: { id: number }[] = [];
      for (let i = 0; i < 200; i++) objects.push(await make(s, Widget, `w${i}`));
      await s.edges.add({ fromId: objects[1].id, toId: objects[0].id, relation: "depends_on" });
      await s.close();
      const raw = new DatabaseSync(path);
      raw.exec("PRAGMA foreign_keys = OFF");
      raw.exec(`DELETE FROM objects WHERE id = ${objects[0].id}`);
      raw.exec("UPDATE resource_version_seq SET value = value - 5");
      const root = Number(
        raw.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'idx_objects_kind'").get()!
          .rootpage,
      );
      const pageSize = Number(raw.prepare("PRAGMA page_size").get()!.page_size);
      raw.close();
      // Zeroes the index's root page: the table's rows no longer match it.
      const fd = openSync(path, "r+");
      writeSync(fd, new Uint8Array(pageSize), 0, pageSize, (root - 1) * pageSize);
      closeSync(fd);

      const store = await openSqliteStore(path, { readOnly: true });
      try {
        const report = await store.check();
        assert.equal(report.ok, false);
        const checks = new Set(report.findings.map((f) => f.check));
        for (const c of ["integrity_check", "dangling edges", "versions under the counter"]) {
          assert.ok(checks.has(c), `${c}: ${JSON.stringify(report.findings)}`);
        }
        assert.ok(
          report.findings.some((f) => f.detail.includes(String(objects[1].id))),
          "the dependent's id is named",
        );
        for (const f of report.findings) assert.ok(f.detail.length < 500, f.detail);
      } finally {
        await store.close();
      }
    },
  },
];
