/**
 * Unit tests for the per-kind work queue: dedupe, FIFO, one worker per id,
 * the re-enqueue floor and the push budget, alarm arbitration, forget, the
 * schedule gauge and stop.
 *
 * @module
 */
import assert from "node:assert/strict";
import { test } from "./_test.ts";
import { type FakeClock, installFakeTime } from "./_fake_time.ts";
import { type AlarmKind, PUSH_BURST, type Schedule, WorkQueue } from "../src/engine/work_queue.ts";

/** Runs `fn` under fake time, then stops the queues it made and uninstalls the clock. */
async function withQueue(
  fn: (
    ctx: { clock: FakeClock; t0: number; make: (floor?: number) => WorkQueue },
  ) => void | Promise<void>,
): Promise<void> {
  const clock = installFakeTime();
  const queues: WorkQueue[] = [];
  const make = (floor?: number) => {
    const q = new WorkQueue(floor);
    queues.push(q);
    return q;
  };
  try {
    await fn({ clock, t0: Date.now(), make });
  } finally {
    for (const q of queues) q.stop();
    clock.uninstall();
  }
}

/** Follows a promise without awaiting it. */
function track<T>(p: Promise<T>): { done: boolean; value: T | undefined } {
  const state: { done: boolean; value: T | undefined } = { done: false, value: undefined };
  p.then((v) => {
    state.done = true;
    state.value = v;
  });
  return state;
}

/** Lets every already-settled promise run its callbacks. */
async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

/** The queue's next-due instant for `id`, as epoch ms. */
function due(q: WorkQueue, id: number): number | undefined {
  return q.schedule(id).nextRequeueAt?.getTime();
}

/** Dispatches `id` (which must be at the head) and ends its pass. */
async function runOnce(q: WorkQueue, id: number): Promise<void> {
  assert.equal(await q.get(), id);
  q.done(id);
}

// --- set semantics and dispatch -------------------------------------------

test("WorkQueue queues an id at most once however often it is added", async () => {
  await withQueue(async ({ make }) => {
    const q = make();
    q.add(1);
    q.add(1);
    q.requeueNow(1);
    q.add(2);
    assert.equal(q.size, 2);
    assert.equal(await q.get(), 1);
    assert.equal(await q.get(), 2);
    assert.equal(q.size, 0);
  });
});

test("WorkQueue hands ids out in the order they were added", async () => {
  await withQueue(async ({ make }) => {
    const q = make();
    for (const id of [3, 1, 2]) q.add(id);
    assert.deepEqual([await q.get(), await q.get(), await q.get()], [3, 1, 2]);
  });
});

test("WorkQueue does not hand out an id again while it is processing", async () => {
  await withQueue(async ({ make }) => {
    const q = make(0);
    q.add(1);
    assert.equal(await q.get(), 1);
    assert.equal(q.processing(1), true);
    q.add(1);
    q.requeueNow(1);
    const next = track(q.get());
    await flush();
    assert.equal(next.done, false);
    assert.equal(q.size, 0);
  });
});

test("WorkQueue marks an id added during its pass dirty, due at the add", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make(0);
    q.add(1);
    assert.equal(await q.get(), 1);
    clock.tick(40);
    q.add(1);
    clock.tick(40);
    q.add(1);
    assert.equal(due(q, 1), t0 + 40);
  });
});

test("WorkQueue done requeues a dirty id exactly once", async () => {
  await withQueue(async ({ make }) => {
    const q = make(0);
    q.add(1);
    assert.equal(await q.get(), 1);
    q.add(1);
    q.add(1);
    q.done(1);
    assert.equal(q.processing(1), false);
    assert.equal(q.size, 1);
    assert.equal(await q.get(), 1);
    q.done(1);
    assert.equal(q.size, 0);
    const next = track(q.get());
    await flush();
    assert.equal(next.done, false);
  });
});

test("WorkQueue an id taken ahead reads due until its pass starts, and an add meanwhile marks it dirty", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make(0);
    q.add(1);
    assert.equal(await q.getAhead(), 1);
    assert.equal(q.processing(1), true);
    assert.equal(due(q, 1), t0);
    clock.tick(40);
    q.add(1);
    assert.equal(due(q, 1), t0);
    q.start(1);
    assert.equal(due(q, 1), t0 + 40);
    q.done(1);
    assert.equal(await q.get(), 1);
    assert.equal(due(q, 1), undefined);
  });
});

