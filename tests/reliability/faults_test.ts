/**
 * The fault campaign: every driver of the engine run over a
 * {@linkcode FaultStore} that fails the driver's own store calls (and, once,
 * the whole database), under fake time. For each driver the tests show that
 * it retries, that it logs one warning per failure class and attempt (never a
 * storm), that nothing escapes as an unhandled rejection, that the Beehive
 * stops cleanly while the fault holds, and that once the fault clears every
 * object converges — generations settled, owed counts drained,
 * deletion-pending rows collected.
 *
 * Set `BEEHIVE_FAULTS_REPORT=1` to print the figures table the last test
 * gathers (docs/reliability.md quotes it).
 *
 * @module
 */
import assert from "node:assert/strict";
import process from "node:process";
import {
  Beehive,
  type GroupKind,
  NotFoundError,
  settled,
  StoreClosedError,
  StoreError,
} from "../../mod.ts";
import type { Store } from "../../store/mod.ts";
import type { RawObject } from "../../store/mod.ts";
import type { TestStore } from "../_sqlite_driver.ts";
import { test } from "../_test.ts";
import { installFakeTime } from "../_fake_time.ts";
import {
  type AnyCC,
  type AnyObject,
  Harness,
  type HarnessOptions,
  type LogLine,
  Other,
  recordingLogger,
  Thing,
} from "../_beehive_harness.ts";
import { WAKER_CURSOR } from "../../src/engine/_dependency_waker.ts";
import { FaultInjector, FaultStore, type FaultTarget } from "./fault_store.ts";

// ---------------------------------------------------------------------------
// Plumbing
// ---------------------------------------------------------------------------

const HOUR = 3_600_000;
/** Intervals long enough that a driver not under test never ticks during one. */
const QUIET = { owedPassInterval: HOUR, gcInterval: HOUR, staleDependentsInterval: HOUR };

/** Collects unhandled promise rejections on either runtime. */
function trackUnhandledRejections(): { readonly reasons: unknown[]; dispose(): void } {
  const reasons: unknown[] = [];
  if ((globalThis as { Deno?: unknown }).Deno !== undefined) {
    const onEvent = (e: PromiseRejectionEvent) => {
      e.preventDefault();
      reasons.push(e.reason);
    };
    globalThis.addEventListener("unhandledrejection", onEvent);
    return {
      reasons,
      dispose: () => globalThis.removeEventListener("unhandledrejection", onEvent),
    };
  }
  const onReject = (reason: unknown) => void reasons.push(reason);
  process.on("unhandledRejection", onReject);
  return { reasons, dispose: () => void process.off("unhandledRejection", onReject) };
}

const realSetTimeout = globalThis.setTimeout;

/** One real macrotask turn (fake time or not), so the runtime reports rejections nobody handled. */
function turn(): Promise<void> {
  return new Promise((resolve) => realSetTimeout(resolve, 0));
}

/** Figures per driver, printed by the last test when BEEHIVE_FAULTS_REPORT is set. */
interface DriverFigures {
  tests: number;
  faults: number;
  closed: number;
  recoveries: number;
  lines: Map<string, number>;
}
const figures = new Map<string, DriverFigures>();

function figuresOf(driver: string): DriverFigures {
  let f = figures.get(driver);
  if (f === undefined) {
    figures.set(driver, f = { tests: 0, faults: 0, closed: 0, recoveries: 0, lines: new Map() });
  }
  return f;
}

/** The class of a warning: its message, plus the listing for the owed pass. */
function classOf(line: LogLine): string {
  const source = line.attributes?.source;
  return typeof source === "string" ? `${line.message} (${source})` : line.message;
}

/** Warning and error lines by class. */
function classes(lines: readonly LogLine[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const l of lines) {
    if (l.level !== "warn" && l.level !== "error") continue;
    out.set(classOf(l), (out.get(classOf(l)) ?? 0) + 1);
  }
  return out;
}

/** Lines with exactly `message`. */
function linesOf(h: Harness, message: string): LogLine[] {
  return h.logger.lines.filter((l) => l.message === message);
}

/** What one campaign test is handed. */
interface Ctx {
  readonly h: Harness;
  readonly faults: FaultInjector;
  /** The unwrapped store: seeds and checks that no fault reaches and no push follows. */
  readonly raw: TestStore;
  /** Counts one recovery observed after a fault cleared. */
  recovered(): void;
}

/**
 * Runs `fn` on a harness whose Beehive sees a {@linkcode FaultStore}, then
 * proves the Beehive stops cleanly (while whatever faults `fn` left armed
 * still hold), that no rejection went unhandled, that no driver escaped
 * into the "driver failed" error path, and records the figures.
 */
async function campaign(
  driver: string,
  options: HarnessOptions,
  fn: (ctx: Ctx) => Promise<void>,
): Promise<void> {
  const tracker = trackUnhandledRejections();
  try {
    const faults = new FaultInjector();
    let recoveries = 0;
    const h = await Harness.open({ ...options, wrap: (s) => new FaultStore(s, faults) });
    try {
      await fn({ h, faults, raw: h.store, recovered: () => void recoveries++ });
      await assertStopsCleanly(h);
    } finally {
      await h.close();
    }
    await turn();
    assert.deepEqual(tracker.reasons, [], "no rejection may go unhandled");
    const errors = h.logger.lines.filter((l) => l.level === "error");
    assert.deepEqual(errors.map((l) => l.message), [], "no driver may fail past its own handling");
    const f = figuresOf(driver);
    f.tests++;
    const records = faults.calls();
    f.faults += records.filter((c) => c.injected === "fault").length;
    f.closed += records.filter((c) => c.injected === "closed").length;
    f.recoveries += recoveries;
    for (const [k, n] of classes(h.logger.lines)) f.lines.set(k, (f.lines.get(k) ?? 0) + n);
  } finally {
    tracker.dispose();
  }
}

/** The period of the periodic driver a {@linkcode periodicCampaign} fails. */
const PERIOD = 10_000;

/**
 * A {@linkcode campaign} under {@linkcode QUIET} options with the periodic
 * driver `option` running every {@linkcode PERIOD}, handed to `fn` as `interval`.
 */
function periodicCampaign(
  driver: string,
  option: "owedPassInterval" | "staleDependentsInterval",
  fn: (ctx: Ctx, interval: number) => Promise<void>,
): Promise<void> {
  const beehive = { ...QUIET };
  beehive[option] = PERIOD;
  return campaign(driver, { beehive }, (c) => fn(c, PERIOD));
}

/** `stop()` resolves without any time passing, whatever the store is doing. */
async function assertStopsCleanly(h: Harness): Promise<void> {
  let stopped = false;
  let failure: unknown;
  const stopping = h.stop().then(() => void (stopped = true), (e) => void (failure = e));
  await h.flush();
  assert.equal(failure, undefined, "stop() rejected");
  assert.ok(stopped, "stop() did not resolve without time passing");
  await stopping;
}

/** Creates a row straight in the store: no push, no commit signal. */
function rawCreate(
  raw: Store,
  gk: GroupKind,
  name: string,
  spec: unknown = {},
): Promise<RawObject> {
  return raw.objects.create(gk, { name, spec: JSON.stringify(spec) });
}

/** Creates a row straight in the store, already settled at generation 1. */
async function rawSettled(raw: Store, gk: GroupKind, name: string): Promise<RawObject> {
  const o = await rawCreate(raw, gk, name);
  await raw.objects.setObservedGeneration(o, 1);
  return await raw.objects.get(o.id);
}

/**
 * The convergence check: every object of a registered kind settled at its
 * generation, every owed count drained, no deletion-pending row left.
 */
async function assertConverged(raw: Store, registered: readonly GroupKind[] = [Thing]) {
  for (const gk of [Thing, Other]) {
    for (const o of await raw.objects.list(gk)) {
      if (registered.some((r) => r.group === gk.group && r.kind === gk.kind)) {
        assert.equal(o.observedGeneration, o.generation, `${o.kind} ${o.name} settled`);
      }
      assert.equal(o.reconcileOwed, 0, `${o.kind} ${o.name} owes nothing`);
    }
  }
  assert.deepEqual(await raw.deletionRequests.list(), [], "every deletion collected");
}

/** Passes the harness controller ran over `id`. */
function passesOf(h: Harness, id: number): number {
  return h.passes.filter((p) => p.id === id).length;
}

/** Every line of `message` carries an injected error of class `cls`. */
function assertCarries(
  lines: readonly LogLine[],
  cls: typeof StoreError | typeof StoreClosedError,
) {
  for (const l of lines) {
    assert.ok(
      l.attributes?.error instanceof cls,
      `"${l.message}" carries ${String(l.attributes?.error)}`,
    );
  }
}

// ---------------------------------------------------------------------------
// The fault store itself
// ---------------------------------------------------------------------------

