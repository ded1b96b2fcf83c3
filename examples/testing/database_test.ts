/**
 * Tests of the `Database` controller on fake time: `deno test` or
 * `node --test` runs this file as it is.
 *
 * @module
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createTestEnv, type TestEnv } from "@beehive/beehive/testing";
import {
  type Cloud,
  Database,
  type DatabaseSpec,
  type DatabaseStatus,
  FINALIZER,
  HOUR,
  registerDatabase,
  Volume,
} from "./database.ts";

/** A cloud that records what it was asked to do. */
function fakeCloud(): Cloud & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    backup: (name) => void calls.push(`backup ${name}`),
    release: (name) => void calls.push(`release ${name}`),
  };
}

/** A started env with the controllers registered; closed after `fn`, whatever happens. */
async function withDatabases(
  fn: (env: TestEnv, cloud: Cloud & { calls: string[] }) => Promise<void>,
) {
  const env = await createTestEnv();
  try {
    const cloud = fakeCloud();
    registerDatabase(env.bh, cloud);
    await env.start();
    await fn(env, cloud);
  } finally {
    await env.close();
  }
}

test("a new database gets its finalizer, its volume and a first backup", async () => {
  await withDatabases(async (env, cloud) => {
    const databases = env.bh.client<DatabaseSpec, DatabaseStatus>(Database);
    const orders = await databases.create("orders", { sizeGb: 10 });
    await env.settle();

    const db = await databases.get(orders.id);
    assert.deepEqual(db.finalizers, [FINALIZER]);
    assert.equal(db.status?.backups, 1);
    const volume = await env.bh.client<{ sizeGb: number }>(Volume).getByName("orders-data");
    assert.equal(volume.spec.sizeGb, 10);
    assert.deepEqual(cloud.calls, ["backup orders"]);
  });
});

test("a database is backed up once an hour, not before", async () => {
  await withDatabases(async (env, cloud) => {
    const databases = env.bh.client<DatabaseSpec, DatabaseStatus>(Database);
    const orders = await databases.create("orders", { sizeGb: 10 });
    await env.settle();

    await env.advance(HOUR - 1);
    assert.equal((await databases.get(orders.id)).status?.backups, 1);
    await env.advance(1);
    assert.equal((await databases.get(orders.id)).status?.backups, 2);
    await env.advance(2 * HOUR);
    assert.equal((await databases.get(orders.id)).status?.backups, 4);
    assert.equal(cloud.calls.length, 4);
  });
});

test("deleting a database releases it, then cascades to its volume, and both are collected", async () => {
  await withDatabases(async (env, cloud) => {
    const databases = env.bh.client<DatabaseSpec, DatabaseStatus>(Database);
    const volumes = env.bh.client(Volume);
    const orders = await databases.create("orders", { sizeGb: 10 });
    await env.settle();

    await databases.delete(orders.id);
    await env.settle();
    assert.deepEqual(cloud.calls, ["backup orders", "release orders"]);
    assert.deepEqual(await volumes.list(), []);
    assert.deepEqual(await databases.list(), []);
  });
});
