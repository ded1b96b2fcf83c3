/**
 * The owed wake: another process's commit makes the running Beehive list the
 * kind's owed objects and queue the ones it does not know are owed yet. Two
 * handles of one database file stand in for two processes (a store reports
 * only other connections' commits).
 *
 * @module
 */
import assert from "node:assert/strict";
import { Beehive, type Migrator, settled } from "../mod.ts";
import { type Harness, tempDir, Thing, withHarness } from "./_beehive_harness.ts";
import { openTestStore } from "./_sqlite_driver.ts";
import { test } from "./_test.ts";

/** A migrator at spec version 2: a row at version 3 is from a newer build and never decodes. */
const migrator: Migrator = {
  specVersion: 2,
  statusVersion: 0,
  convertSpec: (_from, value) => value,
  convertStatus: (_from, value) => value,
};

/** Runs `fn` with a harness on a database file and a second handle of that file. */
async function withTwoHandles(
  fn: (h: Harness, other: Beehive) => Promise<void>,
): Promise<void> {
  const dir = tempDir();
  try {
    await withHarness({
      path: dir.file("db.sqlite"),
      // An owed pass an hour apart: what runs within the test was queued by a wake.
      beehive: { owedPassInterval: 3_600_000 },
      register: { migrator },
    }, async (h) => {
      const store = await openTestStore(dir.file("db.sqlite"));
      try {
        // Registered, never started: its requeue stamps the store.
        const other = new Beehive(store);
        other.register(Thing, () => settled());
        await fn(h, other);
      } finally {
        await store.close();
      }
    });
  } finally {
    dir.remove();
  }
}

test("OwedWake: a requeue stamped by another handle runs the object, once per stamp", async () => {
  await withTwoHandles(async (h, other) => {
    await h.start();
    const obj = await h.create("x");
    assert.equal(h.passes.length, 1);
    await h.tick(2_000);
    await other.client(Thing).requeue(obj.id);
    await h.tick(100);
    assert.equal(h.passes.length, 2);
    // Commits that stamp nothing queue nothing more.
    for (let i = 0; i < 5; i++) {
      await other.client(Thing).create(`y-${i}`, {});
      await h.tick(100);
    }
    assert.equal(h.passes.filter((p) => p.id === obj.id).length, 2);
  });
});

test("OwedWake: an owed object that never decodes is not re-run by every commit another handle makes", async () => {
  await withTwoHandles(async (h, other) => {
    const raw = await h.store.objects.create(Thing, {
      name: "future",
      spec: '{"n":1}',
      specVersion: 3,
    });
    await h.store.reconcileOwed.stamp([{ ...Thing, id: raw.id }]);
    await h.start();
    const quarantined = () =>
      h.logger.lines.filter((l) => l.message.includes("quarantin") && l.attributes?.id === raw.id)
        .length;
    assert.equal(quarantined(), 1, "the startup owed pass");
    for (let i = 0; i < 10; i++) {
      await other.client(Thing).create(`y-${i}`, {});
      await h.tick(100);
    }
    // The first wake queues it once (the startup pass is not the wake's); then it is known owed.
    assert.ok(quarantined() <= 2, `quarantined ${quarantined()} times`);
  });
});