test("FaultStore fails a call by name, by count and until cleared, inside transactions too", async () => {
  const { openTestStore } = await import("../_sqlite_driver.ts");
  const inner = await openTestStore(":memory:");
  try {
    const faults = new FaultInjector();
    const store = new FaultStore(inner, faults);
    assert.equal(store.identity, inner.identity);
    assert.equal(store.objects.listIds, store.objects.listIds, "methods keep their identity");
    const a = await store.objects.create(Thing, { name: "a", spec: "{}" });

    const twice = faults.fail("objects.listIds", { count: 2 });
    await assert.rejects(store.objects.listIds(Thing), StoreError);
    await assert.rejects(store.objects.listIds(Thing), StoreError);
    assert.deepEqual(await store.objects.listIds(Thing), [a.id]);
    assert.equal(twice.injected, 2);
    assert.equal(twice.active, false);

    const always = faults.fail("objects.getMeta", { scope: "tx" });
    assert.equal((await store.objects.getMeta(a.id)).id, a.id, "a root call is not in scope");
    await assert.rejects(
      store.within(async (tx) => {
        await tx.objects.updateSpec(a, { spec: '{"v":2}' });
        await tx.objects.getMeta(a.id);
      }),
      StoreError,
    );
    assert.equal((await inner.objects.get(a.id)).generation, 1, "the transaction rolled back");
    always.clear();
    await store.within(async (tx) => void await tx.objects.getMeta(a.id));

    faults.fail("reclaimSpace", { skip: 1 });
    assert.equal(typeof await store.reclaimSpace(10), "number");
    await assert.rejects(store.reclaimSpace(10), StoreError);
    faults.clear("reclaimSpace");

    faults.fail("objects.get", { when: (args) => args[0] === a.id, count: 1 });
    await assert.rejects(store.objects.get(a.id), StoreError);
    await assert.rejects(store.objects.get(a.id + 100), NotFoundError, "not in scope: real error");

    faults.closeDatabase();
    await assert.rejects(store.getLatestResourceVersion(), StoreClosedError);
    await assert.rejects(store.within(() => Promise.resolve()), StoreClosedError);
    await assert.rejects(store.events.list(a.id), StoreClosedError);
    faults.reopenDatabase();
    assert.ok(await store.getLatestResourceVersion() > 0);

    assert.equal(faults.injected("objects.listIds"), 2);
    assert.equal(faults.injected(), 8);
    assert.ok(faults.succeeded("objects.listIds") >= 1);
    assert.ok(faults.calls("within").some((c) => c.injected === "closed"));
  } finally {
    await inner.close();
  }
});

// node:test fails any test during which a rejection goes unhandled on its own, so there the
// tracker is a second line; under Deno (where it prevents the default) it is the only one.
if ((globalThis as { Deno?: unknown }).Deno !== undefined) {
  test("the unhandled-rejection tracker sees a rejection nobody handles", async () => {
    const tracker = trackUnhandledRejections();
    try {
      void Promise.reject(new StoreError("nobody handles this"));
      await turn();
      assert.equal(tracker.reasons.length, 1);
      assert.ok(tracker.reasons[0] instanceof StoreError);
    } finally {
      tracker.dispose();
    }
  });
}

// ---------------------------------------------------------------------------
// Owed pass: objects.listUnsettledIds and reconcileOwed.listIds
// ---------------------------------------------------------------------------

for (
  const [target, source, other] of [
    ["objects.listUnsettledIds", "unsettled", "reconcileOwed.listIds"],
    ["reconcileOwed.listIds", "owed", "objects.listUnsettledIds"],
  ] as const
) {
  test(`faults: owed pass — ${target} fails every tick, then the work it finds is reconciled`, async () => {
    await periodicCampaign(
      "owed pass",
      "owedPassInterval",
      async (c, interval) => {
        const { h, faults, raw } = c;
        // Rows only the owed pass can find: written straight to the store, no push.
        const unsettled = [await rawCreate(raw, Thing, "u1"), await rawCreate(raw, Thing, "u2")];
        const owed: RawObject[] = [];
        for (const name of ["o1", "o2"]) {
          const o = await rawSettled(raw, Thing, name);
          await raw.reconcileOwed.stamp([o, o]);
          owed.push(o);
        }
        const [blocked, open] = source === "unsettled" ? [unsettled, owed] : [owed, unsettled];
        faults.fail(target);
        await h.start();
        const message = "beehive: owed pass listing failed";
        // The other listing is independent: its rows are reconciled at start.
        for (const o of open) assert.equal(passesOf(h, o.id), 1, `${o.name} found by ${other}`);
        for (let tick = 1; tick <= 3; tick++) {
          for (const o of blocked) assert.equal(passesOf(h, o.id), 0, `${o.name} not found yet`);
          const lines = linesOf(h, message);
          assert.equal(lines.length, tick, "one warning per failed listing");
          assert.ok(lines.every((l) => l.level === "warn" && l.attributes?.source === source));
          assertCarries(lines, StoreError);
          await h.tick(interval);
        }
        assert.equal(faults.injected(target), 4, "the listing was retried on every tick");
        assert.ok(faults.succeeded(other) >= 4, "the other listing kept running");
        faults.clear();
        await h.tick(interval);
        for (const o of blocked) assert.equal(passesOf(h, o.id), 1, `${o.name} reconciled`);
        c.recovered();
        await assertConverged(raw);
        await h.tick(3 * interval);
        assert.equal(linesOf(h, message).length, 4, "no warning once the fault cleared");
        for (const o of [...blocked, ...open]) assert.equal(passesOf(h, o.id), 1, "no spare pass");
      },
    );
  });
}

// ---------------------------------------------------------------------------
// Full pass: objects.listIds with fullPassInterval set; admission retries
// ---------------------------------------------------------------------------

test("faults: full pass — objects.listIds fails every tick, then every object is re-dispatched", async () => {
  const interval = 5_000;
  await campaign(
    "full pass",
    { beehive: { ...QUIET, fullPassInterval: interval } },
    async (c) => {
      const { h, faults, raw } = c;
      const rows = [await rawSettled(raw, Thing, "a"), await rawSettled(raw, Thing, "b")];
      faults.fail("objects.listIds");
      await h.start();
      const message = "beehive: full pass listing failed";
      for (let tick = 1; tick <= 3; tick++) {
        await h.tick(interval);
        assert.equal(h.passes.length, 0, "nothing re-dispatched while the listing fails");
        assert.equal(linesOf(h, message).length, tick, "one warning per failed tick");
      }
      assertCarries(linesOf(h, message), StoreError);
      assert.equal(faults.injected("objects.listIds"), 3);
      faults.clear();
      await h.tick(interval);
      for (const o of rows) assert.equal(passesOf(h, o.id), 1, `${o.name} re-dispatched`);
      c.recovered();
      await h.tick(interval);
      for (const o of rows) assert.equal(passesOf(h, o.id), 2, `${o.name} on the next tick too`);
      assert.equal(linesOf(h, message).length, 3);
      await assertConverged(raw);
    },
  );
});

test("faults: individual-pass admission — objects.listIds fails, admission retries on its ladder", async () => {
  await campaign(
    "individual-pass admission",
    { beehive: QUIET, register: { individualPassInterval: 60_000, startupFullPass: true } },
    async (c) => {
      const { h, faults, raw } = c;
      const rows = [await rawSettled(raw, Thing, "a"), await rawSettled(raw, Thing, "b")];
      faults.fail("objects.listIds", { count: 4 });
      const origin = Date.now();
      await h.start();
      await h.tick(10_000);
      const message = "beehive: individual-pass admission failed; retrying";
      // 100 ms doubling: attempts at 0, 100, 300, 700; the fifth, at 1500, succeeds.
      assert.deepEqual(
        faults.calls("objects.listIds").map((r) => [r.at - origin, r.injected]),
        [[0, "fault"], [100, "fault"], [300, "fault"], [700, "fault"], [1_500, undefined]],
      );
      assert.equal(linesOf(h, message).length, 4, "one warning per failed attempt");
      assertCarries(linesOf(h, message), StoreError);
      // startupFullPass makes the window 0: each row is dispatched as soon as it is admitted.
      for (const o of rows) assert.equal(passesOf(h, o.id), 1, `${o.name} admitted`);
      c.recovered();
      await assertConverged(raw);
    },
  );
});

// ---------------------------------------------------------------------------
// A pass: its load (objects.getForReconcile) and its conclusion writes
// ---------------------------------------------------------------------------

test("faults: pass load — objects.getForReconcile fails, the object retries on its ladder", async () => {
  await campaign(
    "pass load",
    { beehive: QUIET, register: { maxRetryInterval: 8_000 } },
    async (c) => {
      const { h, faults, raw } = c;
      const a = await rawCreate(raw, Thing, "a");
      const b = await rawCreate(raw, Thing, "b");
      // Only `a`'s load fails: `b` is reconciled at once.
      faults.fail("objects.getForReconcile", { when: (args) => args[0] === a.id });
      const origin = Date.now();
      await h.start();
      assert.equal(passesOf(h, b.id), 1);
      await h.tick(20_000);
      assert.equal(passesOf(h, a.id), 0, "no pass runs without its load");
      // 1 s doubling, capped at maxRetryInterval.
      const times = faults.calls("objects.getForReconcile")
        .filter((r) => r.args[0] === a.id).map((r) => r.at - origin);
      assert.deepEqual(times, [0, 1_000, 3_000, 7_000, 15_000]);
      const message = "beehive: reconcile failed; retrying with backoff";
      const lines = linesOf(h, message);
      assert.equal(lines.length, 5, "one warning per failed pass");
      assert.ok(lines.every((l) => l.attributes?.id === a.id && l.level === "warn"));
      assertCarries(lines, StoreError);
      // A wake while backing off does not bypass the ladder.
      await h.things.update(a.id, { v: 2 });
      await h.flush();
      assert.equal(
        faults.calls("objects.getForReconcile").filter((r) => r.args[0] === a.id).length,
        6,
      );
      faults.clear();
      await h.tick(8_000);
      assert.equal(passesOf(h, a.id), 1, "reconciled on the next rung");
      c.recovered();
      await assertConverged(raw);
      await h.tick(60_000);
      assert.equal(passesOf(h, a.id), 1, "the ladder is cleared by the successful pass");
      assert.equal(linesOf(h, message).length, 6);
    },
  );
});