test("WorkQueue an id taken ahead and handed back without a pass schedules nothing", async () => {
  await withQueue(async ({ make }) => {
    const q = make(0);
    const next = track(q.getAhead());
    q.add(1);
    await flush();
    assert.equal(next.value, 1);
    q.done(1);
    assert.equal(q.processing(1), false);
    assert.equal(due(q, 1), undefined);
  });
});

test("WorkQueue done without an add meanwhile does not requeue", async () => {
  await withQueue(async ({ make }) => {
    const q = make(0);
    q.add(1);
    await runOnce(q, 1);
    assert.equal(q.size, 0);
    assert.equal(due(q, 1), undefined);
  });
});

test("WorkQueue get waits until an id is added", async () => {
  await withQueue(async ({ make }) => {
    const q = make();
    const got = track(q.get());
    await flush();
    assert.equal(got.done, false);
    q.add(7);
    await flush();
    assert.deepEqual(got, { done: true, value: 7 });
    assert.equal(q.processing(7), true);
  });
});

test("WorkQueue stop releases waiting workers with undefined", async () => {
  await withQueue(async ({ make }) => {
    const q = make();
    const a = track(q.get());
    const b = track(q.get());
    await flush();
    assert.equal(a.done || b.done, false);
    q.stop();
    await flush();
    assert.deepEqual([a, b], [{ done: true, value: undefined }, { done: true, value: undefined }]);
  });
});

test("WorkQueue get resolves undefined once stopped, even with ids queued before", async () => {
  await withQueue(async ({ make }) => {
    const q = make();
    q.add(1);
    q.stop();
    assert.equal(q.stopped, true);
    assert.equal(await q.get(), undefined);
  });
});

test("WorkQueue gives each waiting worker a different id", async () => {
  await withQueue(async ({ make }) => {
    const q = make();
    const workers = [q.get(), q.get(), q.get()];
    q.add(1);
    q.add(2);
    q.add(1);
    q.add(3);
    assert.deepEqual(await Promise.all(workers), [1, 2, 3]);
    for (const id of [1, 2, 3]) assert.equal(q.processing(id), true);
  });
});

// --- the re-enqueue floor ---------------------------------------------------

test("WorkQueue never holds the first add of an id", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.add(1);
    assert.equal(due(q, 1), t0);
    assert.equal(clock.countTimers(), 0);
    assert.equal(await q.get(), 1);
  });
});

test("WorkQueue holds a throttled add right after a dispatch until dispatch + 1 s", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.add(1);
    await runOnce(q, 1);
    clock.tick(200);
    q.add(1);
    assert.equal(due(q, 1), t0 + 1_000);
    assert.equal(clock.countTimers(), 1);
    const got = track(q.get());
    clock.tick(799);
    await flush();
    assert.equal(got.done, false);
    clock.tick(1);
    await flush();
    assert.deepEqual(got, { done: true, value: 1 });
  });
});

test("WorkQueue measures the floor from the dispatch, not from the add", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.add(1);
    clock.tick(500);
    await runOnce(q, 1);
    q.add(1);
    assert.equal(due(q, 1), t0 + 1_500);
  });
});

test("WorkQueue lets a throttled add through once the floor window has passed", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.add(1);
    await runOnce(q, 1);
    clock.tick(1_000);
    q.add(1);
    assert.equal(due(q, 1), t0 + 1_000);
    assert.equal(clock.countTimers(), 0);
    assert.equal(q.size, 1);
  });
});

test("WorkQueue floor is per id", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.add(1);
    await runOnce(q, 1);
    q.add(2);
    q.add(1);
    assert.equal(due(q, 2), t0);
    assert.equal(due(q, 1), t0 + 1_000);
    assert.equal(clock.countTimers(), 1);
  });
});

test("WorkQueue with a zero floor never holds a throttled add", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make(0);
    q.add(1);
    await runOnce(q, 1);
    q.add(1);
    assert.equal(due(q, 1), t0);
    assert.equal(clock.countTimers(), 0);
  });
});

