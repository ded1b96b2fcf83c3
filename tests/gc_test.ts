/**
 * The object graph's deletion side: soft delete, finalizers, physical
 * collection, the owner cascade across kinds, `hasIncomingEdges()`, and the GC
 * sweep (startup, cadence, retention, owed counts of client-only kinds). Every
 * test runs under fake time over a real SQLite store.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type GroupKind, NameTakenError, NotFoundError, settled } from "../mod.ts";
import { openTestStore, type TestStore } from "./_sqlite_driver.ts";
import { test } from "./_test.ts";
import {
  type AnyCC,
  type AnyObject,
  type Harness,
  Other,
  type PassRecord,
  tempDir,
  Thing,
  withHarness,
} from "./_beehive_harness.ts";

/** A second registered kind (Thing is the harness's; Other stays client-only). */
const Child: GroupKind = { group: "test.beehive.dev", kind: "Child" };

/** An interval long enough that no periodic driver fires during a test. */
const HOUR = 3_600_000;

/** Drivers parked: only pushes (and the sweep at start) move anything. */
const PARKED = { gcInterval: HOUR, owedPassInterval: HOUR, staleDependentsInterval: HOUR };

/** Registers a controller for `kind` that records its passes and runs `job` (default: settle). */
function registerRecorder(
  h: Harness,
  kind: GroupKind,
  job: (obj: AnyObject, cc: AnyCC) => unknown = () => settled(),
): PassRecord[] {
  const passes: PassRecord[] = [];
  // deno-lint-ignore no-explicit-any
  h.bh.register(kind, (obj: any, cc: any) => {
    passes.push({
      id: obj.id,
      generation: obj.generation,
      at: Date.now(),
      deleting: obj.deletionRequestedAt !== undefined,
    });
    return job(obj, cc) as never;
  });
  return passes;
}

/** Whether `id` is still a row (of any kind). */
async function exists(h: Harness, id: number): Promise<boolean> {
  try {
    await h.store.objects.getMeta(id);
    return true;
  } catch (error) {
    if (error instanceof NotFoundError) return false;
    throw error;
  }
}

/** Whether `id` is a row whose deletion was requested. */
async function pending(h: Harness, id: number): Promise<boolean> {
  return (await h.store.objects.getMeta(id)).deletionRequestedAt !== undefined;
}

/** The ids of the collection entries in the write log, in collection order. */
async function collectedOrder(h: Harness): Promise<number[]> {
  const { writes } = await h.store.objectWrites.listSinceAll({ after: 0, limit: 10_000 });
  return writes.filter((w) => w.op === "delete").map((w) => w.id);
}

// ---------------------------------------------------------------------------
// Deletion and finalizers

test("GC soft delete keeps the row readable and its name held", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a", { v: 1 }, { finalizers: ["test/hold"] });
    await h.things.delete(obj.id);
    await h.flush();
    await h.tick(120_000); // four GC sweeps
    const read = await h.things.get(obj.id);
    assert.ok(read.deletionRequestedAt instanceof Date);
    assert.deepEqual(read.spec, { v: 1 });
    assert.deepEqual(read.finalizers, ["test/hold"]);
    assert.equal((await h.things.getByName("a")).id, obj.id);
    assert.deepEqual((await h.things.list()).map((o) => o.id), [obj.id]);
    await assert.rejects(h.things.create("a", { v: 2 }), NameTakenError);
    const found = await h.things.getOrCreate("a", { v: 3 });
    assert.equal(found.created, false);
    assert.equal(found.object.id, obj.id);
  });
});

test("GC finalizers block collection until the controller clears the last one", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a", {}, { finalizers: ["test/one", "test/two"] });
    h.queue(obj.id, async (_o, cc) => {
      await cc.deleteFinalizer("test/one");
      return settled();
    });
    await h.things.delete(obj.id);
    await h.flush();
    assert.deepEqual((await h.things.get(obj.id)).finalizers, ["test/two"]);
    // Every sweep hands it to the controller, which keeps its last finalizer.
    await h.tick(90_000);
    assert.ok(h.passes.filter((p) => p.id === obj.id && p.deleting).length >= 3);
    assert.deepEqual((await h.things.get(obj.id)).finalizers, ["test/two"]);
    await h.pass(obj.id, async (_o, cc) => {
      await cc.deleteFinalizer("test/two");
    });
    await assert.rejects(h.things.get(obj.id), NotFoundError);
  });
});