test("faults: pass conclusion — objects.setObservedGeneration fails, the owed pass brings it back", async () => {
  await periodicCampaign(
    "pass conclusion",
    "owedPassInterval",
    async (c, interval) => {
      const { h, faults, raw } = c;
      faults.fail("objects.setObservedGeneration");
      await h.start();
      const a = await h.create("a", { v: 1 });
      const message = "beehive: concluding a pass failed at the generation handshake";
      for (let tick = 1; tick <= 3; tick++) {
        assert.equal(passesOf(h, a.id), tick, "the unsettled row is listed again every tick");
        assert.equal(linesOf(h, message).length, tick, "one warning per failed handshake");
        assert.equal((await raw.objects.get(a.id)).observedGeneration, undefined);
        await h.tick(interval);
      }
      assertCarries(linesOf(h, message), StoreError);
      faults.clear();
      await h.tick(interval);
      assert.equal(passesOf(h, a.id), 5);
      assert.equal((await raw.objects.get(a.id)).observedGeneration, 1);
      c.recovered();
      await assertConverged(raw);
      await h.tick(3 * interval);
      assert.equal(passesOf(h, a.id), 5, "settled: no more passes");
      assert.equal(linesOf(h, message).length, 4);
    },
  );
});

test("faults: pass conclusion — reconcileOwed.decrement fails, the owed count is drained later", async () => {
  await periodicCampaign(
    "pass conclusion",
    "owedPassInterval",
    async (c, interval) => {
      const { h, faults, raw } = c;
      await h.start();
      const a = await h.create("a");
      assert.equal(passesOf(h, a.id), 1);
      await raw.reconcileOwed.stamp([a]);
      faults.fail("reconcileOwed.decrement");
      await h.tick(interval);
      const message = "beehive: concluding a pass failed at decrement";
      assert.equal(passesOf(h, a.id), 2, "the owed listing found it");
      for (let tick = 1; tick <= 3; tick++) {
        assert.equal(linesOf(h, message).length, tick);
        assert.equal((await raw.objects.get(a.id)).reconcileOwed, 1, "still owed");
        await h.tick(interval);
        assert.equal(passesOf(h, a.id), 2 + tick, "owed: listed again every tick");
      }
      assertCarries(linesOf(h, message), StoreError);
      faults.clear();
      await h.tick(interval);
      assert.equal((await raw.objects.get(a.id)).reconcileOwed, 0);
      c.recovered();
      await assertConverged(raw);
      const passes = passesOf(h, a.id);
      await h.tick(3 * interval);
      assert.equal(passesOf(h, a.id), passes, "drained: no more passes");
      assert.equal(linesOf(h, message).length, 4);
    },
  );
});

test("faults: pass conclusion — dependencies.watermarkSet fails; the gap costs one spare pass at the next start", async () => {
  const clock = installFakeTime();
  const { openTestStore } = await import("../_sqlite_driver.ts");
  const store = await openTestStore(":memory:");
  try {
    let target: RawObject | undefined;
    let dependent: RawObject | undefined;
    /** The target version each pass of the dependent saw. */
    const seen: number[] = [];
    const observe = async (obj: AnyObject) => {
      if (obj.id === dependent?.id) {
        seen.push((await store.objects.getMeta(target!.id)).resourceVersion);
      }
      return settled();
    };
    await campaign("pass conclusion", { beehive: QUIET, store, clock }, async (c) => {
      const { h, faults, raw } = c;
      h.fallback = observe;
      faults.fail("dependencies.watermarkSet");
      await h.start();
      target = await raw.objects.get((await h.bh.client(Other).create("t", { v: 1 })).id);
      dependent = await raw.objects.get((await h.create("d")).id);
      await h.bh.adminClient(Thing).addDependency(dependent.id, target.id);
      await h.tick(2_000);
      await h.bh.client(Other).update(target.id, { v: 2 });
      await h.tick(2_000);
      const message = "beehive: concluding a pass failed at watermark";
      const passes = passesOf(h, dependent.id);
      assert.ok(passes >= 2, "the dependent was woken by the edge and by the target's write");
      assert.equal(linesOf(h, message).length, passes - 1, "one warning per failed watermark");
      assertCarries(linesOf(h, message), StoreError);
      const latest = (await raw.objects.getMeta(target.id)).resourceVersion;
      assert.equal(seen.at(-1), latest, "reconciled against the target's latest version");
      faults.clear();
      await h.tick(10_000);
      await assertConverged(raw);
      // The watermark still says "stale": nothing in this process needs another pass.
      const stale = await raw.dependencies.listStaleSince([Thing], {
        after: { targetVersion: 0, targetId: 0, dependentId: 0 },
        through: await raw.getLatestResourceVersion(),
        limit: 10,
      });
      assert.deepEqual(stale.dependents.map((r) => r.id), [dependent.id]);
    });
    // The next process's stale pass starts from 0: one spare pass, and the watermark lands.
    const logger = recordingLogger();
    const bh = new Beehive(store, { ...QUIET, logger, logLevel: "debug" });
    const passes: number[] = [];
    bh.register(Thing, (obj) => {
      passes.push(obj.id);
      return settled();
    });
    const stop = await bh.start();
    await clock.tickAsync(0);
    await stop();
    assert.deepEqual(passes, [dependent!.id]);
    const stale = await store.dependencies.listStaleSince([Thing], {
      after: { targetVersion: 0, targetId: 0, dependentId: 0 },
      through: await store.getLatestResourceVersion(),
      limit: 10,
    });
    assert.deepEqual(stale.dependents, [], "the watermark caught up");
    assert.deepEqual(logger.lines.filter((l) => l.level !== "debug"), []);
    figuresOf("pass conclusion").recoveries++;
  } finally {
    await store.close();
    clock.uninstall();
  }
});

// ---------------------------------------------------------------------------
// GC sweep: each of its steps fails on its own
// ---------------------------------------------------------------------------

/** The GC steps: the call each makes, the warning it logs, and what it leaves undone. */
interface GcStep {
  readonly target: FaultTarget;
  readonly step: string;
  /** Seeds the work only this step does (straight in the store: no push). */
  seed(raw: TestStore): Promise<() => Promise<boolean>>;
}

const GC_STEPS: readonly GcStep[] = [
  {
    target: "deletionRequests.list",
    step: "deletion sweep",
    async seed(raw) {
      // A client-only row the sweep collects inline, and a registered one it hands to a pass.
      const other = await rawCreate(raw, Other, "gone-other");
      const thing = await rawSettled(raw, Thing, "gone-thing");
      await raw.deletionRequests.create(other);
      await raw.deletionRequests.create(thing);
      return async () => (await raw.deletionRequests.list()).length === 0;
    },
  },
  {
    target: "events.sweep",
    step: "event retention",
    async seed(raw) {
      const o = await rawCreate(raw, Other, "chatty");
      for (let i = 0; i < 5; i++) {
        await raw.events.add(o, { type: "Normal", reason: `R${i}` });
      }
      return async () => (await raw.events.list(o.id)).length === 2;
    },
  },
  {
    target: "objectWrites.sweep",
    step: "write-log retention",
    async seed(raw) {
      for (let i = 0; i < 5; i++) await rawCreate(raw, Other, `w${i}`);
      return async () =>
        (await raw.objectWrites.listSince(Other, { after: 0, limit: 100 })).writes.length === 2;
    },
  },
  {
    target: "reconcileOwed.sweep",
    step: "owed sweep",
    async seed(raw) {
      const o = await rawCreate(raw, Other, "owed-other");
      await raw.reconcileOwed.stamp([o]);
      return async () => (await raw.objects.get(o.id)).reconcileOwed === 0;
    },
  },
  {
    target: "reclaimSpace",
    step: "free pages",
    seed() {
      // Nothing to observe in the database: the step's own calls succeeding is the recovery.
      return Promise.resolve(() => Promise.resolve(true));
    },
  },
];

const GC_OPTIONS = {
  ...QUIET,
  gcInterval: 10_000,
  eventRetention: { perTimeline: 2 },
  writeLogRetention: { perKind: 2, maxAge: 0 },
};

