/**
 * Object watches: `watch`, `watchList` and `watchOwnedObjects` — snapshot and
 * stream contract, collapsing, ordering, collection, resume, retention,
 * terminal errors, the shared tailer, and slow or many consumers.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  Beehive,
  BeehiveError,
  InvalidOptionError,
  NotLoadedError,
  settled,
  StoppedError,
  StoreClosedError,
  StoreError,
  WatchTooNewError,
  WatchTooOldError,
} from "../mod.ts";
import type { BeehiveOptions, Client, Migrator, ObjectChange, ObjectListStream } from "../mod.ts";
import type { RawObject } from "../store/mod.ts";
import { openTestStore } from "./_sqlite_driver.ts";
import { installFakeTime } from "./_fake_time.ts";
import type { FakeClock } from "./_fake_time.ts";
import { Other, recordingLogger, tempDir, Thing, withHarness } from "./_beehive_harness.ts";
import { settle, type WatchHive, withWatchHive } from "./_watch_harness.ts";
import { WATCH_DRAIN_GAP, WATCH_DRAIN_SHARE, WATCH_TAKE_WAIT } from "../src/watches/_pacing.ts";
import { test } from "./_test.ts";

interface Spec {
  n: number;
}
interface Status {
  ready: boolean;
}
type Change = ObjectChange<Spec, Status>;

const HOUR = 3_600_000;

interface Hive extends WatchHive {
  things: Client<Spec, Status>;
  others: Client<Spec, Status>;
}

interface HiveSetup {
  options?: BeehiveOptions;
  register?: (bh: Beehive) => void;
  path?: string;
}

/**
 * A Beehive over a fresh store under fake time; never started unless the
 * test starts it (GC then runs every hour: tick HOUR). The floor tick is an
 * hour away, so a delivery seen within a few ticks came from a commit wake.
 */
async function withHive(fn: (h: Hive) => Promise<void>, setup: HiveSetup = {}): Promise<void> {
  await withWatchHive({
    families: ["objectWrites", "objects", "edges", "events"],
    beehive: {
      logLevel: "debug",
      watchFloorInterval: HOUR,
      gcInterval: HOUR,
      owedPassInterval: HOUR,
      ...setup.options,
    },
    register: setup.register,
    path: setup.path,
  }, (h) => {
    activeClock = h.clock;
    return fn({
      ...h,
      things: h.bh.client<Spec, Status>(Thing),
      others: h.bh.client<Spec, Status>(Other),
    });
  });
}

/** The fake clock of the running test, which `next` and `assertQuiet` advance. */
let activeClock: FakeClock | undefined;

type It = AsyncIterator<Change>;

function iter(stream: AsyncIterable<Change>): It {
  return stream[Symbol.asyncIterator]();
}

/**
 * The next change, which must come: advances fake time in 10 ms steps (up to
 * a second) so a drain held by the tailer's pacing runs.
 */
async function next(it: It): Promise<Change> {
  return await step(it);
}

/** {@linkcode next} for any iterator of the stream: its values or its batches. */
async function step<T>(it: AsyncIterator<T>): Promise<T> {
  const p = it.next();
  let done = false;
  p.then(() => (done = true), () => (done = true));
  // A change already buffered is there within a few microtasks: stepping time for it would only
  // cost (on a networked store every step waits out its round trips, which made a 1 300-change
  // drain take minutes).
  for (let i = 0; i < 10 && !done; i++) await Promise.resolve();
  const clock = activeClock;
  if (clock !== undefined && !done) {
    await settle(clock);
    for (let i = 0; i < 100 && !done; i++) await clock.tickAsync(10);
  }
  const r = await p;
  assert.equal(r.done, false, "expected a change, the stream ended");
  return r.value;
}

/**
 * Asserts nothing is delivered while the clock runs what is due; resolves
 * to the still-pending `next()` so the test can settle it later.
 */
async function assertQuiet(
  clock: FakeClock,
  it: It,
): Promise<{ readonly next: Promise<IteratorResult<Change>> }> {
  const p = it.next();
  let done = false;
  p.then(() => (done = true), () => (done = true));
  await settle(clock);
  // Past two of the longest waits: a drain the pacing held would have run.
  await clock.tickAsync(2 * WATCH_TAKE_WAIT);
  assert.equal(done, false, "expected no delivery");
  return { next: p };
}

/** A `next()` in flight, whose result the test polls while it moves fake time. */
function inFlight(it: It): { readonly result: IteratorResult<Change> | undefined } {
  const state: { result: IteratorResult<Change> | undefined } = { result: undefined };
  it.next().then((r) => (state.result = r));
  return state;
}

/** Moves fake time 1 ms at a time until `call` settles; resolves to the change it brought. */
async function tickUntil(
  clock: FakeClock,
  call: { readonly result: IteratorResult<Change> | undefined },
): Promise<Change> {
  for (let i = 0; i < 1_000 && call.result === undefined; i++) await clock.tickAsync(1);
  assert.ok(call.result !== undefined && call.result.done !== true, "expected a change");
  return call.result.value;
}

function brief(c: Change): [string, number, unknown] {
  return [c.type, c.id, c.object?.spec];
}

// ---------------------------------------------------------------------------
// Snapshot and stream contract

test("watchList resolves with the snapshot and its position, then only changes above it", async () => {
  await withHive(async ({ things, clock }) => {
    const a = await things.create("a", { n: 1 });
    const b = await things.create("b", { n: 2 });
    const w = await things.watchList();
    assert.deepEqual(w.objects.map((o) => o.id), [a.id, b.id]);
    assert.equal(w.resourceVersion, b.resourceVersion);
    const it = iter(w);
    const pending = await assertQuiet(clock, it);
    const updated = await things.update(a.id, { n: 10 });
    const c = await things.create("c", { n: 3 });
    const first = (await pending.next).value as Change;
    assert.deepEqual(brief(first), ["Modified", a.id, { n: 10 }]);
    assert.equal(first.resourceVersion, updated.resourceVersion);
    assert.ok(first.resourceVersion > w.resourceVersion);
    assert.deepEqual(brief(await next(it)), ["Added", c.id, { n: 3 }]);
    const quiet = await assertQuiet(clock, it);
    w.close();
    assert.deepEqual(await quiet.next, { done: true, value: undefined });
  });
});

test("watchList joining a lagging tailer gets nothing its snapshot already holds", async () => {
  await withHive(async ({ store, things }) => {
    const early = await things.watchList();
    // Unannounced writes: the shared tailer has not read them yet.
    const d = await store.objects.create(Thing, { name: "direct", spec: `{"n":1}` });
    const late = await things.watchList();
    assert.deepEqual(late.objects.map((o) => o.id), [d.id]);
    const y = await things.create("y", { n: 2 }); // wakes the tailer: it reads both entries
    assert.deepEqual(brief(await next(iter(late))), ["Added", y.id, { n: 2 }]);
    const earlyIt = iter(early);
    assert.deepEqual(brief(await next(earlyIt)), ["Added", d.id, { n: 1 }]);
    assert.deepEqual(brief(await next(earlyIt)), ["Added", y.id, { n: 2 }]);
    early.close();
    late.close();
  });
});

test("watchList subscribe-then-act: an object created and collected right after subscribing is reported", async () => {
  await withHive(async ({ things, clock, start }) => {
    await start();
    const w = await things.watchList();
    const x = await things.create("x", { n: 1 });
    await things.delete(x.id);
    await clock.tickAsync(HOUR); // the GC sweep collects the client-only kind's object
    await assert.rejects(things.get(x.id));
    const it = iter(w);
    // Created, marked and collected before the first read: one change, Deleted.
    const c = await next(it);
    assert.deepEqual(brief(c), ["Deleted", x.id, { n: 1 }]);
    assert.ok(c.object?.deletionRequestedAt instanceof Date);
    w.close();
  });
});