test("GC finalizers cleared by the AdminClient on a running Beehive push the object, which is collected at once", async () => {
  await withHarness({ beehive: PARKED }, async (h) => {
    await h.start();
    const obj = await h.create("a", {}, { finalizers: ["test/never-cleared"] });
    await h.things.delete(obj.id);
    await h.flush();
    const before = h.passes.length;
    assert.equal(h.passes[before - 1].deleting, true);
    assert.ok(await exists(h, obj.id));
    await h.bh.adminClient(Thing).deleteFinalizer(obj.id, "test/never-cleared");
    await h.flush(); // no time passes: no sweep and no owed pass, only the push
    assert.equal(h.passes.length, before + 1);
    assert.equal(await exists(h, obj.id), false);
  });
});

test("GC collects a deletion-pending row only once nothing with a live claim points at it", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const others = h.bh.client(Other);
    const target = await others.create("target", {});
    const dependent = await h.create("dependent", {}, { finalizers: ["test/hold"] });
    await h.bh.adminClient(Thing).addDependency(dependent.id, target.id);
    await others.delete(target.id);
    await h.tick(90_000); // three sweeps: the live dependent holds it
    assert.ok(await pending(h, target.id));
    // A dependent that is itself being deleted has no claim, even while its finalizer holds it.
    await h.things.delete(dependent.id);
    await h.flush();
    await h.tick(30_000);
    assert.equal(await exists(h, target.id), false);
    assert.ok(await pending(h, dependent.id));
    assert.deepEqual(await h.things.listDependencies(dependent.id), []);
  });
});

test("GC a pass on a deleting row calls the controller, then collects the row", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a", {});
    let readableInPass = false;
    h.queue(obj.id, async (o, cc) => {
      readableInPass = (await h.things.get(o.id)).deletionRequestedAt !== undefined;
      await cc.updateStatus({ phase: "cleaned-up" });
      return settled();
    });
    await h.things.delete(obj.id);
    await h.flush();
    assert.deepEqual(h.passes.map((p) => p.deleting), [false, true]);
    assert.equal(readableInPass, true);
    await assert.rejects(h.things.get(obj.id), NotFoundError);
    // The collection came after the controller's write: the final image carries it.
    const { writes } = await h.store.objectWrites.listSince(Thing, { after: 0, limit: 100 });
    const last = writes[writes.length - 1];
    assert.equal(last.op, "delete");
    assert.equal(last.final?.status, JSON.stringify({ phase: "cleaned-up" }));
    await h.tick(60_000);
    assert.equal(h.passes.length, 2);
  });
});

// ---------------------------------------------------------------------------
// The owner cascade

test("GC owner cascade marks every owned child across kinds, and the sweep collects client-only children directly", async () => {
  await withHarness({}, async (h) => {
    const childPasses = registerRecorder(h, Child);
    await h.start();
    const owner = await h.create("owner", {});
    const thingChild = await h.things.create("t", {}, {
      owner: owner.id,
      finalizers: ["test/hold"],
    });
    const childChild = await h.bh.client(Child).create("c", {}, {
      owner: owner.id,
      finalizers: ["test/hold"],
    });
    const otherChild = await h.bh.client(Other).create("o", {}, { owner: owner.id });
    await h.flush();
    await h.things.delete(owner.id);
    await h.flush();
    for (const id of [thingChild.id, childChild.id, otherChild.id]) {
      assert.ok(await pending(h, id), `child ${id} is marked`);
    }
    // Registered children are pushed to their own controllers at once.
    assert.ok(h.passes.some((p) => p.id === thingChild.id && p.deleting));
    assert.ok(childPasses.some((p) => p.id === childChild.id && p.deleting));
    // The client-only child has no controller: it waits for the sweep.
    await h.tick(29_999);
    assert.ok(await exists(h, otherChild.id));
    await h.tick(1);
    assert.equal(await exists(h, otherChild.id), false);
    for (const id of [owner.id, thingChild.id, childChild.id]) assert.ok(await exists(h, id));
  });
});

