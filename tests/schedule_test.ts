/**
 * The schedule gauge: `getSchedule` (backoff, requeue delays, the floor
 * holding a wake, due now while queued, nothing scheduled) and
 * `watchSchedule` (current value first, changes only, latest for a slow
 * reader, and how it ends). Everything runs under fake time over a real
 * SQLite store.
 *
 * @module
 */
import assert from "node:assert/strict";
import { fail, NoControllerError, type Schedule, settled, unsettled } from "../mod.ts";
import { test } from "./_test.ts";
import { type Harness, Other, Thing, withHarness } from "./_beehive_harness.ts";

/** When `id` is next due, in ms after `origin`, or `undefined`. */
async function dueIn(h: Harness, id: number, origin: number): Promise<number | undefined> {
  const s = await h.things.getSchedule(id);
  return s.nextRequeueAt === undefined ? undefined : s.nextRequeueAt.getTime() - origin;
}

/** A schedule value as ms after `origin`, or `undefined`. */
function rel(s: Schedule, origin: number): number | undefined {
  return s.nextRequeueAt === undefined ? undefined : s.nextRequeueAt.getTime() - origin;
}

/** Reads every value of `stream` into `values` until it ends. */
function collect(stream: AsyncIterable<Schedule>, values: Schedule[]): Promise<void> {
  return (async () => {
    for await (const s of stream) values.push(s);
  })();
}

// ---------------------------------------------------------------------------
// getSchedule

test("Schedule getSchedule reports the retry backoff: 1 s, then 2 s, then 4 s", async () => {
  await withHarness({}, async (h) => {
    h.fallback = () => fail(new Error("boom"));
    await h.start();
    const origin = Date.now();
    const obj = await h.create("a");
    assert.equal(await dueIn(h, obj.id, origin), 1_000);
    await h.tick(1_000);
    assert.equal(await dueIn(h, obj.id, origin), 3_000);
    await h.tick(2_000);
    assert.equal(await dueIn(h, obj.id, origin), 7_000);
  });
});

test("Schedule getSchedule reports a result's requeue delay, and a bare unsettled()'s owed-pass interval", async () => {
  await withHarness({ beehive: { owedPassInterval: 10_000 } }, async (h) => {
    const results = [() => settled().requeueAfter(5_000), unsettled];
    h.fallback = () => (results.shift() ?? settled)();
    await h.start();
    const origin = Date.now();
    const obj = await h.create("a");
    assert.equal(await dueIn(h, obj.id, origin), 5_000);
    await h.tick(5_000);
    assert.equal(await dueIn(h, obj.id, origin), 15_000);
    await h.tick(10_000);
    assert.equal(h.passes.length, 3);
    assert.equal(await dueIn(h, obj.id, origin), undefined);
  });
});

test("Schedule getSchedule reports the floor holding a wake until the object may run again", async () => {
  await withHarness({ beehive: { owedPassInterval: 10_000 } }, async (h) => {
    await h.start();
    const origin = Date.now();
    const obj = await h.create("a");
    await h.tick(9_500);
    await h.things.requeue(obj.id);
    await h.flush(); // a pass at 9.5 s opens the floor window until 10.5 s
    await h.tick(100);
    await h.store.reconcileOwed.stamp([{ ...Thing, id: obj.id }]);
    assert.equal(await dueIn(h, obj.id, origin), undefined);
    await h.tick(400); // the owed pass at 10 s finds the stamp; the floor holds it
    assert.equal(await dueIn(h, obj.id, origin), 10_500);
    assert.deepEqual(h.passes.map((p) => p.at - origin), [0, 9_500]);
    await h.tick(500);
    assert.deepEqual(h.passes.map((p) => p.at - origin), [0, 9_500, 10_500]);
    assert.equal(await dueIn(h, obj.id, origin), undefined);
    assert.equal((await h.store.objects.getMeta(obj.id)).reconcileOwed, 0);
  });
});

