/**
 * `watchEvents`: snapshot and tail, extends, filters, resume, retention,
 * collection, shutdown, and the stream's ending rules.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  BeehiveError,
  NoControllerError,
  NotFoundError,
  settled,
  StoppedError,
  StoreError,
  WatchTooNewError,
  WatchTooOldError,
} from "../mod.ts";
import type { AdminClient, BeehiveOptions, Client, Event, EventStream } from "../mod.ts";
import type { FakeClock } from "./_fake_time.ts";
import { Other, Thing, withHarness } from "./_beehive_harness.ts";
import { settle, type WatchHive, withWatchHive } from "./_watch_harness.ts";
import { test } from "./_test.ts";

const HOUR = 3_600_000;

interface Hive extends WatchHive {
  /** Thing has a (never-run unless started) controller: watchEvents needs one. */
  things: Client<unknown, unknown>;
  admin: AdminClient<unknown>;
  others: Client<unknown, unknown>;
}

/**
 * A Beehive with a controller for Thing over a fresh store under fake time,
 * never started unless the test starts it; the floor tick is an hour away.
 */
async function withHive(
  fn: (h: Hive) => Promise<void>,
  options: BeehiveOptions = {},
): Promise<void> {
  await withWatchHive({
    families: ["events"],
    beehive: { watchFloorInterval: HOUR, owedPassInterval: HOUR, gcInterval: 1_000, ...options },
    register: (bh) => bh.register(Thing, () => settled()),
  }, (h) =>
    fn({
      ...h,
      things: h.bh.client(Thing),
      admin: h.bh.adminClient(Thing),
      others: h.bh.client(Other),
    }));
}

type It = AsyncIterator<Event>;

function iter(stream: EventStream): It {
  return stream[Symbol.asyncIterator]();
}

async function next(it: It): Promise<Event> {
  const r = await it.next();
  assert.equal(r.done, false, "expected a run, the stream ended");
  return r.value;
}

async function assertQuiet(
  clock: FakeClock,
  it: It,
): Promise<{ readonly next: Promise<IteratorResult<Event>> }> {
  const p = it.next();
  let done = false;
  p.then(() => (done = true), () => (done = true));
  await settle(clock);
  assert.equal(done, false, "expected no delivery");
  return { next: p };
}

function brief(e: Event): [string, string, number] {
  return [e.category, e.reason, e.count];
}

// ---------------------------------------------------------------------------

test("watchEvents resolves with the snapshot newest first and its position, then runs above it oldest first", async () => {
  await withHive(async ({ things, admin, clock }) => {
    const x = await things.create("x", {});
    await admin.addEvent(x.id, { type: "Normal", reason: "A" });
    await admin.addEvent(x.id, { type: "Normal", reason: "B" });
    const w = await things.watchEvents(x.id);
    assert.deepEqual(w.runs.map((r) => r.reason), ["B", "A"]);
    assert.equal(w.resourceVersion, w.runs[0].resourceVersion);
    const it = iter(w);
    const quiet = await assertQuiet(clock, it);
    await admin.addEvent(x.id, { type: "Normal", reason: "C" });
    await admin.addEvent(x.id, { type: "Warning", reason: "D", message: "m" });
    const c = (await quiet.next).value as Event;
    assert.equal(c.reason, "C");
    assert.ok(c.resourceVersion > w.resourceVersion);
    const d = await next(it);
    assert.equal(d.reason, "D");
    assert.equal(d.message, "m");
    assert.ok(d.resourceVersion > c.resourceVersion);
    w.close();
  });
});

test("watchEvents batches() yields the runs ready together in one step, oldest first", async () => {
  await withHive(async ({ things, admin, clock }) => {
    const x = await things.create("x", {});
    const w = await things.watchEvents(x.id);
    await admin.addEvent(x.id, { type: "Normal", reason: "A" });
    await admin.addEvent(x.id, { type: "Normal", reason: "B" });
    await settle(clock);
    const batch = await w.batches()[Symbol.asyncIterator]().next();
    assert.deepEqual((batch.value as readonly Event[]).map((e) => e.reason), ["A", "B"]);
    w.close();
  });
});

test("watchEvents delivers an event committed while subscribing exactly once", async () => {
  await withHive(async ({ things, admin }) => {
    const x = await things.create("x", {});
    const subscribing = things.watchEvents(x.id);
    const adding = admin.addEvent(x.id, { type: "Normal", reason: "Race" });
    const [w] = await Promise.all([subscribing, adding]);
    const it = iter(w);
    const seen = w.runs.length;
    if (seen === 0) assert.equal((await next(it)).reason, "Race");
    await admin.addEvent(x.id, { type: "Normal", reason: "After" });
    assert.equal((await next(it)).reason, "After");
    w.close();
  });
});