test("WorkQueue requeueNow bypasses the floor", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.add(1);
    await runOnce(q, 1);
    q.requeueNow(1);
    assert.equal(due(q, 1), t0);
    assert.equal(clock.countTimers(), 0);
    assert.equal(await q.get(), 1);
  });
});

test("WorkQueue requeueNow clears a pending alarm", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    const kinds: AlarmKind[] = ["backoff", "requeueAfter", "floor", "admit"];
    kinds.forEach((kind, i) => {
      q.addAfter(i + 1, 5_000, kind);
      q.requeueNow(i + 1);
      assert.equal(due(q, i + 1), t0, kind);
    });
    assert.equal(clock.countTimers(), 0);
    for (const id of [1, 2, 3, 4]) await runOnce(q, id);
    clock.tick(5_000);
    assert.equal(q.size, 0);
  });
});

test("WorkQueue requeueNow on a held id replaces the floor alarm with a dispatch", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.add(1);
    await runOnce(q, 1);
    q.add(1);
    assert.equal(due(q, 1), t0 + 1_000);
    q.requeueNow(1);
    assert.equal(due(q, 1), t0);
    assert.equal(clock.countTimers(), 0);
  });
});

// --- throttled adds against pending alarms ----------------------------------

test("WorkQueue add is absorbed by a pending backoff alarm", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.addAfter(1, 5_000, "backoff");
    q.add(1);
    assert.equal(due(q, 1), t0 + 5_000);
    const got = track(q.get());
    clock.tick(4_999);
    await flush();
    assert.equal(got.done, false);
    clock.tick(1);
    await flush();
    assert.deepEqual(got, { done: true, value: 1 });
  });
});

// --- the push budget --------------------------------------------------------

/**
 * Dispatches `id` until its push budget is spent: every dispatch spends a
 * token, the first one (an add) and PUSH_BURST − 1 pushes, each run to its end.
 */
async function spendBudget(q: WorkQueue, id: number): Promise<void> {
  q.add(id);
  await runOnce(q, id);
  for (let i = 1; i < PUSH_BURST; i++) {
    q.push(id);
    await runOnce(q, id);
  }
}

test("WorkQueue push runs an id the floor holds at once while its budget lasts", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.add(1);
    await runOnce(q, 1);
    clock.tick(5);
    q.push(1);
    assert.equal(due(q, 1), t0 + 5, "queued now, not at the floor");
    assert.equal(clock.countTimers(), 0);
    assert.equal(await q.get(), 1);
  });
});

test("WorkQueue push is held by the floor once the budget is spent", async () => {
  await withQueue(async ({ clock, make }) => {
    const q = make();
    await spendBudget(q, 1);
    const last = Date.now();
    q.push(1);
    assert.equal(due(q, 1), last + 1_000, "held by the floor");
    assert.equal(clock.countTimers(), 1);
  });
});

test("WorkQueue push budget refills one token per floor interval", async () => {
  await withQueue(async ({ clock, make }) => {
    const q = make();
    await spendBudget(q, 1);
    clock.tick(1_999); // one whole token back, not two
    q.push(1);
    await runOnce(q, 1);
    q.push(1);
    assert.equal(due(q, 1), Date.now() + 1_000, "the refilled token is spent");
  });
});

test("WorkQueue push paces a loop at the floor after its burst", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    const at: number[] = [];
    q.push(1);
    // Every pass pushes its own id again, as two objects waking each other would.
    for (let i = 0; i < PUSH_BURST + 4; i++) {
      const got = track(q.get());
      await flush();
      while (!got.done) {
        clock.tick(1);
        await flush();
      }
      at.push(Date.now() - t0);
      q.push(1);
      q.done(1);
    }
    assert.deepEqual(at.slice(0, PUSH_BURST), Array(PUSH_BURST).fill(0), "the burst runs at once");
    for (let i = PUSH_BURST; i < at.length; i++) assert.equal(at[i] - at[i - 1], 1_000, `${at}`);
  });
});

test("WorkQueue push replaces a pending floor alarm with a dispatch", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.add(1);
    await runOnce(q, 1);
    q.add(1); // requeueAfter(0): a floor alarm
    assert.equal(due(q, 1), t0 + 1_000);
    q.push(1);
    assert.equal(due(q, 1), t0);
    assert.equal(clock.countTimers(), 0);
  });
});

