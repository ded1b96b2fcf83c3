/**
 * Triggers: `triggerById` and `triggerByName` feeds (async generators and
 * ReadableStreams) requeue within the kind, ignore what does not address one
 * of its objects, keep the retry ladder, and end with their iterable or with
 * the Beehive. Everything runs under fake time over a real SQLite store.
 *
 * @module
 */
import assert from "node:assert/strict";
import { fail } from "../mod.ts";
import { test } from "./_test.ts";
import { countingObjectCalls, type Harness, Other, withHarness } from "./_beehive_harness.ts";

/** A feed driven by hand: an async generator over values pushed into it. */
interface GeneratorFeed<T> {
  readonly iterable: AsyncIterable<T>;
  push(value: T): void;
  /** Lets the generator return once what was pushed is consumed. */
  end(): void;
  /** Whether the generator ran to completion (its `finally` ran). */
  readonly finished: boolean;
}

function generatorFeed<T>(): GeneratorFeed<T> {
  const items: T[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  let finished = false;
  const poke = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  async function* run(): AsyncGenerator<T> {
    try {
      for (;;) {
        while (items.length > 0) yield items.shift()!;
        if (ended) return;
        await new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      finished = true;
    }
  }
  return {
    iterable: run(),
    push(value) {
      items.push(value);
      poke();
    },
    end() {
      ended = true;
      poke();
    },
    get finished() {
      return finished;
    },
  };
}

/** A feed as a ReadableStream, with its controller. */
function streamFeed<T>(): { iterable: ReadableStream<T>; push(value: T): void; end(): void } {
  let controller!: ReadableStreamDefaultController<T>;
  const iterable = new ReadableStream<T>({ start: (c) => void (controller = c) });
  return { iterable, push: (value) => controller.enqueue(value), end: () => controller.close() };
}

/** A hand-written async iterator that counts how it is driven. */
class CountingFeed<T> implements AsyncIterableIterator<T> {
  nextCalls = 0;
  returnCalls = 0;
  readonly #items: T[] = [];
  #waiting: ((r: IteratorResult<T>) => void) | undefined;
  #ended = false;

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<T>> {
    this.nextCalls++;
    if (this.#items.length > 0) {
      return Promise.resolve({ done: false, value: this.#items.shift()! });
    }
    if (this.#ended) return Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve) => (this.#waiting = resolve));
  }

  return(): Promise<IteratorResult<T>> {
    this.returnCalls++;
    this.end();
    return Promise.resolve({ done: true, value: undefined });
  }

  push(value: T): void {
    const w = this.#waiting;
    this.#waiting = undefined;
    if (w !== undefined) w({ done: false, value });
    else this.#items.push(value);
  }

  end(): void {
    this.#ended = true;
    const w = this.#waiting;
    this.#waiting = undefined;
    w?.({ done: true, value: undefined });
  }
}

/** How many passes ran over `id`. */
function passCount(h: Harness, id: number): number {
  return h.passes.filter((p) => p.id === id).length;
}

const sources = [
  ["an async generator", generatorFeed],
  ["a ReadableStream", streamFeed],
] as const;

for (const [label, make] of sources) {
  test(`Trigger triggerById from ${label} requeues each id received`, async () => {
    const feed = make<number>();
    await withHarness({ register: { triggerById: feed.iterable } }, async (h) => {
      await h.start();
      const a = await h.create("a");
      const b = await h.create("b");
      assert.equal(h.passes.length, 2);
      // Settled, and every periodic pass far away: only the feed can dispatch them.
      feed.push(a.id);
      await h.flush();
      assert.deepEqual(h.passes.map((p) => p.id), [a.id, b.id, a.id]);
      await h.tick(5_000);
      feed.push(b.id);
      feed.push(a.id);
      await h.flush();
      assert.equal(passCount(h, a.id), 3);
      assert.equal(passCount(h, b.id), 2);
    });
  });

  test(`Trigger triggerByName from ${label} requeues the object holding each name within the kind`, async () => {
    const feed = make<string>();
    const counts = new Map<string, number>();
    await withHarness(
      { register: { triggerByName: feed.iterable }, wrap: countingObjectCalls(counts) },
      async (h) => {
        await h.start();
        const a = await h.create("a");
        // The same name in another kind, and a name only another kind holds.
        await h.bh.client(Other).create("a", {});
        await h.bh.client(Other).create("elsewhere", {});
        const loads = counts.get("getForReconcile");
        feed.push("a");
        await h.flush();
        assert.deepEqual(h.passes.map((p) => p.id), [a.id, a.id]);
        feed.push("elsewhere");
        await h.flush();
        assert.equal(h.passes.length, 2);
        assert.equal(counts.get("getForReconcile"), loads! + 1);
      },
    );
  });
}

test("Trigger triggerById ignores unknown ids, another kind's ids and malformed values, and keeps serving", async () => {
  const feed = generatorFeed<unknown>();
  const counts = new Map<string, number>();
  await withHarness({
    register: { triggerById: feed.iterable as AsyncIterable<number> },
    wrap: countingObjectCalls(counts),
  }, async (h) => {
    await h.start();
    const a = await h.create("a");
    const other = await h.bh.client(Other).create("o", {});
    const loads = counts.get("getForReconcile");
    for (
      const bad of [999_999, other.id, String(a.id), 0, -1, 1.5, NaN, Infinity, null, undefined, {
        id: a.id,
      }, [a.id]]
    ) {
      feed.push(bad);
    }
    await h.flush();
    assert.equal(h.passes.length, 1);
    assert.equal(counts.get("getForReconcile"), loads, "nothing was queued");
    assert.deepEqual(h.logger.lines.filter((l) => l.level === "warn" || l.level === "error"), []);
    feed.push(a.id);
    await h.flush();
    assert.deepEqual(h.passes.map((p) => p.id), [a.id, a.id]);
  });
});

test("Trigger triggerByName ignores unknown names and malformed values, and keeps serving", async () => {
  const feed = generatorFeed<unknown>();
  const counts = new Map<string, number>();
  await withHarness({
    register: { triggerByName: feed.iterable as AsyncIterable<string> },
    wrap: countingObjectCalls(counts),
  }, async (h) => {
    await h.start();
    const a = await h.create("a");
    const loads = counts.get("getForReconcile");
    for (const bad of ["nope", "", "\ud800", "A", 42, a.id, null, undefined, { name: "a" }]) {
      feed.push(bad);
    }
    await h.flush();
    assert.equal(h.passes.length, 1);
    assert.equal(counts.get("getForReconcile"), loads, "nothing was queued");
    assert.deepEqual(h.logger.lines.filter((l) => l.level === "warn" || l.level === "error"), []);
    feed.push("a");
    await h.flush();
    assert.deepEqual(h.passes.map((p) => p.id), [a.id, a.id]);
  });
});

test("Trigger a poke keeps the retry ladder", async () => {
  const feed = generatorFeed<number>();
  await withHarness({ register: { triggerById: feed.iterable } }, async (h) => {
    h.fallback = () => fail(new Error("still broken"));
    await h.start();
    const origin = Date.now();
    const obj = await h.create("a"); // fails: retry at 1 s
    await h.tick(1_000); // fails: retry 2 s later
    await h.tick(500);
    feed.push(obj.id);
    await h.flush(); // fails at 1.5 s: the ladder climbed to 4 s
    assert.deepEqual(h.passes.map((p) => p.at - origin), [0, 1_000, 1_500]);
    const { nextRequeueAt } = await h.things.getSchedule(obj.id);
    assert.equal(nextRequeueAt?.getTime(), origin + 5_500);
  });
});

test("Trigger feed ends when its iterable ends: nothing more is pulled from it", async () => {
  const feed = new CountingFeed<number>();
  await withHarness({ register: { triggerById: feed } }, async (h) => {
    await h.start();
    const a = await h.create("a");
    feed.push(a.id);
    feed.end();
    await h.flush();
    assert.equal(passCount(h, a.id), 2, "what was received before the end is served");
    assert.equal(feed.nextCalls, 2);
    await h.tick(120_000);
    await h.stop();
    assert.equal(feed.nextCalls, 2);
    // An ended iterator is let go of: stop has nothing to return.
    assert.equal(feed.returnCalls, 0);
  });
});

test("Trigger feed from an async generator ends when the generator returns", async () => {
  const feed = generatorFeed<number>();
  await withHarness({ register: { triggerById: feed.iterable } }, async (h) => {
    await h.start();
    const a = await h.create("a");
    feed.push(a.id);
    feed.end();
    await h.flush();
    assert.equal(passCount(h, a.id), 2);
    assert.equal(feed.finished, true);
  });
});

test("Trigger feed ends when the Beehive stops: the iterator's return() is called and stop resolves", async () => {
  const byId = new CountingFeed<number>();
  const byName = new CountingFeed<string>();
  await withHarness({ register: { triggerById: byId, triggerByName: byName } }, async (h) => {
    await h.start();
    // Both loops wait in next() on an idle producer.
    assert.equal(byId.nextCalls, 1);
    assert.equal(byName.nextCalls, 1);
    let stopped = false;
    const stopping = h.stop().then(() => (stopped = true));
    await h.flush();
    assert.equal(stopped, true);
    await stopping;
    assert.equal(byId.returnCalls, 1);
    assert.equal(byName.returnCalls, 1);
    // Nothing pulls after stop.
    byId.push(1);
    await h.flush();
    assert.equal(byId.nextCalls, 1);
  });
});

test("Trigger feed from a ReadableStream does not hold stop while the stream is idle", async () => {
  const feed = streamFeed<number>();
  await withHarness({ register: { triggerById: feed.iterable } }, async (h) => {
    await h.start();
    const a = await h.create("a");
    feed.push(a.id);
    await h.flush();
    assert.equal(passCount(h, a.id), 2);
    let stopped = false;
    const stopping = h.stop().then(() => (stopped = true));
    await h.flush();
    assert.equal(stopped, true);
    await stopping;
    // Once the pending read settles, the stream is released.
    feed.end();
    await h.flush();
    assert.equal(feed.iterable.locked, false);
  });
});

test("Trigger feed whose return() misbehaves does not keep stop from resolving", async () => {
  const throwing: AsyncIterableIterator<number> = {
    [Symbol.asyncIterator]() {
      return this;
    },
    next: () => new Promise(() => {}),
    return() {
      throw new Error("return exploded");
    },
  };
  const sloppy = {
    [Symbol.asyncIterator]() {
      return this;
    },
    next: () => new Promise(() => {}),
    // Not a promise, against the protocol.
    return: () => ({ done: true, value: undefined }),
  } as unknown as AsyncIterableIterator<string>;
  await withHarness({ register: { triggerById: throwing, triggerByName: sloppy } }, async (h) => {
    await h.start();
    let stopped = false;
    const stopping = h.stop().then(() => (stopped = true));
    await h.flush();
    assert.equal(stopped, true);
    await stopping;
  });
});

test("Trigger feed whose next() rejects is logged and ends; the kind keeps reconciling", async () => {
  const broken: AsyncIterableIterator<number> = {
    [Symbol.asyncIterator]() {
      return this;
    },
    next: () => Promise.reject(new Error("feed broke")),
  };
  await withHarness({ register: { triggerById: broken } }, async (h) => {
    await h.start();
    const logged = h.logger.lines.filter((l) => l.level === "error" || l.level === "warn");
    assert.equal(logged.length, 1);
    assert.equal((logged[0].attributes?.error as Error).message, "feed broke");
    const a = await h.create("a");
    assert.equal(passCount(h, a.id), 1);
    assert.equal((await h.store.objects.getMeta(a.id)).observedGeneration, 1);
  });
});

test("Trigger a burst of pokes for one address costs one store read and one enqueue", async () => {
  const byId = streamFeed<number>();
  const byName = streamFeed<string>();
  const counts = new Map<string, number>();
  await withHarness({
    register: { triggerById: byId.iterable, triggerByName: byName.iterable },
    wrap: countingObjectCalls(counts),
  }, async (h) => {
    await h.start();
    const a = await h.create("a");
    const b = await h.create("b");
    const before = new Map(counts);
    const delta = (m: string) => (counts.get(m) ?? 0) - (before.get(m) ?? 0);
    for (let i = 0; i < 50; i++) {
      byId.push(a.id);
      byId.push(b.id);
      byName.push("b");
    }
    await h.flush();
    assert.equal(delta("listByIds"), 1, "one read for every id of the burst");
    assert.equal(delta("getMeta"), 0);
    assert.equal(delta("getMetaByName"), 1, "one read per distinct name");
    assert.equal(passCount(h, a.id), 2, "one enqueue for a");
    assert.equal(passCount(h, b.id), 2, "one enqueue for b, poked by id and by name");
  });
});

test("Trigger several feeds of a kind are all served", async () => {
  const first = generatorFeed<number>();
  const second = streamFeed<number>();
  const names = [generatorFeed<string>(), generatorFeed<string>()];
  await withHarness({
    register: {
      triggerById: [first.iterable, second.iterable],
      triggerByName: names.map((f) => f.iterable),
    },
  }, async (h) => {
    await h.start();
    const a = await h.create("a");
    const b = await h.create("b");
    const c = await h.create("c");
    first.push(a.id);
    await h.flush();
    second.push(b.id);
    await h.flush();
    names[1].push("c");
    await h.flush();
    assert.equal(passCount(h, a.id), 2);
    assert.equal(passCount(h, b.id), 2);
    assert.equal(passCount(h, c.id), 2);
    // One feed ending leaves the others serving.
    first.end();
    await h.flush();
    assert.equal(first.finished, true);
    second.push(a.id);
    await h.flush();
    assert.equal(passCount(h, a.id), 3);
  });
});
