/**
 * The reconcile loop: what each result records and when it comes back, the
 * retry ladder, quarantine, owed counts, and passes over deleting objects.
 * Everything runs under fake time over a real SQLite store.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  fail,
  InvalidResultError,
  NotFoundError,
  type ReconcileResult,
  settled,
  StoreError,
  unsettled,
} from "../mod.ts";
import { test } from "./_test.ts";
import {
  type AnyObject,
  countingObjectCalls,
  type Harness,
  Thing,
  withHarness,
} from "./_beehive_harness.ts";

/** When `id` is next due, in ms after `origin`, or `undefined`. */
async function dueIn(h: Harness, id: number, origin: number): Promise<number | undefined> {
  const s = await h.things.getSchedule(id);
  return s.nextRequeueAt === undefined ? undefined : s.nextRequeueAt.getTime() - origin;
}

/** Pass instants over `id`, in ms after `origin`. */
function passTimes(h: Harness, id: number, origin: number): number[] {
  return h.passes.filter((p) => p.id === id).map((p) => p.at - origin);
}

test("Reconciler settled records the generation it handed to the pass", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const created = await h.create("a", { v: 1 });
    const obj = await h.things.get(created.id);
    assert.equal(h.passes.length, 1);
    assert.equal(obj.generation, 1);
    assert.equal(obj.observedGeneration, 1);
    assert.equal(obj.observedAt?.getTime(), Date.now());
  });
});

test("Reconciler settled leaves a spec update made during the pass unobserved and reconciles again", async () => {
  await withHarness({}, async (h) => {
    const seen: { generation: number; observed: number | undefined }[] = [];
    h.fallback = async (obj: AnyObject) => {
      seen.push({ generation: obj.generation, observed: obj.observedGeneration });
      if (obj.generation === 1) await h.things.update(obj.id, { v: 2 });
      return settled();
    };
    await h.start();
    const created = await h.create("a", { v: 1 });
    // The second pass was handed generation 2 with only generation 1 recorded.
    assert.deepEqual(seen, [
      { generation: 1, observed: undefined },
      { generation: 2, observed: 1 },
    ]);
    const obj = await h.things.get(created.id);
    assert.equal(obj.generation, 2);
    assert.equal(obj.observedGeneration, 2);
  });
});

test("Reconciler a bare settled schedules nothing", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    assert.equal(await dueIn(h, obj.id, Date.now()), undefined);
    await h.tick(120_000);
    assert.equal(h.passes.length, 1);
  });
});

test("Reconciler unsettled records no observedGeneration", async () => {
  await withHarness({ beehive: { owedPassInterval: 10_000 } }, async (h) => {
    h.fallback = () => unsettled();
    await h.start();
    const created = await h.create("a");
    assert.equal(h.passes.length, 1);
    const obj = await h.things.get(created.id);
    assert.equal(obj.observedGeneration, undefined);
    assert.equal(obj.observedAt, undefined);
  });
});

test("Reconciler unsettled comes back after owedPassInterval", async () => {
  await withHarness({ beehive: { owedPassInterval: 10_000 } }, async (h) => {
    await h.start();
    const obj = await h.create("a");
    await h.tick(2_500);
    const origin = Date.now();
    // Settled at generation 1 already: no owed listing names it, only its alarm.
    await h.pass(obj.id, () => {}, unsettled);
    assert.equal(await dueIn(h, obj.id, origin), 10_000);
    await h.tick(9_999);
    assert.deepEqual(passTimes(h, obj.id, origin), [-2_500, 0]);
    await h.tick(1);
    assert.deepEqual(passTimes(h, obj.id, origin), [-2_500, 0, 10_000]);
  });
});

for (const [name, make] of [["settled", settled], ["unsettled", unsettled]] as const) {
  test(`Reconciler ${name}().requeueAfter(ms) comes back after ms`, async () => {
    await withHarness({}, async (h) => {
      await h.start();
      const obj = await h.create("a");
      await h.tick(500);
      const origin = Date.now();
      await h.pass(obj.id, () => {}, () => make().requeueAfter(5_000));
      assert.equal(await dueIn(h, obj.id, origin), 5_000);
      await h.tick(4_999);
      assert.deepEqual(passTimes(h, obj.id, origin), [-500, 0]);
      await h.tick(1);
      assert.deepEqual(passTimes(h, obj.id, origin), [-500, 0, 5_000]);
    });
  });
}

