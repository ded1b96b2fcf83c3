/**
 * Metrics and traces against fake structural meters and tracers (and the
 * real `@opentelemetry/api` with no SDK): instrument names, units and
 * attribute sets, counts per outcome, `active` back to 0, one span per pass
 * with error status on failed and stalled passes, the gauges, and bad input.
 *
 * @module
 */
import assert from "node:assert/strict";
import { metrics, trace } from "@opentelemetry/api";
import { Beehive, fail, InvalidOptionError, PermanentError, settled, unsettled } from "../mod.ts";
import { test } from "./_test.ts";
import { type AnyObject, type Harness, Thing, withHarness } from "./_beehive_harness.ts";
import { FakeMeter, FakeTracer } from "./_fake_telemetry.ts";
import { openTestStore } from "./_sqlite_driver.ts";

const KIND = "Thing.test.beehive.dev";

/** Settles `ok*`, leaves `wait*` unsettled, fails `bad*` transiently, stalls `poison*`. */
function byName(obj: AnyObject) {
  const name = String(obj.name);
  if (name.startsWith("wait")) return unsettled();
  if (name.startsWith("bad")) return fail(new Error("transient"));
  if (name.startsWith("poison")) return fail(new PermanentError("never", { reason: "Bad" }));
  return settled();
}

function sum(values: { value: number }[]): number {
  return values.reduce((a, m) => a + m.value, 0);
}

test("Telemetry the meter gets the five pinned instruments with their kinds and units", async () => {
  const meter = new FakeMeter();
  await withHarness({ beehive: { meter } }, () => {
    const got = [...meter.instruments.values()].map((i) => [i.name, i.type, i.options?.unit]);
    assert.deepEqual(got.sort(), [
      ["beehive.leader", "observableGauge", "1"],
      ["beehive.queue.depth", "observableGauge", "{object}"],
      ["beehive.reconcile.active", "upDownCounter", "{pass}"],
      ["beehive.reconcile.duration", "histogram", "s"],
      ["beehive.reconcile.passes", "counter", "{pass}"],
    ]);
    return Promise.resolve();
  });
});

test("Telemetry beehive.reconcile.passes and duration count each pass under its kind and outcome", async () => {
  const meter = new FakeMeter();
  await withHarness({ beehive: { meter } }, async (h) => {
    await h.start();
    h.fallback = byName;
    await h.create("ok");
    await h.create("wait");
    await h.create("bad");
    await h.create("poison");
    const count = (outcome: string) =>
      meter.measurements("beehive.reconcile.passes").filter((m) =>
        m.attributes["beehive.outcome"] === outcome
      ).length;
    assert.deepEqual(
      ["settled", "unsettled", "failed", "stalled"].map(count),
      [1, 1, 1, 1],
    );
    for (const name of ["beehive.reconcile.passes", "beehive.reconcile.duration"]) {
      for (const m of meter.measurements(name)) {
        assert.deepEqual(Object.keys(m.attributes).sort(), ["beehive.kind", "beehive.outcome"]);
        assert.equal(m.attributes["beehive.kind"], KIND);
      }
    }
    assert.ok(meter.measurements("beehive.reconcile.passes").every((m) => m.value === 1));
    const durations = meter.measurements("beehive.reconcile.duration");
    assert.equal(durations.length, 4);
    assert.ok(durations.every((m) => m.value >= 0 && Number.isFinite(m.value)));
    // The transient failure retries on the ladder: one more failed pass per rung.
    await h.tick(1_000);
    assert.equal(count("failed"), 2);
  });
});

test("Telemetry beehive.reconcile.active is 1 during a pass and back to 0 after it", async () => {
  const meter = new FakeMeter();
  await withHarness({ beehive: { meter } }, async (h) => {
    await h.start();
    let during = -1;
    h.fallback = () => {
      during = sum(meter.measurements("beehive.reconcile.active"));
      return settled();
    };
    await h.create("a");
    await h.create("b");
    assert.equal(during, 1);
    const active = meter.measurements("beehive.reconcile.active");
    assert.equal(active.length, 4);
    assert.equal(sum(active), 0);
    assert.ok(active.every((m) => m.attributes["beehive.kind"] === KIND));
    assert.deepEqual(Object.keys(active[0].attributes), ["beehive.kind"]);
  });
});

test("Telemetry a pass whose object is gone at load is not counted", async () => {
  const meter = new FakeMeter();
  await withHarness({ beehive: { meter } }, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const before = meter.measurements("beehive.reconcile.passes").length;
    await h.store.objects.delete(obj.id);
    await h.things.requeue(obj.id).catch(() => {});
    await h.flush();
    assert.equal(meter.measurements("beehive.reconcile.passes").length, before);
  });
});

