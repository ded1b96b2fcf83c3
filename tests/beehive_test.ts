/**
 * The Beehive lifecycle: option validation, register and start misuse, the
 * per-process store claim, draining stop, the owed pass and the GC sweep at
 * start, and per-kind concurrency.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  Beehive,
  BeehiveError,
  InvalidOptionError,
  InvalidStoreIdentityError,
  NotFoundError,
  type ReconcileResult,
  settled,
  StoreInUseError,
} from "../mod.ts";
import { openTestStore } from "./_sqlite_driver.ts";
import { test } from "./_test.ts";
import { installFakeTime } from "./_fake_time.ts";
import {
  type AnyObject,
  Harness,
  Other,
  tempDir,
  Thing,
  withHarness,
  withIdentity,
} from "./_beehive_harness.ts";

const noop = () => settled();

/** Asserts `fn` throws a plain BeehiveError (not a subclass) whose message matches `pattern`. */
function assertMisuse(error: unknown, pattern: RegExp): true {
  assert.ok(error instanceof BeehiveError, `expected a BeehiveError, got ${String(error)}`);
  assert.equal(error.constructor, BeehiveError);
  assert.match(error.message, pattern);
  return true;
}

test("Beehive constructor throws InvalidOptionError for an out-of-range option", async () => {
  const store = await openTestStore(":memory:");
  try {
    const bad: Record<string, unknown>[] = [
      { gcInterval: 0 },
      { owedPassInterval: -1 },
      { maxRetryInterval: Number.NaN },
      { staleDependentsInterval: Infinity },
      { watchFloorInterval: 0 },
      { fullPassInterval: -1 },
      { individualPassInterval: -5 },
      { concurrency: 0 },
      { concurrency: 1.5 },
      { startupFullPass: "yes" },
      { eventRetention: { perTimeline: -1 } },
      { writeLogRetention: { maxAge: -1 } },
      { logLevel: "verbose" },
      { logger: { info() {} } },
    ];
    for (const options of bad) {
      assert.throws(
        () => new Beehive(store, options),
        InvalidOptionError,
        `options ${JSON.stringify(options)}`,
      );
    }
    // The boundaries themselves are fine.
    new Beehive(store, { gcInterval: 1, fullPassInterval: 0, concurrency: 1, logLevel: "warn" });
  } finally {
    await store.close();
  }
});

test("Beehive.register throws InvalidOptionError for an out-of-range option and registers nothing", async () => {
  const store = await openTestStore(":memory:");
  try {
    const bh = new Beehive(store);
    for (
      const options of [
        { concurrency: 0 },
        { maxRetryInterval: 0 },
        { owedPassInterval: -1 },
        { migrator: { specVersion: -1 } },
        { triggerById: [1, 2] },
      ] as Record<string, unknown>[]
    ) {
      assert.throws(() => bh.register(Thing, noop, options), InvalidOptionError);
    }
    // Nothing was registered, so registering the kind properly still works.
    bh.register(Thing, noop, { concurrency: 2 });
  } finally {
    await store.close();
  }
});

test("Beehive.register throws InvalidOptionError for a malformed kind or controller", async () => {
  const store = await openTestStore(":memory:");
  try {
    const bh = new Beehive(store);
    for (const kind of [{ group: "g", kind: "" }, { group: "\ud800", kind: "K" }, null, "Thing"]) {
      assert.throws(() => bh.register(kind as never, noop), InvalidOptionError);
    }
    for (const controller of [undefined, {}, { reconcile: 1 }, "reconcile"]) {
      assert.throws(() => bh.register(Thing, controller as never), InvalidOptionError);
    }
    bh.register(Thing, noop);
  } finally {
    await store.close();
  }
});

test("Beehive.register throws a BeehiveError saying the Beehive started when called after start", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    assert.throws(() => h.bh.register(Other, noop), (e) => assertMisuse(e, /register.*started/));
  });
});

test("Beehive.register throws a BeehiveError saying the kind has a controller when called twice", async () => {
  await withHarness({}, (h) => {
    assert.throws(
      () => h.bh.register(Thing, noop),
      (e) => assertMisuse(e, /register.*already has a controller/),
    );
    return Promise.resolve();
  });
});