test("watchList reports a deletion request as Modified and the collection as Deleted with the final state", async () => {
  await withHive(async ({ bh, things, clock, start }) => {
    const x = await things.create("x", { n: 1 });
    await bh.adminClient<Status>(Thing).setCondition(x.id, { type: "Ready", status: "True" });
    await start();
    const w = await things.watchList();
    const it = iter(w);
    await things.delete(x.id);
    const marked = await next(it);
    assert.equal(marked.type, "Modified");
    assert.ok(marked.object?.deletionRequestedAt instanceof Date);
    await clock.tickAsync(HOUR); // the GC sweep
    const gone = await next(it);
    assert.equal(gone.type, "Deleted");
    assert.equal(gone.id, x.id);
    assert.ok(gone.resourceVersion > marked.resourceVersion);
    // The image keeps what cascaded away with the row.
    assert.deepEqual(gone.object?.conditions.map((c) => [c.type, c.status]), [["Ready", "True"]]);
    w.close();
  });
});

test("watchList collapses several writes to one object into one change carrying current state", async () => {
  await withHive(async ({ things, clock }) => {
    const x = await things.create("x", { n: 0 });
    const w = await things.watchList();
    const it = iter(w);
    let last;
    for (let n = 1; n <= 5; n++) last = await things.update(x.id, { n });
    await clock.tickAsync(WATCH_TAKE_WAIT); // past the longest wait: every write is read
    const c = await next(it);
    assert.deepEqual(brief(c), ["Modified", x.id, { n: 5 }]);
    assert.equal(c.resourceVersion, last!.resourceVersion);
    const quiet = await assertQuiet(clock, it);
    w.close();
    await quiet.next;
  });
});

test("watchList reports a create then an update before delivery as Added with the newest state", async () => {
  await withHive(async ({ things, clock }) => {
    const w = await things.watchList();
    const it = iter(w);
    const x = await things.create("x", { n: 1 });
    await things.update(x.id, { n: 2 });
    await clock.tickAsync(WATCH_TAKE_WAIT); // past the longest wait: every write is read
    assert.deepEqual(brief(await next(it)), ["Added", x.id, { n: 2 }]);
    w.close();
  });
});

test("watchList delivers ascending by resourceVersion when an object is rewritten in place", async () => {
  await withHive(async ({ things, clock }) => {
    const a = await things.create("a", { n: 0 });
    const b = await things.create("b", { n: 0 });
    const w = await things.watchList();
    const it = iter(w);
    await things.update(a.id, { n: 1 }); // a is touched first …
    await clock.tickAsync(WATCH_TAKE_WAIT); // past the longest wait: every write is read
    await things.update(b.id, { n: 1 });
    await clock.tickAsync(WATCH_TAKE_WAIT); // past the longest wait: every write is read
    await things.update(a.id, { n: 2 }); // … and rewritten last
    await clock.tickAsync(WATCH_TAKE_WAIT); // past the longest wait: every write is read
    const got = [await next(it), await next(it)];
    assert.deepEqual(got.map(brief), [["Modified", b.id, { n: 1 }], ["Modified", a.id, { n: 2 }]]);
    assert.ok(got[0].resourceVersion < got[1].resourceVersion);
    w.close();
  });
});

test("watchList emits nothing for a write that changes nothing", async () => {
  await withHive(async ({ things, clock }) => {
    const x = await things.create("x", { n: 1 });
    const w = await things.watchList();
    const it = iter(w);
    await things.update(x.id, { n: 1 });
    const quiet = await assertQuiet(clock, it);
    w.close();
    await quiet.next;
  });
});

test("watchList stays quiet through event-log writes", async () => {
  await withHive(async ({ bh, things, clock, inst }) => {
    const x = await things.create("x", { n: 1 });
    const w = await things.watchList();
    const it = iter(w);
    inst.reset();
    await bh.adminClient(Thing).addEvent(x.id, { type: "Normal", reason: "Seen" });
    const quiet = await assertQuiet(clock, it);
    assert.equal(inst.count("tail.read"), 0);
    w.close();
    await quiet.next;
  });
});

test("watchList needs no controller and is kind-scoped", async () => {
  await withHive(async ({ things, others, clock }) => {
    const w = await things.watchList(); // Thing has no controller here
    const it = iter(w);
    await others.create("o", { n: 1 });
    const quiet = await assertQuiet(clock, it);
    const t = await things.create("t", { n: 2 });
    assert.deepEqual(brief((await quiet.next).value as Change), ["Added", t.id, { n: 2 }]);
    w.close();
  });
});

test("watchList on a never-started Beehive is woken by commits, not by the floor tick", async () => {
  await withHive(async ({ things, inst }) => {
    const w = await things.watchList();
    const it = iter(w);
    inst.reset();
    const x = await things.create("x", { n: 1 });
    // No time passes: the commit itself woke the tailer.
    assert.deepEqual(brief(await next(it)), ["Added", x.id, { n: 1 }]);
    assert.ok(inst.count("tail.read") >= 1);
    w.close();
  });
});

test("watchList reads the first commit after a quiet spell at once, and a burst inside the drain gap in one drain", async () => {
  await withHive(async ({ things, inst, clock }) => {
    const w = await things.watchList();
    const it = iter(w);
    inst.reset();
    const x = await things.create("x", { n: 0 });
    const first = it.next(); // no time passes
    assert.deepEqual(brief(((await first).value) as Change), ["Added", x.id, { n: 0 }]);
    assert.equal(inst.count("tail.read"), 1);
    for (let n = 1; n <= 5; n++) await things.update(x.id, { n });
    await settle(clock);
    assert.equal(inst.count("tail.read"), 1, "held by the drain gap");
    await clock.tickAsync(WATCH_DRAIN_GAP);
    assert.equal(inst.count("tail.read"), 2, "one drain for the whole burst");
    assert.deepEqual(brief(await next(it)), ["Modified", x.id, { n: 5 }]);
    w.close();
  });
});

test("watchList under a busy writer delivers each commit within the drain gap, with no 100 ms wait", async () => {
  await withHive(async ({ things, clock }) => {
    const x = await things.create("x", { n: 0 });
    const w = await things.watchList();
    const it = iter(w);
    for (let n = 1; n <= 20; n++) {
      const started = clock.now;
      await things.update(x.id, { n });
      // The consumer keeps up; the commit is read by the first drain the gap allows.
      const call = inFlight(it);
      await settle(clock);
      assert.deepEqual(brief(await tickUntil(clock, call)), ["Modified", x.id, { n }]);
      assert.ok(
        clock.now - started <= WATCH_DRAIN_GAP,
        `delivered after ${clock.now - started} ms`,
      );
    }
    w.close();
  });
});

test("watchList under a writer that never yields to the timer queue still drains: each commit's wake checks the gap against the clock", async () => {
  // Real time: a writer awaiting only its writes lets no timer fire, so only the wakes can start
  // the drains.
  const store = await openTestStore(":memory:");
  try {
    const things = new Beehive(store).client<Spec, Status>(Thing);
    const x = await things.create("x", { n: 0 });
    const w = await things.watchList();
    let seen = 0;
    const consumer = (async () => {
      for await (const _ of w) seen++;
    })();
    let n = 0;
    try {
      while (seen < 3 && n < 20_000) await things.update(x.id, { n: ++n });
    } finally {
      w.close();
      await consumer;
    }
    assert.ok(seen >= 3, `after ${n} back-to-back writes the watch had delivered ${seen} changes`);
  } finally {
    await store.close();
  }
});

test("watchList: drains that take more of the thread come further apart under a busy writer", async () => {
  await withHive(async ({ things, inst, clock }) => {
    const x = await things.create("x", { n: 0 });
    const w = await things.watchList();
    const consumer = (async () => {
      for await (const _ of w) { /* keeps up */ }
    })();
    let n = 0;
    const write = async (ms: number) => {
      const end = clock.now + ms;
      while (clock.now < end) {
        await things.update(x.id, { n: ++n });
        await clock.tickAsync(1);
      }
    };
    inst.reset();
    await write(100);
    const cheap = inst.count("tail.read");
    // From now on each tail read takes 5 ms of the thread.
    inst.during = (key) => {
      if (key === "tail.read") clock.tick(5);
    };
    try {
      await write(200); // the running mean of a drain's cost settles
      inst.reset();
      await write(200);
    } finally {
      inst.during = undefined;
    }
    const costly = inst.count("tail.read");
    assert.ok(cheap >= 100 / WATCH_DRAIN_GAP / 2, `${cheap} drains in 100 ms of cheap reads`);
    assert.ok(costly >= 2, `${costly} costly drains in 200 ms: the kind is still read`);
    // A 5 ms drain leaves at least 5 / WATCH_DRAIN_SHARE ms, less the mean's lag, to the rest.
    assert.ok(
      costly <= Math.ceil(200 / (5 / WATCH_DRAIN_SHARE)) + 2,
      `${costly} costly drains in 200 ms`,
    );
    w.close();
    await consumer;
  });
});

