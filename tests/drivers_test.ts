/**
 * The drivers that decide when a pass runs: the owed pass (at start and on
 * its ticker), the full pass, the startup full pass, the individual pass and
 * its startup admission, the bare-unsettled alarm, and the durable pull behind
 * every push. Everything runs under fake time over a real SQLite store.
 *
 * @module
 */
import assert from "node:assert/strict";
import { fail, settled, unsettled } from "../mod.ts";
import type { Store } from "../store/mod.ts";
import { openTestStore, type TestStore } from "./_sqlite_driver.ts";
import { test } from "./_test.ts";
import { countingObjectCalls, type Harness, Thing, withHarness } from "./_beehive_harness.ts";
import { installFakeTime } from "./_fake_time.ts";

/** When `id` is next due, in ms after `origin`, or `undefined`. */
async function dueIn(h: Harness, id: number, origin: number): Promise<number | undefined> {
  const s = await h.things.getSchedule(id);
  return s.nextRequeueAt === undefined ? undefined : s.nextRequeueAt.getTime() - origin;
}

/** Pass instants over `id`, in ms after `origin`. */
function passTimes(h: Harness, id: number, origin: number): number[] {
  return h.passes.filter((p) => p.id === id).map((p) => p.at - origin);
}

/** How many passes ran over `id`. */
function passCount(h: Harness, id: number): number {
  return h.passes.filter((p) => p.id === id).length;
}

/** Writes a Thing row straight to the store (no push), settled at generation 1 unless `unsettledRow`. */
async function rawThing(h: Harness, name: string, unsettledRow = false): Promise<number> {
  const raw = await h.store.objects.create(Thing, { name, spec: "{}" });
  if (!unsettledRow) await h.store.objects.setObservedGeneration({ ...Thing, id: raw.id }, 1);
  return raw.id;
}

/** A promise that resolves after `ms` of fake time. */
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---------------------------------------------------------------------------
// Owed pass

test("Owed pass drains unsettled objects and owed counts at start", async () => {
  await withHarness({}, async (h) => {
    const unsettledId = await rawThing(h, "unsettled", true);
    const owedId = await rawThing(h, "owed");
    const quietId = await rawThing(h, "quiet");
    await h.store.reconcileOwed.stamp([{ ...Thing, id: owedId }]);
    await h.store.reconcileOwed.stamp([{ ...Thing, id: owedId }]);
    await h.start();
    assert.deepEqual(h.passes.map((p) => p.id).sort((a, b) => a - b), [unsettledId, owedId]);
    assert.equal(passCount(h, quietId), 0);
    assert.equal((await h.store.objects.getMeta(unsettledId)).observedGeneration, 1);
    assert.equal((await h.store.objects.getMeta(owedId)).reconcileOwed, 0);
  });
});

test("Owed pass drains what the store records as owed on each owedPassInterval tick", async () => {
  await withHarness({ beehive: { owedPassInterval: 10_000 } }, async (h) => {
    await h.start();
    const origin = Date.now();
    const settledObj = await h.create("settled");
    // Written behind the Beehive's back: no push, only the owed pass can find them.
    const unsettledId = await rawThing(h, "unsettled", true);
    await h.store.reconcileOwed.stamp([{ ...Thing, id: settledObj.id }]);
    await h.tick(9_999);
    assert.deepEqual(passTimes(h, settledObj.id, origin), [0]);
    assert.deepEqual(passTimes(h, unsettledId, origin), []);
    await h.tick(1);
    assert.deepEqual(passTimes(h, settledObj.id, origin), [0, 10_000]);
    assert.deepEqual(passTimes(h, unsettledId, origin), [10_000]);
    assert.equal((await h.store.objects.getMeta(settledObj.id)).reconcileOwed, 0);
    assert.equal((await h.store.objects.getMeta(unsettledId)).observedGeneration, 1);
    // Drained: the next tick finds nothing; a new stamp is found by the one after.
    await h.tick(10_000);
    assert.equal(h.passes.length, 3);
    await h.store.reconcileOwed.stamp([{ ...Thing, id: unsettledId }]);
    await h.tick(10_000);
    assert.deepEqual(passTimes(h, unsettledId, origin), [10_000, 30_000]);
    assert.equal(h.passes.length, 4);
  });
});

