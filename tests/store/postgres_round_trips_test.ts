/**
 * Round trips the PostgreSQL store spends on reads the engine makes after
 * every commit, counted on the client: the store-wide write log's page and
 * its horizon come in one statement (one snapshot), not a snapshot
 * transaction of four round trips. Needs the test database
 * (`BEEHIVE_TEST_POSTGRES_URL`), under Deno and Node 22.
 *
 * @module
 */
import assert from "node:assert/strict";
import pg from "pg";
import { openPostgresStore } from "../_postgres.ts";
import { test } from "../_test.ts";

const Widget = { group: "test.beehive.dev", kind: "Widget" };

/** Runs `fn` counting the queries every `pg` client sends meanwhile (those `matching`, when given). */
async function counted<T>(
  fn: () => Promise<T>,
  matching?: RegExp,
): Promise<{ value: T; queries: number }> {
  let queries = 0;
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    const text = typeof args[0] === "string" ? args[0] : (args[0] as { text?: string }).text;
    if (matching === undefined || (text !== undefined && matching.test(text))) queries++;
    return original.apply(this, args);
  };
  try {
    return { value: await fn(), queries };
  } finally {
    proto.query = original;
  }
}

test("PostgreSQL objectWrites.listSinceAll reads a page and its horizon in one round trip", async () => {
  const store = await openPostgresStore();
  try {
    await store.objects.create(Widget, { name: "a", spec: "{}" });
    await store.objects.create(Widget, { name: "b", spec: "{}" });
    await store.objectWrites.sweep({ perKind: 1, maxAge: 0 });
    const { value, queries } = await counted(() =>
      store.objectWrites.listSinceAll({ after: 0, limit: 10 })
    );
    assert.equal(queries, 1);
    assert.deepEqual(value.writes.map((w) => w.op), ["create"]);
    assert.equal(value.trimmedThrough, value.writes[0].resourceVersion - 1);
  } finally {
    await store.close();
  }
});

test("PostgreSQL objects.updateSpec writes a new spec and new annotations in one UPDATE", async () => {
  const store = await openPostgresStore();
  try {
    const made = await store.objects.create(Widget, { name: "a", spec: '{"v":1}' });
    const ref = { ...Widget, id: made.id };
    const { value: result, queries: updates } = await counted(
      () => store.objects.updateSpec(ref, { spec: '{"v":2}', annotations: { note: "hi" } }),
      /^\s*UPDATE objects\b/,
    );
    assert.equal(updates, 1);
    assert.equal(result.specChanged, true);
    const after = await store.objects.get(made.id);
    assert.equal(after.spec, '{"v":2}');
    assert.equal(after.generation, 2);
    assert.deepEqual(after.annotations, { note: "hi" });
    assert.equal(after.resourceVersion, result.object.resourceVersion);
  } finally {
    await store.close();
  }
});
