/**
 * A PostgreSQL schema written by an earlier build is brought forward on open:
 * one at version 5 gains the kinds table (version 6) and labels (version 7),
 * and keeps its rows, which read with no labels or annotations; one at
 * version 7 gains namespaces (version 8), its rows in the cluster scope; one at
 * version 8 gains label sets (version 9).
 *
 * @module
 */
import assert from "node:assert/strict";
import type pg from "pg";
import { migrations } from "../../store/postgres/_schema.ts";
import { NameTakenError } from "../../src/model/errors.ts";
import { parseLabelSelector } from "../../src/model/label_selector.ts";
import { test } from "../_test.ts";
import { openPostgresStore, withSchemaAt } from "../_postgres.ts";

const Widget = { group: "test.beehive.dev", kind: "Widget" };

/**
 * Runs `fn` on a fresh schema built by the migrations up to `version`, then
 * checks every migration was recorded.
 */
function atVersion(
  version: number,
  fn: (client: pg.Client, schema: string) => Promise<void>,
): Promise<void> {
  return withSchemaAt(version, async (client, schema) => {
    await fn(client, schema);
    const versions = await client.query("SELECT version FROM schema_migrations ORDER BY version");
    assert.deepEqual(versions.rows.map((r) => Number(r.version)), migrations.map((m) => m.version));
  });
}

test("openPostgresStore brings a version-5 schema forward to the kinds table, keeping its rows", async () => {
  await atVersion(5, async (client, schema) => {
    const { rows } = await client.query(
      `INSERT INTO objects ("group", kind, name, spec, resource_version, created_at, updated_at)
       VALUES ($1, $2, 'old', '{}', 1, 0, 0) RETURNING id`,
      [Widget.group, Widget.kind],
    );
    const id = Number(rows[0].id);
    const store = await openPostgresStore({ schema });
    try {
      const old = await store.objects.get(id);
      assert.deepEqual([old.name, old.labels, old.annotations], ["old", {}, {}]);
      await store.objects.updateMetadata({ ...Widget, id }, { labels: { app: "web" } });
      const selected = await store.objects.list(Widget, {
        labelSelector: [{ key: "app", operator: "In", values: ["web"] }],
      });
      assert.deepEqual(selected.map((o) => o.id), [id]);
      assert.deepEqual(await store.kinds.list(), []);
      await store.kinds.put({
        ...Widget,
        plural: "widgets",
        singular: "widget",
        shortNames: ["wd"],
        namespaced: false,
        columns: "[]",
        specSchema: '{"type":"object"}',
        statusSchema: undefined,
      });
      assert.deepEqual((await store.kinds.get(Widget))?.shortNames, ["wd"]);
    } finally {
      await store.close();
    }
  });
});

test("openPostgresStore brings a version-7 schema forward to namespaces: rows keep, in the cluster scope, and a name is unique per namespace", async () => {
  await atVersion(7, async (client, schema) => {
    const { rows } = await client.query(
      `INSERT INTO objects ("group", kind, name, spec, resource_version, created_at, updated_at,
         labels) VALUES ($1, $2, 'old', '{}', 1, 0, 0, '{"app":"web"}') RETURNING id`,
      [Widget.group, Widget.kind],
    );
    const id = Number(rows[0].id);
    await client.query(
      `INSERT INTO object_labels ("group", kind, key, value, object_id)
       VALUES ($1, $2, 'app', 'web', $3)`,
      [Widget.group, Widget.kind, id],
    );
    const store = await openPostgresStore({ schema });
    try {
      const old = await store.objects.getByName({ ...Widget, name: "old" });
      assert.deepEqual([old.id, old.namespace, old.labels], [id, "", { app: "web" }]);
      const selected = await store.objects.list(Widget, {
        namespace: "",
        labelSelector: [{ key: "app", operator: "In", values: ["web"] }],
      });
      assert.deepEqual(selected.map((o) => o.id), [id]);
      const mine = await store.objects.create(Widget, {
        name: "old",
        spec: "{}",
        namespace: "team-a",
      });
      assert.equal(mine.namespace, "team-a");
      await assert.rejects(
        store.objects.create(Widget, { name: "old", spec: "{}" }),
        NameTakenError,
      );
    } finally {
      await store.close();
    }
  });
});

test("openPostgresStore brings a version-8 schema forward to label sets: objects with the same labels in any key order share a set, and selectors read the same", async () => {
  await atVersion(8, async (client, schema) => {
    const rows: Record<string, number> = {};
    for (
      const [name, labels] of [
        ["a", '{"tier":"front","app":"web"}'],
        ["b", '{"app":"web","tier":"front"}'],
        ["c", '{"app":"db"}'],
        ["d", "{}"],
      ]
    ) {
      const { rows: [row] } = await client.query(
        `INSERT INTO objects ("group", kind, name, spec, resource_version, created_at, updated_at,
           labels) VALUES ($1, $2, $3, '{}', 1, 0, 0, $4) RETURNING id`,
        [Widget.group, Widget.kind, name, labels],
      );
      rows[name] = Number(row.id);
      for (const [key, value] of Object.entries(JSON.parse(labels) as Record<string, string>)) {
        await client.query(
          `INSERT INTO object_labels ("group", kind, key, value, object_id)
           VALUES ($1, $2, $3, $4, $5)`,
          [Widget.group, Widget.kind, key, value, row.id],
        );
      }
    }
    const store = await openPostgresStore({ schema });
    try {
      const sets = await client.query(`SELECT labels FROM label_sets ORDER BY labels COLLATE "C"`);
      assert.deepEqual(sets.rows.map((r) => r.labels), [
        '{"app":"db"}',
        '{"app":"web","tier":"front"}',
      ]);
      const named = async (selector: string) =>
        (await store.objects.list(Widget, {
          labelSelector: parseLabelSelector(selector)!,
        })).map((o) => o.name);
      assert.deepEqual(await named("app=web"), ["a", "b"]);
      assert.deepEqual(await named("app"), ["a", "b", "c"]);
      assert.deepEqual(await named("!app"), ["d"]);
      // A create with labels the kind already carries finds their set.
      await store.objects.create(Widget, {
        name: "e",
        spec: "{}",
        labels: { tier: "front", app: "web" },
      });
      assert.equal((await client.query(`SELECT count(*) AS n FROM label_sets`)).rows[0].n, "2");
      assert.deepEqual(await named("tier=front"), ["a", "b", "e"]);
      // The last object of a set moving away or going removes the set.
      await store.objects.updateMetadata({ ...Widget, id: rows.c }, { labels: { app: "web" } });
      await store.objects.delete(rows.d);
      const left = await client.query(`SELECT labels FROM label_sets ORDER BY labels COLLATE "C"`);
      assert.deepEqual(left.rows.map((r) => r.labels), [
        '{"app":"web","tier":"front"}',
        '{"app":"web"}',
      ]);
      assert.deepEqual(await named("app=web"), ["a", "b", "c", "e"]);
      assert.deepEqual(await named("app=db"), []);
    } finally {
      await store.close();
    }
  });
});