test("Owed pass never bypasses a pending backoff: a failing object keeps its ladder while the owed pass ticks", async () => {
  // 2.3 s ticks never coincide with the ladder's instants (1, 3, 7, 15, 31 s).
  await withHarness({ beehive: { owedPassInterval: 2_300 } }, async (h) => {
    h.fallback = () => fail(new Error("still broken"));
    await h.start();
    const origin = Date.now();
    const obj = await h.create("failing");
    await h.tick(32_000);
    // The object is unsettled, so every tick lists it; every listing is absorbed by the backoff.
    assert.deepEqual(passTimes(h, obj.id, origin), [0, 1_000, 3_000, 7_000, 15_000, 31_000]);
    // The 30 s rung (the cap) lies far beyond the owed-pass interval, and still holds.
    assert.equal(await dueIn(h, obj.id, origin), 61_000);
    await h.tick(28_000);
    assert.equal(passCount(h, obj.id), 6);
  });
});

// ---------------------------------------------------------------------------
// Full pass

test("Full pass re-dispatches every object on each fullPassInterval tick", async () => {
  await withHarness(
    { beehive: { fullPassInterval: 20_000, owedPassInterval: 600_000 } },
    async (h) => {
      await h.start();
      const origin = Date.now();
      const a = await h.create("a");
      const b = await h.create("b");
      await h.tick(19_999);
      assert.equal(h.passes.length, 2);
      await h.tick(1);
      assert.deepEqual(passTimes(h, a.id, origin), [0, 20_000]);
      assert.deepEqual(passTimes(h, b.id, origin), [0, 20_000]);
      await h.tick(20_000);
      assert.deepEqual(passTimes(h, a.id, origin), [0, 20_000, 40_000]);
      assert.deepEqual(passTimes(h, b.id, origin), [0, 20_000, 40_000]);
    },
  );
});

test("Full pass is off by default: nothing re-dispatches a settled object", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const a = await h.create("a");
    const b = await h.create("b");
    assert.equal(h.passes.length, 2);
    await h.tick(600_000);
    assert.equal(passCount(h, a.id), 1);
    assert.equal(passCount(h, b.id), 1);
  });
});

test("Full pass set per kind at register overrides the Beehive's default", async () => {
  await withHarness({
    beehive: { fullPassInterval: 0, owedPassInterval: 600_000 },
    register: { fullPassInterval: 5_000 },
  }, async (h) => {
    await h.start();
    const origin = Date.now();
    const a = await h.create("a");
    await h.tick(10_000);
    assert.deepEqual(passTimes(h, a.id, origin), [0, 5_000, 10_000]);
  });
});

// ---------------------------------------------------------------------------
// Startup full pass

test("Startup full pass reconciles every settled object once at start", async () => {
  await withHarness({ register: { startupFullPass: true } }, async (h) => {
    const a = await rawThing(h, "a");
    const b = await rawThing(h, "b");
    const c = await rawThing(h, "c", true);
    await h.start();
    // c is also owed: it is listed twice and passes once.
    assert.deepEqual(h.passes.map((p) => p.id).sort((x, y) => x - y), [a, b, c]);
    await h.tick(600_000);
    assert.equal(h.passes.length, 3);
  });
});

test("Startup full pass is off by default: settled objects are left alone at start", async () => {
  await withHarness({}, async (h) => {
    await rawThing(h, "a");
    const c = await rawThing(h, "c", true);
    await h.start();
    assert.deepEqual(h.passes.map((p) => p.id), [c]);
  });
});

// ---------------------------------------------------------------------------
// Individual pass