test("Reconciler requeueAfter(0) comes back at the 1 s floor", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    await h.tick(5_000);
    const origin = Date.now();
    await h.pass(obj.id, () => {}, () => settled().requeueAfter(0));
    assert.equal(await dueIn(h, obj.id, origin), 1_000);
    await h.tick(999);
    assert.deepEqual(passTimes(h, obj.id, origin), [-5_000, 0]);
    await h.tick(1);
    assert.deepEqual(passTimes(h, obj.id, origin), [-5_000, 0, 1_000]);
  });
});

test("Reconciler fail(err) retries on the ladder 1s, 2s, 4s… capped at maxRetryInterval", async () => {
  await withHarness({ register: { maxRetryInterval: 5_000 } }, async (h) => {
    h.fallback = () => fail(new Error("boom"));
    await h.start();
    const origin = Date.now();
    const obj = await h.create("a");
    await h.tick(30_000);
    // Gaps 1s, 2s, 4s, then 5s (the cap) for good.
    assert.deepEqual(passTimes(h, obj.id, origin), [
      0,
      1_000,
      3_000,
      7_000,
      12_000,
      17_000,
      22_000,
      27_000,
    ]);
    const warned = h.logger.lines.filter((l) => l.level === "warn" && l.attributes?.id === obj.id);
    assert.equal(warned.length, 8);
    assert.equal((warned[0].attributes!.error as Error).message, "boom");
    assert.equal((await h.things.get(obj.id)).observedGeneration, undefined);
  });
});

test("Reconciler a thrown error takes the retry ladder like fail(err)", async () => {
  await withHarness({}, async (h) => {
    h.fallback = () => {
      throw new Error("thrown");
    };
    await h.start();
    const origin = Date.now();
    const obj = await h.create("a");
    await h.tick(7_000);
    assert.deepEqual(passTimes(h, obj.id, origin), [0, 1_000, 3_000, 7_000]);
    const warned = h.logger.lines.filter((l) => l.level === "warn" && l.attributes?.id === obj.id);
    assert.equal((warned[0].attributes!.error as Error).message, "thrown");
    assert.equal((await h.things.get(obj.id)).observedGeneration, undefined);
  });
});

test("Reconciler a success clears the retry ladder", async () => {
  await withHarness({}, async (h) => {
    let failing = true;
    h.fallback = () => failing ? fail(new Error("boom")) : settled();
    await h.start();
    const origin = Date.now();
    const obj = await h.create("a");
    await h.tick(3_000); // passes at 0, 1s, 3s: the next rung is 4s
    failing = false;
    await h.tick(4_000); // the 7s pass succeeds
    assert.deepEqual(passTimes(h, obj.id, origin), [0, 1_000, 3_000, 7_000]);
    assert.equal(await dueIn(h, obj.id, origin), undefined);
    failing = true;
    await h.tick(1_000);
    await h.things.requeue(obj.id);
    await h.flush();
    // The ladder starts over at 1s, not at 8s.
    assert.equal(await dueIn(h, obj.id, origin), 9_000);
  });
});

test("Client.requeue keeps the retry ladder unless resetBackoff is set", async () => {
  await withHarness({}, async (h) => {
    h.fallback = () => fail(new Error("boom"));
    await h.start();
    const origin = Date.now();
    const obj = await h.create("a"); // fails: retry at 1s
    await h.tick(1_000); // fails: retry 2s later, at 3s
    assert.equal(await dueIn(h, obj.id, origin), 3_000);
    await h.tick(500);
    await h.things.requeue(obj.id);
    await h.flush(); // fails at 1.5s: the ladder climbed to 4s
    assert.equal(await dueIn(h, obj.id, origin), 5_500);
    await h.tick(500);
    await h.things.requeue(obj.id, { resetBackoff: true });
    await h.flush(); // fails at 2s: back to the first rung
    assert.equal(await dueIn(h, obj.id, origin), 3_000);
    assert.deepEqual(passTimes(h, obj.id, origin), [0, 1_000, 1_500, 2_000]);
  });
});

test("Reconciler ignores requeueAfter on a failed result", async () => {
  await withHarness({}, async (h) => {
    h.fallback = () => fail(new Error("boom")).requeueAfter(60_000);
    await h.start();
    const origin = Date.now();
    const obj = await h.create("a");
    assert.equal(await dueIn(h, obj.id, origin), 1_000);
    await h.tick(1_000);
    assert.deepEqual(passTimes(h, obj.id, origin), [0, 1_000]);
  });
});