test("Schedule getSchedule reports due now while the object is queued", async () => {
  // One worker, so a pass held open keeps the next object queued.
  await withHarness({ beehive: { concurrency: 1 } }, async (h) => {
    await h.start();
    const a = await h.create("a");
    const b = await h.create("b");
    await h.tick(5_000);
    // Hold the only worker in a pass over a.
    const gate = Promise.withResolvers<void>();
    h.queue(a.id, async () => {
      await gate.promise;
      return settled();
    });
    await h.things.requeue(a.id);
    await h.flush();
    const queuedAt = Date.now();
    await h.things.requeue(b.id);
    await h.tick(300);
    assert.equal((await h.things.getSchedule(b.id)).nextRequeueAt?.getTime(), queuedAt);
    // a is being processed: nothing scheduled for it.
    assert.equal((await h.things.getSchedule(a.id)).nextRequeueAt, undefined);
    gate.resolve();
    await h.flush();
    assert.deepEqual(h.passes.map((p) => p.id), [a.id, b.id, a.id, b.id]);
    assert.equal((await h.things.getSchedule(b.id)).nextRequeueAt, undefined);
  });
});

test("Schedule getSchedule reads nothing scheduled for a settled object, an unknown id, another kind's id and a client-only kind", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const thing = await h.create("t");
    const other = await h.bh.client(Other).create("o", {});
    const nothing = { nextRequeueAt: undefined };
    assert.deepEqual(await h.things.getSchedule(thing.id), nothing);
    assert.deepEqual(await h.things.getSchedule(999_999), nothing);
    assert.deepEqual(await h.things.getSchedule(other.id), nothing);
    assert.deepEqual(await h.bh.client(Other).getSchedule(other.id), nothing);
    assert.deepEqual(await h.bh.client(Other).getSchedule(thing.id), nothing);
  });
});

test("Schedule getSchedule rejects a malformed id with TypeError, never throwing synchronously", async () => {
  await withHarness({}, async (h) => {
    for (const bad of [0, -1, 1.5, "1", undefined]) {
      const p = h.things.getSchedule(bad as number);
      await assert.rejects(p, TypeError);
    }
  });
});

// ---------------------------------------------------------------------------
// watchSchedule

test("Schedule watchSchedule rejects NoControllerError for a client-only kind, but not for an unknown id", async () => {
  await withHarness({}, async (h) => {
    const other = await h.bh.client(Other).create("o", {});
    await assert.rejects(h.bh.client(Other).watchSchedule(other.id), NoControllerError);
    await assert.rejects(h.bh.client(Other).watchSchedule(999_999), NoControllerError);
    const stream = await h.things.watchSchedule(999_999);
    const it = stream[Symbol.asyncIterator]();
    assert.deepEqual(await it.next(), { done: false, value: { nextRequeueAt: undefined } });
    stream.close();
    assert.deepEqual(await it.next(), { done: true, value: undefined });
  });
});

test("Schedule watchSchedule emits the current value first, then only changes", async () => {
  await withHarness({ beehive: { owedPassInterval: 400 } }, async (h) => {
    h.fallback = () => fail(new Error("boom"));
    await h.start();
    const origin = Date.now();
    const obj = await h.create("a"); // fails: retry at 1 s
    const stream = await h.things.watchSchedule(obj.id);
    const values: Schedule[] = [];
    const reading = collect(stream, values);
    await h.flush();
    assert.deepEqual(values.map((v) => rel(v, origin)), [1_000]);
    // The owed pass lists the failing object twice; the backoff absorbs both: no change, no value.
    await h.tick(800);
    assert.deepEqual(values.map((v) => rel(v, origin)), [1_000]);
    await h.tick(200); // the retry: dispatched, failed again, retry at 3 s
    const seen = values.map((v) => rel(v, origin));
    assert.equal(seen[0], 1_000);
    assert.equal(seen.at(-1), 3_000);
    for (let i = 1; i < seen.length; i++) assert.notEqual(seen[i], seen[i - 1], `${seen}`);
    stream.close();
    await reading;
  });
});