test("Individual pass re-arms each object about d after the end of its own pass", async () => {
  const d = 10_000;
  await withHarness({ beehive: { individualPassInterval: d } }, async (h) => {
    // Each pass takes 3 s: the cadence counts from its end, not its start.
    h.fallback = async () => {
      await sleep(3_000);
      return settled();
    };
    await h.start();
    const origin = Date.now();
    const obj = await h.create("a");
    await h.tick(3_000);
    const due = await dueIn(h, obj.id, origin);
    assert.ok(due !== undefined && due >= 3_000 + d && due <= 3_000 + 1.1 * d, `due at ${due}`);
    await h.tick(due - 3_000 - 1);
    assert.deepEqual(passTimes(h, obj.id, origin), [0]);
    await h.tick(1);
    assert.deepEqual(passTimes(h, obj.id, origin), [0, due]);
    // And again from the end of that pass.
    await h.tick(3_000);
    const next = await dueIn(h, obj.id, origin);
    assert.ok(
      next !== undefined && next >= due + 3_000 + d && next <= due + 3_000 + 1.1 * d,
      `next due at ${next}`,
    );
  });
});

test("Individual pass jitter only lengthens the interval and drifts objects settled together apart", async () => {
  const d = 10_000;
  await withHarness({ beehive: { individualPassInterval: d } }, async (h) => {
    await h.start();
    const origin = Date.now();
    const ids: number[] = [];
    for (let i = 0; i < 12; i++) ids.push((await h.bh.client(Thing).create(`o${i}`, {})).id);
    await h.flush();
    assert.equal(h.passes.length, 12);
    const dues: number[] = [];
    for (const id of ids) {
      const due = await dueIn(h, id, origin);
      assert.ok(due !== undefined && due >= d && due <= 1.1 * d, `due at ${due}`);
      dues.push(due);
    }
    assert.ok(new Set(dues).size > 1, `every object due at once: ${dues}`);
    await h.tick(d - 1);
    assert.equal(h.passes.length, 12, "no pass comes early");
    await h.tick(0.1 * d + 1);
    assert.equal(h.passes.length, 24);
  });
});

test("Individual pass admission spreads the first passes of existing objects across the first interval", async () => {
  const d = 10_000;
  await withHarness({ beehive: { individualPassInterval: d } }, async (h) => {
    const ids: number[] = [];
    for (let i = 0; i < 20; i++) ids.push(await rawThing(h, `o${i}`));
    await h.start();
    const origin = Date.now();
    assert.equal(h.passes.length, 0, "admission does not dispatch everything at start");
    for (const id of ids) {
      const due = await dueIn(h, id, origin);
      assert.ok(due !== undefined && due > 0 && due <= d, `admitted at ${due}`);
    }
    await h.tick(d);
    for (const id of ids) assert.equal(passCount(h, id), 1);
    const times = new Set(h.passes.map((p) => p.at));
    assert.ok(times.size > 1, "first passes spread out");
    // Each first pass armed the next one.
    for (const id of ids) assert.notEqual(await dueIn(h, id, origin), undefined);
  });
});

test("Individual pass admission with the startup full pass on is the startup pass: one listing, every object at start", async () => {
  const counts = new Map<string, number>();
  await withHarness({
    beehive: { individualPassInterval: 10_000, startupFullPass: true },
    wrap: countingObjectCalls(counts),
  }, async (h) => {
    const a = await rawThing(h, "a");
    const b = await rawThing(h, "b");
    await h.start();
    assert.deepEqual(h.passes.map((p) => p.id), [a, b]);
    assert.equal(counts.get("listIds"), 1);
  });
});