test("watchEvents re-delivers an extended run with a higher resourceVersion and count", async () => {
  await withHive(async ({ things, admin }) => {
    const x = await things.create("x", {});
    await admin.addEvent(x.id, { type: "Warning", reason: "Flap", message: "one" });
    const w = await things.watchEvents(x.id);
    const run = w.runs[0];
    const it = iter(w);
    await admin.addEvent(x.id, { type: "Warning", reason: "Flap", message: "two" });
    const again = await next(it);
    assert.equal(again.id, run.id);
    assert.equal(again.count, 2);
    assert.equal(again.message, "two");
    assert.ok(again.resourceVersion > run.resourceVersion);
    w.close();
  });
});

test("watchEvents applies filters to the snapshot and deliveries; limit bounds only the snapshot", async () => {
  await withHive(async ({ things, admin, clock }) => {
    const x = await things.create("x", {});
    for (const reason of ["A", "B", "C"]) {
      await admin.addEvent(x.id, { category: "conn", type: "Normal", reason });
    }
    await admin.addEvent(x.id, { category: "other", type: "Normal", reason: "Z" });
    const w = await things.watchEvents(x.id, { category: "conn", limit: 2 });
    assert.deepEqual(w.runs.map(brief), [["conn", "C", 1], ["conn", "B", 1]]);
    const it = iter(w);
    await admin.addEvent(x.id, { category: "other", type: "Normal", reason: "Y" });
    const quiet = await assertQuiet(clock, it);
    for (const reason of ["D", "E", "F"]) {
      await admin.addEvent(x.id, { category: "conn", type: "Normal", reason });
    }
    const got = [(await quiet.next).value as Event, await next(it), await next(it)];
    assert.deepEqual(got.map(brief), [["conn", "D", 1], ["conn", "E", 1], ["conn", "F", 1]]);
    w.close();

    const warnings = await things.watchEvents(x.id, { type: "Warning", reason: "Bad" });
    assert.deepEqual(warnings.runs, []);
    const wit = iter(warnings);
    await admin.addEvent(x.id, { type: "Warning", reason: "Other" });
    await admin.addEvent(x.id, { type: "Normal", reason: "Bad" });
    await admin.addEvent(x.id, { type: "Warning", reason: "Bad" });
    const bad = await next(wit);
    assert.deepEqual([bad.type, bad.reason], ["Warning", "Bad"]);
    warnings.close();
  });
});

test("watchEvents since filters the snapshot and deliveries by lastAt", async () => {
  await withHive(async ({ things, admin, clock }) => {
    const x = await things.create("x", {});
    await admin.addEvent(x.id, { type: "Normal", reason: "Old" });
    await clock.tickAsync(10_000);
    const since = new Date(Date.now() - 5_000);
    await admin.addEvent(x.id, { type: "Normal", reason: "New" });
    const w = await things.watchEvents(x.id, { since });
    assert.deepEqual(w.runs.map((r) => r.reason), ["New"]);
    const it = iter(w);
    await admin.addEvent(x.id, { type: "Normal", reason: "Newer" });
    assert.equal((await next(it)).reason, "Newer");
    w.close();
    // A since in the future holds back what is older than it, on the tail too.
    const ahead = await things.watchEvents(x.id, { since: new Date(Date.now() + 10_000) });
    assert.deepEqual(ahead.runs, []);
    const ait = iter(ahead);
    await admin.addEvent(x.id, { type: "Normal", reason: "TooEarly" });
    const quiet = await assertQuiet(clock, ait);
    await clock.tickAsync(20_000);
    await admin.addEvent(x.id, { type: "Normal", reason: "InTime" });
    assert.equal(((await quiet.next).value as Event).reason, "InTime");
    ahead.close();
  });
});

test("watchEvents resumeFrom takes no snapshot, carries the position back and streams only the gap", async () => {
  await withHive(async ({ things, admin }) => {
    const x = await things.create("x", {});
    await admin.addEvent(x.id, { type: "Normal", reason: "A" });
    const first = await things.watchEvents(x.id);
    const checkpoint = first.resourceVersion;
    first.close();
    await admin.addEvent(x.id, { type: "Normal", reason: "B" });
    const w = await things.watchEvents(x.id, { resumeFrom: checkpoint });
    assert.deepEqual(w.runs, []);
    assert.equal(w.resourceVersion, checkpoint);
    const it = iter(w);
    assert.equal((await next(it)).reason, "B");
    await admin.addEvent(x.id, { type: "Normal", reason: "C" });
    assert.equal((await next(it)).reason, "C");
    w.close();
  });
});