for (const gc of GC_STEPS) {
  test(`faults: GC sweep — ${gc.target} fails every sweep; the other steps run; it recovers`, async () => {
    await campaign("GC sweep", { beehive: GC_OPTIONS }, async (c) => {
      const { h, faults, raw } = c;
      const done = await gc.seed(raw);
      faults.fail(gc.target);
      await h.start();
      const message = `beehive: GC ${gc.step} failed`;
      for (let sweep = 1; sweep <= 3; sweep++) {
        assert.equal(linesOf(h, message).length, sweep, "one warning per failed sweep");
        assert.equal(faults.injected(gc.target), sweep);
        assert.equal(await done(), gc.target === "reclaimSpace", "the step's work is not done");
        for (const other of GC_STEPS) {
          if (other !== gc) {
            assert.equal(faults.succeeded(other.target), sweep, `${other.step} ran regardless`);
          }
        }
        if (sweep < 3) await h.tick(10_000);
      }
      const lines = linesOf(h, message);
      assert.ok(lines.every((l) => l.level === "warn"));
      assertCarries(lines, StoreError);
      assert.equal(classes(h.logger.lines).size, 1, "no other failure class was logged");
      faults.clear();
      await h.tick(10_000);
      assert.ok(await done(), "the step's work is done once the fault clears");
      assert.ok(faults.succeeded(gc.target) >= 1);
      c.recovered();
      await assertConverged(raw);
      await h.tick(20_000);
      assert.equal(linesOf(h, message).length, 3, "no warning once the fault cleared");
    });
  });
}

test("faults: GC collection — objects.delete fails inside the collection transaction; rows are collected later", async () => {
  await campaign(
    "GC collection",
    { beehive: { ...GC_OPTIONS, gcInterval: 10_000 }, register: { maxRetryInterval: 4_000 } },
    async (c) => {
      const { h, faults, raw } = c;
      await h.start();
      // A client-only row: the GC sweep collects it inline.
      const other = await h.bh.client(Other).create("other", {});
      // A registered row: its own pass collects it.
      const solo = await h.create("solo");
      // A registered owner of a client-only child: the owner waits for the child.
      const owner = await h.create("owner");
      const child = await h.bh.client(Other).create("child", {}, { owner: owner.id });
      faults.fail("objects.delete", { scope: "tx" });
      const origin = Date.now();
      await h.bh.client(Other).delete(other.id);
      await h.things.delete(solo.id);
      await h.things.delete(owner.id);
      await h.tick(29_000);
      const attempts = (id: number) =>
        faults.calls("objects.delete").filter((r) => r.args[0] === id).map((r) => r.at - origin);
      // The sweep tries each client-only row once a sweep (at 10 s, 20 s; the one at 0 ran
      // before the deletes); the owner's pass cascaded its mark to the child.
      assert.deepEqual(attempts(other.id), [10_000, 20_000]);
      assert.deepEqual(attempts(child.id), [10_000, 20_000]);
      assert.deepEqual(attempts(owner.id), [], "an owner is never removed before its child");
      // The registered row retries on its pass's ladder: 1 s doubling, capped at 4 s.
      assert.deepEqual(attempts(solo.id), [
        0,
        1_000,
        3_000,
        7_000,
        11_000,
        15_000,
        19_000,
        23_000,
        27_000,
      ]);
      const rowLines = linesOf(h, "beehive: collecting an object failed");
      assert.deepEqual(rowLines.map((l) => l.attributes?.id), [
        other.id,
        child.id,
        other.id,
        child.id,
      ]);
      assertCarries(rowLines, StoreError);
      const passLines = linesOf(h, "beehive: reconcile failed; retrying with backoff");
      assert.equal(passLines.length, 9);
      assert.ok(passLines.every((l) => l.attributes?.id === solo.id));
      assertCarries(passLines, StoreError);
      assert.equal(
        faults.injected(),
        rowLines.length + passLines.length,
        "one warning per failure",
      );
      for (const o of [other, solo, owner, child]) {
        assert.notEqual((await raw.objects.getMeta(o.id)).deletionRequestedAt, undefined);
      }
      faults.clear();
      await h.tick(10_000);
      for (const o of [other, solo, owner, child]) {
        await assert.rejects(raw.objects.getMeta(o.id), NotFoundError, `${o.name} collected`);
      }
      c.recovered();
      await assertConverged(raw);
    },
  );
});

// ---------------------------------------------------------------------------
// Dependency waker: objectWrites.listSinceAll, edges.groupIncomingByIds, driverCursors.set
// ---------------------------------------------------------------------------

/** A client-only target and a registered dependent of it, settled and idle. */
interface Pair {
  readonly target: RawObject;
  readonly dependent: RawObject;
  /** The target version each pass of the dependent saw. */
  readonly seen: number[];
}

async function dependencyPair(h: Harness, raw: Store): Promise<Pair> {
  const seen: number[] = [];
  const ids = { target: 0, dependent: 0 };
  h.fallback = async (obj: AnyObject) => {
    if (obj.id === ids.dependent) {
      seen.push((await raw.objects.getMeta(ids.target)).resourceVersion);
    }
    return settled();
  };
  ids.target = (await h.bh.client(Other).create("t", { v: 1 })).id;
  ids.dependent = (await h.create("d")).id;
  await h.bh.adminClient(Thing).addDependency(ids.dependent, ids.target);
  // Let the edge's pass, the waker's scan and its cursor write all finish. The scan may
  // find the target's create with the edge already there: its wake runs at once (the
  // push budget passes the floor), a second pass against the same target version.
  await h.tick(5_000);
  assert.ok(seen.length >= 1 && seen.length <= 2, `${seen.length} setup passes`);
  assert.ok(seen.every((v) => v === seen[0]), "every setup pass saw the target as created");
  // The cases count passes from here: keep the baseline at one.
  seen.splice(0, seen.length - 1);
  return {
    target: await raw.objects.get(ids.target),
    dependent: await raw.objects.get(ids.dependent),
    seen,
  };
}

/** The target's current version; asserts the dependent's last pass saw it. */
async function assertDependentCurrent(raw: Store, pair: Pair): Promise<void> {
  const latest = (await raw.objects.getMeta(pair.target.id)).resourceVersion;
  assert.equal(
    pair.seen.at(-1),
    latest,
    "the dependent was reconciled against the target's latest",
  );
  const stale = await raw.dependencies.listStaleSince([Thing], {
    after: { targetVersion: 0, targetId: 0, dependentId: 0 },
    through: await raw.getLatestResourceVersion(),
    limit: 10,
  });
  assert.deepEqual(stale.dependents, [], "no dependent is behind its targets");
}

for (const target of ["objectWrites.listSinceAll", "edges.groupIncomingByIds"] as const) {
  test(`faults: dependency waker — ${target} fails; it backs off, warns once, and wakes the dependent after`, async () => {
    await campaign("dependency waker", { beehive: QUIET }, async (c) => {
      const { h, faults, raw } = c;
      await h.start();
      const pair = await dependencyPair(h, raw);
      faults.fail(target);
      const origin = Date.now();
      await h.bh.client(Other).update(pair.target.id, { v: 2 });
      await h.tick(5_000);
      // A wake while backing off is dropped: the retry reads the same log anyway.
      await h.bh.client(Other).update(pair.target.id, { v: 3 });
      await h.tick(5_000);
      // 100 ms doubling: 0, 100, 300, 700, 1500, 3100, 6300 (next 12 700).
      assert.deepEqual(
        faults.calls(target).filter((r) => r.injected).map((r) => r.at - origin),
        [0, 100, 300, 700, 1_500, 3_100, 6_300],
      );
      assert.equal(pair.seen.length, 1, "no dependent wake while the scan fails");
      const message = "beehive: the dependency waker failed to scan; retrying";
      assert.equal(linesOf(h, message).length, 1, "one warning per failure streak");
      assertCarries(linesOf(h, message), StoreError);
      faults.clear();
      await h.tick(3_000);
      assert.equal(pair.seen.length, 2, "one pass for both writes, on the next rung");
      c.recovered();
      await assertDependentCurrent(raw, pair);
      await assertConverged(raw);
      await h.tick(5_000);
      const cursor = await raw.driverCursors.get(WAKER_CURSOR);
      assert.ok(cursor !== undefined && cursor >= pair.seen.at(-1)!, "the cursor was persisted");
      // A new streak warns again, once.
      faults.fail(target, { count: 3 });
      await h.bh.client(Other).update(pair.target.id, { v: 4 });
      await h.tick(5_000);
      assert.equal(linesOf(h, message).length, 2);
      assert.equal(pair.seen.length, 3);
      await assertDependentCurrent(raw, pair);
      c.recovered();
    });
  });
}

test("faults: dependency waker — driverCursors.set fails; wakes still flow and the cursor lands after", async () => {
  await campaign("dependency waker", { beehive: QUIET }, async (c) => {
    const { h, faults, raw } = c;
    await h.start();
    const pair = await dependencyPair(h, raw);
    const before = await raw.driverCursors.get(WAKER_CURSOR);
    faults.fail("driverCursors.set");
    await h.bh.client(Other).update(pair.target.id, { v: 2 });
    await h.tick(10_000);
    assert.equal(pair.seen.length, 2, "the dependent is woken: persisting is not on its path");
    assert.ok(faults.injected("driverCursors.set") >= 2, "the cursor write is retried");
    const message = "beehive: the dependency waker failed to persist; retrying";
    assert.ok(linesOf(h, message).length >= 1);
    assertCarries(linesOf(h, message), StoreError);
    assert.equal(await raw.driverCursors.get(WAKER_CURSOR), before, "nothing persisted yet");
    faults.clear();
    const lines = linesOf(h, message).length;
    await h.tick(5_000);
    const cursor = await raw.driverCursors.get(WAKER_CURSOR);
    assert.ok(cursor !== undefined && cursor >= pair.seen.at(-1)!, "the cursor was persisted");
    c.recovered();
    assert.equal(linesOf(h, message).length, lines, "no warning once the fault cleared");
    await assertDependentCurrent(raw, pair);
    await assertConverged(raw);
  });
});