test("WorkQueue push is absorbed by a pending backoff", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.add(1);
    await runOnce(q, 1);
    q.addAfter(1, 4_000, "backoff");
    q.push(1);
    assert.equal(due(q, 1), t0 + 4_000);
    assert.equal(clock.countTimers(), 1);
  });
});

test("WorkQueue push of a running id runs it again when its pass ends", async () => {
  await withQueue(async ({ make }) => {
    const q = make();
    q.add(1);
    assert.equal(await q.get(), 1);
    q.push(1);
    q.done(1);
    assert.equal(await q.get(), 1);
  });
});

test("WorkQueue forget drops the push budget", async () => {
  await withQueue(async ({ make }) => {
    const q = make();
    await spendBudget(q, 1);
    q.forget(1);
    q.push(1);
    assert.equal(due(q, 1), Date.now(), "a forgotten id starts with a full budget");
  });
});

test("WorkQueue add is absorbed by a pending floor alarm", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.add(1);
    await runOnce(q, 1);
    q.add(1);
    clock.tick(300);
    q.add(1);
    assert.equal(due(q, 1), t0 + 1_000);
    assert.equal(clock.countTimers(), 1);
    assert.equal(q.size, 1);
  });
});

test("WorkQueue add is not absorbed by a pending requeueAfter alarm", async () => {
  await withQueue(async ({ t0, make }) => {
    const q = make();
    q.addAfter(1, 5_000, "requeueAfter");
    q.add(1);
    assert.equal(due(q, 1), t0);
    assert.equal(await q.get(), 1);
  });
});

test("WorkQueue add is not absorbed by a pending admit alarm", async () => {
  await withQueue(async ({ t0, make }) => {
    const q = make();
    q.addAfter(1, 5_000, "admit");
    q.add(1);
    assert.equal(due(q, 1), t0);
    assert.equal(await q.get(), 1);
  });
});

test("WorkQueue a held add keeps a sooner pending requeueAfter alarm", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.add(1);
    await runOnce(q, 1);
    q.addAfter(1, 300, "requeueAfter");
    q.add(1);
    assert.equal(due(q, 1), t0 + 300);
    assert.equal(clock.countTimers(), 1);
    clock.tick(300);
    assert.equal(due(q, 1), t0 + 300);
    assert.equal(q.size, 1);
  });
});

test("WorkQueue a held add replaces a later requeueAfter alarm with the floor", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.add(1);
    await runOnce(q, 1);
    q.addAfter(1, 5_000, "requeueAfter");
    q.add(1);
    assert.equal(due(q, 1), t0 + 1_000);
    assert.equal(clock.countTimers(), 1);
  });
});

test("WorkQueue a held add replaces a pending admit alarm with the floor", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.add(1);
    await runOnce(q, 1);
    q.addAfter(1, 500, "admit");
    q.add(1);
    assert.equal(due(q, 1), t0 + 1_000);
    assert.equal(clock.countTimers(), 1);
  });
});

test("WorkQueue addAfter with ms <= 0 is a throttled add", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.addAfter(1, 0, "requeueAfter");
    assert.equal(due(q, 1), t0);
    await runOnce(q, 1);
    q.addAfter(1, -5, "requeueAfter");
    assert.equal(due(q, 1), t0 + 1_000, "held by the floor");
    q.addAfter(2, 5_000, "backoff");
    q.addAfter(2, 0, "requeueAfter");
    assert.equal(due(q, 2), t0 + 5_000, "absorbed by the backoff");
    assert.equal(clock.countTimers(), 2);
  });
});

test("WorkQueue addAfter fires an alarm at its time as an immediate add", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.add(1);
    await runOnce(q, 1);
    q.addAfter(1, 200, "requeueAfter");
    assert.equal(due(q, 1), t0 + 200);
    const got = track(q.get());
    clock.tick(199);
    await flush();
    assert.equal(got.done, false);
    clock.tick(1);
    await flush();
    assert.deepEqual(got, { done: true, value: 1 }, "not held by the floor");
    assert.equal(clock.countTimers(), 0);
  });
});

// --- alarm arbitration --------------------------------------------------------

