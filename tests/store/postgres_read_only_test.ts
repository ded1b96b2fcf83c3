/**
 * `openPostgresStore(url, { readOnly: true })`: an open that writes nothing —
 * no migration, no open epoch, every session read-only — refuses every write
 * and a schema that holds no beehive store, and reads liveness conditions as
 * the store's latest writable open does, learning of a new one from its
 * commits.
 *
 * @module
 */
import assert from "node:assert/strict";
import pg from "pg";
import { StoreError } from "../../src/model/errors.ts";
import type { Store } from "../../src/store.ts";
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

/** Resolves once `store` hears another open's commit. */
function nextCommit(store: Store): Promise<void> {
  const { promise, resolve } = Promise.withResolvers<void>();
  const off = store.watchCommits(() => {
    off();
    resolve();
  });
  return promise;
}

test("openPostgresStore readOnly: reads the store, starts no new epoch, and refuses every write", async () => {
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
    const readOnly = (error: unknown) =>
      error instanceof StoreError && /opened read-only/.test(error.message);
    await assert.rejects(store.objects.create(Widget, { name: "x", spec: "{}" }), readOnly);
    await assert.rejects(store.conditions.set(w, [{ type: "A", status: "True" }]), readOnly);
    await assert.rejects(store.within(() => Promise.resolve(1)), readOnly);
    await assert.rejects(
      store.leases.acquire({ name: "l", holder: "h", duration: 1000 }),
      readOnly,
    );
    await assert.rejects(store.leases.hold("beehive", "h"), readOnly);
    await assert.rejects(store.reclaimSpace(10), readOnly);
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

test("openPostgresStore readOnly: liveness reads as in the latest writable open, which it learns of from its commits", async () => {
  const schema = freshSchema();
  const live = await openPostgresStore({ schema });
  let observer: Store | undefined;
  let restarted: Store | undefined;
  try {
    const w = await live.objects.create(Widget, { name: "w", spec: "{}" });
    await live.conditions.set(w, [{ type: "Connected", status: "True", liveness: true }]);
    const status = async (s: Store) => {
      const [c] = (await s.objects.get(w.id)).conditions;
      return c.unconfirmed ? "Unknown" : c.status;
    };
    observer = await openPostgresStore({ schema, readOnly: true });
    assert.equal(await status(observer), "True");
    await live.close();
    restarted = await openPostgresStore({ schema });
    assert.equal(await status(restarted), "Unknown");
    // The observer learns of the new open from its first commit.
    const heard = nextCommit(observer);
    await restarted.objects.create(Widget, { name: "after-restart", spec: "{}" });
    await heard;
    assert.equal(await status(observer), "Unknown");
    const confirmed = nextCommit(observer);
    await restarted.conditions.set(w, [{ type: "Connected", status: "True", liveness: true }]);
    await confirmed;
    assert.equal(await status(observer), "True");
  } finally {
    await observer?.close();
    await restarted?.close();
    await live.close();
  }
});