test("watchList: a stalled consumer holds the drains back at most WATCH_TAKE_WAIT, then the others go on at the drain gap", async () => {
  await withHive(async ({ things, inst, clock }) => {
    const x = await things.create("x", { n: 0 });
    const stalled = await things.watchList();
    const live = await things.watchList();
    const liveIt = iter(live);
    await things.update(x.id, { n: 1 });
    assert.deepEqual(brief(await next(liveIt)), ["Modified", x.id, { n: 1 }]);
    // The stalled stream has not taken the drain it was handed: the next one waits for it.
    inst.reset();
    const started = clock.now;
    await things.update(x.id, { n: 2 });
    const call = inFlight(liveIt);
    await settle(clock);
    await clock.tickAsync(WATCH_TAKE_WAIT / 2);
    assert.equal(call.result, undefined, "held for the stalled stream");
    assert.deepEqual(brief(await tickUntil(clock, call)), ["Modified", x.id, { n: 2 }]);
    assert.ok(clock.now - started <= WATCH_TAKE_WAIT);
    // Now behind, the stalled stream collapses what follows and no longer holds the tailer back.
    const at = clock.now;
    await things.update(x.id, { n: 3 });
    const third = inFlight(liveIt);
    await settle(clock);
    assert.deepEqual(brief(await tickUntil(clock, third)), ["Modified", x.id, { n: 3 }]);
    assert.ok(clock.now - at <= WATCH_DRAIN_GAP, `delivered after ${clock.now - at} ms`);
    const stalledIt = iter(stalled);
    assert.deepEqual(brief(await next(stalledIt)), ["Modified", x.id, { n: 3 }]);
    stalled.close();
    live.close();
  });
});

test("watchList: a consumer busy with earlier changes sees the latest state of each object, collapsed, in version order", async () => {
  await withHive(async ({ things, clock }) => {
    const xs = [];
    for (let i = 0; i < 3; i++) xs.push(await things.create(`x${i}`, { n: 0 }));
    const w = await things.watchList();
    const it = iter(w);
    await things.update(xs[0].id, { n: 1 });
    await things.update(xs[1].id, { n: 1 });
    await clock.tickAsync(WATCH_TAKE_WAIT);
    // It takes one of the two changes it pulled, and stays busy while more commits land.
    assert.deepEqual(brief(await next(it)), ["Modified", xs[0].id, { n: 1 }]);
    for (let n = 2; n <= 4; n++) {
      for (const x of xs) {
        await things.update(x.id, { n });
        await clock.tickAsync(WATCH_TAKE_WAIT);
      }
    }
    const got = [await next(it), await next(it), await next(it), await next(it)];
    assert.deepEqual(got.map(brief), [
      ["Modified", xs[1].id, { n: 1 }], // the rest of what it was already handed
      ["Modified", xs[0].id, { n: 4 }],
      ["Modified", xs[1].id, { n: 4 }],
      ["Modified", xs[2].id, { n: 4 }],
    ]);
    for (let i = 1; i < got.length; i++) {
      assert.ok(got[i - 1].resourceVersion < got[i].resourceVersion);
    }
    const quiet = await assertQuiet(clock, it);
    w.close();
    await quiet.next;
  });
});

test("watchList picks up a write no commit announced on the floor tick", async () => {
  await withHive(async ({ store, things, clock }) => {
    const w = await things.watchList();
    const it = iter(w);
    // Written straight through the store: no commit signal reaches the Beehive.
    const raw = await store.objects.create(Thing, { name: "direct", spec: `{"n":7}` });
    const quiet = await assertQuiet(clock, it);
    await clock.tickAsync(5_000);
    assert.deepEqual(brief((await quiet.next).value as Change), ["Added", raw.id, { n: 7 }]);
    w.close();
  }, { options: { watchFloorInterval: 5_000 } });
});

test("watchList drains a burst larger than one page", async () => {
  await withHive(async ({ things, clock }) => {
    const w = await things.watchList();
    const it = iter(w);
    const ids: number[] = [];
    for (let i = 0; i < 1_300; i++) ids.push((await things.create(`x${i}`, { n: i })).id);
    await settle(clock);
    const seen: number[] = [];
    let rv = w.resourceVersion;
    while (seen.length < ids.length) {
      const c = await next(it);
      assert.equal(c.type, "Added");
      assert.ok(c.resourceVersion > rv);
      rv = c.resourceVersion;
      seen.push(c.id);
    }
    assert.deepEqual(seen, ids);
    w.close();
  });
});

/** Asserts `value` and every object it holds are frozen. */
function assertDeeplyFrozen(value: unknown, path = "value"): void {
  if (typeof value !== "object" || value === null) return;
  assert.ok(Object.isFrozen(value), `${path} is not frozen`);
  for (const [key, v] of Object.entries(value)) assertDeeplyFrozen(v, `${path}.${key}`);
}

test("watchList hands out deeply frozen objects, one instance shared by the streams", async () => {
  await withHive(async ({ things }) => {
    await things.create("a", { n: 1 });
    const w1 = await things.watchList();
    const w2 = await things.watchList();
    assert.ok(Object.isFrozen(w1.objects[0]) && Object.isFrozen(w1.objects[0].spec));
    const b = await things.create("b", { n: 2 });
    const c1 = await next(iter(w1));
    const c2 = await next(iter(w2));
    assert.equal(c1.id, b.id);
    assert.equal(c1.object, c2.object);
    assert.ok(Object.isFrozen(c1.object) && Object.isFrozen(c1.object!.spec));
    assertDeeplyFrozen(c1);
    assertDeeplyFrozen(w1.objects[0]);
    assert.equal(c1, c2, "the change itself is shared");
    assert.throws(() => {
      (c1.object!.spec as { n: number }).n = 3;
    }, TypeError);
    assert.deepEqual((await things.get(b.id)).spec, { n: 2 });
    w1.close();
    w2.close();
  });
});

test("watchList with load attaches relations to the snapshot and to every change", async () => {
  await withHive(async ({ things, others }) => {
    const owner = await others.create("owner", { n: 0 });
    await things.create("a", { n: 1 }, { owner: owner.id });
    const w = await things.watchList({ load: ["owner", "dependents"] });
    assert.equal(w.objects[0].owner()?.id, owner.id);
    assert.deepEqual(w.objects[0].dependents(), []);
    const it = iter(w);
    const b = await things.create("b", { n: 2 }, { owner: owner.id });
    const c = await next(it);
    assert.equal(c.id, b.id);
    assert.deepEqual(c.object?.owner(), { ...Other, id: owner.id });
    assert.throws(() => c.object?.dependencies(), NotLoadedError);
    w.close();
    const plain = await things.watchList();
    assert.throws(() => plain.objects[0].owner(), NotLoadedError);
    plain.close();
  });
});

test("watchList retries a failing relation load and still delivers the change", async () => {
  await withHive(async ({ things, clock, inst, lines }) => {
    const w = await things.watchList({ load: ["owner"] });
    const it = iter(w);
    inst.failures.set("edges.groupOutgoingByIds", 2);
    const x = await things.create("x", { n: 1 });
    const p = it.next();
    await settle(clock);
    await clock.tickAsync(100);
    await clock.tickAsync(200);
    const c = (await p).value as Change;
    assert.equal(c.id, x.id);
    assert.equal(c.object?.owner(), undefined);
    assert.equal(lines.filter((l) => l.message.includes("watch delivery failed")).length, 1);
    w.close();
  });
});

// ---------------------------------------------------------------------------
// Undecodable rows