test("GC owner cascade blocks the owner until its children are gone", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const owner = await h.create("owner", {});
    const child = await h.things.create("child", {}, { owner: owner.id, finalizers: ["test/h"] });
    await h.flush();
    await h.things.delete(owner.id);
    await h.flush();
    await h.tick(120_000);
    // The owner has no finalizers, and still its child's owned_by edge holds it.
    assert.deepEqual((await h.things.get(owner.id)).finalizers, []);
    assert.ok(h.passes.filter((p) => p.id === owner.id && p.deleting).length >= 2);
    assert.deepEqual(await h.things.listOwned(owner.id), [{ ...Thing, id: child.id }]);
    await h.pass(child.id, async (_o, cc) => {
      await cc.deleteFinalizer("test/h");
    });
    await assert.rejects(h.things.get(child.id), NotFoundError);
    await assert.rejects(h.things.get(owner.id), NotFoundError);
    assert.deepEqual(await collectedOrder(h), [child.id, owner.id]);
  });
});

test("GC a physical delete pushes its deleting owner, and never a live one", async () => {
  await withHarness({ beehive: PARKED }, async (h) => {
    await h.start();
    const owner = await h.create("owner", {});
    const child = await h.things.create("child", {}, { owner: owner.id, finalizers: ["test/h"] });
    const live = await h.create("live", {});
    const liveChild = await h.things.create("live-child", {}, { owner: live.id });
    await h.flush();
    await h.things.delete(owner.id);
    await h.flush();
    const ownerPasses = () => h.passes.filter((p) => p.id === owner.id).length;
    const livePasses = () => h.passes.filter((p) => p.id === live.id).length;
    const blocked = ownerPasses();
    assert.ok(await exists(h, owner.id));
    // Time passes, but every driver that could find the owner is parked.
    await h.tick(60_000);
    assert.equal(ownerPasses(), blocked);
    await h.pass(child.id, async (_o, cc) => {
      await cc.deleteFinalizer("test/h");
    });
    assert.equal(ownerPasses(), blocked + 1);
    assert.equal(await exists(h, owner.id), false);
    // Collecting the child of a live owner leaves that owner alone.
    const liveBefore = livePasses();
    await h.things.delete(liveChild.id);
    await h.flush();
    assert.equal(await exists(h, liveChild.id), false);
    assert.equal(livePasses(), liveBefore);
  });
});

test("GC a cascade over many children costs the owner one pass when the last child goes, not one per child", async () => {
  await withHarness({ beehive: PARKED }, async (h) => {
    // Children of their own kind: their worker runs beside the owner's.
    registerRecorder(h, Child);
    await h.start();
    const owner = await h.create("owner", {});
    const children = h.bh.client(Child);
    for (let i = 0; i < 20; i++) await children.create(`child-${i}`, {}, { owner: owner.id });
    await h.flush();
    const before = h.passes.filter((p) => p.id === owner.id).length;
    await h.things.delete(owner.id);
    await h.flush();
    assert.equal(await exists(h, owner.id), false);
    assert.deepEqual(await children.list(), []);
    // The delete's own pass (which cascades), then the one the last child's removal pushed.
    assert.equal(h.passes.filter((p) => p.id === owner.id).length, before + 2);
  });
});

test("GC owner cascade three levels deep across registered and client-only kinds collects leaf first, root last", async () => {
  await withHarness({}, async (h) => {
    // root: Thing (registered) → middle: Other (client-only) → leaf: Child (registered, finalizer).
    const leafPasses = registerRecorder(h, Child, async (obj, cc) => {
      if (obj.deletionRequestedAt !== undefined) await cc.deleteFinalizer("test/flush");
      return settled();
    });
    await h.start();
    const root = await h.create("root", {});
    const middle = await h.bh.client(Other).create("middle", {}, { owner: root.id });
    const leaf = await h.bh.client(Child).create("leaf", {}, {
      owner: middle.id,
      finalizers: ["test/flush"],
    });
    await h.flush();
    await h.things.delete(root.id);
    await h.flush();
    assert.ok(await pending(h, middle.id));
    assert.equal(await pending(h, leaf.id), false);
    // First sweep: the client-only middle cascades to the leaf, whose controller clears it.
    await h.tick(30_000);
    assert.ok(leafPasses.some((p) => p.id === leaf.id && p.deleting));
    assert.equal(await exists(h, leaf.id), false);
    assert.ok(await exists(h, middle.id));
    assert.ok(await exists(h, root.id));
    // Second sweep: the middle goes, and its removal pushes the deleting root.
    await h.tick(30_000);
    assert.equal(await exists(h, middle.id), false);
    assert.equal(await exists(h, root.id), false);
    assert.deepEqual(await collectedOrder(h), [leaf.id, middle.id, root.id]);
  });
});

