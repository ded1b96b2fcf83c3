/**
 * Write transactions of single writes begun on a guess of the committed
 * counter (PostgreSQL): the statements go out behind the counter lock
 * without waiting for its answer, a guess that missed runs the writes again
 * above the counter (never rejecting one for what the guess caused), and a
 * `within` transaction always begins exactly. Needs the test database
 * (`BEEHIVE_TEST_POSTGRES_URL`), under Deno and Node 22.
 *
 * @module
 */
import assert from "node:assert/strict";
import pg from "pg";
import { NameTakenError } from "../../src/model/errors.ts";
import type { Store } from "../../src/store.ts";
import { test } from "../_test.ts";
import { watched } from "./_pg_sends.ts";
import { freshSchema, openPostgresStore, postgresUrl } from "../_postgres.ts";

const Widget = { group: "test.beehive.dev", kind: "Widget" };

/**
 * Commits one write-log entry above the counter from outside the store, as
 * another open would, but announcing nothing: the store's next guess of the
 * counter is stale, and the version it would draw first is taken.
 */
async function commitUnannounced(schema: string): Promise<number> {
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  try {
    await client.query(`SET search_path TO "${schema}"`);
    await client.query("BEGIN");
    const { rows } = await client.query(
      "SELECT value FROM resource_version_seq WHERE id = 1 FOR UPDATE",
    );
    const next = Number(rows[0].value) + 1;
    await client.query(
      `INSERT INTO object_writes (resource_version, object_id, "group", kind, op, written_at)
       VALUES ($1, 0, 'elsewhere.test', 'Gadget', 1, 0)`,
      [next],
    );
    await client.query("UPDATE resource_version_seq SET value = $1 WHERE id = 1", [next]);
    await client.query("COMMIT");
    return next;
  } finally {
    await client.end();
  }
}

async function withStore(fn: (store: Store, schema: string) => Promise<void>): Promise<void> {
  const schema = freshSchema();
  const store = await openPostgresStore({ schema });
  try {
    // The first write learns the counter (a fresh open may not guess it yet).
    await store.objects.create(Widget, { name: "first", spec: "{}" });
    await fn(store, schema);
  } finally {
    await store.close();
  }
}

test("PostgreSQL write: a single write's statements go out before the counter lock answers", async () => {
  await withStore(async (store) => {
    const sent = await watched(async () => {
      await store.objects.create(Widget, { name: "a", spec: "{}" });
    });
    assert.equal(sent.begins, 1);
    assert.ok(sent.behindLock >= 1, `statements sent behind the lock: ${sent.behindLock}`);
    assert.equal((await store.objects.getByName({ ...Widget, name: "a" })).name, "a");
  });
});

test("PostgreSQL write: a within transaction waits for the counter lock's answer", async () => {
  await withStore(async (store) => {
    const sent = await watched(async () => {
      await store.within(async (tx) => {
        await tx.objects.create(Widget, { name: "in-tx", spec: "{}" });
      });
    });
    assert.equal(sent.begins, 1);
    assert.equal(sent.behindLock, 0);
  });
});

test("PostgreSQL write: a write begun on a stale guess runs again above the counter", async () => {
  await withStore(async (store, schema) => {
    const taken = await commitUnannounced(schema);
    let made!: { resourceVersion: number };
    const sent = await watched(async () => {
      made = await store.objects.create(Widget, { name: "after", spec: "{}" });
    });
    // Begun on the stale guess (its first version taken), then again, exactly.
    assert.equal(sent.begins, 2);
    assert.equal(made.resourceVersion, taken + 1);
    assert.equal(await store.getLatestResourceVersion(), taken + 1);
    const log = await store.objectWrites.listSince(Widget, { after: 0, limit: 10 });
    assert.deepEqual(log.writes.map((w) => w.resourceVersion).slice(-1), [taken + 1]);
  });
});

test("PostgreSQL write: a group begun on a stale guess runs again, and only a member's own failure rejects it", async () => {
  await withStore(async (store, schema) => {
    await store.objects.create(Widget, { name: "taken", spec: "{}" });
    const above = await commitUnannounced(schema);
    let results!: PromiseSettledResult<{ resourceVersion: number }>[];
    const sent = await watched(async () => {
      results = await Promise.allSettled(
        ["a", "taken", "b", "c"].map((name) => store.objects.create(Widget, { name, spec: "{}" })),
      );
    });
    // On the guess; again, exactly; and again with a savepoint a member, as a refused plain
    // member makes any group run.
    assert.equal(sent.begins, 3);
    assert.ok((results[1] as PromiseRejectedResult).reason instanceof NameTakenError);
    const versions = [results[0], results[2], results[3]].map((r) => {
      assert.equal(r.status, "fulfilled");
      return (r as PromiseFulfilledResult<{ resourceVersion: number }>).value.resourceVersion;
    });
    assert.deepEqual(versions, [above + 1, above + 2, above + 3]);
    assert.equal(await store.getLatestResourceVersion(), above + 3);
  });
});

test("PostgreSQL write: after a guess missed, the next writes begin exactly", async () => {
  await withStore(async (store, schema) => {
    await commitUnannounced(schema);
    await store.objects.create(Widget, { name: "missed", spec: "{}" });
    const sent = await watched(async () => {
      await store.objects.create(Widget, { name: "next", spec: "{}" });
    });
    assert.equal(sent.begins, 1);
    assert.equal(sent.behindLock, 0);
  });
});