function migrator(version: number): Migrator {
  return {
    specVersion: version,
    statusVersion: 0,
    convertSpec: (_from, value) => value,
    convertStatus: (_from, value) => value,
  };
}

test("watchList skips a row that does not decode and still reports its collection as Deleted with no object", async () => {
  const clock = installFakeTime();
  activeClock = clock;
  try {
    const store = await openTestStore(":memory:");
    try {
      // A peer at schema version 2 writes; this watcher only understands version 1.
      const peer = new Beehive(store);
      peer.register<Spec, Status>(Thing, () => settled(), { migrator: migrator(2) });
      const logger = recordingLogger();
      const { lines } = logger;
      const bh = new Beehive(store, { logger, watchFloorInterval: 5_000 });
      bh.register<Spec, Status>(Thing, () => settled(), { migrator: migrator(1) });
      const things = bh.client<Spec, Status>(Thing);
      const ok = await things.create("ok", { n: 1 });
      const bad = await peer.client<Spec, Status>(Thing).create("bad", { n: 2 });
      const w = await things.watchList();
      assert.deepEqual(w.objects.map((o) => o.id), [ok.id]); // quarantined from the snapshot
      const it = iter(w);
      await clock.tickAsync(5_000); // nothing new
      await peer.client<Spec, Status>(Thing).update(bad.id, { n: 3 });
      await things.update(ok.id, { n: 4 });
      // The undecodable update is dropped; the stream carries on.
      assert.deepEqual(brief(await next(it)), ["Modified", ok.id, { n: 4 }]);
      assert.ok(lines.some((l) => l.level === "warn" && l.message.includes("does not decode")));
      await things.delete(bad.id); // the mark is an undecodable update: skipped as well
      // A third Beehive, with no controller for Thing, collects it on its first sweep.
      const gc = new Beehive(store, { gcInterval: HOUR });
      const stopGc = await gc.start();
      try {
        await settle(clock);
        await assert.rejects(things.get(bad.id));
        await clock.tickAsync(5_000); // that commit was another Beehive's: the floor finds it
        const gone = await next(it);
        assert.equal(gone.type, "Deleted");
        assert.equal(gone.id, bad.id);
        assert.equal(gone.object, undefined);
      } finally {
        await stopGc();
      }
      w.close();
    } finally {
      await store.close();
    }
  } finally {
    activeClock = undefined;
    clock.uninstall();
  }
});

// ---------------------------------------------------------------------------
// Slow and many consumers, the shared tailer

test("watchList: a consumer that never reads stalls only itself and loses nothing", async () => {
  await withHive(async ({ things, clock }) => {
    const xs = [];
    for (let i = 0; i < 5; i++) xs.push(await things.create(`x${i}`, { n: 0 }));
    const slow = await things.watchList();
    const fast = await things.watchList();
    const fastIt = iter(fast);
    for (let round = 1; round <= 20; round++) {
      for (const x of xs) {
        await things.update(x.id, { n: round });
        const c = await next(fastIt); // the fast consumer keeps up, write by write
        assert.deepEqual(brief(c), ["Modified", x.id, { n: round }]);
      }
    }
    await settle(clock);
    // The slow one holds one pending change per object: the latest state of each.
    const slowIt = iter(slow);
    const got = [];
    for (let i = 0; i < xs.length; i++) got.push(await next(slowIt));
    assert.deepEqual(got.map(brief), xs.map((x) => ["Modified", x.id, { n: 20 }]));
    const quiet = await assertQuiet(clock, slowIt);
    slow.close();
    fast.close();
    await quiet.next;
  });
});

test("watchList with many watchers shares one tailer: one log read per commit, not one per watch", async () => {
  await withHive(async ({ things, inst }) => {
    const streams: ObjectListStream<Spec, Status>[] = [];
    for (let i = 0; i < 50; i++) streams.push(await things.watchList());
    inst.reset();
    const x = await things.create("x", { n: 1 });
    for (const s of streams) {
      assert.deepEqual(brief(await next(iter(s))), ["Added", x.id, { n: 1 }]);
    }
    assert.equal(inst.count("tail.read"), 1);
    // The create's row comes with its entry.
    assert.equal(inst.count("objects.listByIds"), 0);
    for (const s of streams) s.close();
  });
});

test("watchList: the tailer starts with the first watch and stops with the last", async () => {
  await withHive(async ({ things, inst, clock }) => {
    inst.reset();
    await things.create("before", { n: 0 });
    assert.equal(inst.count("objectWrites.maxVersion"), 0, "nothing reads with no watch");
    const a = await things.watchList();
    const b = await things.watch(1);
    a.close();
    inst.reset();
    await things.update(1, { n: 1 });
    assert.equal((await next(iter(b))).id, 1);
    assert.ok(inst.count("tail.read") >= 1, "the tailer runs while a watch is open");
    b.close();
    inst.reset();
    await things.update(1, { n: 2 });
    await clock.tickAsync(2 * HOUR);
    assert.equal(inst.count("objectWrites.maxVersion"), 0, "no reads after the last watch");
    assert.equal(inst.count("tail.read"), 0);
    assert.equal(clock.countTimers(), 0, "no timer outlives the last watch");
  });
});

test("watchList on a quiet kind reads its tail once per floor tick", async () => {
  await withHive(async ({ things, inst, clock }) => {
    const w = await things.watchList();
    inst.reset();
    await clock.tickAsync(3 * 5_000);
    assert.equal(inst.count("tail.read"), 3);
    assert.equal(inst.count("objectWrites.listSince"), 0);
    w.close();
  }, { options: { watchFloorInterval: 5_000 } });
});

test("watchList survives a failing log read: it retries with backoff, logs once and then delivers", async () => {
  await withHive(async ({ things, inst, clock, lines }) => {
    const w = await things.watchList();
    const it = iter(w);
    inst.failures.set("tail.read", 3);
    const x = await things.create("x", { n: 1 });
    const p = it.next();
    await settle(clock);
    assert.equal(inst.count("tail.read"), 1); // failed; retry in 100 ms
    await clock.tickAsync(100);
    assert.equal(inst.count("tail.read"), 2); // failed; retry in 200 ms
    await things.update(x.id, { n: 2 }); // a wake while backing off is dropped …
    await clock.tickAsync(150);
    assert.equal(inst.count("tail.read"), 2, "… it does not cut the backoff short");
    await clock.tickAsync(50);
    assert.equal(inst.count("tail.read"), 3); // failed; retry in 400 ms
    await clock.tickAsync(400);
    assert.deepEqual(brief((await p).value as Change), ["Added", x.id, { n: 2 }]);
    assert.equal(lines.filter((l) => l.message.includes("a watch read failed")).length, 1);
    assert.equal(w.error, undefined);
    w.close();
  });
});

test("watchList rejects when the snapshot read fails, and leaves no tailer behind", async () => {
  await withHive(async ({ things, inst, clock }) => {
    inst.failures.set("objectWrites.snapshot", 1);
    await assert.rejects(things.watchList(), StoreError);
    inst.reset();
    await things.create("x", { n: 1 });
    await clock.tickAsync(2 * HOUR);
    assert.equal(inst.count("objectWrites.maxVersion"), 0);
    assert.equal(clock.countTimers(), 0);
  });
});

test("watchList rejects malformed options with TypeError", async () => {
  await withHive(async ({ things }) => {
    await assert.rejects(things.watchList({ resumeFrom: -1 }), TypeError);
    await assert.rejects(things.watchList({ resumeFrom: 1.5 }), TypeError);
    // deno-lint-ignore no-explicit-any
    await assert.rejects(things.watchList({ signal: {} as any }), TypeError);
    // deno-lint-ignore no-explicit-any
    await assert.rejects(things.watchList({ load: ["nope"] as any }), TypeError);
    // deno-lint-ignore no-explicit-any
    await assert.rejects(things.watchList(7 as any), TypeError);
    // deno-lint-ignore no-explicit-any
    await assert.rejects(things.watch("1" as any), TypeError);
    // deno-lint-ignore no-explicit-any
    await assert.rejects(things.watchOwnedObjects(0 as any), TypeError);
  });
});

// ---------------------------------------------------------------------------
// Ending a stream