test("GC a cascade mark reaches a child waiting out a retry backoff at once", async () => {
  await withHarness({ beehive: PARKED }, async (h) => {
    await h.start();
    h.fallback = (obj) => {
      if (obj.name === "child" && obj.deletionRequestedAt === undefined) throw new Error("flaky");
      return settled();
    };
    const owner = await h.create("owner", {});
    const child = await h.things.create("child", {}, { owner: owner.id });
    await h.flush();
    assert.ok((await h.things.getSchedule(child.id)).nextRequeueAt !== undefined);
    const before = h.passes.filter((p) => p.id === child.id).length;
    await h.things.delete(owner.id);
    await h.flush(); // well inside the child's 1 s backoff
    assert.equal(h.passes.filter((p) => p.id === child.id).length, before + 1);
    assert.equal(await exists(h, child.id), false);
    assert.equal(await exists(h, owner.id), false);
  });
});

test("GC a cascade mark pushes the deletion-pending target the marked child was holding", async () => {
  await withHarness({ beehive: PARKED }, async (h) => {
    await h.start();
    const owner = await h.create("owner", {});
    const child = await h.things.create("child", {}, { owner: owner.id, finalizers: ["test/h"] });
    const target = await h.create("target", {});
    await h.bh.adminClient(Thing).addDependency(child.id, target.id);
    await h.tick(5_000);
    await h.things.delete(target.id);
    await h.flush();
    assert.ok(await pending(h, target.id)); // held by the live child
    const before = h.passes.filter((p) => p.id === target.id).length;
    await h.things.delete(owner.id);
    await h.flush(); // no time passes
    assert.equal(h.passes.filter((p) => p.id === target.id).length, before + 1);
    assert.equal(await exists(h, target.id), false);
    assert.ok(await pending(h, child.id));
  });
});

test("GC a child created under a deleting owner is marked by the re-cascade its create pushes", async () => {
  await withHarness({ beehive: PARKED }, async (h) => {
    await h.start();
    const owner = await h.create("owner", {});
    const first = await h.things.create("first", {}, { owner: owner.id, finalizers: ["test/h"] });
    await h.flush();
    await h.things.delete(owner.id);
    await h.flush();
    assert.ok(await pending(h, first.id));
    const late = await h.things.create("late", {}, { owner: owner.id, finalizers: ["test/h"] });
    await h.flush(); // no time passes: the owner's pass re-cascades
    assert.ok(await pending(h, late.id));
    assert.ok(h.passes.some((p) => p.id === late.id && p.deleting));
  });
});

// ---------------------------------------------------------------------------
// hasIncomingEdges

test("GC a finalizer gated on hasIncomingEdges() is cleared only after the owned children are gone", async () => {
  await withHarness({}, async (h) => {
    const log: string[] = [];
    let releaseSecond = false;
    registerRecorder(h, Child, async (obj, cc) => {
      if (obj.deletionRequestedAt === undefined) return settled();
      if (obj.name === "cache-1" && !releaseSecond) return settled();
      log.push(`${obj.name} flushed`);
      await cc.deleteFinalizer("test/flush");
      return settled();
    });
    h.fallback = async (obj, cc) => {
      if (obj.deletionRequestedAt === undefined) return settled();
      if (await cc.hasIncomingEdges()) {
        log.push("cluster holding");
        return settled();
      }
      log.push("cluster released");
      await cc.deleteFinalizer("test/connection");
      return settled();
    };
    await h.start();
    const cluster = await h.create("cluster", {}, { finalizers: ["test/connection"] });
    const caches = h.bh.client(Child);
    const c0 = await caches.create("cache-0", {}, {
      owner: cluster.id,
      finalizers: ["test/flush"],
    });
    const c1 = await caches.create("cache-1", {}, {
      owner: cluster.id,
      finalizers: ["test/flush"],
    });
    await h.flush();
    await h.things.delete(cluster.id);
    await h.flush();
    await h.tick(60_000);
    assert.equal(await exists(h, c0.id), false);
    assert.ok(await exists(h, c1.id));
    assert.deepEqual((await h.things.get(cluster.id)).finalizers, ["test/connection"]);
    releaseSecond = true;
    await caches.requeue(c1.id);
    await h.flush();
    assert.equal(await exists(h, c1.id), false);
    assert.equal(await exists(h, cluster.id), false);
    assert.equal(log[0], "cluster holding");
    assert.deepEqual(log.filter((l) => !l.startsWith("cluster holding")), [
      "cache-0 flushed",
      "cache-1 flushed",
      "cluster released",
    ]);
    assert.deepEqual(await collectedOrder(h), [c0.id, c1.id, cluster.id]);
  });
});

