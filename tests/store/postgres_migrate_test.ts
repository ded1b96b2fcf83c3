/**
 * A PostgreSQL schema written by an earlier build is brought forward on open:
 * one at version 5 gains the kinds table (version 6) and labels (version 7),
 * and keeps its rows, which read with no labels or annotations.
 *
 * @module
 */
import assert from "node:assert/strict";
import { migrations } from "../../store/postgres/_schema.ts";
import { test } from "../_test.ts";
import { openPostgresStore, withSchemaAt } from "../_postgres.ts";

const Widget = { group: "test.beehive.dev", kind: "Widget" };

test("openPostgresStore brings a version-5 schema forward to the kinds table, keeping its rows", async () => {
  await withSchemaAt(5, async (client, schema) => {
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
    const versions = await client.query("SELECT version FROM schema_migrations ORDER BY version");
    assert.deepEqual(versions.rows.map((r) => Number(r.version)), migrations.map((m) => m.version));
  });
});