test("watchEvents resumeFrom below retention ends with WatchTooOldError from the iterator", async () => {
  await withHive(async ({ store, things, admin }) => {
    const x = await things.create("x", {});
    await admin.addEvent(x.id, { type: "Normal", reason: "A" });
    const w0 = await things.watchEvents(x.id);
    w0.close();
    await admin.addEvent(x.id, { type: "Normal", reason: "B" });
    await admin.addEvent(x.id, { type: "Normal", reason: "C" });
    await store.events.sweep({ perTimeline: 1, maxAge: 0 });
    const w = await things.watchEvents(x.id, { resumeFrom: w0.resourceVersion });
    await assert.rejects(iter(w).next(), WatchTooOldError);
    assert.ok(w.error instanceof WatchTooOldError);
    // A trim in another timeline does not refuse a resume scoped to this one.
    const scoped = await things.watchEvents(x.id, {
      category: "quiet",
      resumeFrom: w0.resourceVersion,
    });
    const sit = iter(scoped);
    await admin.addEvent(x.id, { category: "quiet", type: "Normal", reason: "Q" });
    assert.equal((await next(sit)).reason, "Q");
    scoped.close();
  });
});

test("watchEvents resumeFrom above the object's log ends with WatchTooNewError from the iterator", async () => {
  await withHive(async ({ things, admin }) => {
    const x = await things.create("x", {});
    await admin.addEvent(x.id, { type: "Normal", reason: "A" });
    const w = await things.watchEvents(x.id, { resumeFrom: 10 ** 12 });
    assert.equal(w.resourceVersion, 10 ** 12);
    await assert.rejects(iter(w).next(), WatchTooNewError);
    assert.ok(w.error instanceof WatchTooNewError);
  });
});

test("watchEvents resumeFrom on an id that holds nothing ends with NotFoundError from the iterator", async () => {
  await withHive(async ({ things }) => {
    const w = await things.watchEvents(4242, { resumeFrom: 1 });
    await assert.rejects(iter(w).next(), NotFoundError);
    assert.ok(w.error instanceof NotFoundError);
  });
});

test("watchEvents ends with NotFoundError when the object is collected", async () => {
  await withHive(async ({ things, others, bh, clock, start }) => {
    // The target is another kind's object: event reads are not kind-scoped.
    const o = await others.create("o", {});
    await bh.adminClient(Other).addEvent(o.id, { type: "Normal", reason: "Hi" });
    await start();
    const w = await things.watchEvents(o.id);
    assert.deepEqual(w.runs.map((r) => r.reason), ["Hi"]);
    const it = iter(w);
    const quiet = await assertQuiet(clock, it);
    await others.delete(o.id);
    await clock.tickAsync(1_000); // collected by the GC sweep
    await clock.tickAsync(5_000); // the floor tick finds the log gone
    await assert.rejects(quiet.next, NotFoundError);
    assert.ok(w.error instanceof NotFoundError);
  }, { watchFloorInterval: 5_000 });
});

test("listEvents of a collected object rejects with NotFoundError, as watchEvents ends", async () => {
  await withHive(async ({ things, others, bh, clock, start }) => {
    const o = await others.create("o", {});
    await bh.adminClient(Other).addEvent(o.id, { type: "Normal", reason: "Hi" });
    await start();
    assert.equal((await things.listEvents(o.id)).length, 1);
    await others.delete(o.id);
    await clock.tickAsync(1_000); // collected by the GC sweep
    await assert.rejects(others.get(o.id), NotFoundError);
    await assert.rejects(things.listEvents(o.id), NotFoundError);
    await assert.rejects(others.listEvents(o.id, { category: "none" }), NotFoundError);
  });
});

test("watchEvents opened before its object exists waits for it", async () => {
  await withHive(async ({ things, others, bh, clock }) => {
    const first = await others.create("first", {});
    const id = first.id + 1;
    const w = await things.watchEvents(id);
    assert.deepEqual(w.runs, []);
    assert.equal(w.resourceVersion, 0);
    const it = iter(w);
    const quiet = await assertQuiet(clock, it);
    await clock.tickAsync(5_000); // a probe finds nothing: still waiting, not "collected"
    const later = await others.create("later", {}); // created as another kind, still resolved
    assert.equal(later.id, id);
    await bh.adminClient(Other).addEvent(id, { type: "Normal", reason: "Born" });
    assert.equal(((await quiet.next).value as Event).reason, "Born");
    assert.equal(w.error, undefined);
    w.close();
  }, { watchFloorInterval: 5_000 });
});