test("WorkQueue addAfter backoff replaces a pending alarm of every kind, even a sooner one", async () => {
  await withQueue(({ clock, t0, make }) => {
    const q = make();
    const kinds: AlarmKind[] = ["requeueAfter", "backoff", "floor", "admit"];
    kinds.forEach((kind, i) => q.addAfter(i + 1, 1_000, kind));
    kinds.forEach((_, i) => q.addAfter(i + 1, 5_000, "backoff"));
    kinds.forEach((kind, i) => assert.equal(due(q, i + 1), t0 + 5_000, kind));
    assert.equal(clock.countTimers(), 4);
    clock.tick(1_000);
    assert.equal(q.size, 4, "the superseded timers enqueued nothing");
    kinds.forEach((_, i) => assert.equal(due(q, i + 1), t0 + 5_000));
  });
});

test("WorkQueue addAfter admit never replaces a pending alarm", async () => {
  await withQueue(({ clock, t0, make }) => {
    const q = make();
    const kinds: AlarmKind[] = ["requeueAfter", "backoff", "floor", "admit"];
    kinds.forEach((kind, i) => q.addAfter(i + 1, 5_000, kind));
    kinds.forEach((_, i) => q.addAfter(i + 1, 1_000, "admit"));
    kinds.forEach((kind, i) => assert.equal(due(q, i + 1), t0 + 5_000, kind));
    assert.equal(clock.countTimers(), 4);
  });
});

test("WorkQueue addAfter replaces a pending admit alarm with any other kind", async () => {
  await withQueue(({ clock, t0, make }) => {
    const q = make();
    const kinds: AlarmKind[] = ["requeueAfter", "backoff", "floor"];
    kinds.forEach((_, i) => q.addAfter(i + 1, 1_000, "admit"));
    kinds.forEach((kind, i) => q.addAfter(i + 1, 5_000, kind));
    kinds.forEach((kind, i) => assert.equal(due(q, i + 1), t0 + 5_000, kind));
    clock.tick(1_000);
    assert.equal(q.size, 3, "the admit timers enqueued nothing");
  });
});

test("WorkQueue addAfter floor against another alarm keeps the earlier fire time", async () => {
  await withQueue(({ t0, make }) => {
    const q = make();
    // incoming floor, sooner: replaces
    q.addAfter(1, 5_000, "requeueAfter");
    q.addAfter(1, 1_000, "floor");
    assert.equal(due(q, 1), t0 + 1_000);
    // incoming floor, later: pending kept
    q.addAfter(2, 1_000, "requeueAfter");
    q.addAfter(2, 5_000, "floor");
    assert.equal(due(q, 2), t0 + 1_000);
    // pending floor, incoming sooner: replaced
    q.addAfter(3, 5_000, "floor");
    q.addAfter(3, 1_000, "requeueAfter");
    assert.equal(due(q, 3), t0 + 1_000);
    // pending floor, incoming later: kept
    q.addAfter(4, 1_000, "floor");
    q.addAfter(4, 5_000, "requeueAfter");
    assert.equal(due(q, 4), t0 + 1_000);
  });
});

test("WorkQueue addAfter floor against another alarm at the same time keeps the pending one", async () => {
  await withQueue(({ t0, make }) => {
    const q = make();
    q.addAfter(1, 1_000, "requeueAfter");
    q.addAfter(1, 1_000, "floor");
    // The pending requeueAfter survived: it does not absorb a throttled add.
    q.add(1);
    assert.equal(due(q, 1), t0);

    q.addAfter(2, 1_000, "floor");
    q.addAfter(2, 1_000, "requeueAfter");
    // The pending floor survived: it absorbs a throttled add.
    q.add(2);
    assert.equal(due(q, 2), t0 + 1_000);
  });
});

test("WorkQueue addAfter of two requeueAfter alarms keeps the newest", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.addAfter(1, 1_000, "requeueAfter");
    q.addAfter(1, 5_000, "requeueAfter");
    assert.equal(due(q, 1), t0 + 5_000, "a later newest wins");
    q.addAfter(2, 5_000, "requeueAfter");
    q.addAfter(2, 1_000, "requeueAfter");
    assert.equal(due(q, 2), t0 + 1_000, "a sooner newest wins");
    assert.equal(clock.countTimers(), 2);
    clock.tick(1_000);
    assert.equal(await q.get(), 2);
    assert.equal(q.size, 1, "id 1's superseded timer enqueued nothing");
  });
});

