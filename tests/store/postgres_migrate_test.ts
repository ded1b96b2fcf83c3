/**
 * A PostgreSQL schema written by an earlier build is brought forward on open:
 * one at version 5 gains the kinds table (version 6) and labels (version 7),
 * and keeps its rows, which read with no labels or annotations; one at
 * version 7 gains namespaces (version 8), its rows in the cluster scope.
 *
 * @module
 */
import assert from "node:assert/strict";
import type pg from "pg";
import { migrations } from "../../store/postgres/_schema.ts";
import { NameTakenError } from "../../src/model/errors.ts";
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
