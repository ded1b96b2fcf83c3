/**
 * `openPostgresStore(url, { readOnly: true })`, what is PostgreSQL's own (the
 * store contract's `read_only` cases hold both stores to the rest): no new
 * epoch in `store_epoch`, and a schema that holds no beehive store is refused
 * and not created.
 *
 * @module
 */
import assert from "node:assert/strict";
import pg from "pg";
import { StoreError } from "../../src/model/errors.ts";
import { test } from "../_test.ts";
import { freshSchema, openPostgresStore, postgresUrl } from "../_postgres.ts";

const Widget = { group: "test.beehive.dev", kind: "Widget" };

/** Runs `sql` on a connection of its own. */
async function query(sql: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

test("openPostgresStore readOnly: reads the store and starts no new epoch, even when refusing a write", async () => {
  const schema = freshSchema();
  const writer = await openPostgresStore({ schema });
  const w = await writer.objects.create(Widget, { name: "w", spec: "{}" });
  const epoch = async () =>
    Number((await query(`SELECT value FROM "${schema}".store_epoch`)).rows[0].value);
  const before = await epoch();
  const store = await openPostgresStore({ schema, readOnly: true });
  try {
    assert.equal((await store.objects.getByName({ ...Widget, name: "w" })).id, w.id);
    assert.equal(await epoch(), before);
    await assert.rejects(store.objects.create(Widget, { name: "x", spec: "{}" }), StoreError);
    assert.equal(await epoch(), before);
    assert.equal((await writer.objects.list(Widget)).length, 1);
  } finally {
    await store.close();
    await writer.close();
  }
});

test("openPostgresStore readOnly: a schema holding no beehive store is refused and not created", async () => {
  const schema = freshSchema();
  await assert.rejects(
    openPostgresStore({ schema, readOnly: true }),
    (e) => e instanceof StoreError && /holds no beehive store/.test(e.message),
  );
  const { rows } = await query(`SELECT to_regnamespace('${schema}') IS NULL AS missing`);
  assert.equal(rows[0].missing, true);
});