// BUG (left unregistered; see docs/reliability.md, "Faults"): while driverCursors.set keeps
// failing, the waker warns about it once a second instead of once per failure streak, and
// retries on a flat 1 s instead of a ladder. Register this test once the waker is fixed.
async function wakerPersistWarnsOncePerStreak(): Promise<void> {
  await campaign("dependency waker", { beehive: QUIET }, async (c) => {
    const { h, faults, raw } = c;
    await h.start();
    const pair = await dependencyPair(h, raw);
    faults.fail("driverCursors.set");
    await h.bh.client(Other).update(pair.target.id, { v: 2 });
    await h.tick(60_000);
    const message = "beehive: the dependency waker failed to persist; retrying";
    assert.equal(
      linesOf(h, message).length,
      1,
      "one warning per failure streak (dependency_waker.ts)",
    );
    // The reference's ladder: 1 s doubling to 1 min, so at most 6 attempts in the first minute.
    assert.ok(faults.injected("driverCursors.set") <= 6, "the cursor write backs off");
    faults.clear();
    await h.tick(60_000);
    assert.ok((await raw.driverCursors.get(WAKER_CURSOR))! >= pair.seen.at(-1)!);
  });
}
test(
  "faults: dependency waker — a failing cursor write warns once per streak and backs off",
  wakerPersistWarnsOncePerStreak,
);

test("faults: dependency waker — its seed fails at start; the stale pass recovers the wake it skips", async () => {
  await campaign(
    "dependency waker",
    { beehive: { ...QUIET, staleDependentsInterval: 20_000 } },
    async (c) => {
      const { h, faults, raw } = c;
      // Seeded before start: the target, the dependent and its edge (owed: the start reconciles it).
      const target = await rawCreate(raw, Other, "t", { v: 1 });
      const dependent = await rawCreate(raw, Thing, "d");
      await raw.edges.add({ fromId: dependent.id, toId: target.id, relation: "depends_on" });
      const seen: number[] = [];
      h.fallback = async (obj: AnyObject) => {
        if (obj.id === dependent.id) {
          seen.push((await raw.objects.getMeta(target.id)).resourceVersion);
        }
        return settled();
      };
      faults.fail("objectWrites.maxVersionAll");
      await h.start();
      await h.tick(2_000);
      // The owed pass at start, and the spare pass the first stale sweep stamped.
      const atStart = seen.length;
      assert.ok(atStart >= 1, "the dependent was reconciled at start");
      // Written while the waker is unseeded and backing off: its wake is dropped.
      await h.bh.client(Other).update(target.id, { v: 2 });
      await h.tick(1_000);
      assert.equal(seen.length, atStart);
      const seedLines = linesOf(h, "beehive: the dependency waker failed to seed; retrying");
      const scanLines = linesOf(h, "beehive: the dependency waker failed to scan; retrying");
      assert.equal(seedLines.length, 1);
      // The same failing read is warned once more as a scan failure by the first retry
      // (a minor finding: see wakerSeedWarnsOnce below); the later retries stay quiet.
      assert.ok(scanLines.length <= 1, "the retries of one failure do not warn again");
      assertCarries([...seedLines, ...scanLines], StoreError);
      faults.clear();
      // With no stored cursor the waker seeds at the log's end as of now (a documented gap):
      // the stale-dependents pass, 20 s after the start, is what delivers the wake.
      await h.tick(16_999);
      assert.equal(seen.length, atStart, "the waker itself does not replay what it never saw");
      await h.tick(1);
      assert.equal(seen.length, atStart + 1, "the stale-dependents pass found the dependent");
      c.recovered();
      const pair = { target, dependent, seen };
      await assertDependentCurrent(raw, pair);
      await assertConverged(raw);
      // And the waker works from here on.
      await h.bh.client(Other).update(target.id, { v: 3 });
      await h.tick(2_000);
      assert.equal(seen.length, atStart + 2);
      await assertDependentCurrent(raw, pair);
    },
  );
});

// MINOR (left unregistered): a seed that keeps failing is warned twice — "failed to seed" from
// prime(), then "failed to scan" from the first retry, which seeds again inside #pass — for one
// failing call (objectWrites.maxVersionAll) and one streak.
async function wakerSeedWarnsOnce(): Promise<void> {
  await campaign("dependency waker", { beehive: QUIET }, async (c) => {
    const { h, faults } = c;
    faults.fail("objectWrites.maxVersionAll");
    await h.start();
    await h.tick(60_000);
    assert.ok(faults.injected("objectWrites.maxVersionAll") >= 5, "the seed is retried");
    const lines = h.logger.lines.filter((l) =>
      l.message.startsWith("beehive: the dependency waker")
    );
    assert.equal(lines.length, 1, "one warning for one failure streak");
  });
}
test("faults: dependency waker — a seed that keeps failing is warned once", wakerSeedWarnsOnce);

// ---------------------------------------------------------------------------
// Stale-dependents pass: dependencies.listStaleSince, reconcileOwed.stamp
// ---------------------------------------------------------------------------

for (
  const target of [
    "dependencies.listStaleSince",
    "reconcileOwed.stamp",
    "getLatestResourceVersion",
  ] as const
) {
  test(`faults: stale-dependents pass — ${target} fails every sweep; the dependent is found after`, async () => {
    await periodicCampaign(
      "stale-dependents pass",
      "staleDependentsInterval",
      async (c, interval) => {
        const { h, faults, raw } = c;
        await h.start();
        const pair = await dependencyPair(h, raw);
        // Written straight to the store: no commit signal, so the waker never hears of it
        // and only the stale-dependents pass can find the dependent.
        await raw.objects.updateSpec(pair.target, { spec: '{"v":2}' });
        faults.fail(target);
        await h.tick(5_000); // the sweep at 10 s
        const message = "beehive: the stale-dependents pass failed; it retries next interval";
        for (let sweep = 1; sweep <= 3; sweep++) {
          assert.equal(linesOf(h, message).length, sweep, "one warning per failed sweep");
          assert.equal(pair.seen.length, 1, "the dependent is not found while the sweep fails");
          if (sweep < 3) await h.tick(interval);
        }
        assert.equal(faults.injected(target), 3);
        assertCarries(linesOf(h, message), StoreError);
        assert.equal((await raw.objects.get(pair.dependent.id)).reconcileOwed, 0);
        faults.clear();
        await h.tick(interval);
        assert.equal(pair.seen.length, 2, "the next sweep found and reconciled the dependent");
        c.recovered();
        await assertDependentCurrent(raw, pair);
        await assertConverged(raw);
        await h.tick(3 * interval);
        assert.equal(linesOf(h, message).length, 3, "no warning once the fault cleared");
        assert.equal(pair.seen.length, 2, "and no spare pass");
      },
    );
  });
}

test("faults: stale-dependents pass — a sweep failing on its second page keeps the first page's stamps", async () => {
  await periodicCampaign(
    "stale-dependents pass",
    "staleDependentsInterval",
    async (c, interval) => {
      const { h, faults, raw } = c;
      // 300 dependents of one target: two pages of 256.
      const target = await rawCreate(raw, Other, "t");
      const dependents: RawObject[] = [];
      for (let i = 0; i < 300; i++) {
        const d = await rawSettled(raw, Thing, `d${i}`);
        await raw.edges.add({ fromId: d.id, toId: target.id, relation: "depends_on" });
        dependents.push(d);
      }
      // Settle the edges' owed stamps, and start with every watermark current.
      await h.start();
      await h.tick(5_000);
      await raw.objects.updateSpec(target, { spec: '{"v":2}' });
      const before = h.passes.length;
      faults.fail("dependencies.listStaleSince", { skip: 1 });
      await h.tick(interval);
      const message = "beehive: the stale-dependents pass failed; it retries next interval";
      assert.equal(linesOf(h, message).length, 1);
      // Stamped first, so the first page's dependents are owed and reconciled regardless.
      assert.equal(h.passes.length - before, 256);
      faults.clear();
      await h.tick(interval);
      await h.tick(5_000);
      const passed = new Set(h.passes.slice(before).map((p) => p.id));
      assert.equal(passed.size, 300, "every dependent reconciled once the fault cleared");
      assert.equal(h.passes.length - before, 300, "and the first page's not again");
      c.recovered();
      await assertConverged(raw);
      const stale = await raw.dependencies.listStaleSince([Thing], {
        after: { targetVersion: 0, targetId: 0, dependentId: 0 },
        through: await raw.getLatestResourceVersion(),
        limit: 1_000,
      });
      assert.deepEqual(stale.dependents, []);
    },
  );
});

// ---------------------------------------------------------------------------
// A closed database: every call rejects with StoreClosedError
// ---------------------------------------------------------------------------