test("Telemetry a pass that fails because its term ended is not counted, and neither warns nor retries", async () => {
  const meter = new FakeMeter();
  await withHarness({ beehive: { meter } }, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const before = meter.measurements("beehive.reconcile.passes").length;
    const { promise: entered, resolve: enter } = Promise.withResolvers<void>();
    h.queue(obj.id, async (_obj, cc) => {
      enter();
      await new Promise((resolve) => cc.signal.addEventListener("abort", resolve));
      throw cc.signal.reason;
    });
    await h.things.requeue(obj.id);
    await h.flush();
    await entered;
    await h.stop();
    assert.equal(meter.measurements("beehive.reconcile.passes").length, before);
    assert.deepEqual(h.logger.lines.filter((l) => l.level === "warn"), []);
    assert.ok(
      h.logger.lines.some((l) =>
        l.message === "beehive: pass finished" && l.attributes?.outcome === "abandoned"
      ),
    );
  });
});

test("Telemetry one span per pass named reconcile Kind.group with the pinned attributes, open while the controller runs", async () => {
  const tracer = new FakeTracer();
  await withHarness({ beehive: { tracer } }, async (h) => {
    await h.start();
    const seen: unknown[] = [];
    h.fallback = () => {
      const span = tracer.spans.at(-1)!;
      seen.push([span.ended, span.attributes["beehive.object.name"]]);
      return settled();
    };
    const obj = await h.create("a", { v: 1 });
    await h.things.update(obj.id, { v: 2 });
    await h.flush();
    assert.equal(tracer.spans.length, 2);
    assert.deepEqual(seen, [[0, "a"], [0, "a"]]);
    for (const [i, span] of tracer.spans.entries()) {
      assert.equal(span.name, `reconcile ${KIND}`);
      assert.deepEqual(span.attributes, {
        "beehive.kind": KIND,
        "beehive.object.id": obj.id,
        "beehive.object.name": "a",
        "beehive.object.generation": i + 1,
        "beehive.outcome": "settled",
      });
      assert.equal(span.ended, 1);
      assert.equal(span.status, undefined);
      assert.deepEqual(span.exceptions, []);
    }
  });
});

test("Telemetry a failed and a stalled pass record the exception and set the span status to error", async () => {
  const tracer = new FakeTracer();
  await withHarness({ beehive: { tracer } }, async (h) => {
    await h.start();
    h.fallback = byName;
    await h.create("bad");
    await h.create("poison");
    await h.create("wait");
    const [bad, poison, wait] = tracer.spans;
    assert.equal(bad.attributes["beehive.outcome"], "failed");
    assert.equal(bad.status?.code, 2);
    assert.equal(bad.status?.message, "transient");
    assert.equal((bad.exceptions[0] as Error).message, "transient");
    assert.equal(poison.attributes["beehive.outcome"], "stalled");
    assert.equal(poison.status?.code, 2);
    assert.ok(poison.exceptions[0] instanceof PermanentError);
    assert.equal(wait.attributes["beehive.outcome"], "unsettled");
    assert.equal(wait.status, undefined);
    assert.ok(tracer.spans.every((s) => s.ended === 1));
  });
});

test("Telemetry a span that is not recording is given no attributes and is still ended", async () => {
  const tracer = new FakeTracer();
  tracer.recording = false;
  await withHarness({ beehive: { tracer } }, async (h) => {
    await h.start();
    h.fallback = byName;
    await h.create("poison");
    const [span] = tracer.spans;
    assert.deepEqual(Object.keys(span.attributes).sort(), ["beehive.kind", "beehive.object.id"]);
    assert.deepEqual(span.exceptions, []);
    assert.equal(span.status, undefined);
    assert.equal(span.ended, 1);
  });
});

test("Telemetry beehive.queue.depth reports each kind's queue and beehive.leader 1 while leading, with the lease", async () => {
  const meter = new FakeMeter();
  await withHarness({ beehive: { meter, leaseName: "orders" } }, async (h) => {
    assert.deepEqual(meter.collect("beehive.leader"), []);
    await h.start();
    h.fallback = () => unsettled().requeueAfter(60_000);
    await h.create("a");
    await h.create("b");
    assert.deepEqual(meter.collect("beehive.queue.depth"), [
      { value: 2, attributes: { "beehive.kind": KIND } },
    ]);
    assert.deepEqual(meter.collect("beehive.leader"), [
      { value: 1, attributes: { "beehive.lease": "orders" } },
    ]);
    await h.stop();
    // Stopped: the callbacks are gone.
    assert.deepEqual(meter.collect("beehive.leader"), []);
    assert.deepEqual(meter.collect("beehive.queue.depth"), []);
  });
});

