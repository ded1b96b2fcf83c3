/**
 * `createTestEnv`: a Beehive on an in-memory store and fake time — settling
 * without moving time, advancing timer by timer, reporting what passes
 * throw, and refusing bad input. Runs under Deno (sanitizers on) and Node.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  fail,
  type GroupKind,
  InvalidOptionError,
  InvalidResultError,
  type ReconcileResult,
  settled,
  StoppedError,
} from "../../mod.ts";
import { createTestEnv, type TestEnv } from "../../testing/mod.ts";
import { test } from "../_test.ts";

const Widget: GroupKind = { group: "test.beehive.dev", kind: "Widget" };
const HOUR = 3_600_000;

/** Runs `fn` on a fresh env, closed whatever happens. */
async function withEnv(fn: (env: TestEnv) => Promise<void>): Promise<void> {
  const env = await createTestEnv();
  try {
    await fn(env);
  } finally {
    await env.close();
  }
}

test("createTestEnv builds a Beehive that is not started, on an open in-memory store", async () => {
  await withEnv(async (env) => {
    assert.equal(env.bh.isLeader, false);
    const w = await env.bh.client(Widget).create("a", {});
    assert.equal((await env.store.objects.get(w.id))?.name, "a");
  });
});

test("TestEnv.start runs the startup passes before it resolves", async () => {
  await withEnv(async (env) => {
    await env.bh.client(Widget).create("early", {});
    const seen: string[] = [];
    env.bh.register(Widget, (obj) => {
      seen.push(obj.name);
      return settled();
    });
    await env.start();
    assert.deepEqual(seen, ["early"]);
    assert.equal(env.bh.isLeader, true);
  });
});

test("TestEnv.settle runs a new object's pass and its status write without moving time", async () => {
  await withEnv(async (env) => {
    env.bh.register<unknown, { seen: boolean }>(Widget, async (_obj, cc) => {
      await cc.updateStatus({ seen: true });
      return settled();
    });
    await env.start();
    const before = Date.now();
    const created = await env.bh.client(Widget).create("a", {});
    await env.settle();
    const after = await env.bh.client<unknown, { seen: boolean }>(Widget).get(created.id);
    assert.deepEqual(after.status, { seen: true });
    assert.equal(after.observedGeneration, 1);
    assert.equal(Date.now(), before);
  });
});

test("TestEnv.settle leaves a requeueAfter of an hour undue, and advance of an hour runs it", async () => {
  await withEnv(async (env) => {
    const at: number[] = [];
    env.bh.register(Widget, () => {
      at.push(Date.now());
      return settled().requeueAfter(HOUR);
    });
    await env.start();
    const t0 = Date.now();
    await env.bh.client(Widget).create("a", {});
    await env.settle();
    assert.deepEqual(at, [t0]);
    await env.advance(HOUR - 1);
    assert.deepEqual(at, [t0]);
    await env.advance(1);
    assert.deepEqual(at, [t0, t0 + HOUR]);
    assert.equal(Date.now(), t0 + HOUR);
  });
});

test("TestEnv.advance fires each timer at its own instant, the passes between them concluded", async () => {
  await withEnv(async (env) => {
    const at: number[] = [];
    env.bh.register(Widget, () => {
      at.push(Date.now());
      return settled().requeueAfter(1_000);
    });
    await env.start();
    const t0 = Date.now();
    await env.bh.client(Widget).create("a", {});
    await env.advance(3_500);
    assert.deepEqual(at, [t0, t0 + 1_000, t0 + 2_000, t0 + 3_000]);
    assert.equal(Date.now(), t0 + 3_500);
  });
});

test("TestEnv.advance delivers a dependency's wake, which the engine paces after its scan", async () => {
  await withEnv(async (env) => {
    const Target: GroupKind = { group: "test.beehive.dev", kind: "Target" };
    const targets = env.bh.client<{ v: number }>(Target);
    const seen: number[] = [];
    env.bh.register<{ target: number }>(Widget, async (obj, cc) => {
      await cc.addDependency(obj.spec.target);
      seen.push((await targets.get(obj.spec.target)).spec.v);
      return settled();
    });
    env.bh.register(Target, () => settled());
    await env.start();
    const target = await targets.create("t", { v: 1 });
    await env.bh.client(Widget).create("w", { target: target.id });
    await env.settle();
    for (let v = 2; v <= 8; v++) {
      await targets.update(target.id, { v });
      await env.advance(1_000);
      assert.equal(seen.at(-1), v);
    }
  });
});