test("watchList close() ends iteration quietly with error undefined", async () => {
  await withHive(async ({ things, clock }) => {
    const w = await things.watchList();
    const it = iter(w);
    const waiting = await assertQuiet(clock, it);
    w.close();
    assert.deepEqual(await waiting.next, { done: true, value: undefined });
    assert.deepEqual(await it.next(), { done: true, value: undefined });
    assert.equal(w.error, undefined);
  });
});

test("watchList: break out of for await closes the stream quietly", async () => {
  await withHive(async ({ things, inst, clock }) => {
    const w = await things.watchList();
    const x = await things.create("x", { n: 1 });
    for await (const c of w) {
      assert.equal(c.id, x.id);
      break;
    }
    assert.equal(w.error, undefined);
    assert.deepEqual(await iter(w).next(), { done: true, value: undefined });
    inst.reset();
    await things.update(x.id, { n: 2 });
    await settle(clock);
    assert.equal(inst.count("tail.read"), 0, "the tailer went with the last watch");
  });
});

test("watchList: aborting the signal ends the stream quietly", async () => {
  await withHive(async ({ things, clock }) => {
    const ac = new AbortController();
    const w = await things.watchList({ signal: ac.signal });
    const waiting = await assertQuiet(clock, iter(w));
    ac.abort(new Error("caller gave up"));
    assert.deepEqual(await waiting.next, { done: true, value: undefined });
    assert.equal(w.error, undefined);
  });
});

test("watchList with a signal already aborted resolves to a stream that ends at once", async () => {
  await withHive(async ({ things, inst }) => {
    await things.create("x", { n: 1 });
    inst.reset();
    const w = await things.watchList({ signal: AbortSignal.abort() });
    assert.equal(w.objects.length, 1);
    assert.deepEqual(await iter(w).next(), { done: true, value: undefined });
    assert.equal(w.error, undefined);
    assert.equal(inst.count("objectWrites.maxVersion"), 0, "no tailer was started");
  });
});

test("watchList [Symbol.asyncDispose] closes the stream", async () => {
  await withHive(async ({ things }) => {
    const w = await things.watchList();
    const p = iter(w).next();
    await w[Symbol.asyncDispose]();
    assert.deepEqual(await p, { done: true, value: undefined });
    assert.equal(w.error, undefined);
  });
});

test("watchList ends with StoppedError when the Beehive stops", async () => {
  await withHive(async ({ things, start, clock }) => {
    const stop = await start();
    const list = await things.watchList();
    const one = await things.watch(1);
    const x = await things.create("x", { n: 1 });
    const it = iter(list);
    // The tailers read the create (on a networked store, a round trip after its commit).
    await settle(clock);
    await stop();
    // What was already read is delivered, then the stream ends.
    assert.equal((await next(it)).id, x.id);
    await assert.rejects(it.next(), StoppedError);
    assert.ok(list.error instanceof StoppedError);
    const oneIt = iter(one);
    assert.deepEqual(brief(await next(oneIt)), ["Added", x.id, { n: 1 }]);
    await assert.rejects(oneIt.next(), StoppedError);
    assert.ok(one.error instanceof StoppedError);
  });
});

test("watchList opened after stop ends at once with StoppedError", async () => {
  await withHive(async ({ things, start }) => {
    const stop = await start();
    await things.create("x", { n: 1 });
    await stop();
    const w = await things.watchList();
    assert.equal(w.objects.length, 1);
    await assert.rejects(iter(w).next(), StoppedError);
    assert.ok(w.error instanceof StoppedError);
  });
});

test("watchList ends with StoreClosedError when its store closes under it", async () => {
  const clock = installFakeTime();
  try {
    const store = await openTestStore(":memory:");
    try {
      const bh = new Beehive(store, { watchFloorInterval: 1_000 });
      const w = await bh.client(Thing).watchList();
      const it = w[Symbol.asyncIterator]();
      await store.close();
      await clock.tickAsync(HOUR); // the GC sweep
      await assert.rejects(it.next(), StoreClosedError);
      assert.ok(w.error instanceof StoreClosedError);
      assert.equal(clock.countTimers(), 0);
    } finally {
      await store.close();
    }
  } finally {
    activeClock = undefined;
    clock.uninstall();
  }
});

test("watchList through a transaction's client rejects with BeehiveError", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("x");
    await h.pass(obj.id, async (_obj, cc) => {
      await cc.within(async (tx) => {
        const c = tx.client<Spec, Status>(Thing);
        await assert.rejects(c.watchList(), BeehiveError);
        await assert.rejects(c.watch(obj.id), BeehiveError);
        await assert.rejects(c.watchOwnedObjects(obj.id), BeehiveError);
        await assert.rejects(c.watchEvents(obj.id), BeehiveError);
        assert.equal((await c.list()).length, 1, "reads still work");
      });
    });
  });
});

// ---------------------------------------------------------------------------
// watch(id)

// ---------------------------------------------------------------------------
// Batches

test("watchList batches() yields one drain's changes in one step, in version order, then waits for the next drain", async () => {
  await withHive(async ({ things, clock }) => {
    const w = await things.watchList();
    const batches = w.batches()[Symbol.asyncIterator]();
    const x = await things.create("x", { n: 0 });
    assert.deepEqual((await step(batches)).map(brief), [["Added", x.id, { n: 0 }]]);
    const y = await things.create("y", { n: 1 });
    const z = await things.create("z", { n: 2 });
    await things.update(x.id, { n: 3 });
    assert.deepEqual((await step(batches)).map(brief), [
      ["Added", y.id, { n: 1 }],
      ["Added", z.id, { n: 2 }],
      ["Modified", x.id, { n: 3 }],
    ]);
    const quiet = batches.next();
    let ended = false;
    quiet.then(() => (ended = true));
    await settle(clock);
    await clock.tickAsync(2 * WATCH_TAKE_WAIT);
    assert.equal(ended, false, "no empty batch while nothing changed");
    w.close();
    assert.deepEqual(await quiet, { done: true, value: undefined });
  });
});

test("watchList batches() after single changes goes on from where they stopped, losing and repeating nothing", async () => {
  await withHive(async ({ things, clock }) => {
    const w = await things.watchList();
    const ids = [];
    for (let n = 0; n < 4; n++) ids.push((await things.create(`o${n}`, { n })).id);
    await settle(clock);
    const it = iter(w);
    assert.deepEqual(brief(await next(it)), ["Added", ids[0], { n: 0 }]);
    const rest = await step(w.batches()[Symbol.asyncIterator]());
    assert.deepEqual(rest.map((c) => c.id), ids.slice(1));
    w.close();
  });
});

test("watchList batches(): break closes the stream quietly, and a terminal error is thrown from the batches", async () => {
  await withHive(async ({ things, start, clock }) => {
    const w = await things.watchList();
    await things.create("x", { n: 1 });
    for await (const changes of w.batches()) {
      assert.equal(changes.length, 1);
      break;
    }
    assert.equal(w.error, undefined);
    assert.deepEqual(await iter(w).next(), { done: true, value: undefined });
    const stop = await start();
    const list = await things.watchList();
    const batches = list.batches()[Symbol.asyncIterator]();
    await stop();
    await settle(clock);
    await assert.rejects(batches.next(), StoppedError);
    assert.ok(list.error instanceof StoppedError);
  });
});

test("watchList batches(): streams handed one drain each get an array of their own holding the same frozen changes", async () => {
  await withHive(async ({ things }) => {
    const streams = [await things.watchList(), await things.watchList()];
    const batches = streams.map((w) => w.batches()[Symbol.asyncIterator]());
    await things.create("x", { n: 0 });
    // The first commit after a quiet spell is read at once; the two after it in the next drain.
    await Promise.all(batches.map(step));
    const y = await things.create("y", { n: 1 });
    const z = await things.create("z", { n: 2 });
    const [a, b] = await Promise.all(batches.map(step));
    assert.deepEqual(a.map(brief), [["Added", y.id, { n: 1 }], ["Added", z.id, { n: 2 }]]);
    assert.notEqual(a, b, "each stream's batch is its own array");
    assert.equal(a[0], b[0], "one decode of each change, shared");
    assert.equal(a[1], b[1]);
    assert.ok(Object.isFrozen(a[0]) && Object.isFrozen(a[0].object!.spec));
    // A consumer may reorder or empty its own batch: the other stream's is untouched.
    a.reverse();
    a.length = 0;
    assert.deepEqual(b.map((c) => c.id), [y.id, z.id]);
    for (const w of streams) w.close();
  });
});