for (const [label, value] of [["undefined", undefined], ["{}", {}]] as const) {
  test(`Reconciler a reconcile returning ${label} fails the pass with InvalidResultError`, async () => {
    await withHarness({}, async (h) => {
      h.fallback = () => value as unknown as ReconcileResult;
      await h.start();
      const origin = Date.now();
      const obj = await h.create("a");
      const errors = h.logger.lines.filter((l) =>
        l.level === "error" && l.attributes?.id === obj.id
      );
      assert.equal(errors.length, 1);
      assert.ok(errors[0].attributes!.error instanceof InvalidResultError);
      assert.equal((await h.things.get(obj.id)).observedGeneration, undefined);
      assert.equal(await dueIn(h, obj.id, origin), 1_000);
    });
  });
}

test("Reconciler forgets an object collected while it waited for its next pass", async () => {
  await withHarness({}, async (h) => {
    h.fallback = () => settled().requeueAfter(5_000);
    await h.start();
    const origin = Date.now();
    const obj = await h.create("a");
    assert.equal(await dueIn(h, obj.id, origin), 5_000);
    await h.store.objects.delete(obj.id);
    await h.tick(5_000);
    // The pass found nothing to hand the controller and left no alarm behind.
    assert.deepEqual(passTimes(h, obj.id, origin), [0]);
    assert.equal(await dueIn(h, obj.id, origin), undefined);
    await h.tick(120_000);
    assert.deepEqual(passTimes(h, obj.id, origin), [0]);
    assert.deepEqual(h.logger.lines.filter((l) => l.level === "warn" || l.level === "error"), []);
  });
});

test("Reconciler quarantines an object whose spec does not decode", async () => {
  const migrator = {
    specVersion: 1,
    statusVersion: 0,
    convertSpec: (_from: number, value: unknown) => value,
    convertStatus: (_from: number, value: unknown) => value,
  };
  await withHarness({ register: { migrator } }, async (h) => {
    // Written by a newer build: spec version 2 is above this build's 1.
    const raw = await h.store.objects.create(Thing, {
      name: "future",
      spec: '{"v":2}',
      specVersion: 2,
    });
    await h.store.reconcileOwed.stamp([{ ...Thing, id: raw.id }]);
    await h.start();
    const warns = () =>
      h.logger.lines.filter((l) => l.level === "warn" && l.attributes?.id === raw.id);
    assert.equal(warns().length, 1);
    assert.match(warns()[0].message, /quarantin/);
    // The controller never saw it, nothing was recorded, and no retry is scheduled.
    assert.deepEqual(h.passes, []);
    assert.equal(await dueIn(h, raw.id, Date.now()), undefined);
    const row = await h.store.objects.get(raw.id);
    assert.equal(row.observedGeneration, undefined);
    assert.equal(row.reconcileOwed, 1);
    await assert.rejects(h.things.get(raw.id), StoreError);
    await h.tick(20_000);
    assert.equal(warns().length, 1);
  });
});

test("Reconciler decrements the owed count by the count it loaded", async () => {
  await withHarness({ beehive: { owedPassInterval: 5_000 } }, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const ref = { ...Thing, id: obj.id };
    for (let i = 0; i < 3; i++) await h.store.reconcileOwed.stamp([ref]);
    assert.equal((await h.store.objects.getMeta(obj.id)).reconcileOwed, 3);
    // A wake that lands during the pass survives its decrement.
    h.queue(obj.id, async () => {
      await h.store.reconcileOwed.stamp([ref]);
      return settled();
    });
    await h.tick(5_000);
    assert.equal(h.passes.length, 2);
    assert.equal((await h.store.objects.getMeta(obj.id)).reconcileOwed, 1);
    await h.tick(5_000);
    assert.equal(h.passes.length, 3);
    assert.equal((await h.store.objects.getMeta(obj.id)).reconcileOwed, 0);
  });
});

test("Reconciler leaves the owed count after a failed pass", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const ref = { ...Thing, id: obj.id };
    await h.store.reconcileOwed.stamp([ref]);
    await h.store.reconcileOwed.stamp([ref]);
    await h.pass(obj.id, () => {}, () => fail(new Error("boom")));
    assert.equal((await h.store.objects.getMeta(obj.id)).reconcileOwed, 2);
    await h.pass(obj.id, () => {}, unsettled);
    assert.equal((await h.store.objects.getMeta(obj.id)).reconcileOwed, 0);
  });
});

