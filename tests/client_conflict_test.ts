/**
 * Optimistic concurrency: `update`, `updateByName` and `delete` with a
 * `resourceVersion` precondition reject with `ConflictError` once the object
 * has moved on, and write nothing.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ConflictError, DeletionPendingError, settled } from "../mod.ts";
import type { GroupKind } from "../mod.ts";
import { test } from "./_test.ts";
import { withBeehive } from "./_plain.ts";

const Thing: GroupKind = { group: "test.beehive.dev", kind: "Thing" };

test("Client.update with the current resourceVersion writes", async () => {
  await withBeehive(undefined, async (bh) => {
    const things = bh.client<{ n: number }>(Thing);
    const a = await things.create("a", { n: 1 });
    const b = await things.update(a.id, { n: 2 }, { resourceVersion: a.resourceVersion });
    assert.equal(b.generation, 2);
    assert.deepEqual(b.spec, { n: 2 });
    assert.ok(b.resourceVersion > a.resourceVersion);
  });
});

test("Client.update with a stale resourceVersion rejects with ConflictError carrying the current one", async () => {
  await withBeehive(undefined, async (bh, store) => {
    const things = bh.client<{ n: number }>(Thing);
    const a = await things.create("a", { n: 1 });
    const moved = await things.update(a.id, { n: 2 });
    const latest = await store.getLatestResourceVersion();
    const error = await things.update(a.id, { n: 3 }, { resourceVersion: a.resourceVersion })
      .then(() => undefined, (e) => e);
    assert.ok(error instanceof ConflictError, String(error));
    assert.equal(error.resourceVersion, moved.resourceVersion);
    assert.equal(error.name, "ConflictError");
    assert.deepEqual((await things.get(a.id)).spec, { n: 2 });
    assert.equal(await store.getLatestResourceVersion(), latest);
  });
});

test("Client.update with a stale resourceVersion conflicts even when the spec is unchanged", async () => {
  await withBeehive(undefined, async (bh) => {
    const things = bh.client<{ n: number }>(Thing);
    const a = await things.create("a", { n: 1 });
    await things.update(a.id, { n: 2 });
    await assert.rejects(
      things.update(a.id, { n: 2 }, { resourceVersion: a.resourceVersion }),
      ConflictError,
    );
  });
});

test("Client.update moved on by a status write is a conflict", async () => {
  await withBeehive(undefined, async (bh) => {
    const things = bh.client<{ n: number }, { ok: boolean }>(Thing);
    const a = await things.create("a", { n: 1 });
    await bh.adminClient<{ ok: boolean }>(Thing).updateStatus(a.id, { ok: true });
    await assert.rejects(
      things.update(a.id, { n: 2 }, { resourceVersion: a.resourceVersion }),
      ConflictError,
    );
  });
});

test("Client.updateByName with a stale resourceVersion rejects with ConflictError and writes nothing", async () => {
  await withBeehive(undefined, async (bh) => {
    const things = bh.client<{ n: number }>(Thing);
    const a = await things.create("a", { n: 1 });
    const ok = await things.updateByName("a", { n: 2 }, { resourceVersion: a.resourceVersion });
    await assert.rejects(
      things.updateByName("a", { n: 3 }, { resourceVersion: a.resourceVersion }),
      (e: unknown) => e instanceof ConflictError && e.resourceVersion === ok.resourceVersion,
    );
    assert.deepEqual((await things.getByName("a")).spec, { n: 2 });
  });
});

test("Client.delete with a stale resourceVersion rejects with ConflictError and leaves the object", async () => {
  await withBeehive(undefined, async (bh) => {
    const things = bh.client<{ n: number }>(Thing);
    const a = await things.create("a", { n: 1 });
    await things.update(a.id, { n: 2 });
    await assert.rejects(
      things.delete(a.id, { resourceVersion: a.resourceVersion }),
      ConflictError,
    );
    const still = await things.get(a.id);
    assert.equal(still.deletionRequestedAt, undefined);
    await things.delete(a.id, { resourceVersion: still.resourceVersion });
    assert.ok((await things.get(a.id)).deletionRequestedAt instanceof Date);
  });
});

test("Client.update of a deleting object with its current resourceVersion is DeletionPendingError", async () => {
  await withBeehive(undefined, async (bh) => {
    bh.register(Thing, () => settled());
    const things = bh.client<{ n: number }>(Thing);
    const held = await things.create("held", { n: 1 }, { finalizers: ["test/f"] });
    await things.delete(held.id);
    const deleting = await things.get(held.id);
    await assert.rejects(
      things.update(held.id, { n: 2 }, { resourceVersion: deleting.resourceVersion }),
      DeletionPendingError,
    );
  });
});

test("Client preconditions refuse a malformed resourceVersion with TypeError before writing", async () => {
  await withBeehive(undefined, async (bh, store) => {
    const things = bh.client<{ n: number }>(Thing);
    const a = await things.create("a", { n: 1 });
    const latest = await store.getLatestResourceVersion();
    for (const bad of [0, -1, 1.5, NaN, "1", null, 2 ** 53]) {
      const o = { resourceVersion: bad as number };
      await assert.rejects(things.update(a.id, { n: 2 }, o), TypeError, String(bad));
      await assert.rejects(things.updateByName("a", { n: 2 }, o), TypeError, String(bad));
      await assert.rejects(things.delete(a.id, o), TypeError, String(bad));
    }
    await assert.rejects(things.update(a.id, { n: 2 }, 5 as never), TypeError);
    assert.equal(await store.getLatestResourceVersion(), latest);
  });
});

test("Client.update racing writers with one resourceVersion: exactly one wins, the rest conflict", async () => {
  await withBeehive(undefined, async (bh) => {
    const things = bh.client<{ n: number }>(Thing);
    const a = await things.create("a", { n: 0 });
    const results = await Promise.allSettled(
      Array.from(
        { length: 8 },
        (_, i) => things.update(a.id, { n: i + 1 }, { resourceVersion: a.resourceVersion }),
      ),
    );
    const won = results.filter((r) => r.status === "fulfilled");
    const lost = results.filter((r) => r.status === "rejected");
    assert.equal(won.length, 1);
    assert.ok(lost.every((r) => (r as PromiseRejectedResult).reason instanceof ConflictError));
    const final = await things.get(a.id);
    assert.equal(final.generation, 2);
    assert.deepEqual(final.spec, (won[0] as PromiseFulfilledResult<{ spec: unknown }>).value.spec);
  });
});