test("watchList: the object a write returns and the watch's frozen change of that write share no date the caller could change", async () => {
  await withHive(async ({ things }) => {
    const w = await things.watchList();
    const it = iter(w);
    const x = await things.create("x", { n: 0 });
    const added = await next(it);
    const y = await things.update(x.id, { n: 1 });
    const modified = await next(it);
    assert.equal(modified.resourceVersion, y.resourceVersion);
    const pairs = [[x, added.object!], [y, modified.object!]] as const;
    for (const [mine, theirs] of pairs) {
      const dates = (o: typeof mine) => [
        o.createdAt,
        o.updatedAt,
        ...o.conditions.flatMap((c) => [c.transitionedAt, c.updatedAt]),
      ];
      const seen = dates(theirs).map((d) => d.getTime());
      for (const d of dates(mine)) {
        assert.ok(!Object.isFrozen(d), "the caller's dates are not frozen");
        d.setTime(0);
      }
      assert.deepEqual(dates(theirs).map((d) => d.getTime()), seen, "the change kept its times");
    }
    w.close();
  });
});

test("watch on an id that holds nothing yet resolves with no object, and its creation arrives as Added", async () => {
  await withHive(async ({ things }) => {
    const first = await things.create("first", { n: 0 });
    const w = await things.watch(first.id + 1);
    assert.equal(w.object, undefined);
    const x = await things.create("x", { n: 1 });
    assert.equal(x.id, first.id + 1);
    assert.deepEqual(brief(await next(iter(w))), ["Added", x.id, { n: 1 }]);
    w.close();
  });
});

test("watch is kind-scoped: another kind's id reads as absent and streams nothing", async () => {
  await withHive(async ({ things, others, clock }) => {
    const o = await others.create("o", { n: 1 });
    const w = await things.watch(o.id);
    assert.equal(w.object, undefined);
    const it = iter(w);
    await others.update(o.id, { n: 2 });
    const quiet = await assertQuiet(clock, it);
    w.close();
    await quiet.next;
  });
});

test("watch reports only its own object, through its whole lifecycle", async () => {
  await withHive(async ({ things, start, clock }) => {
    const x = await things.create("x", { n: 1 });
    const y = await things.create("y", { n: 1 });
    await start();
    const w = await things.watch(x.id);
    assert.deepEqual(w.object?.spec, { n: 1 });
    assert.equal(w.resourceVersion, y.resourceVersion);
    const it = iter(w);
    await things.update(y.id, { n: 2 });
    await things.update(x.id, { n: 2 });
    assert.deepEqual(brief(await next(it)), ["Modified", x.id, { n: 2 }]);
    await things.delete(y.id);
    await things.delete(x.id);
    const marked = await next(it);
    assert.equal(marked.id, x.id);
    assert.equal(marked.type, "Modified");
    assert.ok(marked.object?.deletionRequestedAt instanceof Date);
    await clock.tickAsync(HOUR); // the GC sweep
    assert.deepEqual(brief(await next(it)), ["Deleted", x.id, { n: 2 }]);
    const quiet = await assertQuiet(clock, it);
    w.close();
    await quiet.next;
  });
});

test("watch with resumeFrom replays only its own object's gap", async () => {
  await withHive(async ({ things, inst }) => {
    const x = await things.create("x", { n: 0 });
    const from = x.resourceVersion;
    const others = [];
    for (let i = 0; i < 5; i++) others.push(await things.create(`y${i}`, { n: i }));
    await things.update(x.id, { n: 1 });
    inst.reset();
    const w = await things.watch(x.id, { resumeFrom: from });
    assert.equal(w.object, undefined);
    assert.equal(w.resourceVersion, from);
    const it = iter(w);
    assert.deepEqual(brief(await next(it)), ["Modified", x.id, { n: 1 }]);
    // The page is filtered to the id before any row is read.
    assert.equal(inst.count("objects.listByIds"), 1);
    await things.update(others[0].id, { n: 9 });
    await things.update(x.id, { n: 2 });
    assert.deepEqual(brief(await next(it)), ["Modified", x.id, { n: 2 }]);
    w.close();
  });
});

// ---------------------------------------------------------------------------
// watchOwnedObjects

test("watchOwnedObjects snapshot holds only that owner's children of the kind", async () => {
  await withHive(async ({ things, others }) => {
    const owner = await others.create("owner", { n: 0 });
    const sibling = await others.create("sibling", { n: 0 });
    const mine = await things.create("mine", { n: 1 }, { owner: owner.id });
    await things.create("theirs", { n: 2 }, { owner: sibling.id });
    await things.create("loose", { n: 3 });
    await others.create("other-kind-child", { n: 4 }, { owner: owner.id });
    const w = await things.watchOwnedObjects(owner.id);
    assert.deepEqual(w.objects.map((o) => o.id), [mine.id]);
    w.close();
    const none = await things.watchOwnedObjects(sibling.id + 1000);
    assert.deepEqual(none.objects, []); // a childless (even missing) owner is not an error
    none.close();
  });
});

test("watchOwnedObjects adds a later child, reports its collection, and ignores out-of-scope writes", async () => {
  await withHive(async ({ things, others, start, clock, lines }) => {
    const owner = await others.create("owner", { n: 0 });
    const sibling = await others.create("sibling", { n: 0 });
    const theirs = await things.create("theirs", { n: 0 }, { owner: sibling.id });
    const loose = await things.create("loose", { n: 0 });
    await start();
    const w = await things.watchOwnedObjects(owner.id, { load: ["owner"] });
    assert.deepEqual(w.objects, []);
    const it = iter(w);
    await things.update(theirs.id, { n: 1 });
    await things.update(loose.id, { n: 1 });
    const quiet = await assertQuiet(clock, it);
    // The create's log entry precedes its owned_by edge; ownership comes from current state.
    const child = await things.create("child", { n: 1 }, { owner: owner.id });
    assert.deepEqual(brief((await quiet.next).value as Change), ["Added", child.id, { n: 1 }]);
    await things.delete(child.id);
    assert.equal((await next(it)).type, "Modified");
    await clock.tickAsync(HOUR); // the GC sweep
    const gone = await next(it);
    assert.deepEqual(brief(gone), ["Deleted", child.id, { n: 1 }]);
    // The edge cascaded away with the row; the owner comes from its image.
    assert.deepEqual(gone.object?.owner(), { ...Other, id: owner.id });
    assert.ok(!lines.some((l) => l.message.includes("without its owner")));
    w.close();
  });
});

test("watchOwnedObjects resumeFrom replays the gap with the same scoping", async () => {
  await withHive(async ({ things, others }) => {
    const owner = await others.create("owner", { n: 0 });
    const from = owner.resourceVersion;
    await things.create("stranger", { n: 0 });
    const a = await things.create("a", { n: 1 }, { owner: owner.id });
    const w = await things.watchOwnedObjects(owner.id, { resumeFrom: from });
    assert.deepEqual(w.objects, []);
    assert.equal(w.resourceVersion, from);
    const it = iter(w);
    assert.deepEqual(brief(await next(it)), ["Added", a.id, { n: 1 }]);
    const b = await things.create("b", { n: 2 }, { owner: owner.id });
    assert.deepEqual(brief(await next(it)), ["Added", b.id, { n: 2 }]);
    w.close();
  });
});

// ---------------------------------------------------------------------------
// Resume