const BUSY = {
  owedPassInterval: 10_000,
  fullPassInterval: 15_000,
  gcInterval: 10_000,
  staleDependentsInterval: 10_000,
  eventRetention: { perTimeline: 5 },
};

/** The periodic drivers' warnings: one per driver tick while the database is closed. */
const PERIODIC: readonly (readonly [string, number])[] = [
  ["beehive: owed pass listing failed (unsettled)", 10_000],
  ["beehive: owed pass listing failed (owed)", 10_000],
  ["beehive: full pass listing failed", 15_000],
  ["beehive: GC deletion sweep failed", 10_000],
  ["beehive: GC event retention failed", 10_000],
  ["beehive: GC write-log retention failed", 10_000],
  ["beehive: GC owed sweep failed", 10_000],
  ["beehive: GC free pages failed", 10_000],
  ["beehive: the stale-dependents pass failed; it retries next interval", 10_000],
];

test("faults: closed database — every driver fails quietly, stop is clean, and all converges on reopen", async () => {
  await campaign(
    "closed database",
    { beehive: BUSY, register: { maxRetryInterval: 8_000 } },
    async (c) => {
      const { h, faults, raw } = c;
      await h.start();
      const pair = await dependencyPair(h, raw);
      const a = await h.create("a");
      const b = await h.create("b");
      const gone = await h.bh.client(Other).create("gone", {});
      await h.tick(10_000);
      const settledLines = h.logger.lines.length;
      // The database closes in the middle of a's pass: its conclusion writes fail, and the
      // pass it asked for a second later fails at its load, then retries on its ladder.
      h.queue(a.id, () => {
        faults.closeDatabase();
        return settled().requeueAfter(1_000);
      });
      await h.things.update(a.id, { v: 2 });
      await h.flush();
      const origin = Date.now();
      // Calls from outside the engine see the closed store too.
      await assert.rejects(h.things.update(b.id, { v: 2 }), StoreClosedError);
      await assert.rejects(h.bh.client(Other).delete(gone.id), StoreClosedError);
      await assert.rejects(h.things.requeue(b.id), StoreClosedError);
      await h.tick(60_000);
      const lines = h.logger.lines.slice(settledLines);
      assertCarries(lines.filter((l) => l.level === "warn"), StoreClosedError);
      const counts = classes(lines);
      assert.equal(counts.get("beehive: concluding a pass failed at the generation handshake"), 1);
      // Loads at 1, 2, 4, 8, 16, 24, ... 56 s: 1 s doubling capped at 8 s.
      assert.equal(counts.get("beehive: reconcile failed; retrying with backoff"), 10);
      for (const [message, interval] of PERIODIC) {
        // Each periodic driver warns once per tick; the ticks' phases differ by driver.
        const n = counts.get(message) ?? 0;
        const ticks = 60_000 / interval;
        assert.ok(n >= ticks - 1 && n <= ticks + 1, `${message}: ${n} warnings in 60 s`);
      }
      for (const [message, n] of counts) {
        if (message.startsWith("beehive: the dependency waker")) {
          assert.ok(n <= 1, `${message}: once per streak`);
        }
      }
      const known = new Set([
        ...PERIODIC.map(([m]) => m),
        "beehive: concluding a pass failed at the generation handshake",
        "beehive: reconcile failed; retrying with backoff",
        "beehive: the dependency waker failed to scan; retrying",
        "beehive: the dependency waker failed to persist; retrying",
      ]);
      assert.deepEqual([...counts.keys()].filter((k) => !known.has(k)), [], "no other class");
      assert.ok(faults.calls().every((r) => r.injected !== "fault"));
      assert.ok(faults.calls().filter((r) => r.injected === "closed").length >= 50);
      assert.ok(h.passes.every((p) => p.at <= origin), "no pass runs without its load");

      faults.reopenDatabase();
      const reopened = h.logger.lines.length;
      await h.bh.client(Other).delete(gone.id);
      await h.bh.client(Other).update(pair.target.id, { v: 2 });
      await h.tick(60_000);
      c.recovered();
      await assertConverged(raw);
      await assertDependentCurrent(raw, pair);
      await assert.rejects(raw.objects.getMeta(gone.id), NotFoundError, "collected");
      assert.equal((await raw.objects.get(a.id)).observedGeneration, 2);
      assert.deepEqual(
        classes(h.logger.lines.slice(reopened)),
        new Map(),
        "no warning once the database is back",
      );

      // Closed again: the Beehive stops cleanly while every call fails (campaign checks it).
      faults.closeDatabase();
      await h.tick(30_000);
    },
  );
});

test("faults: closed database — start refuses without the store lease, runs nothing, and the next one converges", async () => {
  const clock = installFakeTime();
  const { openTestStore } = await import("../_sqlite_driver.ts");
  const store = await openTestStore(":memory:");
  try {
    const a = await rawCreate(store, Thing, "a");
    const gone = await rawCreate(store, Other, "gone");
    await store.deletionRequests.create(gone);
    await campaign("closed database", { beehive: BUSY, store, clock }, async (c) => {
      const { h, faults } = c;
      faults.closeDatabase();
      // A Beehive that cannot take the store lease cannot know it is alone: it runs nothing.
      await assert.rejects(h.bh.start(), StoreClosedError);
      assert.equal(h.bh.isLeader, false);
      await h.tick(30_000);
      assert.equal(h.passes.length, 0);
      assert.deepEqual(h.logger.lines.filter((l) => l.level === "warn"), []);
    });
    // The store itself never closed: a new Beehive picks up all the work.
    await campaign("closed database", { beehive: BUSY, store, clock }, async (c) => {
      const { h, raw } = c;
      await h.start();
      assert.equal(passesOf(h, a.id), 1);
      await assert.rejects(raw.objects.getMeta(gone.id), NotFoundError);
      c.recovered();
      await assertConverged(raw);
      assert.deepEqual(classes(h.logger.lines), new Map());
    });
  } finally {
    await store.close();
    clock.uninstall();
  }
});

// ---------------------------------------------------------------------------
// Watches: the shared object tailer, a watch's delivery, the event watch
// ---------------------------------------------------------------------------

/**
 * Asserts `times` (ms, ascending) climb the watch retry ladder: gaps doubling from 100 ms
 * (200 ms when a wake that landed during the first failing read was honoured at once — an
 * immediate second attempt, once per rung at most), so at most two attempts per rung.
 */
function assertLadder(times: readonly number[], span: number): void {
  const distinct = times.filter((t, i) => i === 0 || t !== times[i - 1]);
  assert.ok(times.length <= 2 * distinct.length, `at most two attempts per rung: ${times}`);
  const gaps = distinct.slice(1).map((t, i) => t - distinct[i]);
  assert.ok(gaps[0] === 100 || gaps[0] === 200, `the ladder starts at 100 ms: ${times}`);
  for (let i = 1; i < gaps.length; i++) {
    assert.equal(gaps[i], Math.min(2 * gaps[i - 1], 30_000), `the gaps double: ${times}`);
  }
  assert.ok(span - distinct.at(-1)! < 2 * gaps.at(-1)!, `no rung skipped: ${times}`);
}

/** Drains a stream in the background; `ended` resolves to the error it ended with, if any. */
function consume<T>(stream: AsyncIterable<T>): { items: T[]; ended: Promise<unknown> } {
  const items: T[] = [];
  const ended = (async () => {
    try {
      for await (const item of stream) items.push(item);
      return undefined;
    } catch (error) {
      return error;
    }
  })();
  return { items, ended };
}

for (
  const target of [
    "objectWrites.maxVersion",
    "objectWrites.listSince",
    "objects.listByIds",
  ] as const
) {
  test(`faults: object watch tailer — ${target} fails; it backs off, warns once per class, delivers everything after`, async () => {
    await campaign("object watch tailer", { beehive: QUIET }, async (c) => {
      const { h, faults } = c;
      await h.start();
      const others = h.bh.client(Other);
      const stream = await others.watchList();
      const seen = consume(stream);
      faults.fail(target);
      const origin = Date.now();
      const created = [];
      for (const name of ["a", "b", "c"]) created.push(await others.create(name, {}));
      await h.tick(10_000);
      assert.equal(seen.items.length, 0, "nothing delivered while the read fails");
      // 100 ms doubling: 0, 100, 300, 700, 1500, 3100, 6300.
      assert.deepEqual(
        faults.calls(target).filter((r) => r.injected).map((r) => r.at - origin),
        [0, 100, 300, 700, 1_500, 3_100, 6_300],
      );
      const message = "beehive: a watch read failed; retrying";
      assert.equal(linesOf(h, message).length, 1, "one warning per failure class");
      assertCarries(linesOf(h, message), StoreError);
      // A different failure class is worth one more warning.
      faults.clear();
      faults.fail(target, { error: () => new NotFoundError("injected: another class") });
      await h.tick(12_800);
      assert.equal(linesOf(h, message).length, 2);
      assert.ok(linesOf(h, message)[1].attributes?.error instanceof NotFoundError);
      faults.clear();
      await h.tick(30_000);
      assert.deepEqual(
        seen.items.map((ch) => [ch.type, ch.id]),
        created.map((o) => ["Added", o.id]),
        "every change delivered, in order, once the fault cleared",
      );
      c.recovered();
      await others.update(created[0].id, { v: 2 });
      await h.flush();
      assert.deepEqual(seen.items.at(-1)?.type, "Modified", "and it is live again");
      assert.equal(linesOf(h, message).length, 2, "no warning once the fault cleared");
      stream.close();
      assert.equal(await seen.ended, undefined);
    });
  });
}