test("Schedule watchSchedule gives a slow reader the latest value, not every value in between", async () => {
  await withHarness({}, async (h) => {
    h.fallback = () => fail(new Error("boom"));
    await h.start();
    const origin = Date.now();
    const obj = await h.create("a");
    const stream = await h.things.watchSchedule(obj.id);
    const it = stream[Symbol.asyncIterator]();
    assert.equal(rel((await it.next()).value as Schedule, origin), 1_000);
    await h.tick(3_000); // retries at 1 s and 3 s: six moves unread
    const latest = await it.next();
    assert.equal(rel(latest.value as Schedule, origin), 7_000);
    // Nothing newer: the next read waits.
    let next: IteratorResult<Schedule> | undefined;
    const pending = it.next().then((r) => (next = r));
    await h.flush();
    assert.equal(next, undefined);
    stream.close();
    await pending;
    assert.deepEqual(next, { done: true, value: undefined });
  });
});

test("Schedule watchSchedule ends quietly on close(), releasing a waiting reader", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const stream = await h.things.watchSchedule(obj.id);
    const values: Schedule[] = [];
    const reading = collect(stream, values);
    await h.flush();
    stream.close();
    await reading;
    assert.deepEqual(values, [{ nextRequeueAt: undefined }]);
    // Closed for good: a later change is not delivered.
    await h.things.requeue(obj.id);
    assert.deepEqual(await stream[Symbol.asyncIterator]().next(), { done: true, value: undefined });
  });
});

test("Schedule watchSchedule ends quietly when its signal aborts, without delivering an unread value", async () => {
  await withHarness({}, async (h) => {
    h.fallback = () => settled().requeueAfter(5_000);
    await h.start();
    const obj = await h.create("a");
    const ac = new AbortController();
    const stream = await h.things.watchSchedule(obj.id, { signal: ac.signal });
    const values: Schedule[] = [];
    const reading = collect(stream, values);
    await h.flush();
    assert.equal(values.length, 1);
    ac.abort();
    await reading;
    assert.equal(values.length, 1);

    // A value moved but unread when the signal aborts is dropped, as on close().
    const ac2 = new AbortController();
    const stream2 = await h.things.watchSchedule(obj.id, { signal: ac2.signal });
    const it = stream2[Symbol.asyncIterator]();
    await it.next();
    await h.tick(5_000); // the schedule moved
    ac2.abort();
    await h.flush();
    assert.deepEqual(await it.next(), { done: true, value: undefined });
  });
});

test("Schedule watchSchedule with a signal already aborted at the call ends at once", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const stream = await h.things.watchSchedule(obj.id, { signal: AbortSignal.abort() });
    assert.deepEqual(await stream[Symbol.asyncIterator]().next(), { done: true, value: undefined });
  });
});

test("Schedule watchSchedule ends quietly on break out of for await", async () => {
  await withHarness({}, async (h) => {
    h.fallback = () => settled().requeueAfter(5_000);
    await h.start();
    const origin = Date.now();
    const obj = await h.create("a");
    const stream = await h.things.watchSchedule(obj.id);
    const values: Schedule[] = [];
    for await (const s of stream) {
      values.push(s);
      break;
    }
    assert.deepEqual(values.map((v) => rel(v, origin)), [5_000]);
    await h.tick(5_000);
    assert.deepEqual(await stream[Symbol.asyncIterator]().next(), { done: true, value: undefined });
  });
});

test("Schedule watchSchedule ends when the Beehive stops, after delivering the final value", async () => {
  await withHarness({}, async (h) => {
    h.fallback = () => fail(new Error("boom"));
    await h.start();
    const origin = Date.now();
    const obj = await h.create("a");
    const stream = await h.things.watchSchedule(obj.id);
    const values: Schedule[] = [];
    const reading = collect(stream, values);
    await h.flush();
    assert.deepEqual(values.map((v) => rel(v, origin)), [1_000]);
    await h.stop();
    await reading;
    // The retry alarm died with the Beehive: the last value says nothing is scheduled.
    assert.deepEqual(values.map((v) => rel(v, origin)), [1_000, undefined]);
  });
});

test("Schedule watchSchedule opened after stop delivers the current value and ends", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    await h.stop();
    const stream = await h.things.watchSchedule(obj.id);
    const values: Schedule[] = [];
    await collect(stream, values);
    assert.deepEqual(values, [{ nextRequeueAt: undefined }]);
  });
});