test("watchList resumeFrom replays the gap, then goes live with no duplicate at the seam", async () => {
  await withHive(async ({ things, clock }) => {
    const a = await things.create("a", { n: 0 });
    const first = await things.watchList();
    const checkpoint = first.resourceVersion;
    first.close();
    await things.update(a.id, { n: 1 });
    const b = await things.create("b", { n: 2 });
    const w = await things.watchList({ resumeFrom: checkpoint });
    assert.deepEqual(w.objects, []);
    assert.equal(w.resourceVersion, checkpoint);
    const it = iter(w);
    const gap = [await next(it), await next(it)];
    assert.deepEqual(gap.map(brief), [["Modified", a.id, { n: 1 }], ["Added", b.id, { n: 2 }]]);
    const quiet = await assertQuiet(clock, it);
    const c = await things.create("c", { n: 3 });
    const live = (await quiet.next).value as Change;
    assert.deepEqual(brief(live), ["Added", c.id, { n: 3 }]);
    assert.ok(live.resourceVersion > gap[1].resourceVersion);
    w.close();
  });
});

test("watchList resumeFrom replays a gap larger than one page, in order", async () => {
  await withHive(async ({ things }) => {
    const start = await things.create("start", { n: -1 });
    const ids: number[] = [];
    for (let i = 0; i < 1_100; i++) ids.push((await things.create(`x${i}`, { n: i })).id);
    const w = await things.watchList({ resumeFrom: start.resourceVersion });
    const it = iter(w);
    let rv = start.resourceVersion;
    const seen: number[] = [];
    while (seen.length < ids.length) {
      const c = await next(it);
      assert.ok(c.resourceVersion > rv);
      rv = c.resourceVersion;
      seen.push(c.id);
    }
    assert.deepEqual(seen, ids);
    const late = await things.create("late", { n: 0 });
    assert.equal((await next(it)).id, late.id);
    w.close();
  });
});

test("watchList resumeFrom at the head goes live at once", async () => {
  await withHive(async ({ things, clock }) => {
    const a = await things.create("a", { n: 0 });
    const w = await things.watchList({ resumeFrom: a.resourceVersion });
    const it = iter(w);
    const quiet = await assertQuiet(clock, it);
    assert.equal(w.error, undefined);
    await things.update(a.id, { n: 1 });
    assert.deepEqual(brief((await quiet.next).value as Change), ["Modified", a.id, { n: 1 }]);
    w.close();
  });
});

test("watchList resumeFrom picks up across a store close and reopen on a file", async () => {
  const dir = tempDir();
  try {
    const path = dir.file("watch.db");
    let checkpoint = 0;
    let a = 0;
    await withHive(async ({ things }) => {
      a = (await things.create("a", { n: 0 })).id;
      const w = await things.watchList();
      const it = iter(w);
      await things.update(a, { n: 1 });
      checkpoint = (await next(it)).resourceVersion; // the consumer's checkpoint
      w.close();
      await things.update(a, { n: 2 }); // written after the consumer went away
    }, { path });
    await withHive(async ({ things }) => {
      const w = await things.watchList({ resumeFrom: checkpoint });
      const it = iter(w);
      assert.deepEqual(brief(await next(it)), ["Modified", a, { n: 2 }]);
      const b = await things.create("b", { n: 3 });
      assert.deepEqual(brief(await next(it)), ["Added", b.id, { n: 3 }]);
      w.close();
      const tooNew = await things.watchList({ resumeFrom: 10 ** 12 });
      await assert.rejects(iter(tooNew).next(), WatchTooNewError);
    }, { path });
  } finally {
    dir.remove();
  }
});

test("watchList resumeFrom retries a failing gap read and still replays the gap", async () => {
  await withHive(async ({ things, inst, clock, lines }) => {
    const a = await things.create("a", { n: 0 });
    await things.update(a.id, { n: 1 });
    inst.failures.set("objectWrites.listSince", 2);
    const w = await things.watchList({ resumeFrom: a.resourceVersion });
    const p = iter(w).next();
    await settle(clock);
    await clock.tickAsync(100);
    await clock.tickAsync(200);
    assert.deepEqual(brief((await p).value as Change), ["Modified", a.id, { n: 1 }]);
    assert.equal(w.error, undefined);
    assert.equal(lines.filter((l) => l.message.includes("a watch delivery failed")).length, 1);
    w.close();
  });
});

test("watchList: concurrent first watches on a kind settle on one tailer", async () => {
  await withHive(async ({ things, inst }) => {
    const streams = await Promise.all([1, 2, 3, 4, 5].map(() => things.watchList()));
    assert.equal(inst.count("objectWrites.maxVersion"), 1, "one starting cursor read");
    inst.reset();
    const x = await things.create("x", { n: 1 });
    for (const s of streams) assert.equal((await next(iter(s))).id, x.id);
    assert.equal(inst.count("tail.read"), 1);
    for (const s of streams) s.close();
  });
});

test("watchList resumeFrom below retention resolves, then ends with WatchTooOldError and no change", async () => {
  await withHive(async ({ store, things }) => {
    const a = await things.create("a", { n: 0 });
    await things.update(a.id, { n: 1 });
    await things.update(a.id, { n: 2 });
    await store.objectWrites.sweep({ perKind: 1, maxAge: 0 });
    const w = await things.watchList({ resumeFrom: a.resourceVersion });
    await assert.rejects(iter(w).next(), WatchTooOldError);
    assert.ok(w.error instanceof WatchTooOldError);
    assert.deepEqual(await iter(w).next(), { done: true, value: undefined });
  });
});

test("watchList resumeFrom above anything the store issued ends with WatchTooNewError", async () => {
  await withHive(async ({ store, things, others }) => {
    await things.create("a", { n: 0 });
    await others.create("o", { n: 0 }); // moves the store past Thing's own head
    const latest = await store.getLatestResourceVersion();
    const ok = await things.watchList({ resumeFrom: latest });
    const quiet = iter(ok).next();
    const w = await things.watchList({ resumeFrom: latest + 10 ** 9 });
    await assert.rejects(iter(w).next(), WatchTooNewError);
    assert.ok(w.error instanceof WatchTooNewError);
    assert.equal(ok.error, undefined);
    const b = await things.create("b", { n: 1 });
    assert.equal(((await quiet).value as Change).id, b.id);
    ok.close();
  });
});

// ---------------------------------------------------------------------------
// Retention under an open watch

test("watchList ends with WatchTooOldError when retention trims entries it had not read", async () => {
  const dir = tempDir();
  const path = dir.file("watch.db");
  try {
    await withHive(async ({ things }) => {
      const w = await things.watchList();
      const other = await things.watchOwnedObjects(1);
      const it = iter(w);
      // Written through another open of the store, so this one holds none of it and reads the
      // log; in one transaction, so no commit wakes the tailer before the trim (PostgreSQL
      // announces another open's commits at once).
      const writer = await openTestStore(path);
      try {
        await writer.within(async (tx) => {
          for (let i = 0; i < 3; i++) {
            await tx.objects.create(Thing, { name: `x${i}`, spec: "{}" });
          }
          await tx.objectWrites.sweep({ perKind: 1, maxAge: 0 });
        });
      } finally {
        await writer.close();
      }
      await things.create("wake", { n: 0 });
      await assert.rejects(it.next(), WatchTooOldError);
      assert.ok(w.error instanceof WatchTooOldError);
      // Every stream on the kind shares the cursor, so every one ends.
      await assert.rejects(iter(other).next(), WatchTooOldError);
      // A new watch builds a fresh tailer and works.
      const again = await things.watchList();
      const y = await things.create("y", { n: 1 });
      assert.deepEqual(brief(await next(iter(again))), ["Added", y.id, { n: 1 }]);
      again.close();
    }, { path });
  } finally {
    dir.remove();
  }
});

test("watchList loses nothing when retention trims entries of this process's own commits before the tailer read them", async () => {
  await withHive(async ({ store, things }) => {
    const w = await things.watchList();
    const it = iter(w);
    // Written straight through the store, so no commit wakes the tailer before the trim.
    const made = [];
    for (let i = 0; i < 3; i++) {
      made.push((await store.objects.create(Thing, { name: `x${i}`, spec: '{"n":0}' })).id);
    }
    await store.objectWrites.sweep({ perKind: 1, maxAge: 0 });
    const wake = await things.create("wake", { n: 0 });
    // The tailer holds what this store committed since it started: the trim took nothing from it.
    for (const id of [...made, wake.id]) {
      assert.deepEqual(brief(await next(it)), ["Added", id, { n: 0 }]);
    }
    assert.equal(w.error, undefined);
    w.close();
  });
});