test("faults: object watch delivery — loading relations fails; the stream retries and loses nothing", async () => {
  await campaign("object watch delivery", { beehive: QUIET }, async (c) => {
    const { h, faults } = c;
    await h.start();
    const others = h.bh.client(Other);
    const stream = await others.watchList({ load: ["events"] });
    const seen = consume(stream);
    faults.fail("events.list");
    const a = await others.create("a", {});
    const b = await others.create("b", {});
    await h.tick(10_000);
    assert.equal(seen.items.length, 0);
    const message = "beehive: a watch delivery failed; retrying";
    assert.equal(linesOf(h, message).length, 1, "one warning per failure class");
    assertCarries(linesOf(h, message), StoreError);
    assert.ok(faults.injected("events.list") >= 5, "the load is retried on a ladder");
    faults.clear();
    await h.tick(30_000);
    assert.deepEqual(seen.items.map((ch) => [ch.type, ch.id]), [["Added", a.id], ["Added", b.id]]);
    assert.ok(seen.items.every((ch) => Array.isArray(ch.object?.events())), "relations loaded");
    c.recovered();
    stream.close();
    assert.equal(await seen.ended, undefined);
  });
});

for (const target of ["events.listSince", "objects.getMeta"] as const) {
  test(`faults: event watch — ${target} fails; it backs off, warns once, and delivers every run after`, async () => {
    await campaign("event watch", { beehive: QUIET }, async (c) => {
      const { h, faults } = c;
      await h.start();
      // For objects.getMeta the watch opens before its object exists, so its reader must
      // resolve the id first.
      const early = target === "objects.getMeta";
      let id = early ? 0 : (await h.create("a")).id;
      const stream = await h.things.watchEvents(early ? 1 : id);
      const seen = consume(stream);
      faults.fail(target);
      if (early) id = (await h.create("a")).id;
      assert.equal(id, 1);
      const admin = h.bh.adminClient(Thing);
      const origin = Date.now();
      for (const reason of ["One", "Two", "Three"]) {
        await admin.addEvent(id, { type: "Normal", reason });
      }
      await h.tick(10_000);
      assert.equal(seen.items.length, 0, "nothing delivered while the read fails");
      const attempts = faults.calls(target).filter((r) => r.injected).map((r) => r.at - origin);
      assertLadder(attempts, 10_000);
      const message = "beehive: an event watch read failed; retrying";
      assert.equal(linesOf(h, message).length, 1, "one warning per failure class");
      assertCarries(linesOf(h, message), StoreError);
      faults.clear();
      await h.tick(10_000);
      assert.deepEqual(seen.items.map((e) => e.reason), ["One", "Two", "Three"]);
      c.recovered();
      await admin.addEvent(id, { type: "Warning", reason: "Four" });
      await h.flush();
      assert.equal(seen.items.at(-1)?.reason, "Four", "and it is live again");
      assert.equal(linesOf(h, message).length, 1);
      stream.close();
      assert.equal(await seen.ended, undefined);
    });
  });
}

test("faults: opening a watch while its reads fail rejects with StoreError; the next open works", async () => {
  await campaign("object watch tailer", { beehive: QUIET }, async (c) => {
    const { h, faults } = c;
    await h.start();
    const others = h.bh.client(Other);
    const a = await others.create("a", {});
    // The tailer's starting position, then the snapshot.
    for (const target of ["objectWrites.maxVersion", "objectWrites.snapshot"] as const) {
      faults.fail(target, { count: 1 });
      await assert.rejects(others.watchList(), StoreError);
    }
    faults.fail("events.snapshot", { count: 1 });
    await assert.rejects(h.things.watchEvents(a.id), StoreError);
    const stream = await others.watchList();
    assert.deepEqual(stream.objects.map((o) => o.id), [a.id]);
    const seen = consume(stream);
    const b = await others.create("b", {});
    await h.flush();
    assert.deepEqual(seen.items.map((ch) => ch.id), [b.id]);
    c.recovered();
    assert.deepEqual(
      classes(h.logger.lines),
      new Map(),
      "a refused open is the caller's to report",
    );
    stream.close();
    assert.equal(await seen.ended, undefined);
  });
});

test("faults: watches on a closed database end with StoreClosedError; a resume after reopen loses nothing", async () => {
  await campaign("watches, closed database", { beehive: QUIET }, async (c) => {
    const { h, faults } = c;
    await h.start();
    const others = h.bh.client(Other);
    const a = await h.create("a");
    const list = await others.watchList();
    const events = await h.things.watchEvents(a.id);
    const listSeen = consume(list);
    const eventsSeen = consume(events);
    const first = await others.create("first", {});
    await h.bh.adminClient(Thing).addEvent(a.id, { type: "Normal", reason: "First" });
    await h.flush();
    assert.equal(listSeen.items.length, 1);
    assert.equal(eventsSeen.items.length, 1);
    faults.closeDatabase();
    // Commits elsewhere (straight to the store) wake nobody; the floor tick finds the store closed.
    await h.tick(60_000);
    assert.ok(await listSeen.ended instanceof StoreClosedError, "the list watch ended");
    assert.ok(await eventsSeen.ended instanceof StoreClosedError, "the event watch ended");
    assert.equal(list.error instanceof StoreClosedError, true);
    faults.reopenDatabase();
    // Written while the watches were down; a resume from the last delivered position sees them.
    const second = await others.create("second", {});
    await h.bh.adminClient(Thing).addEvent(a.id, { type: "Normal", reason: "Second" });
    const listAgain = await others.watchList({ resumeFrom: listSeen.items[0].resourceVersion });
    const eventsAgain = await h.things.watchEvents(a.id, {
      resumeFrom: eventsSeen.items[0].resourceVersion,
    });
    const listSeen2 = consume(listAgain);
    const eventsSeen2 = consume(eventsAgain);
    await h.tick(1_000);
    assert.deepEqual(listSeen2.items.map((ch) => ch.id), [second.id]);
    assert.deepEqual(eventsSeen2.items.map((e) => e.reason), ["Second"]);
    c.recovered();
    assert.notEqual(first.id, second.id);
    const watchWarnings = h.logger.lines.filter((l) => l.message.includes("watch"));
    assert.deepEqual(watchWarnings.map((l) => l.message), [], "a terminal end is not a warning");
    listAgain.close();
    eventsAgain.close();
    await listSeen2.ended;
    await eventsSeen2.ended;
  });
});

// ---------------------------------------------------------------------------
// A seeded campaign: random faults on every driver's calls under a live workload
// ---------------------------------------------------------------------------

/** Every call a driver makes that the campaign may fail. */
const DRIVER_TARGETS: readonly FaultTarget[] = [
  "within",
  "objects.getMeta",
  "objects.listUnsettledIds",
  "reconcileOwed.listIds",
  "objects.listIds",
  "objects.getForReconcile",
  "reconcileOwed.decrement",
  "dependencies.watermarkSet",
  "objects.setObservedGeneration",
  "deletionRequests.list",
  "objectWrites.sweep",
  "events.sweep",
  "reconcileOwed.sweep",
  "reclaimSpace",
  "objects.delete",
  "objectWrites.maxVersionAll",
  "objectWrites.listSinceAll",
  "edges.groupIncomingByIds",
  "driverCursors.set",
  "dependencies.listStaleSince",
  "reconcileOwed.stamp",
  "getLatestResourceVersion",
  "objectWrites.maxVersion",
  "objectWrites.listSince",
  "objects.listByIds",
];

/** A small seeded PRNG (mulberry32). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  const n = raw === undefined ? Number.NaN : Number(raw);
  return Number.isSafeInteger(n) && n > 0 ? n : fallback;
}

/** The campaign's last figures, for the report. */
const campaignFigures = {
  seed: 0,
  rounds: 0,
  faultWindows: 0,
  closedWindows: 0,
  writesAcknowledged: 0,
  writesRefused: 0,
  convergedAfterMs: 0,
  watchResumes: 0,
  byTarget: new Map<string, number>(),
};