test("GC hasIncomingEdges() counts a live dependent and ignores a deleting one, itself through a self-edge included", async () => {
  await withHarness({ beehive: PARKED }, async (h) => {
    await h.start();
    const admin = h.bh.adminClient(Thing);
    const target = await h.create("target", {}, { finalizers: ["test/gate"] });
    const dependent = await h.create("dependent", {}, { finalizers: ["test/hold"] });
    await admin.addDependency(target.id, target.id);
    await admin.addDependency(dependent.id, target.id);
    await h.flush();
    const incoming = async () => {
      let seen: boolean | undefined;
      await h.pass(target.id, async (_o, cc) => {
        seen = await cc.hasIncomingEdges();
      });
      return seen;
    };
    assert.equal(await incoming(), true);
    await h.things.delete(target.id);
    await h.flush();
    // The self-edge's source is deleting now; the live dependent still has a claim.
    assert.equal(await incoming(), true);
    await h.things.delete(dependent.id);
    await h.flush();
    assert.equal(await incoming(), false);
    // With nothing left to wait for, the gated finalizer clears and the self-edge does not pin the row.
    await h.pass(target.id, async (_o, cc) => {
      if (!await cc.hasIncomingEdges()) await cc.deleteFinalizer("test/gate");
    });
    assert.equal(await exists(h, target.id), false);
    assert.ok(await exists(h, dependent.id));
  });
});

// ---------------------------------------------------------------------------
// The GC sweep

test("GC sweep at startup collects a half-finished delete left by an earlier process", async () => {
  const dir = tempDir();
  try {
    const path = dir.file("graph.db");
    let owner = 0, thingChild = 0, otherChild = 0;
    // The first process settles everything, then stops.
    await withHarness({ path }, async (h) => {
      await h.start();
      owner = (await h.create("owner", {})).id;
      thingChild = (await h.things.create("t", {}, { owner })).id;
      otherChild = (await h.bh.client(Other).create("o", {}, { owner })).id;
      await h.flush();
      await h.stop();
    });
    // A crash after the marks committed and before any push was served: written
    // straight through the store, so nothing was ever enqueued.
    const store = await openTestStore(path);
    try {
      await store.deletionRequests.create({ ...Thing, id: owner });
      const cascade = await store.deletionRequests.createFromOwner(owner);
      assert.equal(cascade.children.filter((c) => c.marked).length, 2);
    } finally {
      await store.close();
    }
    // The next process has every periodic driver parked: the sweep at start does it all.
    await withHarness({ path, beehive: PARKED }, async (h) => {
      assert.deepEqual(await h.store.objects.listUnsettledIds(Thing), []);
      await h.start();
      for (const id of [owner, thingChild, otherChild]) {
        assert.equal(await exists(h, id), false, `object ${id} is collected`);
      }
      // Both registered rows were handed to the controller; the client-only one never is.
      const deleting = new Set(h.passes.filter((p) => p.deleting).map((p) => p.id));
      assert.deepEqual([...deleting].sort((a, b) => a - b), [owner, thingChild]);
    });
  } finally {
    dir.remove();
  }
});

test("GC sweep runs at start and then every gcInterval", async () => {
  await withHarness({ beehive: { gcInterval: 5_000 } }, async (h) => {
    const others = h.bh.client(Other);
    const early = await others.create("early", {});
    await others.delete(early.id);
    await h.start(); // no time passes: the sweep at start
    assert.equal(await exists(h, early.id), false);
    const late = await others.create("late", {});
    await others.delete(late.id);
    await h.tick(4_999);
    assert.ok(await pending(h, late.id));
    await h.tick(1);
    assert.equal(await exists(h, late.id), false);
    const later = await others.create("later", {});
    await others.delete(later.id);
    await h.tick(4_999);
    assert.ok(await pending(h, later.id));
    await h.tick(1);
    assert.equal(await exists(h, later.id), false);
  });
});