test("Beehive.start rejects with a BeehiveError saying it is running when started twice", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const second = h.bh.start();
    assert.ok(second instanceof Promise);
    await assert.rejects(second, (e) => assertMisuse(e, /start.*already running/));
  });
});

test("Beehive.start rejects with a BeehiveError saying it stopped when started after stop", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    await h.stop();
    await assert.rejects(h.bh.start(), (e) => assertMisuse(e, /start.*stopped/));
    assert.throws(() => h.bh.register(Other, noop), (e) => assertMisuse(e, /register.*stopped/));
  });
});

test("Beehive.register accepts a bare reconcile function", async () => {
  await withHarness({ registerThing: false }, async (h) => {
    const seen: number[] = [];
    h.bh.register(Thing, (obj) => {
      seen.push(obj.id);
      return settled();
    });
    await h.start();
    const obj = await h.create("a");
    assert.deepEqual(seen, [obj.id]);
    assert.equal((await h.things.get(obj.id)).observedGeneration, 1);
  });
});

test("Beehive.register accepts an object with a reconcile method and calls it on the object", async () => {
  await withHarness({ registerThing: false }, async (h) => {
    const controller = {
      seen: [] as number[],
      reconcile(obj: AnyObject): ReconcileResult {
        this.seen.push(obj.id);
        return settled();
      },
    };
    h.bh.register(Thing, controller);
    await h.start();
    const obj = await h.create("a");
    assert.deepEqual(controller.seen, [obj.id]);
    assert.equal((await h.things.get(obj.id)).observedGeneration, 1);
  });
});

test("Beehive.start rejects with StoreInUseError while another Beehive runs on the same database", async () => {
  const dir = tempDir();
  try {
    await withHarness({ path: dir.file("db.sqlite") }, async (a) => {
      await withHarness({ path: dir.file("db.sqlite"), clock: a.clock }, async (b) => {
        assert.equal(a.store.identity, b.store.identity);
        assert.notEqual(a.store, b.store);
        await a.start();
        await assert.rejects(b.bh.start(), StoreInUseError);
        // A different database is not claimed.
        const other = await openTestStore(dir.file("other.sqlite"));
        try {
          const stop = await new Beehive(other).start();
          await stop();
        } finally {
          await other.close();
        }
      });
    });
  } finally {
    dir.remove();
  }
});

test("Beehive stop releases the store claim only once it resolves", async () => {
  const dir = tempDir();
  try {
    await withHarness({ path: dir.file("db.sqlite") }, async (a) => {
      const release = Promise.withResolvers<void>();
      const entered = Promise.withResolvers<void>();
      try {
        a.fallback = async () => {
          entered.resolve();
          await release.promise;
          return settled();
        };
        const stopA = await a.start();
        await a.things.create("slow", {});
        await entered.promise;
        let stopped = false;
        const stopping = stopA().then(() => void (stopped = true));
        await a.flush();
        assert.equal(stopped, false);
        await withHarness({ path: dir.file("db.sqlite"), clock: a.clock }, async (b) => {
          // Still claimed: A's pass has not returned.
          await assert.rejects(b.bh.start(), StoreInUseError);
          release.resolve();
          await stopping;
          assert.equal(stopped, true);
          // The failed start left B new, so it may start now.
          await b.start();
        });
      } finally {
        release.resolve();
      }
    });
  } finally {
    dir.remove();
  }
});

test("Beehive.start rejects with InvalidStoreIdentityError for a store whose identity is empty", async () => {
  const store = await openTestStore(":memory:");
  try {
    const bh = new Beehive(withIdentity(store, ""));
    bh.register(Thing, noop);
    await assert.rejects(bh.start(), InvalidStoreIdentityError);
    // Nothing was claimed: the real store's identity is free.
    const stop = await new Beehive(store).start();
    await stop();
  } finally {
    await store.close();
  }
});

