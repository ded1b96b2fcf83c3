/**
 * The dependency side of the object graph: `addDependency` and its owed
 * stamp, the commit-woken dependency waker, dependency watermarks, the
 * stale-dependents pass (including across a restart), targets held by live
 * dependents, mutual dependencies and cycles. Every test runs under fake time
 * over a real SQLite store.
 *
 * @module
 */
import assert from "node:assert/strict";
import { NotFoundError, settled } from "../mod.ts";
import type { Store } from "../store/mod.ts";
import type { TestStore } from "./_sqlite_driver.ts";
import { PUSH_BURST } from "../src/engine/work_queue.ts";
import { test } from "./_test.ts";
import { type Harness, Other, tempDir, Thing, withHarness } from "./_beehive_harness.ts";

/** An interval long enough that no periodic driver fires during a test. */
const HOUR = 3_600_000;

/** Drivers parked: only pushes, the waker, and the sweeps at start move anything. */
const PARKED = { gcInterval: HOUR, owedPassInterval: HOUR, staleDependentsInterval: HOUR };

/** The driver-cursor row the dependency waker persists. */
const WAKER_CURSOR = "dependency_waker";

/** A store whose `family.method` is replaced by `fn` on the root store (transactions are untouched). */
function overriding(
  family: "edges" | "dependencies" | "objectWrites",
  method: string,
  fn: (original: (...args: unknown[]) => unknown, ...args: unknown[]) => unknown,
): (store: TestStore) => Store {
  return (store) => {
    const inner = store[family] as unknown as Record<string, unknown>;
    const wrapped = new Proxy(inner, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (typeof value !== "function") return value;
        const bound = (value as (...a: unknown[]) => unknown).bind(target);
        return prop === method ? (...args: unknown[]) => fn(bound, ...args) : bound;
      },
    });
    return new Proxy(store, {
      get(target, prop) {
        if (prop === family) return wrapped;
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  };
}

/** The waker's edge lookup finds nothing: every wake it would deliver is lost. */
const blindWaker = overriding("edges", "groupIncomingByIds", () => Promise.resolve(new Map()));

/** The stale-dependents pass finds nothing. */
const blindStalePass = overriding(
  "dependencies",
  "listStaleSince",
  (_original, _kinds, options) =>
    Promise.resolve({
      dependents: [],
      position: (options as { after: unknown }).after,
    }),
);

/** Records the position each store-wide write-log read (the waker's scan) starts after. */
function recordingScans(afters: number[]): (store: TestStore) => Store {
  return overriding("objectWrites", "listSinceAll", (original, options) => {
    afters.push((options as { after: number }).after);
    return original(options);
  });
}

/** How many passes `id` has had. */
function passesOf(h: Harness, id: number): number {
  return h.passes.filter((p) => p.id === id).length;
}

/** The dependents the stale-dependents scan reports right now, from the beginning. */
async function staleNow(h: Harness): Promise<number[]> {
  const page = await h.store.dependencies.listStaleSince([Thing], {
    after: { targetVersion: 0, targetId: 0, dependentId: 0 },
    through: await h.store.getLatestResourceVersion(),
    limit: 1_000,
  });
  return [...new Set(page.dependents.map((r) => r.id))];
}

// ---------------------------------------------------------------------------
// addDependency

test("Dependencies addDependency stamps one owed pass with a new edge and pushes the dependent", async () => {
  await withHarness({ beehive: PARKED }, async (h) => {
    await h.start();
    const target = await h.bh.client(Other).create("target", {});
    const dependent = await h.create("dependent", {});
    await h.tick(5_000);
    const owed: number[] = [];
    await h.pass(dependent.id, async (_o, cc) => {
      await cc.addDependency(target.id);
      owed.push((await h.store.objects.getMeta(dependent.id)).reconcileOwed);
      await cc.addDependency(target.id); // a repeat declaration writes nothing
      owed.push((await h.store.objects.getMeta(dependent.id)).reconcileOwed);
      h.queue(dependent.id, async () => {
        owed.push((await h.store.objects.getMeta(dependent.id)).reconcileOwed);
        return settled();
      });
    });
    assert.deepEqual(owed, [1, 1, 1]);
    assert.deepEqual(await h.things.listDependencies(dependent.id), [{ ...Other, id: target.id }]);
    // The pass loaded a count of 0, so the stamp survived its conclusion (the third
    // pass found it), and the push brought the dependent back at once (a quiet
    // object's push budget passes the floor): that third pass drained it.
    assert.equal(passesOf(h, dependent.id), 3);
    assert.equal((await h.store.objects.getMeta(dependent.id)).reconcileOwed, 0);
  });
});

test("Dependencies addDependency in a rolled-back transaction leaves neither the edge nor the stamp", async () => {
  await withHarness({ beehive: PARKED }, async (h) => {
    await h.start();
    const target = await h.bh.client(Other).create("target", {});
    const dependent = await h.create("dependent", {});
    await h.tick(5_000);
    await h.pass(dependent.id, async (_o, cc) => {
      await assert.rejects(
        cc.within(async (tx) => {
          await tx.addDependency(target.id);
          throw new Error("roll back");
        }),
        /roll back/,
      );
    });
    assert.deepEqual(await h.things.listDependencies(dependent.id), []);
    assert.equal((await h.store.objects.getMeta(dependent.id)).reconcileOwed, 0);
    await h.tick(10_000);
    assert.equal(passesOf(h, dependent.id), 2);
  });
});

// ---------------------------------------------------------------------------
// The dependency waker

test("Dependencies a change to a client-only target reconciles the dependent through the waker", async () => {
  await withHarness({ beehive: PARKED }, async (h) => {
    const others = h.bh.client(Other);
    const target = await others.create("target", { v: 1 });
    const dependent = await h.things.create("dependent", {});
    await h.bh.adminClient(Thing).addDependency(dependent.id, target.id);
    await h.start();
    await h.tick(5_000);
    const before = passesOf(h, dependent.id);
    await others.update(target.id, { v: 2 });
    await h.flush(); // no tick of any periodic driver: the commit woke the waker
    assert.equal(passesOf(h, dependent.id), before + 1);
    await h.bh.adminClient(Other).updateStatus(target.id, { seen: true });
    await h.tick(1_000); // a status write wakes it too, paced by the dependent's floor
    assert.equal(passesOf(h, dependent.id), before + 2);
    await h.tick(60_000);
    assert.equal(passesOf(h, dependent.id), before + 2);
  });
});

test("Dependencies a change to a registered target reconciles the dependent through the waker", async () => {
  await withHarness({ beehive: PARKED }, async (h) => {
    const target = await h.things.create("target", { v: 1 });
    const dependent = await h.things.create("dependent", {});
    const unrelated = await h.things.create("unrelated", {});
    await h.bh.adminClient(Thing).addDependency(dependent.id, target.id);
    await h.start();
    await h.tick(5_000);
    const before = passesOf(h, dependent.id);
    const unrelatedBefore = passesOf(h, unrelated.id);
    await h.things.update(target.id, { v: 2 });
    await h.flush();
    assert.equal(passesOf(h, dependent.id), before + 1);
    // The target's own pass stamped its generation: one more wake, held by the floor.
    await h.tick(60_000);
    assert.ok(passesOf(h, dependent.id) <= before + 2);
    assert.equal(passesOf(h, unrelated.id), unrelatedBefore);
  });
});

test("Dependencies the watermark is the cursor sampled before the load, so a mid-pass target write leaves the dependent stale", async () => {
  await withHarness({ beehive: PARKED }, async (h) => {
    const others = h.bh.client(Other);
    const target = await others.create("target", { v: 1 });
    const dependent = await h.things.create("dependent", {});
    await h.bh.adminClient(Thing).addDependency(dependent.id, target.id);
    assert.deepEqual(await staleNow(h), [dependent.id]); // a new edge clears the watermark
    await h.start();
    await h.tick(5_000);
    assert.deepEqual(await staleNow(h), []);
    // The target moves after the pass loaded the dependent: that pass did not see it.
    const seen: number[][] = [];
    await h.pass(dependent.id, async () => {
      await others.update(target.id, { v: 2 });
      h.queue(dependent.id, async () => {
        seen.push(await staleNow(h));
        return settled();
      });
    });
    // The waker's wake came at once (the push budget passes the floor): the pass it
    // brought began with the dependent still stale, and concluding it cleared that.
    assert.deepEqual(seen, [[dependent.id]]);
    assert.deepEqual(await staleNow(h), []);
  });
});

// ---------------------------------------------------------------------------
// The stale-dependents pass

test("Dependencies the stale-dependents pass re-derives a lost wake within staleDependentsInterval", async () => {
  await withHarness(
    { wrap: blindWaker, beehive: { gcInterval: HOUR, owedPassInterval: HOUR } },
    async (h) => {
      const others = h.bh.client(Other);
      const target = await others.create("target", { v: 1 });
      const dependent = await h.things.create("dependent", {});
      await h.bh.adminClient(Thing).addDependency(dependent.id, target.id);
      await h.start();
      await h.tick(5_000);
      const before = passesOf(h, dependent.id);
      await others.update(target.id, { v: 2 });
      await h.tick(54_999); // the second sweep is due 60 s after start
      assert.equal(passesOf(h, dependent.id), before);
      await h.tick(1);
      assert.equal(passesOf(h, dependent.id), before + 1);
      // It stamped before enqueueing, and the pass drained the stamp.
      assert.equal((await h.store.objects.getMeta(dependent.id)).reconcileOwed, 0);
      assert.deepEqual(await staleNow(h), []);
    },
  );
});

test("Dependencies a wake lost while the Beehive was down is re-derived by the stale-dependents pass after restart", async () => {
  const dir = tempDir();
  try {
    const path = dir.file("deps.db");
    let target = 0, dependent = 0;
    await withHarness({ path, beehive: PARKED }, async (h) => {
      target = (await h.bh.client(Other).create("target", { v: 1 })).id;
      dependent = (await h.things.create("dependent", {})).id;
      await h.bh.adminClient(Thing).addDependency(dependent, target);
      await h.start();
      await h.tick(5_000);
      assert.deepEqual(await staleNow(h), []);
      await h.stop();
      // Updated with the Beehive stopped: no waker is running to see it.
      await h.bh.client(Other).update(target, { v: 2 });
      assert.equal((await h.store.objects.getMeta(dependent)).reconcileOwed, 0);
    });
    // The next process's waker finds nothing (as if it never ran) and the owed pass
    // has nothing listed: only the stale-dependents pass at start can find the dependent.
    await withHarness({ path, wrap: blindWaker, beehive: PARKED }, async (h) => {
      const seen: unknown[] = [];
      h.fallback = async () => {
        seen.push((await h.bh.client(Other).get(target)).spec);
        return settled();
      };
      await h.start();
      assert.deepEqual(h.passes.map((p) => p.id), [dependent]);
      assert.deepEqual(seen, [{ v: 2 }]);
      assert.deepEqual(await staleNow(h), []);
    });
  } finally {
    dir.remove();
  }
});

test("Dependencies an edge declared after its target changed still yields a pass that sees the change", async () => {
  await withHarness({ wrap: blindWaker, beehive: PARKED }, async (h) => {
    const others = h.bh.client(Other);
    const target = await others.create("target", { v: 1 });
    await h.start();
    const dependent = await h.create("dependent", {});
    await h.tick(5_000);
    const seen: unknown[] = [];
    h.fallback = async () => {
      seen.push((await others.get(target.id)).spec);
      return settled();
    };
    await h.pass(dependent.id, async (_o, cc) => {
      seen.push((await others.get(target.id)).spec);
      // The target changes between the read and the declaration; no wake can name
      // the dependent (there is no edge yet, and this waker is blind anyway).
      await others.update(target.id, { v: 2 });
      await cc.addDependency(target.id);
    });
    await h.tick(1_000);
    assert.deepEqual(seen, [{ v: 1 }, { v: 2 }]);
  });
});

// ---------------------------------------------------------------------------
// Deletion and dependencies

test("Dependencies a deletion-pending target is held by a live dependent until deleteDependency, which pushes it", async () => {
  await withHarness({ beehive: PARKED }, async (h) => {
    await h.start();
    const target = await h.create("target", {});
    const dependent = await h.create("dependent", {});
    await h.bh.adminClient(Thing).addDependency(dependent.id, target.id);
    await h.tick(5_000);
    await h.things.delete(target.id);
    await h.flush();
    await h.tick(60_000);
    assert.ok((await h.things.get(target.id)).deletionRequestedAt instanceof Date);
    const before = passesOf(h, target.id);
    await h.pass(dependent.id, async (_o, cc) => {
      await cc.deleteDependency(target.id);
    });
    // No time passed: the dropped edge pushed the target, whose pass collected it.
    assert.equal(passesOf(h, target.id), before + 1);
    await assert.rejects(h.things.get(target.id), NotFoundError);
    assert.ok(await h.things.get(dependent.id));
  });
});

test("Dependencies mutually dependent deleting objects of a registered kind are both collected without a sweep", async () => {
  await withHarness({ beehive: PARKED }, async (h) => {
    await h.start();
    const a = await h.create("a", {}, { finalizers: ["test/f"] });
    const b = await h.create("b", {}, { finalizers: ["test/f"] });
    const admin = h.bh.adminClient(Thing);
    await admin.addDependency(a.id, b.id);
    await admin.addDependency(b.id, a.id);
    h.fallback = async (obj, cc) => {
      if (obj.deletionRequestedAt !== undefined) await cc.deleteFinalizer("test/f");
      return settled();
    };
    await h.tick(5_000);
    await h.things.delete(a.id);
    await h.flush();
    assert.ok(await h.things.get(a.id)); // held by b, which is live
    await h.things.delete(b.id);
    await h.flush();
    await assert.rejects(h.things.get(a.id), NotFoundError);
    await assert.rejects(h.things.get(b.id), NotFoundError);
  });
});

test("Dependencies mutually dependent deleting objects of a client-only kind are collected by one sweep", async () => {
  await withHarness({ registerThing: false, beehive: { gcInterval: 10_000 } }, async (h) => {
    const others = h.bh.client(Other);
    const x = await others.create("x", {});
    const y = await others.create("y", {});
    const z = await others.create("z", {});
    const admin = h.bh.adminClient(Other);
    await admin.addDependency(x.id, y.id);
    await admin.addDependency(y.id, x.id);
    await admin.addDependency(z.id, z.id);
    await h.start();
    for (const o of [x, y, z]) await others.delete(o.id);
    await h.tick(10_000);
    for (const o of [x, y, z]) await assert.rejects(others.get(o.id), NotFoundError);
  });
});

// ---------------------------------------------------------------------------
// Cycles and the waker's cursor

test("Dependencies a dependency cycle spends its push budget, then is paced by the 1 s floor rather than spinning", async () => {
  await withHarness({ beehive: PARKED }, async (h) => {
    let n = 0;
    // Every pass writes a new status, which wakes the other side of the cycle.
    h.fallback = async (_obj, cc) => {
      await cc.updateStatus({ n: n++ });
      return settled();
    };
    const a = await h.things.create("a", {});
    const b = await h.things.create("b", {});
    const admin = h.bh.adminClient(Thing);
    await admin.addDependency(a.id, b.id);
    await admin.addDependency(b.id, a.id);
    await h.start();
    const origin = Date.now();
    await h.tick(10_000);
    for (const id of [a.id, b.id]) {
      const times = h.passes.filter((p) => p.id === id).map((p) => p.at - origin);
      // The budget lets the first passes run at once ... (a pass's time is when its
      // controller was called, after its opening read: on PostgreSQL that read spans
      // fake ms, so the step into the paced passes may fall a little short of 1 s)
      const burst = times.findIndex((t, i) => i > 0 && t - times[i - 1] >= 500);
      assert.ok(burst >= PUSH_BURST && burst <= PUSH_BURST + 1, `burst of ${burst}: ${times}`);
      assert.ok(times[burst - 1] < 500, `the burst ran at once: ${times}`);
      // ... then the cycle keeps going (a dependency wake is a guarantee) once per
      // floor interval, never faster (give or take the opening read's few fake ms).
      const paced = times.slice(burst);
      assert.ok(paced.length >= 8 && paced.length <= 10, `${paced.length} paced passes: ${times}`);
      for (let i = 1; i < paced.length; i++) {
        assert.ok(paced[i] - paced[i - 1] >= 950, `${times}`);
      }
    }
  });
});

test("Dependencies a self-dependency never wakes its own object", async () => {
  await withHarness({ beehive: PARKED }, async (h) => {
    let n = 0;
    h.fallback = async (_obj, cc) => {
      await cc.updateStatus({ n: n++ });
      return settled();
    };
    const a = await h.things.create("a", {});
    await h.bh.adminClient(Thing).addDependency(a.id, a.id);
    assert.equal((await h.store.objects.getMeta(a.id)).reconcileOwed, 0);
    await h.start();
    await h.tick(10_000);
    assert.equal(passesOf(h, a.id), 1);
  });
});

test("Dependencies the waker persists its cursor and resumes from it after restart", async () => {
  const dir = tempDir();
  try {
    const path = dir.file("waker.db");
    let target = 0, dependent = 0, persisted: number | undefined;
    const firstAfters: number[] = [];
    await withHarness({
      path,
      beehive: PARKED,
      wrap: recordingScans(firstAfters),
    }, async (h) => {
      target = (await h.bh.client(Other).create("target", { v: 1 })).id;
      dependent = (await h.things.create("dependent", {})).id;
      await h.bh.adminClient(Thing).addDependency(dependent, target);
      assert.equal(await h.store.driverCursors.get(WAKER_CURSOR), undefined);
      const mark = (await h.store.objectWrites.maxVersionAll()).at;
      await h.start();
      // A first start seeds at the log's maximum: history is not replayed.
      assert.equal(firstAfters[0], mark);
      // The cursor follows what the waker read (here the dependent's own settle).
      await h.tick(5_000);
      persisted = await h.store.driverCursors.get(WAKER_CURSOR);
      assert.equal(persisted, (await h.store.objectWrites.maxVersionAll()).at);
      assert.ok(persisted! > mark);
      await h.stop();
      await h.bh.client(Other).update(target, { v: 2 });
    });
    // With the stale-dependents pass blind, only the waker can reach the dependent.
    const afters: number[] = [];
    const recording = recordingScans(afters);
    await withHarness({
      path,
      beehive: PARKED,
      wrap: (store) => recording(blindStalePass(store)),
    }, async (h) => {
      await h.start();
      assert.equal(afters[0], persisted);
      assert.deepEqual(h.passes.map((p) => p.id), [dependent]);
      await h.tick(1_000);
      const latest = (await h.store.objectWrites.maxVersionAll()).at;
      assert.ok(latest > persisted!);
      assert.equal(await h.store.driverCursors.get(WAKER_CURSOR), latest);
    });
  } finally {
    dir.remove();
  }
});

test("Dependencies the stale-dependents pass stamps what it finds before enqueueing, so a restart keeps it", async () => {
  const dir = tempDir();
  try {
    const path = dir.file("stamp.db");
    let target = 0, dependent = 0;
    await withHarness({
      path,
      wrap: blindWaker,
      beehive: { ...PARKED, staleDependentsInterval: 10_000 },
    }, async (h) => {
      target = (await h.bh.client(Other).create("target", { v: 1 })).id;
      dependent = (await h.things.create("dependent", {})).id;
      await h.bh.adminClient(Thing).addDependency(dependent, target);
      await h.start();
      await h.tick(9_500);
      // A pass just ran, so the stale pass's wake at 10 s is held by the 1 s floor ...
      await h.pass(dependent, () => {});
      await h.bh.client(Other).update(target, { v: 2 });
      const before = passesOf(h, dependent);
      await h.tick(500);
      assert.equal(passesOf(h, dependent), before);
      // ... and the process stops before the floor lets it through.
      await h.stop();
      assert.equal((await h.store.objects.getMeta(dependent)).reconcileOwed, 1);
    });
    // The next process finds it through the owed pass alone: its own stale-dependents pass, run
    // at start, would stamp the dependent again (the target is still newer than its watermark),
    // and whether that lands before or after the owed pass's pass is a race on a networked store.
    const blind = (store: TestStore) => blindStalePass(blindWaker(store));
    await withHarness({ path, wrap: blind, beehive: PARKED }, async (h) => {
      await h.start();
      assert.deepEqual(h.passes.map((p) => p.id), [dependent]);
      assert.equal((await h.store.objects.getMeta(dependent)).reconcileOwed, 0);
    });
  } finally {
    dir.remove();
  }
});

test("Dependencies the waker persists the progress of pages read before a failing one", async () => {
  let failing = false;
  let firstAfter: number | undefined;
  const flaky = overriding("objectWrites", "listSinceAll", (original, options) => {
    const after = (options as { after: number }).after;
    firstAfter ??= after;
    // Once armed, every page but the first of a scan fails.
    if (failing && after !== firstAfter) return Promise.reject(new Error("disk on fire"));
    return original(options);
  });
  await withHarness({ registerThing: true, wrap: flaky, beehive: PARKED }, async (h) => {
    await h.start();
    await h.tick(5_000);
    const seed = await h.store.driverCursors.get(WAKER_CURSOR);
    firstAfter = seed;
    failing = true;
    // 300 writes in one burst: the next scan reads one good page of 256, then fails.
    const others = h.bh.client(Other);
    const rvs: number[] = [];
    for (let i = 0; i < 300; i++) rvs.push((await others.create(`o${i}`, {})).resourceVersion);
    await h.tick(5_000);
    assert.equal(await h.store.driverCursors.get(WAKER_CURSOR), rvs[255]);
    assert.ok(h.logger.lines.some((l) => l.level === "warn" && /dependency waker/.test(l.message)));
    failing = false;
  });
});

test("Dependencies the stale-dependents pass stops paging as soon as the Beehive stops", async () => {
  let pages = 0;
  const counting = overriding("dependencies", "listStaleSince", (original, kinds, options) => {
    pages++;
    return original(kinds, options);
  });
  await withHarness({ wrap: counting, beehive: PARKED }, async (h) => {
    const target = await h.bh.client(Other).create("target", {});
    const admin = h.bh.adminClient(Thing);
    // 600 stale dependents: three pages of 256 for the sweep at start.
    for (let i = 0; i < 600; i++) {
      const d = await h.things.create(`d${i}`, {});
      await admin.addDependency(d.id, target.id);
    }
    const stop = await h.bh.start();
    // Only what the sweep reads once stop is called counts: it may be mid-page then.
    pages = 0;
    await stop();
    assert.ok(pages <= 1, `${pages} pages were read after stop was called`);
  });
});
