/**
 * `dryRun` on the client's writes: `create`, `update`, `updateByName`,
 * `updateMetadata` and `delete` check the write and answer as if it were
 * made, and nothing is written — no version, no log entry, no pass owed.
 *
 * @module
 */
import assert from "node:assert/strict";
import { InvalidMetadataError, NameTakenError, NotFoundError } from "../mod.ts";
import { withHarness } from "./_beehive_harness.ts";
import { test } from "./_test.ts";

test("Client writes with dryRun answer as if written and write nothing", async () => {
  await withHarness({}, async (h) => {
    const a = await h.things.create("a", { n: 1 }, { labels: { app: "shop" } });
    const latest = await h.store.getLatestResourceVersion();

    const created = await h.things.create("b", { n: 2 }, { labels: { x: "y" }, dryRun: true });
    assert.equal(created.name, "b");
    assert.deepEqual(created.spec, { n: 2 });
    assert.deepEqual(created.labels, { x: "y" });
    await assert.rejects(h.things.getByName("b"), NotFoundError);

    const updated = await h.things.update(a.id, { n: 3 }, { labels: { env: "p" }, dryRun: true });
    assert.deepEqual(updated.spec, { n: 3 });
    assert.equal(updated.generation, a.generation + 1);
    assert.deepEqual(updated.labels, { app: "shop", env: "p" });
    const byName = await h.things.updateByName("a", { n: 4 }, { dryRun: true });
    assert.deepEqual(byName.spec, { n: 4 });
    const relabelled = await h.things.updateMetadata(a.id, { labels: { app: null } }, {
      dryRun: true,
    });
    assert.deepEqual(relabelled.labels, {});
    await h.things.delete(a.id, { dryRun: true });

    assert.equal(await h.store.getLatestResourceVersion(), latest);
    const stored = await h.things.get(a.id);
    assert.deepEqual([stored.spec, stored.labels], [{ n: 1 }, { app: "shop" }]);
    assert.equal(stored.deletionRequestedAt, undefined);
  });
});

test("Client writes with dryRun refuse what the write would refuse", async () => {
  await withHarness({}, async (h) => {
    const a = await h.things.create("a", {});
    await assert.rejects(h.things.create("a", {}, { dryRun: true }), NameTakenError);
    await assert.rejects(
      h.things.update(a.id, {}, { labels: { "bad key": "x" }, dryRun: true }),
      InvalidMetadataError,
    );
    await assert.rejects(h.things.delete(999, { dryRun: true }), NotFoundError);
    await assert.rejects(
      h.things.create("c", {}, { dryRun: "yes" as unknown as boolean }),
      TypeError,
    );
  });
});