// --- alarms firing mid-pass ---------------------------------------------------

test("WorkQueue a floor alarm firing mid-pass re-arms a full floor interval", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.add(1);
    assert.equal(await q.get(), 1);
    q.add(1);
    assert.equal(due(q, 1), t0 + 1_000);
    clock.tick(1_000);
    assert.equal(due(q, 1), t0 + 2_000);
    q.done(1);
    assert.equal(due(q, 1), t0 + 2_000, "done did not queue it ahead of the floor");
    const got = track(q.get());
    clock.tick(999);
    await flush();
    assert.equal(got.done, false);
    clock.tick(1);
    await flush();
    assert.deepEqual(got, { done: true, value: 1 });
  });
});

test("WorkQueue an admit alarm firing mid-pass is dropped", async () => {
  await withQueue(async ({ clock, make }) => {
    const q = make();
    q.add(1);
    assert.equal(await q.get(), 1);
    q.addAfter(1, 500, "admit");
    clock.tick(500);
    assert.equal(due(q, 1), undefined);
    q.done(1);
    assert.equal(q.size, 0);
    assert.equal(clock.countTimers(), 0);
  });
});

test("WorkQueue a requeueAfter or backoff alarm firing mid-pass marks the id dirty", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    for (const [id, kind] of [[1, "requeueAfter"], [2, "backoff"]] as const) {
      q.add(id);
      assert.equal(await q.get(), id);
      q.addAfter(id, 500, kind);
    }
    clock.tick(500);
    for (const id of [1, 2]) {
      assert.equal(due(q, id), t0 + 500);
      assert.equal(q.size, 0, "not queued while processing");
    }
    q.done(2);
    q.done(1);
    assert.equal(await q.get(), 2);
    assert.equal(await q.get(), 1);
  });
});

// --- forget ---------------------------------------------------------------------

test("WorkQueue forget drops a queued id", async () => {
  await withQueue(async ({ make }) => {
    const q = make();
    q.add(1);
    q.add(2);
    q.forget(1);
    assert.equal(await q.get(), 2);
    assert.equal(q.size, 0);
    assert.equal(due(q, 1), undefined);
  });
});

test("WorkQueue forget drops the dirty mark of a processing id", async () => {
  await withQueue(async ({ make }) => {
    const q = make(0);
    q.add(1);
    assert.equal(await q.get(), 1);
    q.add(1);
    q.forget(1);
    assert.equal(q.processing(1), false);
    assert.equal(due(q, 1), undefined);
    q.done(1);
    assert.equal(q.size, 0);
  });
});

test("WorkQueue forget cancels a pending alarm", async () => {
  await withQueue(({ clock, make }) => {
    const q = make();
    q.addAfter(1, 5_000, "backoff");
    q.forget(1);
    assert.equal(clock.countTimers(), 0);
    assert.equal(due(q, 1), undefined);
    clock.tick(5_000);
    assert.equal(q.size, 0);
  });
});

test("WorkQueue forget drops the floor entry", async () => {
  await withQueue(async ({ clock, t0, make }) => {
    const q = make();
    q.add(1);
    await runOnce(q, 1);
    q.forget(1);
    q.add(1);
    assert.equal(due(q, 1), t0);
    assert.equal(clock.countTimers(), 0);
  });
});

// --- schedule and watch ---------------------------------------------------------

test("WorkQueue schedule reports the instant a queued id became due", async () => {
  await withQueue(({ clock, t0, make }) => {
    const q = make();
    q.add(1);
    clock.tick(250);
    q.add(1);
    assert.deepEqual(q.schedule(1), { nextRequeueAt: new Date(t0) });
  });
});

test("WorkQueue schedule reports due-now for a queued id even with a future alarm", async () => {
  await withQueue(({ t0, make }) => {
    const q = make();
    q.add(1);
    q.addAfter(1, 5_000, "requeueAfter");
    assert.equal(due(q, 1), t0);
  });
});

test("WorkQueue schedule reports a pending alarm's fire time", async () => {
  await withQueue(({ t0, make }) => {
    const q = make();
    q.addAfter(1, 4_000, "requeueAfter");
    assert.deepEqual(q.schedule(1), { nextRequeueAt: new Date(t0 + 4_000) });
  });
});