test("GC sweep hands a deletion-pending row of a registered kind to its controller rather than collecting it directly", async () => {
  await withHarness({ beehive: { ...PARKED, gcInterval: 10_000 } }, async (h) => {
    await h.start();
    const obj = await h.create("a", {});
    // Marked behind the Beehive's back: no push, and nothing owed or unsettled.
    await h.store.deletionRequests.create({ ...Thing, id: obj.id });
    await h.tick(9_999);
    assert.deepEqual(h.passes.map((p) => p.deleting), [false]);
    assert.ok(await exists(h, obj.id));
    await h.tick(1);
    assert.deepEqual(h.passes.map((p) => p.deleting), [false, true]);
    assert.equal(await exists(h, obj.id), false);
  });
});

test("GC sweep enforces eventRetention perTimeline on gcInterval", async () => {
  await withHarness(
    { beehive: { gcInterval: 10_000, eventRetention: { perTimeline: 2 } } },
    async (h) => {
      const admin = h.bh.adminClient(Thing);
      const obj = await h.things.create("a", {});
      for (const reason of ["R1", "R2", "R3", "R4"]) {
        await admin.addEvent(obj.id, { type: "Normal", reason });
        await h.tick(1);
      }
      await admin.addEvent(obj.id, { category: "other", type: "Normal", reason: "Q1" });
      await h.start();
      await h.tick(10_000);
      const runs = await h.things.listEvents(obj.id);
      assert.deepEqual(runs.map((e) => e.reason).sort(), ["Q1", "R3", "R4"]);
    },
  );
});

test("GC sweep enforces eventRetention maxAge on gcInterval", async () => {
  await withHarness(
    { beehive: { gcInterval: 10_000, eventRetention: { maxAge: 60_000 } } },
    async (h) => {
      const admin = h.bh.adminClient(Thing);
      const obj = await h.things.create("a", {});
      await admin.addEvent(obj.id, { type: "Normal", reason: "Old" });
      await h.start();
      await h.tick(50_000);
      await admin.addEvent(obj.id, { type: "Normal", reason: "New" });
      await h.tick(10_000); // the sweep at 60 s: Old is exactly 60 s old
      assert.deepEqual((await h.things.listEvents(obj.id)).map((e) => e.reason), ["New", "Old"]);
      await h.tick(10_000);
      assert.deepEqual((await h.things.listEvents(obj.id)).map((e) => e.reason), ["New"]);
    },
  );
});

test("GC sweep leaves the event log unbounded by default", async () => {
  await withHarness({}, async (h) => {
    const admin = h.bh.adminClient(Thing);
    const obj = await h.things.create("a", {});
    for (let i = 0; i < 30; i++) await admin.addEvent(obj.id, { type: "Normal", reason: `R${i}` });
    await h.start();
    await h.tick(10 * 86_400_000 / 100); // 2.4 h of sweeps
    assert.equal((await h.things.listEvents(obj.id)).length, 30);
  });
});

test("GC sweep enforces the default writeLogRetention of 24 h", async () => {
  await withHarness({ registerThing: false }, async (h) => {
    const others = h.bh.client(Other);
    const old = await others.create("old", {});
    await h.start();
    await h.tick(12 * HOUR);
    const recent = await others.create("recent", {});
    const before = await h.store.objectWrites.listSince(Other, { after: 0, limit: 100 });
    assert.deepEqual(before.writes.map((w) => w.id), [old.id, recent.id]);
    assert.equal(before.trimmedThrough, 0);
    await h.tick(12 * HOUR + 30_000); // the old entry is now past 24 h and a sweep ran
    const after = await h.store.objectWrites.listSince(Other, { after: 0, limit: 100 });
    assert.deepEqual(after.writes.map((w) => w.id), [recent.id]);
    assert.equal(after.trimmedThrough, old.resourceVersion);
  });
});

test("GC sweep enforces writeLogRetention perKind, with no age bound when maxAge is 0", async () => {
  await withHarness(
    {
      registerThing: false,
      beehive: { gcInterval: HOUR, writeLogRetention: { perKind: 2, maxAge: 0 } },
    },
    async (h) => {
      const others = h.bh.client(Other);
      const objs = [];
      for (const name of ["a", "b", "c", "d"]) objs.push(await others.create(name, {}));
      await h.start();
      const { writes, trimmedThrough } = await h.store.objectWrites.listSince(Other, {
        after: 0,
        limit: 100,
      });
      assert.deepEqual(writes.map((w) => w.id), [objs[2].id, objs[3].id]);
      assert.equal(trimmedThrough, objs[1].resourceVersion);
      // Days later nothing more is trimmed: there is no age bound.
      await h.tick(48 * HOUR);
      const later = await h.store.objectWrites.listSince(Other, { after: 0, limit: 100 });
      assert.deepEqual(later.writes.map((w) => w.id), [objs[2].id, objs[3].id]);
    },
  );
});

