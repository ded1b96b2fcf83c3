/**
 * `register(Parent, controller, { owns: [Child] })`: any write to an owned
 * object of an owned kind queues its owner's pass, once per owner for a burst.
 * Fake time throughout; the pushes come through the dependency waker.
 *
 * @module
 */
import assert from "node:assert/strict";
import { settled } from "../mod.ts";
import { test } from "./_test.ts";
import { type Harness, Other, withHarness } from "./_beehive_harness.ts";

const HOUR = 3_600_000;
const PARKED = { gcInterval: HOUR, owedPassInterval: HOUR, staleDependentsInterval: HOUR };
const Third = { group: "test.beehive.dev", kind: "Third" };

function passesOf(h: Harness, id: number): number {
  return h.passes.filter((p) => p.id === id).length;
}

test("register owns: a spec, status, condition, metadata or deletion write to an owned child queues its owner's pass", async () => {
  await withHarness({ beehive: PARKED, register: { owns: [Other] } }, async (h) => {
    await h.start();
    const parent = await h.create("parent");
    const children = h.bh.client(Other);
    const child = await children.create("child", { v: 1 }, { owner: parent.id });
    await h.tick(5_000);
    const writes: [string, () => Promise<unknown>][] = [
      ["spec", () => children.update(child.id, { v: 2 })],
      ["status", () => h.bh.adminClient(Other).updateStatus(child.id, { ready: true })],
      [
        "condition",
        () => h.bh.adminClient(Other).setCondition(child.id, { type: "Ready", status: "True" }),
      ],
      ["metadata", () => children.updateMetadata(child.id, { labels: { phase: "up" } })],
      ["deletion", () => children.delete(child.id)],
    ];
    for (const [what, write] of writes) {
      const before = passesOf(h, parent.id);
      await write();
      await h.tick(1_000); // past the owner's floor; no periodic driver is due
      assert.equal(passesOf(h, parent.id), before + 1, what);
    }
    const settledAt = passesOf(h, parent.id);
    await h.tick(60_000);
    assert.equal(passesOf(h, parent.id), settledAt, "nothing more wakes it");
  });
});

test("register owns: a burst of writes to an owner's many children costs it one pass", async () => {
  await withHarness({ beehive: PARKED, register: { owns: [Other] } }, async (h) => {
    await h.start();
    const parent = await h.create("parent");
    const other = await h.create("other");
    const children = h.bh.client(Other);
    const ids: number[] = [];
    for (let i = 0; i < 20; i++) {
      ids.push((await children.create(`c${i}`, { v: 0 }, { owner: parent.id })).id);
    }
    await h.tick(5_000);
    const before = passesOf(h, parent.id);
    const otherBefore = passesOf(h, other.id);
    for (const id of ids) await children.update(id, { v: 1 });
    await h.tick(1_000);
    assert.equal(passesOf(h, parent.id), before + 1);
    assert.equal(passesOf(h, other.id), otherBefore, "an owner of none of them is left alone");
  });
});

test("register owns: writes to children of a kind not owned, or to unowned objects, wake no owner", async () => {
  await withHarness({ beehive: PARKED, register: { owns: [Other] } }, async (h) => {
    await h.start();
    const parent = await h.create("parent");
    const thirds = h.bh.client(Third);
    const third = await thirds.create("t", { v: 0 }, { owner: parent.id });
    const loose = await h.bh.client(Other).create("loose", { v: 0 });
    await h.tick(5_000);
    const before = h.passes.length;
    await thirds.update(third.id, { v: 1 });
    await h.bh.client(Other).update(loose.id, { v: 1 });
    await h.tick(60_000);
    assert.equal(h.passes.length, before);
  });
});

test("register owns: a parent waits on its children's status without polling, and scales down cleanly", async () => {
  await withHarness({ beehive: PARKED, register: { owns: [Other] } }, async (h) => {
    const children = h.bh.client<{ index: number }, { ready: boolean }>(Other);
    const seen: string[] = [];
    h.fallback = async (obj, cc) => {
      const want = (obj.spec as { replicas: number }).replicas;
      const owned = await children.listOwnedObjects(obj.id);
      await cc.within(async (tx) => {
        for (let i = owned.length; i < want; i++) {
          await tx.client(Other).create(`${obj.name}-${i}`, { index: i }, { owner: obj.id });
        }
        for (const c of owned) {
          const extra = (c.spec as { index: number }).index >= want;
          if (extra && c.deletionRequestedAt === undefined) await tx.client(Other).delete(c.id);
        }
      });
      const ready = owned.filter((c: (typeof owned)[number]) =>
        c.deletionRequestedAt === undefined && (c.spec as { index: number }).index < want &&
        (c.status as { ready?: boolean } | undefined)?.ready === true
      ).length;
      seen.push(`${ready}/${want}`);
      await cc.updateStatus({ ready });
      return settled();
    };
    await h.start();
    const parent = await h.create("web", { replicas: 2 });
    await h.tick(1_000);
    const kids = await children.list();
    assert.equal(kids.length, 2);
    // Another controller (here, the test) marks each child ready: each write wakes the parent.
    for (const kid of kids) {
      await h.bh.adminClient<{ ready: boolean }>(Other).updateStatus(kid.id, { ready: true });
      await h.tick(1_000);
    }
    assert.deepEqual((await h.things.get(parent.id)).status, { ready: 2 });
    await h.things.update(parent.id, { replicas: 1 });
    await h.tick(2_000);
    const live = (await children.list()).filter((c) =>
      c.deletionRequestedAt === undefined
    );
    assert.deepEqual(live.map((c) => c.name), ["web-0"]);
    assert.deepEqual((await h.things.get(parent.id)).status, { ready: 1 });
    assert.ok(seen.includes("2/2") && seen.at(-1) === "1/1", seen.join(" "));
  });
});

test("register owns: a child's final removal wakes its owner, whose edge to it is gone by then", async () => {
  await withHarness({ beehive: PARKED, register: { owns: [Other] } }, async (h) => {
    let release = false;
    h.bh.register(Other, async (obj, cc) => {
      if (obj.deletionRequestedAt !== undefined && release) await cc.deleteFinalizer("test/hold");
      return settled();
    });
    const seen: number[] = [];
    h.fallback = async (obj) => {
      seen.push((await h.bh.client(Other).listOwnedObjects(obj.id)).length);
      return settled();
    };
    await h.start();
    const parent = await h.create("parent");
    const children = h.bh.client(Other);
    const child = await children.create("child", {}, {
      owner: parent.id,
      finalizers: ["test/hold"],
    });
    await h.tick(5_000);
    await children.delete(child.id);
    await h.tick(5_000);
    assert.equal(seen.at(-1), 1, "the deletion mark woke it; the child is still held");
    const before = passesOf(h, parent.id);
    release = true;
    await children.requeue(child.id);
    await h.tick(5_000);
    assert.equal(await children.get(child.id).catch(() => undefined), undefined);
    // (A store may commit the finalizer's removal and the row's removal apart: two wakes.)
    assert.ok(passesOf(h, parent.id) >= before + 1);
    assert.equal(seen.at(-1), 0, "the last pass saw the child gone");
  });
});