test("faults: a seeded campaign — random faults on every driver under a live workload, then convergence", async () => {
  const seed = envNumber("BEEHIVE_FAULTS_SEED", 20261129);
  const rounds = envNumber("BEEHIVE_FAULTS_ROUNDS", 40);
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  await campaign(
    "seeded campaign",
    {
      beehive: {
        owedPassInterval: 10_000,
        fullPassInterval: 30_000,
        gcInterval: 10_000,
        staleDependentsInterval: 20_000,
        // A floor tick inside every 5 s round: the watch notices a closed store and ends.
        watchFloorInterval: 4_000,
        eventRetention: { perTimeline: 3 },
      },
      register: { maxRetryInterval: 8_000 },
    },
    async (c) => {
      const { h, faults, raw } = c;
      /** What each dependent's last pass saw of its targets: target id -> version. */
      const seen = new Map<number, Map<number, number>>();
      h.fallback = async (obj: AnyObject, cc: AnyCC) => {
        const targets = await raw.edges.listOutgoing(obj.id, "depends_on");
        const versions = new Map<number, number>();
        for (const t of targets) {
          versions.set(t.id, (await raw.objects.getMeta(t.id)).resourceVersion);
        }
        seen.set(obj.id, versions);
        if (obj.deletionRequestedAt === undefined) {
          await cc.updateStatus({ generation: obj.generation });
        } else if (obj.finalizers.includes("campaign")) {
          await cc.deleteFinalizer("campaign");
        }
        return settled();
      };
      await h.start();
      const things = h.things;
      const others = h.bh.client(Other);
      const admin = h.bh.adminClient(Thing);
      // The model: what was acknowledged.
      const live = new Map<number, unknown>(); // Thing id -> acknowledged spec
      const deleted = new Set<number>();
      const targets: number[] = [];
      let ok = 0;
      let refused = 0;
      const attempt = async (fn: () => Promise<void>) => {
        try {
          await fn();
          ok++;
        } catch (error) {
          assert.ok(
            error instanceof StoreError || error instanceof StoreClosedError,
            `a client write failed with ${String(error)}`,
          );
          refused++;
        }
      };
      // A watch over the registered kind, resumed whenever the closed database ends it.
      const view = new Map<number, number>(); // id -> resourceVersion last delivered
      let position = 0;
      let resumes = 0;
      let watching: { ended: Promise<unknown>; done: boolean; close(): void } | undefined;
      const watch = async () => {
        const stream = position === 0
          ? await things.watchList()
          : await things.watchList({ resumeFrom: position });
        if (position === 0) {
          for (const o of stream.objects) view.set(o.id, o.resourceVersion);
          position = stream.resourceVersion;
        }
        const ended = (async () => {
          try {
            for await (const ch of stream) {
              if (ch.type === "Deleted") view.delete(ch.id);
              else view.set(ch.id, ch.object!.resourceVersion);
              position = ch.resourceVersion;
            }
          } catch (error) {
            return error;
          }
        })();
        const w = { ended, done: false, close: () => stream.close() };
        void ended.then(() => void (w.done = true));
        watching = w;
      };
      await watch();

      let name = 0;
      for (let round = 0; round < rounds; round++) {
        // Arm this round's faults.
        if (rand() < 0.1) {
          faults.closeDatabase();
          campaignFigures.closedWindows++;
        }
        const armed = 1 + Math.floor(rand() * 2);
        for (let i = 0; i < armed; i++) {
          const target = pick(DRIVER_TARGETS);
          faults.fail(target, rand() < 0.5 ? { count: 1 + Math.floor(rand() * 5) } : {});
          campaignFigures.faultWindows++;
        }
        // Some writes.
        for (let op = 0; op < 4; op++) {
          const r = rand();
          if (r < 0.3 || live.size === 0) {
            const n = `t${name++}`;
            await attempt(async () => {
              const o = await things.create(
                n,
                { n },
                rand() < 0.3 ? { finalizers: ["campaign"] } : {},
              );
              live.set(o.id, { n });
            });
          } else if (r < 0.55) {
            const id = pick([...live.keys()]);
            const spec = { v: rand() };
            await attempt(async () => {
              await things.update(id, spec);
              live.set(id, spec);
            });
          } else if (r < 0.65) {
            const id = pick([...live.keys()]);
            await attempt(async () => {
              await things.delete(id);
              live.delete(id);
              deleted.add(id);
            });
          } else if (r < 0.75 || targets.length === 0) {
            await attempt(async () =>
              void targets.push((await others.create(`o${name++}`, {})).id)
            );
          } else if (r < 0.9) {
            const id = pick(targets);
            await attempt(async () => void await others.update(id, { v: rand() }));
          } else {
            const from = pick([...live.keys()]);
            const to = pick(targets);
            await attempt(() => admin.addDependency(from, to));
          }
        }
        await h.tick(5_000);
        if (!faults.closed && watching!.done) {
          await attempt(async () => {
            await watch();
            resumes++;
          });
        }
        // Most faults last one round; some linger into the next.
        if (rand() < 0.7) faults.clear();
        else faults.reopenDatabase();
      }
      faults.clear();
      if (watching!.done) {
        // The last round's closed store ended it: resume from the last position delivered.
        await watch();
        resumes++;
      }
      // Convergence: tick a second at a time until the store, every dependent and the watch
      // say so. Bounded: the slowest path back is the waker's 30 s rung plus a stale sweep.
      const cleared = Date.now();
      const lagging = async (): Promise<string | undefined> => {
        const rows = await raw.objects.list(Thing);
        for (const o of rows) {
          if (o.observedGeneration !== o.generation) return `thing ${o.id} unsettled`;
          if (o.reconcileOwed !== 0) return `thing ${o.id} owed`;
        }
        if ((await raw.deletionRequests.list()).length > 0) return "a deletion uncollected";
        for (const o of rows) {
          for (const t of await raw.edges.listOutgoing(o.id, "depends_on")) {
            const latest = (await raw.objects.getMeta(t.id)).resourceVersion;
            if (seen.get(o.id)?.get(t.id) !== latest) return `thing ${o.id} behind target ${t.id}`;
          }
        }
        if (view.size !== rows.length) return "the watch's view differs in size";
        for (const o of rows) {
          if (view.get(o.id) !== o.resourceVersion) return `the watch's view of ${o.id} is stale`;
        }
        return undefined;
      };
      for (;;) {
        const why = await lagging();
        if (why === undefined) break;
        assert.ok(
          Date.now() - cleared < 180_000,
          `converged within 3 min of the last fault: ${why}`,
        );
        await h.tick(1_000);
      }
      campaignFigures.convergedAfterMs = Date.now() - cleared;
      c.recovered();
      await assertConverged(raw);
      // Every acknowledged write is there; every acknowledged delete collected.
      const rows = new Map((await raw.objects.list(Thing)).map((o) => [o.id, o]));
      for (const [id, spec] of live) {
        assert.deepEqual(
          JSON.parse(rows.get(id)?.spec ?? "null"),
          spec,
          `thing ${id} holds its spec`,
        );
      }
      for (const id of deleted) assert.equal(rows.has(id), false, `thing ${id} collected`);
      watching!.close();
      await watching!.ended;
      campaignFigures.seed = seed;
      campaignFigures.rounds = rounds;
      campaignFigures.writesAcknowledged = ok;
      campaignFigures.writesRefused = refused;
      campaignFigures.watchResumes = resumes;
      for (const r of faults.calls()) {
        if (r.injected === undefined) continue;
        const key = r.injected === "closed" ? "(closed database)" : r.target;
        campaignFigures.byTarget.set(key, (campaignFigures.byTarget.get(key) ?? 0) + 1);
      }
      assert.ok(faults.calls().filter((r) => r.injected).length > rounds, "faults were injected");
    },
  );
});

// ---------------------------------------------------------------------------
// The figures
// ---------------------------------------------------------------------------

test("faults: the campaign injected faults under every driver and saw each recover", () => {
  // Meaningful only after the whole file ran (a --filter run skips it).
  const ran = [...figures.values()].reduce((n, f) => n + f.tests, 0);
  for (
    const driver of [
      "owed pass",
      "full pass",
      "pass load",
      "pass conclusion",
      "GC sweep",
      "GC collection",
      "dependency waker",
      "stale-dependents pass",
      "closed database",
      "object watch tailer",
      "object watch delivery",
      "event watch",
      "seeded campaign",
    ]
  ) {
    if (ran < 30) break;
    const f = figures.get(driver);
    assert.ok(f !== undefined && f.faults + f.closed > 0, `${driver}: faults injected`);
    assert.ok(f.recoveries > 0, `${driver}: recoveries observed`);
  }
  if (process.env.BEEHIVE_FAULTS_REPORT === undefined) return;
  const out: string[] = [];
  out.push(
    "| Driver | Tests | Faults injected | Closed-store rejections | Recoveries | Warnings by class |",
  );
  out.push("|---|---:|---:|---:|---:|---|");
  for (const [driver, f] of figures) {
    const lines = [...f.lines].map(([k, n]) => `${n} × \`${k.replace(/^beehive: /, "")}\``).join(
      "<br>",
    );
    out.push(`| ${driver} | ${f.tests} | ${f.faults} | ${f.closed} | ${f.recoveries} | ${lines} |`);
  }
  const cf = campaignFigures;
  out.push("");
  out.push(
    `Seeded campaign: seed ${cf.seed}, ${cf.rounds} rounds, ${cf.faultWindows} fault windows, ` +
      `${cf.closedWindows} closed-store windows, ${cf.writesAcknowledged} client writes ` +
      `acknowledged, ${cf.writesRefused} refused, ${cf.watchResumes} watch resumes, ` +
      `converged ${cf.convergedAfterMs} ms (fake time) after the last fault cleared.`,
  );
  out.push("");
  out.push("| Target | Injected |");
  out.push("|---|---:|");
  for (const [t, n] of [...cf.byTarget].sort((a, b) => b[1] - a[1])) {
    out.push(`| \`${t}\` | ${n} |`);
  }
  console.log(out.join("\n"));
});
