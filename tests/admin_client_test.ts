/**
 * The AdminClient: a pass's writes from outside a pass, scoped to one kind,
 * on a Beehive that is not running.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  ConflictError,
  DeletionPendingError,
  DuplicateConditionTypeError,
  InvalidOptionError,
  NotFoundError,
  WrongKindError,
} from "../mod.ts";
import { test } from "./_test.ts";
import { countingObjectCalls, Harness, Other, Thing, withHarness } from "./_beehive_harness.ts";

test("AdminClient every verb works on a Beehive that was never started", async () => {
  await withHarness({}, async (h) => {
    const admin = h.bh.adminClient<{ phase: string }>(Thing);
    const obj = await h.things.create("a", {}, { finalizers: ["test/f"] });
    const target = await h.bh.client(Other).create("target", {});
    await admin.updateStatus(obj.id, { phase: "Ready" });
    await admin.setCondition(obj.id, { type: "Ready", status: "True", reason: "Fixture" });
    await admin.setConditions(obj.id, [
      { type: "Synced", status: "False" },
      { type: "Stale", status: "True" },
    ]);
    await admin.deleteCondition(obj.id, "Stale");
    await admin.addEvent(obj.id, { type: "Normal", reason: "Backfilled", detail: { n: 1 } });
    await admin.addDependency(obj.id, target.id);
    assert.deepEqual(await h.things.listDependencies(obj.id), [{ ...Other, id: target.id }]);
    await admin.deleteDependency(obj.id, target.id);
    await admin.deleteFinalizer(obj.id, "test/f");
    const after = await h.things.get(obj.id);
    assert.deepEqual(after.status, { phase: "Ready" });
    assert.deepEqual(after.conditions.map((c) => [c.type, c.status, c.reason]), [
      ["Ready", "True", "Fixture"],
      ["Synced", "False", ""],
    ]);
    assert.deepEqual(after.finalizers, []);
    assert.deepEqual(await h.things.listDependencies(obj.id), []);
    const events = await h.things.listEvents(obj.id);
    assert.deepEqual(events.map((e) => [e.reason, e.detail]), [["Backfilled", { n: 1 }]]);
    assert.deepEqual(h.passes, []);
  });
});

test("AdminClient works on a kind with no controller", async () => {
  await withHarness({ registerThing: false }, async (h) => {
    const others = h.bh.client(Other);
    const obj = await others.create("a", {});
    const admin = h.bh.adminClient(Other);
    await admin.updateStatus(obj.id, { up: true });
    await admin.setCondition(obj.id, { type: "Ready", status: "True" });
    await admin.addEvent(obj.id, { type: "Warning", reason: "Odd" });
    const after = await others.get(obj.id);
    assert.deepEqual(after.status, { up: true });
    assert.deepEqual(after.conditions.map((c) => c.type), ["Ready"]);
    assert.equal((await others.listEvents(obj.id)).length, 1);
  });
});

test("AdminClient every verb rejects with WrongKindError for another kind's id and writes nothing", async () => {
  await withHarness({}, async (h) => {
    const admin = h.bh.adminClient(Thing);
    const foreign = await h.bh.client(Other).create("foreign", {});
    const thing = await h.things.create("thing", {});
    const before = await h.bh.client(Other).get(foreign.id);
    const calls: [string, () => Promise<unknown>][] = [
      ["updateStatus", () => admin.updateStatus(foreign.id, { x: 1 })],
      ["setCondition", () => admin.setCondition(foreign.id, { type: "Ready", status: "True" })],
      ["setConditions", () => admin.setConditions(foreign.id, [{ type: "Ready", status: "True" }])],
      ["deleteCondition", () => admin.deleteCondition(foreign.id, "Ready")],
      ["addEvent", () => admin.addEvent(foreign.id, { type: "Normal", reason: "X" })],
      ["deleteFinalizer", () => admin.deleteFinalizer(foreign.id, "test/f")],
      ["addDependency", () => admin.addDependency(foreign.id, thing.id)],
      ["deleteDependency", () => admin.deleteDependency(foreign.id, thing.id)],
    ];
    for (const [name, call] of calls) await assert.rejects(call, WrongKindError, name);
    const after = await h.bh.client(Other).get(foreign.id);
    assert.equal(after.resourceVersion, before.resourceVersion);
    assert.equal(after.status, undefined);
    assert.deepEqual(after.conditions, []);
    assert.deepEqual(await h.things.listEvents(foreign.id), []);
    assert.deepEqual(await h.things.listDependencies(foreign.id), []);
  });
});

test("AdminClient every verb rejects with NotFoundError for a missing id", async () => {
  await withHarness({}, async (h) => {
    const admin = h.bh.adminClient(Thing);
    const target = await h.things.create("target", {});
    const missing = 424_242;
    const calls: [string, () => Promise<unknown>][] = [
      ["updateStatus", () => admin.updateStatus(missing, { x: 1 })],
      ["setCondition", () => admin.setCondition(missing, { type: "Ready", status: "True" })],
      ["setConditions", () => admin.setConditions(missing, [{ type: "Ready", status: "True" }])],
      ["deleteCondition", () => admin.deleteCondition(missing, "Ready")],
      ["addEvent", () => admin.addEvent(missing, { type: "Normal", reason: "X" })],
      ["deleteFinalizer", () => admin.deleteFinalizer(missing, "test/f")],
      ["addDependency", () => admin.addDependency(missing, target.id)],
      ["deleteDependency", () => admin.deleteDependency(missing, target.id)],
    ];
    for (const [name, call] of calls) await assert.rejects(call, NotFoundError, name);
  });
});

test("AdminClient rejects a malformed id with TypeError, never throwing synchronously", async () => {
  await withHarness({}, async (h) => {
    const admin = h.bh.adminClient(Thing);
    for (const id of [0, -1, 1.5, "1", Number.NaN]) {
      const p = admin.updateStatus(id as number, {});
      assert.ok(p instanceof Promise);
      await assert.rejects(p, TypeError);
    }
    const obj = await h.things.create("a", {});
    await assert.rejects(admin.addDependency(obj.id, 0), TypeError);
  });
});

test("Beehive.adminClient throws InvalidOptionError for a malformed kind", async () => {
  await withHarness({}, (h) => {
    assert.throws(() => h.bh.adminClient({ group: "g", kind: "" }), InvalidOptionError);
    return Promise.resolve();
  });
});

test("AdminClient never records observedGeneration, so the owed pass reconciles what it wrote", async () => {
  await withHarness({}, async (h) => {
    const admin = h.bh.adminClient(Thing);
    const obj = await h.things.create("a", { v: 1 });
    await admin.updateStatus(obj.id, { phase: "Backfilled" });
    await admin.setCondition(obj.id, { type: "Ready", status: "True" });
    await admin.addEvent(obj.id, { type: "Normal", reason: "Backfilled" });
    const after = await h.things.get(obj.id);
    assert.equal(after.observedGeneration, undefined);
    assert.equal(after.observedAt, undefined);
    assert.deepEqual(await h.store.objects.listUnsettledIds(Thing), [obj.id]);
    // Started later, the Beehive settles it.
    await h.start();
    assert.deepEqual(h.passes.map((p) => p.id), [obj.id]);
    assert.equal((await h.things.get(obj.id)).observedGeneration, 1);
  });
});

test("AdminClient.updateStatus reaches the store on every call: it holds no baseline", async () => {
  const calls = new Map<string, number>();
  await withHarness({ wrap: countingObjectCalls(calls) }, async (h) => {
    const admin = h.bh.adminClient(Thing);
    const obj = await h.things.create("a", {});
    await admin.updateStatus(obj.id, { v: 1 });
    const rv = (await h.things.get(obj.id)).resourceVersion;
    await admin.updateStatus(obj.id, { v: 1 });
    assert.equal(calls.get("updateStatus"), 2);
    // The store itself declines the identical write.
    assert.equal((await h.things.get(obj.id)).resourceVersion, rv);
  });
});

test("AdminClient.setConditions rejects a type named twice with DuplicateConditionTypeError and writes nothing", async () => {
  await withHarness({}, async (h) => {
    const admin = h.bh.adminClient(Thing);
    const obj = await h.things.create("a", {});
    await assert.rejects(
      admin.setConditions(obj.id, [
        { type: "Ready", status: "True" },
        { type: "Ready", status: "False" },
      ]),
      DuplicateConditionTypeError,
    );
    assert.deepEqual((await h.things.get(obj.id)).conditions, []);
  });
});

test("AdminClient.addDependency and deleteDependency manage an edge from this kind to any kind", async () => {
  await withHarness({}, async (h) => {
    const admin = h.bh.adminClient(Thing);
    const from = await h.things.create("from", {});
    const toOther = await h.bh.client(Other).create("to-other", {});
    const toThing = await h.things.create("to-thing", {});
    await admin.addDependency(from.id, toOther.id);
    await admin.addDependency(from.id, toThing.id);
    await admin.addDependency(from.id, toThing.id);
    assert.deepEqual(await h.things.listDependencies(from.id), [
      { ...Other, id: toOther.id },
      { ...Thing, id: toThing.id },
    ]);
    assert.deepEqual(await h.things.listDependents(toOther.id), [{ ...Thing, id: from.id }]);
    // Each new edge owes the source one pass; the repeat owes nothing.
    assert.equal((await h.store.objects.getMeta(from.id)).reconcileOwed, 2);
    await admin.deleteDependency(from.id, toOther.id);
    await admin.deleteDependency(from.id, toOther.id);
    assert.deepEqual(await h.things.listDependencies(from.id), [{ ...Thing, id: toThing.id }]);
    await assert.rejects(admin.addDependency(from.id, 987_654), NotFoundError);
  });
});

test("AdminClient.addDependency and deleteDependency reject a source of another kind with WrongKindError", async () => {
  await withHarness({}, async (h) => {
    const admin = h.bh.adminClient(Thing);
    const foreign = await h.bh.client(Other).create("foreign", {});
    const thing = await h.things.create("thing", {});
    await assert.rejects(admin.addDependency(foreign.id, thing.id), WrongKindError);
    assert.deepEqual(await h.things.listDependencies(foreign.id), []);
    // An edge the other kind's own admin client declares is not this client's to drop.
    await h.bh.adminClient(Other).addDependency(foreign.id, thing.id);
    await assert.rejects(admin.deleteDependency(foreign.id, thing.id), WrongKindError);
    assert.deepEqual(await h.things.listDependencies(foreign.id), [{ ...Thing, id: thing.id }]);
  });
});

test("AdminClient.deleteFinalizer unsticks a deleting object wedged by its finalizer", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("wedged", {}, { finalizers: ["test/never-cleared"] });
    await h.things.delete(obj.id);
    await h.flush();
    await h.tick(60_000);
    // The controller never clears it: the object is stuck.
    assert.ok(h.passes.some((p) => p.id === obj.id && p.deleting));
    assert.deepEqual((await h.things.get(obj.id)).finalizers, ["test/never-cleared"]);
    await h.stop();
    await h.bh.adminClient(Thing).deleteFinalizer(obj.id, "test/never-cleared");
    const unstuck = await h.things.get(obj.id);
    assert.deepEqual(unstuck.finalizers, []);
    // The next Beehive over the store collects it at start.
    const next = await Harness.open({ store: h.store, clock: h.clock });
    try {
      await next.start();
      await assert.rejects(next.things.get(obj.id), NotFoundError);
    } finally {
      await next.close();
    }
  });
});

test("AdminClient.setConditions with an empty batch writes nothing", async () => {
  await withHarness({}, async (h) => {
    const admin = h.bh.adminClient(Thing);
    const obj = await h.things.create("a", {});
    await admin.setConditions(obj.id, []);
    const after = await h.things.get(obj.id);
    assert.equal(after.resourceVersion, obj.resourceVersion);
    assert.deepEqual(after.conditions, []);
  });
});

test("AdminClient.deleteCondition of a condition the object does not have is a no-op", async () => {
  await withHarness({}, async (h) => {
    const admin = h.bh.adminClient(Thing);
    const obj = await h.things.create("a", {});
    await admin.setCondition(obj.id, { type: "Ready", status: "True" });
    const before = await h.things.get(obj.id);
    await admin.deleteCondition(obj.id, "Missing");
    const after = await h.things.get(obj.id);
    assert.equal(after.resourceVersion, before.resourceVersion);
    assert.deepEqual(after.conditions.map((c) => c.type), ["Ready"]);
  });
});

test("AdminClient.updateStatus rejects a status JSON cannot encode with TypeError and writes nothing", async () => {
  await withHarness({}, async (h) => {
    const admin = h.bh.adminClient(Thing);
    const obj = await h.things.create("a", {});
    await assert.rejects(admin.updateStatus(obj.id, { n: 1n }), TypeError);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    await assert.rejects(admin.updateStatus(obj.id, cyclic), TypeError);
    const after = await h.things.get(obj.id);
    assert.equal(after.resourceVersion, obj.resourceVersion);
    assert.equal(after.status, undefined);
  });
});

test("AdminClient.addFinalizer gives an existing object the controller's finalizer once", async () => {
  await withHarness({}, async (h) => {
    const admin = h.bh.adminClient(Thing);
    const obj = await h.things.create("a", {});
    await admin.addFinalizer(obj.id, "test/claim");
    const once = await h.things.get(obj.id);
    await admin.addFinalizer(obj.id, "test/claim");
    const twice = await h.things.get(obj.id);
    assert.deepEqual(twice.finalizers, ["test/claim"]);
    assert.equal(twice.resourceVersion, once.resourceVersion);
    assert.ok(once.resourceVersion > obj.resourceVersion);
  });
});

test("AdminClient.addFinalizer refuses a deleting object, another kind, and a client-only kind", async () => {
  await withHarness({}, async (h) => {
    const admin = h.bh.adminClient(Thing);
    const obj = await h.things.create("a", {}, { finalizers: ["test/f"] });
    await h.things.delete(obj.id);
    await assert.rejects(admin.addFinalizer(obj.id, "test/g"), DeletionPendingError);
    const other = await h.bh.client(Other).create("o", {});
    await assert.rejects(admin.addFinalizer(other.id, "test/g"), WrongKindError);
    await assert.rejects(
      h.bh.adminClient(Other).addFinalizer(other.id, "test/g"),
      InvalidOptionError,
    );
    const live = await h.things.create("b", {});
    await assert.rejects(admin.addFinalizer(other.id + 100, "test/g"), NotFoundError);
    await assert.rejects(admin.addFinalizer(live.id, ""), InvalidOptionError);
    assert.deepEqual((await h.things.get(obj.id)).finalizers, ["test/f"]);
    assert.deepEqual((await h.things.get(live.id)).finalizers, []);
    assert.deepEqual((await h.bh.client(Other).get(other.id)).finalizers, []);
  });
});

test("AdminClient.deleteNow removes an object nothing holds and keeps one a finalizer holds deletion-pending", async () => {
  await withHarness({}, async (h) => {
    const admin = h.bh.adminClient(Thing);
    const free = await h.things.create("free", {});
    const held = await h.things.create("held", {}, { finalizers: ["test/f"] });
    assert.equal(await admin.deleteNow(free.id), true);
    await assert.rejects(h.things.get(free.id), NotFoundError);
    assert.equal(await admin.deleteNow(held.id), false);
    assert.notEqual((await h.things.get(held.id)).deletionRequestedAt, undefined);
  });
});

test("AdminClient.deleteNow with Orphan keeps the children and drops their owner edge", async () => {
  await withHarness({}, async (h) => {
    const owner = await h.things.create("owner", {});
    const child = await h.bh.client(Other).create("child", {}, { owner: owner.id });
    assert.equal(
      await h.bh.adminClient(Thing).deleteNow(owner.id, { propagationPolicy: "Orphan" }),
      true,
    );
    const kept = await h.bh.client(Other).get(child.id, { load: ["owner"] });
    assert.equal(kept.owner(), undefined);
    assert.equal(kept.deletionRequestedAt, undefined);
  });
});

test("AdminClient.deleteNow rejects malformed options with TypeError and a stale resourceVersion with ConflictError, writing nothing", async () => {
  await withHarness({}, async (h) => {
    const admin = h.bh.adminClient(Thing);
    const obj = await h.things.create("a", {});
    await h.things.update(obj.id, { moved: true });
    // deno-lint-ignore no-explicit-any
    const bad = [{ propagationPolicy: "Later" }, { resourceVersion: 0 }, null] as any[];
    for (const options of bad) await assert.rejects(admin.deleteNow(obj.id, options), TypeError);
    await assert.rejects(
      admin.deleteNow(obj.id, { resourceVersion: obj.resourceVersion }),
      ConflictError,
    );
    assert.equal((await h.things.get(obj.id)).deletionRequestedAt, undefined);
  });
});