test("Beehive stop aborts cc.signal of an in-flight pass and resolves after the pass returns", async () => {
  await withHarness({}, async (h) => {
    const order: string[] = [];
    const entered = Promise.withResolvers<AbortSignal>();
    h.fallback = async (_obj, cc) => {
      assert.equal(cc.signal.aborted, false);
      entered.resolve(cc.signal);
      await new Promise((resolve) => cc.signal.addEventListener("abort", resolve, { once: true }));
      order.push("pass saw abort");
      // The pass may still write after the abort, before it returns.
      await cc.updateStatus({ done: true });
      order.push("pass returns");
      return settled();
    };
    const stop = await h.start();
    const obj = await h.things.create("a", {});
    const signal = await entered.promise;
    await stop().then(() => order.push("stop resolved"));
    assert.equal(signal.aborted, true);
    assert.deepEqual(order, ["pass saw abort", "pass returns", "stop resolved"]);
    assert.deepEqual((await h.things.get(obj.id)).status, { done: true });
  });
});

test("Beehive stop({ signal }) rejects with the signal's reason when a pass outlasts it, and keeps the claim until the pass ends", async () => {
  await withHarness({}, async (h) => {
    const release = Promise.withResolvers<void>();
    const entered = Promise.withResolvers<void>();
    try {
      h.fallback = async () => {
        entered.resolve();
        await release.promise;
        return settled();
      };
      const stop = await h.start();
      await h.things.create("a", {});
      await entered.promise;
      const deadline = new AbortController();
      const reason = new Error("deadline passed");
      const stopping = stop({ signal: deadline.signal });
      deadline.abort(reason);
      await assert.rejects(stopping, (e) => e === reason);
      // The pass is still running: the database stays claimed.
      await assert.rejects(new Beehive(h.store).start(), StoreInUseError);
      release.resolve();
      await stop();
      const again = await new Beehive(h.store).start();
      await again();
    } finally {
      release.resolve();
    }
  });
});

test("Beehive stop({ signal }) rejects at once with an already-aborted signal's reason", async () => {
  await withHarness({}, async (h) => {
    const stop = await h.start();
    const reason = new Error("too late");
    await assert.rejects(stop({ signal: AbortSignal.abort(reason) }), (e) => e === reason);
    await stop();
  });
});

test("Beehive stop right after start leaves no timer behind", async () => {
  await withHarness({ beehive: { fullPassInterval: 60_000 } }, async (h) => {
    const stop = await h.bh.start();
    await stop();
    assert.equal(h.clock.countTimers(), 0);
    await h.tick(120_000);
    assert.equal(h.clock.countTimers(), 0);
  });
});

test("Beehive.start reconciles objects created before start that are unsettled", async () => {
  await withHarness({}, async (h) => {
    // Written through a Beehive with no controller, as a previous process would have.
    const writer = new Beehive(h.store).client(Thing);
    const a = await writer.create("a", { v: 1 });
    const b = await writer.create("b", { v: 1 });
    const settledRow = await writer.create("settled", { v: 1 });
    await h.store.objects.setObservedGeneration({ ...Thing, id: settledRow.id }, 1);
    await h.start();
    assert.deepEqual(h.passes.map((p) => p.id).sort(), [a.id, b.id].sort());
    assert.equal((await h.things.get(a.id)).observedGeneration, 1);
    assert.equal((await h.things.get(b.id)).observedGeneration, 1);
  });
});

test("Beehive.start reconciles settled objects whose reconcileOwed was stamped", async () => {
  await withHarness({}, async (h) => {
    const writer = new Beehive(h.store).client(Thing);
    const owed = await writer.create("owed", {});
    const quiet = await writer.create("quiet", {});
    for (const o of [owed, quiet]) {
      await h.store.objects.setObservedGeneration({ ...Thing, id: o.id }, 1);
    }
    await h.store.reconcileOwed.stamp([{ ...Thing, id: owed.id }]);
    await h.start();
    assert.deepEqual(h.passes.map((p) => p.id), [owed.id]);
    assert.equal((await h.store.objects.getMeta(owed.id)).reconcileOwed, 0);
  });
});

/**
 * Makes every pass of `h` wait on a gate of its own (in `gates`, in pass
 * order) and counts the passes running at once (`active`, at most `peak`).
 */
function gatedPasses(h: Harness) {
  const g = {
    gates: [] as PromiseWithResolvers<void>[],
    active: 0,
    peak: 0,
    releaseAll(): void {
      for (const gate of g.gates) gate.resolve();
    },
  };
  h.fallback = async () => {
    g.active++;
    g.peak = Math.max(g.peak, g.active);
    const gate = Promise.withResolvers<void>();
    g.gates.push(gate);
    await gate.promise;
    g.active--;
    return settled();
  };
  return g;
}