test("Individual pass admission never displaces a schedule a pass already set", async () => {
  // The admission listing is held until the object's first pass has set its own schedule.
  const gate = Promise.withResolvers<void>();
  const holdListIds = (store: TestStore): Store => {
    const objects = new Proxy(store.objects, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (prop !== "listIds") return typeof value === "function" ? value.bind(target) : value;
        return async (...args: unknown[]) => {
          await gate.promise;
          return value.apply(target, args);
        };
      },
    });
    return new Proxy(store, {
      get(target, prop) {
        if (prop === "objects") return objects;
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  };
  await withHarness(
    { beehive: { individualPassInterval: 10_000 }, wrap: holdListIds },
    async (h) => {
      // Unsettled: the owed drain dispatches it at start, before admission lists it.
      const id = await rawThing(h, "a", true);
      h.fallback = () => settled().requeueAfter(60_000);
      await h.start();
      const origin = Date.now();
      assert.deepEqual(passTimes(h, id, origin), [0]);
      assert.equal(await dueIn(h, id, origin), 60_000);
      gate.resolve();
      await h.flush();
      assert.equal(await dueIn(h, id, origin), 60_000);
      await h.tick(59_999);
      assert.deepEqual(passTimes(h, id, origin), [0]);
      await h.tick(1);
      assert.deepEqual(passTimes(h, id, origin), [0, 60_000]);
    },
  );
});

test("Individual pass yields to a requeueAfter result, sooner or later", async () => {
  const d = 10_000;
  await withHarness({ beehive: { individualPassInterval: d } }, async (h) => {
    const results = [() => settled().requeueAfter(3_000), () => unsettled().requeueAfter(25_000)];
    h.fallback = () => (results.shift() ?? settled)();
    await h.start();
    const origin = Date.now();
    const obj = await h.create("a");
    assert.equal(await dueIn(h, obj.id, origin), 3_000);
    await h.tick(3_000);
    assert.equal(await dueIn(h, obj.id, origin), 28_000);
    await h.tick(25_000);
    assert.deepEqual(passTimes(h, obj.id, origin), [0, 3_000, 28_000]);
    // A bare settled() re-arms the cadence again.
    const due = await dueIn(h, obj.id, origin);
    assert.ok(due !== undefined && due >= 28_000 + d && due <= 28_000 + 1.1 * d, `due at ${due}`);
  });
});

test("Individual pass never re-arms a collected object", async () => {
  const counts = new Map<string, number>();
  await withHarness({
    beehive: { individualPassInterval: 10_000 },
    wrap: countingObjectCalls(counts),
  }, async (h) => {
    await h.start();
    const origin = Date.now();
    const obj = await h.create("a");
    assert.notEqual(await dueIn(h, obj.id, origin), undefined);
    await h.things.delete(obj.id);
    await h.flush();
    assert.deepEqual(h.passes.map((p) => p.deleting), [false, true]);
    await assert.rejects(h.store.objects.get(obj.id));
    assert.equal(await dueIn(h, obj.id, origin), undefined);
    const loads = counts.get("getForReconcile");
    await h.tick(60_000);
    assert.equal(counts.get("getForReconcile"), loads, "nothing loads the collected id again");
    assert.equal(h.passes.length, 2);
  });
});

// ---------------------------------------------------------------------------
// The bare-unsettled alarm, and the pull behind every push

test("Drivers a bare unsettled() comes back after owedPassInterval, 30 s by default", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    await h.tick(7_000);
    const origin = Date.now();
    // Settled at generation 1 already: no listing names it, only its alarm (not the 30 s ticker).
    await h.pass(obj.id, () => {}, unsettled);
    assert.equal(await dueIn(h, obj.id, origin), 30_000);
    await h.tick(29_999);
    assert.deepEqual(passTimes(h, obj.id, origin), [-7_000, 0]);
    await h.tick(1);
    assert.deepEqual(passTimes(h, obj.id, origin), [-7_000, 0, 30_000]);
    // That pass settled: nothing more.
    await h.tick(120_000);
    assert.equal(passCount(h, obj.id), 3);
  });
});

test("Drivers every push has a durable pull behind it: writes made while the Beehive is stopped are reconciled at the next start", async () => {
  const clock = installFakeTime();
  try {
    const store = await openTestStore(":memory:");
    try {
      let createdId = 0;
      let updatedId = 0;
      await withHarness({ store, clock }, async (h) => {
        await h.start();
        updatedId = (await h.create("updated", { v: 1 })).id;
        await h.stop();
        // The client still works; its push lands on a stopped queue and is lost.
        createdId = (await h.things.create("created", { v: 1 })).id;
        await h.things.update(updatedId, { v: 2 });
        await h.tick(120_000);
        assert.deepEqual(h.passes.map((p) => p.id), [updatedId]);
      });
      await withHarness({ store, clock }, async (h) => {
        await h.start();
        assert.deepEqual(
          h.passes.map((p) => [p.id, p.generation]).sort((a, b) => a[0] - b[0]),
          [[updatedId, 2], [createdId, 1]],
        );
        assert.equal((await h.things.get(createdId)).observedGeneration, 1);
        assert.equal((await h.things.get(updatedId)).observedGeneration, 2);
      });
    } finally {
      await store.close();
    }
  } finally {
    clock.uninstall();
  }
});