test("watchEvents reads any kind's log, and agrees with listEvents and getLatestEvent", async () => {
  await withHive(async ({ things, others, bh }) => {
    const o = await others.create("o", {});
    await bh.adminClient(Other).addEvent(o.id, { category: "c", type: "Normal", reason: "R" });
    const w = await things.watchEvents(o.id);
    assert.deepEqual(w.runs, await things.listEvents(o.id));
    assert.deepEqual(w.runs[0], await things.getLatestEvent(o.id, "c"));
    w.close();
  });
});

test("watchEvents reports the configured retention", async () => {
  await withHive(async ({ things }) => {
    const x = await things.create("x", {});
    const w = await things.watchEvents(x.id);
    assert.deepEqual(w.retention, { perTimeline: 5, maxAge: 60_000 });
    w.close();
    const resumed = await things.watchEvents(x.id, { resumeFrom: 0 });
    assert.deepEqual(resumed.retention, { perTimeline: 5, maxAge: 60_000 });
    resumed.close();
  }, { eventRetention: { perTimeline: 5, maxAge: 60_000 } });
  await withHive(async ({ things }) => {
    const x = await things.create("x", {});
    const w = await things.watchEvents(x.id);
    assert.deepEqual(w.retention, { perTimeline: 0, maxAge: 0 });
    w.close();
  });
});

test("watchEvents requires a controller registered for the client's kind", async () => {
  await withHive(async ({ things, others }) => {
    const x = await things.create("x", {});
    await assert.rejects(others.watchEvents(x.id), NoControllerError);
  });
});

test("watchEvents rejects malformed arguments with TypeError", async () => {
  await withHive(async ({ things }) => {
    // deno-lint-ignore no-explicit-any
    const bad: any[] = [
      { category: 1 },
      { type: "Info" },
      { reason: 2 },
      { limit: -1 },
      { since: "yesterday" },
      { resumeFrom: -5 },
      { signal: {} },
    ];
    for (const options of bad) await assert.rejects(things.watchEvents(1, options), TypeError);
    await assert.rejects(things.watchEvents(0), TypeError);
  });
});

test("watchEvents ends with StoppedError when the Beehive stops, and at once when opened after", async () => {
  await withHive(async ({ things, start }) => {
    const stop = await start();
    const x = await things.create("x", {});
    const w = await things.watchEvents(x.id);
    const p = iter(w).next();
    await stop();
    await assert.rejects(p, StoppedError);
    assert.ok(w.error instanceof StoppedError);
    const late = await things.watchEvents(x.id);
    await assert.rejects(iter(late).next(), StoppedError);
    assert.ok(late.error instanceof StoppedError);
  });
});

test("watchEvents close(), break, abort and asyncDispose end the stream quietly", async () => {
  await withHive(async ({ things, admin, clock }) => {
    const x = await things.create("x", {});
    const a = await things.watchEvents(x.id);
    const waiting = await assertQuiet(clock, iter(a));
    a.close();
    assert.deepEqual(await waiting.next, { done: true, value: undefined });
    assert.equal(a.error, undefined);

    const b = await things.watchEvents(x.id);
    await admin.addEvent(x.id, { type: "Normal", reason: "One" });
    for await (const run of b) {
      assert.equal(run.reason, "One");
      break;
    }
    assert.deepEqual(await iter(b).next(), { done: true, value: undefined });
    assert.equal(b.error, undefined);

    const ac = new AbortController();
    const c = await things.watchEvents(x.id, { signal: ac.signal });
    const cw = await assertQuiet(clock, iter(c));
    ac.abort();
    assert.deepEqual(await cw.next, { done: true, value: undefined });
    assert.equal(c.error, undefined);

    const d = await things.watchEvents(x.id, { signal: AbortSignal.abort() });
    assert.equal(d.runs.length, 1);
    assert.deepEqual(await iter(d).next(), { done: true, value: undefined });

    const e = await things.watchEvents(x.id);
    const ew = iter(e).next();
    await e[Symbol.asyncDispose]();
    assert.deepEqual(await ew, { done: true, value: undefined });
    assert.equal(clock.countTimers(), 0, "no timer outlives the streams");
  });
});