test("Beehive concurrency N runs up to N passes of a kind at once", async () => {
  await withHarness({ register: { concurrency: 2 } }, async (h) => {
    const gated = gatedPasses(h);
    const { gates } = gated;
    try {
      await h.start();
      for (const name of ["a", "b", "c", "d"]) await h.things.create(name, {});
      await h.flush();
      assert.equal(gated.active, 2);
      gates[0].resolve();
      await h.flush();
      assert.equal(gated.active, 2);
      assert.equal(h.passes.length, 3);
      gated.releaseAll();
      await h.flush();
      gated.releaseAll();
      await h.flush();
      assert.equal(h.passes.length, 4);
      assert.equal(gated.active, 0);
      assert.equal(gated.peak, 2);
    } finally {
      gated.releaseAll();
    }
  });
});

test("Beehive concurrency never runs two passes for one object at once", async () => {
  await withHarness({ register: { concurrency: 4 } }, async (h) => {
    const gated = gatedPasses(h);
    const { gates } = gated;
    try {
      await h.start();
      const obj = await h.things.create("a", {});
      await h.flush();
      for (let i = 0; i < 5; i++) {
        await h.things.requeue(obj.id);
        await h.things.update(obj.id, { v: i });
      }
      await h.flush();
      assert.equal(gated.active, 1);
      assert.equal(h.passes.length, 1);
      gates[0].resolve();
      await h.flush();
      // The wakes that landed mid-pass fold into one more pass.
      assert.equal(h.passes.length, 2);
      assert.equal(h.passes[1].generation, 6);
      gates[1].resolve();
      await h.flush();
      assert.equal(h.passes.length, 2);
      assert.equal(gated.peak, 1);
    } finally {
      gated.releaseAll();
    }
  });
});

test("Beehive.start runs the GC sweep, collecting a deletion-pending client-only object with no finalizers", async () => {
  await withHarness({}, async (h) => {
    const others = h.bh.client(Other);
    const doomed = await others.create("doomed", {});
    const kept = await others.create("kept", {});
    await others.delete(doomed.id);
    await h.flush();
    // No controller and not started: nothing collects it yet.
    assert.ok((await others.get(doomed.id)).deletionRequestedAt instanceof Date);
    await h.start(); // no time passes: this is the sweep at start, not a gcInterval tick
    await assert.rejects(others.get(doomed.id), NotFoundError);
    assert.equal((await others.get(kept.id)).name, "kept");
  });
});

test("Beehive constructor throws TypeError for something that is not a store", () => {
  assert.throws(() => new Beehive(undefined as never), TypeError);
  assert.throws(() => new Beehive({} as never), TypeError);
});

test("Beehive client and adminClient work on a Beehive that was never started", async () => {
  const clock = installFakeTime();
  try {
    const h = await Harness.open({ clock });
    try {
      const obj = await h.things.create("a", { v: 1 });
      await h.bh.adminClient(Thing).updateStatus(obj.id, { ok: true });
      const read = await h.things.get(obj.id);
      assert.deepEqual(read.status, { ok: true });
      assert.deepEqual(h.passes, []);
    } finally {
      await h.close();
    }
  } finally {
    clock.uninstall();
  }
});

test("Beehive that is not running queues nothing: its writes wait for the next start's owed pass", async () => {
  const store = await openTestStore(":memory:");
  try {
    const bh = new Beehive(store);
    let passes = 0;
    bh.register(Thing, () => {
      passes++;
      return settled();
    });
    const things = bh.client(Thing);
    const ids: number[] = [];
    for (let i = 0; i < 50; i++) ids.push((await things.create(`t${i}`, {})).id);
    await things.update(ids[0], { changed: true });
    for (const id of ids) {
      assert.equal((await things.getSchedule(id)).nextRequeueAt, undefined, `object ${id} queued`);
    }
    const clock = installFakeTime();
    try {
      const stop = await bh.start();
      await clock.tickAsync(100);
      await stop();
    } finally {
      clock.uninstall();
    }
    assert.equal(passes, 50, "the owed pass at start reconciled every object once");
  } finally {
    await store.close();
  }
});