test("TestEnv.settle rejects with the error a pass threw, once, after settling", async () => {
  await withEnv(async (env) => {
    const boom = new Error("boom");
    let passes = 0;
    env.bh.register(Widget, () => {
      passes++;
      if (passes === 1) throw boom;
      return settled();
    });
    await env.start();
    await env.bh.client(Widget).create("a", {});
    await assert.rejects(env.settle(), (e) => e === boom);
    await env.settle();
    // The thrown pass took the retry ladder: its first rung is a second away.
    await env.advance(1_000);
    assert.equal(passes, 2);
  });
});

test("TestEnv.settle rejects with an AggregateError of every error when several passes threw", async () => {
  await withEnv(async (env) => {
    env.bh.register(Widget, (obj) => {
      throw new Error(`broken ${obj.name}`);
    });
    await env.start();
    await env.bh.client(Widget).create("a", {});
    await env.bh.client(Widget).create("b", {});
    const error = await env.settle().then(() => undefined, (e: unknown) => e);
    assert.ok(error instanceof AggregateError);
    assert.deepEqual(error.errors.map((e: Error) => e.message).sort(), ["broken a", "broken b"]);
    assert.match(error.message, /^2 errors in reconcile passes; the first: broken [ab]$/);
  });
});

test("TestEnv.advance rejects with what the passes it ran threw, after moving all the way", async () => {
  await withEnv(async (env) => {
    let passes = 0;
    env.bh.register(Widget, () => {
      passes++;
      if (passes > 1) throw new Error(`pass ${passes}`);
      return settled().requeueAfter(HOUR);
    });
    await env.start();
    const t0 = Date.now();
    await env.bh.client(Widget).create("a", {});
    await env.settle();
    await assert.rejects(env.advance(HOUR + 1_500), /pass 2/);
    assert.equal(Date.now(), t0 + HOUR + 1_500);
  });
});

test("TestEnv.settle does not report a failure the controller returns", async () => {
  await withEnv(async (env) => {
    let passes = 0;
    env.bh.register(Widget, () => {
      passes++;
      return fail(new Error("not yet"));
    });
    await env.start();
    await env.bh.client(Widget).create("a", {});
    await env.settle();
    await env.advance(1_000);
    assert.equal(passes, 2);
  });
});

test("TestEnv.settle reports a controller that returns something that is not a result", async () => {
  await withEnv(async (env) => {
    env.bh.register(Widget, () => "done" as unknown as ReconcileResult);
    await env.start();
    await env.bh.client(Widget).create("a", {});
    await assert.rejects(env.settle(), InvalidResultError);
  });
});

test("TestEnv.settle returns while a pass awaits something outside the engine", async () => {
  await withEnv(async (env) => {
    const gate = Promise.withResolvers<void>();
    let finished = false;
    env.bh.register(Widget, async () => {
      await gate.promise;
      finished = true;
      return settled();
    });
    await env.start();
    await env.bh.client(Widget).create("a", {});
    await env.settle();
    assert.equal(finished, false);
    gate.resolve();
    await env.settle();
    assert.equal(finished, true);
  });
});

test("TestEnv.close reports an error a pass threw after the last settle, once closed", async () => {
  const env = await createTestEnv();
  const gate = Promise.withResolvers<void>();
  env.bh.register(Widget, async () => {
    await gate.promise;
    throw new Error("late");
  });
  await env.start();
  await env.bh.client(Widget).create("a", {});
  await env.settle();
  gate.resolve();
  await assert.rejects(env.close(), /late/);
  await assert.rejects(env.settle(), StoppedError);
});

test("TestEnv.close lets a pass that waits on a timer of its own finish", async () => {
  const env = await createTestEnv();
  let finished = false;
  env.bh.register(Widget, async () => {
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    finished = true;
    return settled();
  });
  await env.start();
  await env.bh.client(Widget).create("a", {});
  await env.settle();
  assert.equal(finished, false);
  await env.close();
  assert.equal(finished, true);
});

