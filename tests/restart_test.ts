/**
 * Restarts on a file store: one Beehive stops, the store changes, another
 * starts on the same file. What the store records is drained; what lived only
 * in memory (alarms) is gone, as documented; the startup pass and the
 * individual-pass admission reach settled objects; liveness reads Unknown
 * until re-confirmed. Time is one fake clock across both processes.
 *
 * @module
 */
import assert from "node:assert/strict";
import { settled, unsettled } from "../mod.ts";
import { test } from "./_test.ts";
import { type Harness, type Job, tempDir, Thing, withHarness } from "./_beehive_harness.ts";
import { type FakeClock, installFakeTime } from "./_fake_time.ts";

/** Runs `fn` with a database file path and one fake clock, both cleaned up after. */
async function withFile(fn: (path: string, clock: FakeClock) => Promise<void>): Promise<void> {
  const dir = tempDir();
  const clock = installFakeTime();
  try {
    await fn(dir.file("beehive.db"), clock);
  } finally {
    clock.uninstall();
    dir.remove();
  }
}

/** Pass instants over `id`, in ms after `origin`. */
function passTimes(h: Harness, id: number, origin: number): number[] {
  return h.passes.filter((p) => p.id === id).map((p) => p.at - origin);
}

test("Restart owed work recorded while no Beehive ran is drained at the next start", async () => {
  await withFile(async (path, clock) => {
    const ids: Record<string, number> = {};
    await withHarness({ path, clock }, async (h) => {
      await h.start();
      for (const name of ["quiet", "updated", "stamped"]) ids[name] = (await h.create(name)).id;
      await h.stop();
      // The store changes with no loop running: every push is lost.
      ids.created = (await h.things.create("created", { v: 1 })).id;
      await h.things.update(ids.updated, { v: 2 });
      await h.store.reconcileOwed.stamp([{ ...Thing, id: ids.stamped }]);
      await h.store.reconcileOwed.stamp([{ ...Thing, id: ids.stamped }]);
      assert.equal(h.passes.length, 3);
    });
    await withHarness({ path, clock }, async (h) => {
      await h.start();
      assert.deepEqual(
        h.passes.map((p) => [p.id, p.generation]).sort((a, b) => a[0] - b[0]),
        [[ids.updated, 2], [ids.stamped, 1], [ids.created, 1]],
      );
      assert.equal((await h.things.get(ids.updated)).observedGeneration, 2);
      assert.equal((await h.things.get(ids.created)).observedGeneration, 1);
      assert.equal((await h.store.objects.getMeta(ids.stamped)).reconcileOwed, 0);
      await h.tick(120_000);
      assert.equal(h.passes.length, 3);
    });
  });
});

test("Restart a bare unsettled() does not survive a restart: only the owed pass brings back an object still unsettled", async () => {
  await withFile(async (path, clock) => {
    let neverSettled = 0;
    let observed = 0;
    const origin = Date.now();
    await withHarness({ path, clock }, async (h) => {
      await h.start();
      h.fallback = () => unsettled();
      neverSettled = (await h.create("never-settled")).id; // unsettled at generation 1: alarm at 30 s
      h.fallback = () => settled();
      observed = (await h.create("observed")).id;
      await h.tick(1_000);
      await h.pass(observed, () => {}, unsettled); // generation observed, alarm at 31 s
      assert.equal(
        (await h.things.getSchedule(neverSettled)).nextRequeueAt?.getTime(),
        origin + 30_000,
      );
      assert.equal(
        (await h.things.getSchedule(observed)).nextRequeueAt?.getTime(),
        origin + 31_000,
      );
      await h.tick(4_000);
    });
    await withHarness({ path, clock }, async (h) => {
      await h.start(); // at 5 s
      // The owed drain finds the row the store still records as unsettled; nothing finds the other.
      assert.deepEqual(passTimes(h, neverSettled, origin), [5_000]);
      assert.deepEqual(passTimes(h, observed, origin), []);
      assert.equal((await h.things.getSchedule(observed)).nextRequeueAt, undefined);
      // The alarms of the previous process never fire.
      await h.tick(120_000);
      assert.deepEqual(passTimes(h, neverSettled, origin), [5_000]);
      assert.deepEqual(passTimes(h, observed, origin), []);
    });
  });
});