test("GC sweep zeroes the owed counts of client-only kinds and keeps those of registered kinds", async () => {
  await withHarness({}, async (h) => {
    h.fallback = () => {
      throw new Error("never settles");
    };
    const orphan = await h.bh.client(Other).create("orphan", {});
    const thing = await h.things.create("thing", {});
    // E.g. an edge declared from a client-only object: nothing would ever drain it.
    await h.store.reconcileOwed.stamp([{ ...Other, id: orphan.id }, { ...Thing, id: thing.id }]);
    assert.equal((await h.store.objects.getMeta(orphan.id)).reconcileOwed, 1);
    assert.equal((await h.store.objects.getMeta(thing.id)).reconcileOwed, 1);
    await h.start();
    assert.equal((await h.store.objects.getMeta(orphan.id)).reconcileOwed, 0);
    // The failing controller never drains its own count, and the sweep leaves it be.
    await h.tick(60_000);
    assert.equal((await h.store.objects.getMeta(thing.id)).reconcileOwed, 1);
    assert.deepEqual(await h.store.reconcileOwed.listIds(Thing), [thing.id]);
  });
});

test("GC sweep stops collecting as soon as the Beehive stops", async () => {
  await withHarness({ registerThing: false }, async (h) => {
    const others = h.bh.client(Other);
    const ids: number[] = [];
    for (let i = 0; i < 50; i++) {
      const o = await others.create(`o${i}`, {});
      await others.delete(o.id);
      ids.push(o.id);
    }
    // Stopped while the sweep at start is under way: stop does not wait for all 50 collections.
    const stop = await h.bh.start();
    await stop();
    let left = 0;
    for (const id of ids) if (await exists(h, id)) left++;
    assert.ok(left > 25, `${50 - left} of 50 were collected after stop was called`);
  });
});

test("GC sweep releases the free pages collection and retention leave behind", async () => {
  await withHarness({
    registerThing: false,
    beehive: { writeLogRetention: { perKind: 1, maxAge: 0 } },
  }, async (h) => {
    const others = h.bh.client(Other);
    const big = "x".repeat(4_000);
    for (let i = 0; i < 400; i++) {
      const o = await others.create(`o${i}`, { big });
      await others.delete(o.id);
    }
    assert.equal(await h.store.reclaimSpace(0), 0);
    await h.start(); // the sweep at start collects, trims the log, then releases pages
    assert.deepEqual(await others.list(), []);
    assert.equal(await h.store.reclaimSpace(100_000), 0, "nothing was left to release");
  });
});

/** Records what each GC sweep asked the store for. */
function recordingBudgets(seen: { reclaim: number[]; capBudget: (number | undefined)[] }) {
  return (store: TestStore) =>
    new Proxy(store, {
      get(target, prop) {
        if (prop === "reclaimSpace") {
          return (pages: number) => {
            seen.reclaim.push(pages);
            return target.reclaimSpace(pages);
          };
        }
        if (prop === "events") {
          return new Proxy(target.events, {
            get(events, m) {
              const fn = Reflect.get(events, m, events);
              if (m !== "sweep") return typeof fn === "function" ? fn.bind(events) : fn;
              return (o: { capBudget?: number }) => {
                seen.capBudget.push(o.capBudget);
                return fn.call(events, o);
              };
            },
          });
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
}

for (
  const [gcInterval, reclaim, capBudget] of [
    [30_000, 1_000, 256],
    [300_000, 10_000, 2_560],
    [3_000, 100, 26],
    [1, 1, 1],
  ] as const
) {
  test(`GC sweep budgets scale with gcInterval ${gcInterval}: ${reclaim} pages, ${capBudget} timelines`, async () => {
    const seen = { reclaim: [] as number[], capBudget: [] as (number | undefined)[] };
    await withHarness({
      beehive: { gcInterval, eventRetention: { perTimeline: 10 } },
      wrap: recordingBudgets(seen),
    }, async (h) => {
      await h.start();
      assert.deepEqual(seen.reclaim, [reclaim]);
      assert.deepEqual(seen.capBudget, [capBudget]);
      await h.tick(gcInterval);
      assert.deepEqual(seen.reclaim, [reclaim, reclaim]);
    });
  });
}