test("WorkQueue schedule is undefined when nothing is scheduled", async () => {
  await withQueue(async ({ make }) => {
    const q = make();
    assert.deepEqual(q.schedule(9), { nextRequeueAt: undefined });
    q.add(9);
    assert.equal(await q.get(), 9);
    assert.deepEqual(q.schedule(9), { nextRequeueAt: undefined });
  });
});

test("WorkQueue watch emits only when the schedule changes", async () => {
  await withQueue(async ({ t0, make }) => {
    const q = make();
    const seen: (number | undefined)[] = [];
    q.watch(1, (s: Schedule) => seen.push(s.nextRequeueAt?.getTime()));
    assert.deepEqual(seen, [], "no emit on subscribe");
    q.add(1);
    q.add(1);
    q.addAfter(1, 5_000, "requeueAfter");
    q.add(2);
    assert.deepEqual(seen, [t0]);
    assert.equal(await q.get(), 1);
    assert.deepEqual(seen, [t0, t0 + 5_000], "dispatch uncovers the alarm");
    q.done(1);
    assert.deepEqual(seen, [t0, t0 + 5_000]);
  });
});

test("WorkQueue watch reports a requeueNow over an alarm as one move", async () => {
  await withQueue(({ t0, make }) => {
    const q = make();
    const seen: (number | undefined)[] = [];
    q.watch(1, (s) => seen.push(s.nextRequeueAt?.getTime()));
    q.addAfter(1, 3_000, "backoff");
    q.requeueNow(1);
    assert.deepEqual(seen, [t0 + 3_000, t0]);
  });
});

test("WorkQueue watch stops emitting after unsubscribe", async () => {
  await withQueue(async ({ t0, make }) => {
    const q = make();
    const seen: (number | undefined)[] = [];
    const unsubscribe = q.watch(1, (s) => seen.push(s.nextRequeueAt?.getTime()));
    q.add(1);
    unsubscribe();
    assert.equal(await q.get(), 1);
    q.addAfter(1, 2_000, "requeueAfter");
    assert.deepEqual(seen, [t0]);
  });
});

// --- stop -------------------------------------------------------------------------

test("WorkQueue stop clears every pending timer", async () => {
  await withQueue(async ({ clock, make }) => {
    const q = make();
    q.add(1);
    await runOnce(q, 1);
    q.add(1); // a held wake: a floor alarm
    q.addAfter(2, 5_000, "requeueAfter");
    q.addAfter(3, 5_000, "backoff");
    q.addAfter(4, 5_000, "admit");
    assert.equal(clock.countTimers(), 4);
    q.stop();
    assert.equal(clock.countTimers(), 0);
    assert.equal(q.size, 0);
    for (const id of [1, 2, 3, 4]) assert.equal(due(q, id), undefined);
  });
});

test("WorkQueue stop publishes a final undefined schedule to watchers", async () => {
  await withQueue(({ t0, make }) => {
    const q = make();
    const seen: (number | undefined)[] = [];
    q.watch(1, (s) => seen.push(s.nextRequeueAt?.getTime()));
    q.addAfter(1, 5_000, "backoff");
    q.stop();
    assert.deepEqual(seen, [t0 + 5_000, undefined]);
  });
});

test("WorkQueue ignores every add after stop", async () => {
  await withQueue(async ({ clock, make }) => {
    const q = make();
    q.stop();
    q.add(1);
    q.requeueNow(2);
    q.addAfter(3, 1_000, "requeueAfter");
    q.addAfter(4, 0, "requeueAfter");
    assert.equal(q.size, 0);
    assert.equal(clock.countTimers(), 0);
    for (const id of [1, 2, 3, 4]) assert.equal(due(q, id), undefined);
    assert.equal(await q.get(), undefined);
  });
});

test("WorkQueue done after stop does not requeue a dirty id", async () => {
  await withQueue(async ({ make }) => {
    const q = make(0);
    q.add(1);
    assert.equal(await q.get(), 1);
    q.add(1);
    q.stop();
    q.done(1);
    assert.equal(q.size, 0);
    assert.equal(await q.get(), undefined);
  });
});