test("Restart a requeueAfter chain does not survive a restart: only the owed pass brings back an object still unsettled", async () => {
  await withFile(async (path, clock) => {
    let settledChain = 0;
    let unsettledChain = 0;
    const origin = Date.now();
    await withHarness({ path, clock }, async (h) => {
      h.fallback = (obj) =>
        (obj.name === "settled-chain" ? settled() : unsettled()).requeueAfter(10_000);
      await h.start();
      settledChain = (await h.create("settled-chain")).id;
      unsettledChain = (await h.create("unsettled-chain")).id;
      await h.tick(25_000);
      assert.deepEqual(passTimes(h, settledChain, origin), [0, 10_000, 20_000]);
      assert.deepEqual(passTimes(h, unsettledChain, origin), [0, 10_000, 20_000]);
    });
    await withHarness({ path, clock }, async (h) => {
      await h.start(); // at 25 s
      assert.deepEqual(passTimes(h, settledChain, origin), []);
      assert.deepEqual(passTimes(h, unsettledChain, origin), [25_000]);
      await h.tick(120_000);
      assert.deepEqual(
        passTimes(h, settledChain, origin),
        [],
        "the chain's next link (30 s) is gone",
      );
      assert.deepEqual(passTimes(h, unsettledChain, origin), [25_000]);
    });
  });
});

test("Restart the startup full pass reconciles every object once in the new process", async () => {
  await withFile(async (path, clock) => {
    const ids: number[] = [];
    await withHarness({ path, clock }, async (h) => {
      await h.start();
      ids.push((await h.create("a")).id, (await h.create("b")).id);
    });
    await withHarness({ path, clock, register: { startupFullPass: true } }, async (h) => {
      await h.start();
      // The two passes run at once: which starts first is the store's timing, not the claim.
      assert.deepEqual(h.passes.map((p) => p.id).sort((x, y) => x - y), ids);
      await h.tick(300_000);
      assert.equal(h.passes.length, 2);
    });
    // Without it, settled objects wait for work.
    await withHarness({ path, clock }, async (h) => {
      await h.start();
      await h.tick(300_000);
      assert.deepEqual(h.passes, []);
    });
  });
});

test("Restart individual pass: admission arms the objects a previous process left settled", async () => {
  const d = 20_000;
  await withFile(async (path, clock) => {
    const ids: number[] = [];
    await withHarness({ path, clock, beehive: { individualPassInterval: d } }, async (h) => {
      await h.start();
      for (let i = 0; i < 8; i++) ids.push((await h.create(`o${i}`)).id);
      await h.tick(5_000);
    });
    await withHarness({ path, clock, beehive: { individualPassInterval: d } }, async (h) => {
      await h.start();
      const origin = Date.now();
      assert.deepEqual(h.passes, [], "no burst at start");
      for (const id of ids) {
        const at = (await h.things.getSchedule(id)).nextRequeueAt?.getTime();
        assert.ok(at !== undefined && at > origin && at <= origin + d, `admitted at ${at}`);
      }
      await h.tick(d);
      for (const id of ids) assert.equal(passTimes(h, id, origin).length, 1);
      // Each first pass armed the cadence: the second follows it by d plus jitter.
      await h.tick(1.1 * d);
      for (const id of ids) {
        const [first, second] = passTimes(h, id, origin);
        assert.ok(second - first >= d && second - first <= 1.1 * d, `${first} then ${second}`);
      }
    });
  });
});

test("Restart a liveness condition reads Unknown and unconfirmed after reopen until the controller rewrites it", async () => {
  await withFile(async (path, clock) => {
    let id = 0;
    const confirm: Job = async (_obj, cc) => {
      await cc.setConditions([
        { type: "Connected", status: "True", reason: "Dialed", liveness: true },
        { type: "Stored", status: "True", reason: "Written" },
      ]);
      return settled();
    };
    await withHarness({ path, clock }, async (h) => {
      h.fallback = confirm;
      await h.start();
      id = (await h.create("a")).id;
      const [connected] = (await h.things.get(id)).conditions;
      assert.deepEqual([connected.status, connected.unconfirmed], ["True", false]);
    });
    await withHarness({ path, clock, register: { startupFullPass: true } }, async (h) => {
      h.fallback = confirm;
      const [connected, stored] = (await h.things.get(id)).conditions;
      assert.deepEqual(
        [connected.type, connected.status, connected.unconfirmed, connected.reason],
        ["Connected", "Unknown", true, "Dialed"],
      );
      assert.deepEqual([stored.status, stored.unconfirmed], ["True", false]);
      // The store's own reading still calls the object settled: only a pass in this process can confirm it.
      assert.equal((await h.things.get(id)).observedGeneration, 1);
      await h.start();
      assert.deepEqual(h.passes.map((p) => p.id), [id]);
      const [after] = (await h.things.get(id)).conditions;
      assert.deepEqual([after.status, after.unconfirmed], ["True", false]);
    });
  });
});