test("Reconciler passes a deleting object to the controller and collects it once its finalizers are empty", async () => {
  await withHarness({}, async (h) => {
    const seen: boolean[] = [];
    h.fallback = async (obj, cc) => {
      seen.push(obj.deletionRequestedAt !== undefined);
      if (obj.deletionRequestedAt !== undefined) {
        // Still a finalizer here: the row is live until the pass returns.
        assert.ok(await h.things.get(obj.id));
        await cc.deleteFinalizer("test/cleanup");
        return settled().requeueAfter(5_000);
      }
      return settled();
    };
    await h.start();
    const obj = await h.create("a", {}, { finalizers: ["test/cleanup"] });
    await h.things.delete(obj.id);
    await h.flush();
    assert.deepEqual(seen, [false, true]);
    await assert.rejects(h.things.get(obj.id), NotFoundError);
    assert.equal(await dueIn(h, obj.id, Date.now()), undefined);
    await h.tick(10_000);
    assert.equal(seen.length, 2);
  });
});

test("Reconciler drops a wake that landed mid-pass for the object that pass collected", async () => {
  const calls = new Map<string, number>();
  await withHarness({ wrap: countingObjectCalls(calls) }, async (h) => {
    h.fallback = async (obj, cc) => {
      // Clearing the last finalizer pushes the object while its pass still runs.
      if (obj.deletionRequestedAt !== undefined) await cc.deleteFinalizer("test/cleanup");
      return settled();
    };
    await h.start();
    const obj = await h.create("a", {}, { finalizers: ["test/cleanup"] });
    await h.things.delete(obj.id);
    await h.flush();
    await h.tick(60_000);
    await assert.rejects(h.things.get(obj.id), NotFoundError);
    // The creation pass and the deleting pass: the collected id was never loaded again.
    assert.equal(calls.get("getForReconcile"), 2);
    assert.equal(h.passes.length, 2);
  });
});

test("Reconciler keeps a deleting object while the controller leaves a finalizer", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a", {}, { finalizers: ["test/keep"] });
    await h.things.delete(obj.id);
    await h.flush();
    assert.equal(h.passes.length, 2);
    assert.equal(h.passes[1].deleting, true);
    const after = await h.things.get(obj.id);
    assert.deepEqual(after.finalizers, ["test/keep"]);
    assert.ok(after.deletionRequestedAt instanceof Date);
  });
});

test("Reconciler keeps writes made before a failed pass returned", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    await h.pass(obj.id, async (_o, cc) => {
      await cc.updateStatus({ phase: "half-done" });
    }, () => fail(new Error("boom")));
    const after = await h.things.get(obj.id);
    assert.deepEqual(after.status, { phase: "half-done" });
    assert.ok((await h.things.getSchedule(obj.id)).nextRequeueAt !== undefined);
  });
});

test("Reconciler reads the next object while a pass runs, and a change after that read runs one more pass", async () => {
  await withHarness({ register: { concurrency: 1 } }, async (h) => {
    const gate = Promise.withResolvers<void>();
    const seen: [string, number][] = [];
    h.fallback = async (obj: AnyObject) => {
      seen.push([obj.name, obj.generation]);
      if (obj.name === "a") await gate.promise;
      return settled();
    };
    await h.start();
    await h.things.create("a", {});
    await h.flush();
    // b is read while a's pass runs (generation 1), and changed after that read.
    const b = await h.things.create("b", { v: 1 });
    await h.flush();
    await h.things.update(b.id, { v: 2 });
    await h.flush();
    assert.deepEqual(seen, [["a", 1]]);
    gate.resolve();
    await h.flush();
    await h.tick(1_000);
    assert.deepEqual(seen, [["a", 1], ["b", 1], ["b", 2]]);
    assert.equal((await h.things.get(b.id)).observedGeneration, 2);
  });
});

test("Reconciler hands a new object to a waiting worker before it reads one ahead for a busy one", async () => {
  await withHarness({ register: { concurrency: 2 } }, async (h) => {
    const gate = Promise.withResolvers<void>();
    const seen: string[] = [];
    h.fallback = async (obj: AnyObject) => {
      seen.push(obj.name);
      if (obj.name === "a") await gate.promise;
      return settled();
    };
    await h.start();
    await h.things.create("a", {});
    await h.flush();
    // One worker is held in a's pass; the other waits, and takes b at once.
    await h.things.create("b", {});
    await h.flush();
    assert.deepEqual(seen, ["a", "b"]);
    gate.resolve();
    await h.flush();
  });
});