test("Telemetry beehive.leader is 0 for a candidate that does not lead", async () => {
  const meter = new FakeMeter();
  const store = await openTestStore(":memory:");
  try {
    const held = await store.leases.acquire({ name: "beehive", holder: "other", duration: 60_000 });
    assert.ok(held.acquired);
    const bh = new Beehive(store, {
      meter,
      leaderElection: { leaseDuration: 60_000, renewInterval: 30_000 },
    });
    bh.register(Thing, () => settled());
    const stop = await bh.start();
    try {
      assert.deepEqual(meter.collect("beehive.leader"), [
        { value: 0, attributes: { "beehive.lease": "beehive" } },
      ]);
    } finally {
      await stop();
    }
  } finally {
    await store.close();
  }
});

test("Telemetry new Beehive refuses a meter or tracer missing the methods it uses with InvalidOptionError", async () => {
  const store = await openTestStore(":memory:");
  try {
    const meter = new FakeMeter();
    const partial = {
      createCounter: meter.createCounter.bind(meter),
      createHistogram: meter.createHistogram.bind(meter),
      createUpDownCounter: meter.createUpDownCounter.bind(meter),
    };
    for (const bad of [partial, {}, null, 5, "meter"]) {
      assert.throws(
        () => new Beehive(store, { meter: bad as never }),
        (e: unknown) => e instanceof InvalidOptionError && /option meter/.test(e.message),
      );
    }
    for (const bad of [{ startSpan: () => {} }, {}, null, 5]) {
      assert.throws(
        () => new Beehive(store, { tracer: bad as never }),
        (e: unknown) => e instanceof InvalidOptionError && /option tracer/.test(e.message),
      );
    }
  } finally {
    await store.close();
  }
});

test("Telemetry a meter whose instruments throw never breaks a pass, and is logged once", async () => {
  const meter = new FakeMeter();
  meter.throwing = true;
  await withHarness({ beehive: { meter } }, async (h) => {
    await h.start();
    const a = await h.create("a");
    const b = await h.create("b");
    assert.equal((await h.things.get(a.id)).observedGeneration, 1);
    assert.equal((await h.things.get(b.id)).observedGeneration, 1);
    meter.collect("beehive.queue.depth"); // nothing registered: addCallback threw
    const warned = h.logger.lines.filter((l) => /telemetry failed/.test(l.message));
    assert.equal(warned.length, 1);
    assert.equal(warned[0].level, "warn");
  });
});

test("Telemetry a tracer that throws when starting a span still gets the pass run", async () => {
  const tracer = {
    startActiveSpan() {
      throw new Error("tracer is broken");
    },
  };
  await withHarness({ beehive: { tracer: tracer as never } }, async (h: Harness) => {
    await h.start();
    const a = await h.create("a");
    assert.equal((await h.things.get(a.id)).observedGeneration, 1);
    assert.equal(h.logger.lines.filter((l) => /telemetry failed/.test(l.message)).length, 1);
  });
});

test("Telemetry a span whose methods throw never breaks a pass", async () => {
  const tracer = new FakeTracer();
  const original = tracer.startActiveSpan.bind(tracer);
  tracer.startActiveSpan =
    ((name: string, options: never, fn: (s: unknown) => unknown) =>
      original(name, options, (span) => {
        const broken = Object.assign(Object.create(span), {
          setAttributes: () => {
            throw new Error("broken");
          },
          end: () => {
            throw new Error("broken");
          },
        });
        return fn(broken);
      })) as never;
  await withHarness({ beehive: { tracer } }, async (h) => {
    await h.start();
    const a = await h.create("a");
    assert.equal((await h.things.get(a.id)).observedGeneration, 1);
  });
});

test("Telemetry the real @opentelemetry/api meter and tracer with no SDK installed work as no-ops", async () => {
  await withHarness({
    beehive: { meter: metrics.getMeter("beehive-test"), tracer: trace.getTracer("beehive-test") },
  }, async (h) => {
    await h.start();
    h.fallback = byName;
    const ok = await h.create("ok");
    await h.create("poison");
    assert.equal((await h.things.get(ok.id)).observedGeneration, 1);
  });
});