test("TestEnv.advance refuses a negative, non-finite or non-number ms with a RangeError", async () => {
  await withEnv(async (env) => {
    const t0 = Date.now();
    for (const ms of [-1, NaN, Infinity, -Infinity, "10", undefined]) {
      await assert.rejects(
        env.advance(ms as number),
        (e: unknown) =>
          e instanceof RangeError &&
          /^Cannot advance the test env: current value is /.test(e.message),
      );
    }
    assert.equal(Date.now(), t0);
  });
});

test("TestEnv start, settle and advance on a closed env reject with StoppedError; close again resolves", async () => {
  const env = await createTestEnv();
  await env.close();
  await assert.rejects(env.settle(), {
    name: "StoppedError",
    message: "Cannot settle the test env: it is closed",
  });
  await assert.rejects(env.advance(1), StoppedError);
  await assert.rejects(env.start(), StoppedError);
  await env.close();
});

test("TestEnv.settle refuses to run while an advance not awaited is still running", async () => {
  await withEnv(async (env) => {
    await env.start();
    const advancing = env.advance(60_000);
    await assert.rejects(env.settle(), {
      message: "Cannot settle the test env: advance() is still running; await each step",
    });
    await advancing;
    await env.settle();
  });
});

test("TestEnv.close gives the real clock back", async () => {
  const realSetTimeout = globalThis.setTimeout;
  const env = await createTestEnv();
  assert.notEqual(globalThis.setTimeout, realSetTimeout);
  await env.close();
  assert.equal(globalThis.setTimeout, realSetTimeout);
});

test("createTestEnv refuses a second env while one is open", async () => {
  await withEnv(async () => {
    await assert.rejects(createTestEnv(), /another is open in this process; close it first/);
  });
  await (await createTestEnv()).close();
});

test("createTestEnv refuses an out-of-range Beehive option and leaves no fake time behind", async () => {
  const realSetTimeout = globalThis.setTimeout;
  await assert.rejects(
    createTestEnv({ options: { concurrency: 0 } }),
    InvalidOptionError,
  );
  assert.equal(globalThis.setTimeout, realSetTimeout);
  await assert.rejects(createTestEnv(null as never), TypeError);
  await assert.rejects(createTestEnv({ options: 5 as never }), TypeError);
  await (await createTestEnv()).close();
});

test("createTestEnv passes the Beehive's logger everything it logs", async () => {
  const lines: string[] = [];
  const log = (message: string) => void lines.push(message);
  const env = await createTestEnv({
    options: { logger: { debug: log, info: log, warn: log, error: log }, logLevel: "debug" },
  });
  try {
    env.bh.register(Widget, () => {
      throw new Error("boom");
    });
    await env.start();
    await env.bh.client(Widget).create("a", {});
    await assert.rejects(env.settle(), /boom/);
    assert.ok(lines.includes("beehive: reconcile failed; retrying with backoff"));
  } finally {
    await env.close();
  }
});

test("TestEnv.settle delivers every change to a watchList opened in the test, without advance", async () => {
  await withEnv(async (env) => {
    env.bh.register<{ n: number }, { n: number }>(Widget, async (obj, cc) => {
      await cc.updateStatus({ n: obj.spec.n });
      return settled();
    });
    await env.start();
    const client = env.bh.client<{ n: number }, { n: number }>(Widget);
    const list = await client.watchList();
    try {
      const changes = list[Symbol.asyncIterator]();
      const w = await client.create("seen", { n: 1 });
      await env.settle();
      const added = await changes.next();
      assert.equal(added.value.type, "Added");
      assert.deepEqual(added.value.object?.status, { n: 1 });
      // Written at the instant of the last drain: the watches' pacing would put this one off.
      await client.update(w.id, { n: 2 });
      await env.settle();
      const modified = await changes.next();
      assert.equal(modified.value.type, "Modified");
      assert.deepEqual(modified.value.object?.status, { n: 2 });
    } finally {
      list.close();
    }
  });
});