test("watchList keeps running when retention trims only what it already read", async () => {
  await withHive(async ({ store, things }) => {
    const w = await things.watchList();
    const it = iter(w);
    const a = await things.create("a", { n: 0 });
    const b = await things.create("b", { n: 0 });
    assert.equal((await next(it)).id, a.id);
    assert.equal((await next(it)).id, b.id);
    await store.objectWrites.sweep({ perKind: 1, maxAge: 0 });
    const c = await things.create("c", { n: 0 });
    assert.equal((await next(it)).id, c.id);
    assert.equal(w.error, undefined);
    w.close();
  });
});

test("watchList merge table: create+update is Added, update+delete and create+delete are Deleted, a stale send never wins", async () => {
  const { mergeChange, changeType } = await import("../src/watches/_changes.ts");
  const row = { id: 1 } as unknown as RawObject;
  const at = (rv: number, op: "create" | "update" | "delete") => ({
    id: 1,
    rv,
    op,
    row,
    owner: null,
  });
  const merged = (a: ReturnType<typeof at>, b: ReturnType<typeof at>) =>
    changeType(mergeChange(a, b).op);
  assert.equal(merged(at(1, "create"), at(2, "update")), "Added");
  assert.equal(merged(at(1, "update"), at(2, "update")), "Modified");
  assert.equal(merged(at(1, "update"), at(2, "delete")), "Deleted");
  assert.equal(merged(at(1, "create"), at(2, "delete")), "Deleted"); // never annihilated
  assert.equal(mergeChange(at(5, "update"), at(3, "delete")).rv, 5);
  assert.equal(mergeChange(at(5, "update"), at(3, "delete")).op, "update");
  assert.equal(mergeChange(undefined, at(3, "create")).rv, 3);
});

// ---------------------------------------------------------------------------
// Label selectors

/** Settles a `next()` taken earlier, moving fake time in 10 ms steps (up to a second). */
async function arrive(clock: FakeClock, p: Promise<IteratorResult<Change>>): Promise<Change> {
  let done = false;
  p.then(() => (done = true), () => (done = true));
  await settle(clock);
  for (let i = 0; i < 100 && !done; i++) await clock.tickAsync(10);
  const r = await p;
  assert.equal(r.done, false, "expected a change, the stream ended");
  return r.value;
}

test("watchList with a labelSelector: the snapshot holds the matching objects; one leaving streams as Deleted, one entering as Added, others not at all", async () => {
  await withHive(async ({ things, clock }) => {
    const a = await things.create("a", { n: 1 }, { labels: { app: "web" } });
    const b = await things.create("b", { n: 2 }, { labels: { app: "db" } });
    const w = await things.watchList({ labelSelector: "app=web" });
    assert.deepEqual(w.objects.map((o) => o.id), [a.id]);
    const it = iter(w);
    const pending = await assertQuiet(clock, it);
    await things.update(b.id, { n: 20 });
    await things.updateMetadata(a.id, { labels: { app: "api" } });
    const left = await arrive(clock, pending.next);
    assert.deepEqual([left.type, left.id], ["Deleted", a.id]);
    assert.deepEqual(left.object?.labels, { app: "api" });
    await things.update(a.id, { n: 10 });
    await things.updateMetadata(b.id, { labels: { app: "web" } });
    const entered = await next(it);
    assert.deepEqual(brief(entered), ["Added", b.id, { n: 20 }]);
    await things.update(b.id, { n: 21 });
    assert.deepEqual(brief(await next(it)), ["Modified", b.id, { n: 21 }]);
    const c = await things.create("c", { n: 3 }, { labels: { app: "web" } });
    assert.deepEqual(brief(await next(it)), ["Added", c.id, { n: 3 }]);
    await things.create("d", { n: 4 });
    // A deletion request is a write (collection needs a controller here): still in view.
    await things.delete(c.id);
    const marked = await next(it);
    assert.deepEqual(brief(marked), ["Modified", c.id, { n: 3 }]);
    assert.ok(marked.object?.deletionRequestedAt !== undefined);
    await assertQuiet(clock, it);
    w.close();
  });
});

test("watchList with a labelSelector and load applies the same selection to changes that load relations", async () => {
  await withHive(async ({ things, clock }) => {
    const a = await things.create("a", { n: 1 }, { labels: { app: "web" } });
    const w = await things.watchList({
      labelSelector: { matchLabels: { app: "web" } },
      load: ["owner"],
    });
    assert.deepEqual(w.objects.map((o) => o.id), [a.id]);
    const it = iter(w);
    const pending = await assertQuiet(clock, it);
    const b = await things.create("b", { n: 2 });
    await things.updateMetadata(b.id, { labels: { app: "web" } });
    const entered = await arrive(clock, pending.next);
    assert.deepEqual([entered.type, entered.id], ["Added", b.id]);
    assert.equal(entered.object?.owner(), undefined);
    await things.updateMetadata(a.id, { labels: { app: null } });
    assert.deepEqual([(await next(it)).type, a.id], ["Deleted", a.id]);
    w.close();
  });
});

test("watchList resumed with a labelSelector streams what matches and reports an object that stops matching as Deleted", async () => {
  await withHive(async ({ things }) => {
    const a = await things.create("a", { n: 1 }, { labels: { app: "web" } });
    const from = a.resourceVersion;
    const b = await things.create("b", { n: 2 }, { labels: { app: "web" } });
    await things.updateMetadata(a.id, { labels: { app: "db" } });
    await things.create("c", { n: 3 });
    const w = await things.watchList({ resumeFrom: from, labelSelector: "app=web" });
    const it = iter(w);
    assert.deepEqual(brief(await next(it)), ["Added", b.id, { n: 2 }]);
    const left = await next(it);
    assert.deepEqual([left.type, left.id], ["Deleted", a.id]);
    w.close();
  });
});

test("watchList resumed with a labelSelector reports Deleted only for an object the watcher could have seen matching", async () => {
  await withHive(async ({ things }) => {
    const web = await things.create("web", { n: 1 }, { labels: { app: "web" } });
    const db = await things.create("db", { n: 2 }, { labels: { app: "db" } });
    const from = db.resourceVersion;
    const w = await things.watchList({ resumeFrom: from, labelSelector: "app=web" });
    const it = iter(w);
    // Never matching: created outside the selection, and changed while outside it.
    await things.create("devonly", { n: 3 }, { labels: { app: "dev" } });
    await things.update(db.id, { n: 20 });
    // Matching at the resume point, then leaving.
    await things.updateMetadata(web.id, { labels: { app: "old" } });
    const marker = await things.create("marker", { n: 4 }, { labels: { app: "web" } });
    assert.deepEqual([(await next(it)).type, web.id], ["Deleted", web.id]);
    assert.deepEqual(brief(await next(it)), ["Added", marker.id, { n: 4 }]);
    w.close();
  });
});

test("watchOwnedObjects with a labelSelector holds only the owner's matching children", async () => {
  await withHive(async ({ things, others }) => {
    const owner = await others.create("owner", { n: 0 });
    const a = await things.create("a", { n: 1 }, { owner: owner.id, labels: { role: "worker" } });
    await things.create("b", { n: 2 }, { owner: owner.id, labels: { role: "leader" } });
    await things.create("c", { n: 3 }, { labels: { role: "worker" } });
    const w = await things.watchOwnedObjects(owner.id, { labelSelector: "role=worker" });
    assert.deepEqual(w.objects.map((o) => o.id), [a.id]);
    const it = iter(w);
    const d = await things.create("d", { n: 4 }, { owner: owner.id, labels: { role: "worker" } });
    assert.deepEqual(brief(await next(it)), ["Added", d.id, { n: 4 }]);
    w.close();
  });
});

test("watchList rejects a malformed labelSelector with InvalidOptionError, opening nothing", async () => {
  await withHive(async ({ things }) => {
    for (const labelSelector of ["app in web", "=web", "app=web,", "a b", 5, ["app"]]) {
      await assert.rejects(
        things.watchList({ labelSelector } as never),
        InvalidOptionError,
        String(labelSelector),
      );
    }
  });
});