test("watchEvents: two streams on one object keep independent cursors", async () => {
  await withHive(async ({ things, admin }) => {
    const x = await things.create("x", {});
    const fast = await things.watchEvents(x.id);
    const slow = await things.watchEvents(x.id);
    const fit = iter(fast);
    for (const reason of ["A", "B", "C"]) {
      await admin.addEvent(x.id, { type: "Normal", reason });
      assert.equal((await next(fit)).reason, reason);
    }
    const sit = iter(slow);
    assert.deepEqual(
      [await next(sit), await next(sit), await next(sit)].map((e) => e.reason),
      ["A", "B", "C"],
    );
    fast.close();
    slow.close();
  });
});

test("watchEvents delivers an event no commit announced on the floor tick", async () => {
  await withHive(async ({ store, things, clock }) => {
    const x = await things.create("x", {});
    const w = await things.watchEvents(x.id);
    const it = iter(w);
    const quiet = await assertQuiet(clock, it);
    await store.events.add({ ...Thing, id: x.id }, { type: "Normal", reason: "Direct" });
    await settle(clock);
    await clock.tickAsync(5_000);
    assert.equal(((await quiet.next).value as Event).reason, "Direct");
    w.close();
  }, { watchFloorInterval: 5_000 });
});

test("watchEvents retries a failed read with backoff, logs once, and still delivers the run", async () => {
  await withHive(async ({ things, admin, inst, clock, lines }) => {
    const x = await things.create("x", {});
    const w = await things.watchEvents(x.id);
    const it = iter(w);
    inst.failures.set("events.listSince", 2);
    const p = it.next();
    await settle(clock);
    const before = inst.count("events.listSince");
    await admin.addEvent(x.id, { type: "Normal", reason: "Late" });
    await settle(clock);
    assert.equal(inst.count("events.listSince"), before, "a wake does not cut the backoff short");
    await clock.tickAsync(100);
    await clock.tickAsync(200);
    assert.equal((await p).value?.reason, "Late");
    assert.equal(lines.filter((l) => l.message.includes("event watch read failed")).length, 1);
    assert.equal(w.error, undefined);
    w.close();
  });
});

test("watchEvents rejects when a subscribe-time read fails", async () => {
  await withHive(async ({ things, inst }) => {
    const x = await things.create("x", {});
    inst.failures.set("events.snapshot", 1);
    await assert.rejects(things.watchEvents(x.id), StoreError);
  });
});

test("watchEvents ends with WatchTooOldError when retention passes a stream that stopped reading", async () => {
  await withHive(async ({ store, things, admin }) => {
    const x = await things.create("x", {});
    const w = await things.watchEvents(x.id);
    const it = iter(w);
    for (const reason of ["A", "B", "C"]) await admin.addEvent(x.id, { type: "Normal", reason });
    await store.events.sweep({ perTimeline: 1, maxAge: 0 });
    await assert.rejects(it.next(), WatchTooOldError);
    assert.ok(w.error instanceof WatchTooOldError);
  });
});

test("watchEvents on a log retention already emptied streams what comes next", async () => {
  await withHive(async ({ store, things, admin, clock }) => {
    const x = await things.create("x", {});
    await admin.addEvent(x.id, { type: "Normal", reason: "Old" });
    await clock.tickAsync(120_000);
    await store.events.sweep({ perTimeline: 0, maxAge: 60_000 });
    const w = await things.watchEvents(x.id);
    assert.deepEqual(w.runs, []);
    const it = iter(w);
    await admin.addEvent(x.id, { type: "Normal", reason: "New" });
    assert.equal((await next(it)).reason, "New");
    assert.equal(w.error, undefined);
    w.close();
  });
});

test("watchEvents through a transaction's client rejects with BeehiveError", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("x");
    await h.pass(obj.id, async (_obj, cc) => {
      await cc.within(async (tx) => {
        await assert.rejects(tx.client(h.things.kind).watchEvents(obj.id), BeehiveError);
      });
    });
  });
});

test("watchEvents delivers a tail longer than one page, oldest first", async () => {
  await withHive(async ({ things, admin }) => {
    const x = await things.create("x", {});
    const w = await things.watchEvents(x.id);
    const reasons = Array.from({ length: 300 }, (_, i) => `R${i}`);
    for (const reason of reasons) await admin.addEvent(x.id, { type: "Normal", reason });
    const it = iter(w);
    const got: string[] = [];
    let rv = w.resourceVersion;
    while (got.length < reasons.length) {
      const run = await next(it);
      assert.ok(run.resourceVersion > rv);
      rv = run.resourceVersion;
      got.push(run.reason);
    }
    assert.deepEqual(got, reasons);
    w.close();
  });
});
