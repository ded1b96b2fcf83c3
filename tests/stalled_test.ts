/**
 * Permanent failures: a `PermanentError` stalls its object (the `Stalled`
 * condition, a `Warning` event, no stamp, no retry), every periodic pass skips
 * it while its generation stays the one it stalled at, across restarts, and a
 * new generation, a requeue, a trigger, a dependency wake or a push from an
 * owned object runs it again; a later settled pass recovers it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { fail, PermanentError, settled } from "../mod.ts";
import { test } from "./_test.ts";
import {
  type AnyObject,
  type Harness,
  Other,
  tempDir,
  Thing,
  withHarness,
} from "./_beehive_harness.ts";
import { type FakeClock, installFakeTime } from "./_fake_time.ts";

const MINUTE = 60_000;

function passesOf(h: Harness, id: number): number {
  return h.passes.filter((p) => p.id === id).length;
}

function stalledCondition(obj: AnyObject) {
  return obj.conditions.find((c: { type: string }) => c.type === "Stalled");
}

/** A controller that stalls every pass over objects named `poison*` and settles the rest. */
function poisonous(obj: AnyObject) {
  if (String(obj.name).startsWith("poison")) {
    throw new PermanentError(`spec ${JSON.stringify(obj.spec)} names no image`, {
      reason: "BadImage",
    });
  }
  return settled();
}

async function withFile(fn: (path: string, clock: FakeClock) => Promise<void>): Promise<void> {
  const dir = tempDir();
  const clock = installFakeTime();
  try {
    await fn(dir.file("beehive.db"), clock);
  } finally {
    clock.uninstall();
    dir.remove();
  }
}

test("PermanentError defaults its reason to PermanentError and keeps a given reason and cause", () => {
  const cause = new Error("404");
  const plain = new PermanentError("no such image");
  assert.equal(plain.reason, "PermanentError");
  assert.equal(plain.name, "PermanentError");
  assert.equal(plain.message, "no such image");
  const given = new PermanentError("no such image", { reason: "BadImage", cause });
  assert.equal(given.reason, "BadImage");
  assert.equal(given.cause, cause);
});

test("PermanentError refuses an empty, malformed or non-string reason with a TypeError", () => {
  for (const reason of ["", "\ud800", 5]) {
    assert.throws(
      () => new PermanentError("x", { reason: reason as string }),
      (e: unknown) => e instanceof TypeError && /Cannot create a PermanentError/.test(e.message),
    );
  }
});

for (
  const [how, job] of [
    ["throws", () => {
      throw new PermanentError("the image tag does not exist", { reason: "BadImage" });
    }],
    [
      "returns fail() with",
      () => fail(new PermanentError("the image tag does not exist", { reason: "BadImage" })),
    ],
  ] as const
) {
  test(`Stalled a pass that ${how} a PermanentError sets Stalled=True, adds a Warning event, stamps nothing and schedules nothing`, async () => {
    await withHarness({}, async (h) => {
      await h.start();
      h.fallback = job;
      const obj = await h.create("poison", { image: "nope" });
      const got = await h.things.get(obj.id);
      const c = stalledCondition(got);
      assert.equal(c?.status, "True");
      assert.equal(c?.reason, "BadImage");
      assert.equal(c?.message, "the image tag does not exist");
      assert.equal(got.observedGeneration, undefined);
      const events = await h.things.listEvents(obj.id);
      assert.equal(events.length, 1);
      assert.equal(events[0].type, "Warning");
      assert.equal(events[0].reason, "BadImage");
      assert.equal(events[0].message, "the image tag does not exist");
      assert.deepEqual(await h.things.getSchedule(obj.id), { nextRequeueAt: undefined });
      assert.ok(
        h.logger.lines.some((l) =>
          l.level === "warn" && /failed permanently/.test(l.message) &&
          l.attributes?.reason === "BadImage"
        ),
      );
      // No retry ladder: an hour of owed passes runs it never again.
      await h.tick(60 * MINUTE);
      assert.equal(passesOf(h, obj.id), 1);
    });
  });
}

test("Stalled a PermanentError reason above limits.fieldBytes is recorded cut to the limit", async () => {
  await withHarness({ beehive: { limits: { fieldBytes: 16 } } }, async (h) => {
    await h.start();
    h.fallback = () => {
      throw new PermanentError("too long a reason", { reason: "é".repeat(1_000) });
    };
    const obj = await h.create("poison");
    const got = await h.things.get(obj.id);
    assert.equal(stalledCondition(got)?.reason, "é".repeat(5));
    assert.equal((await h.things.listEvents(obj.id))[0].reason, "é".repeat(5));
    assert.equal(passesOf(h, obj.id), 1);
  });
});

test("Stalled the owed pass under fake time does not touch a stalled object, while a transient failure keeps retrying", async () => {
  await withHarness({ beehive: { owedPassInterval: 5_000 } }, async (h) => {
    await h.start();
    h.fallback = (obj) => {
      if (obj.name === "poison") throw new PermanentError("never");
      throw new Error("transient");
    };
    const poison = await h.create("poison");
    const flaky = await h.create("flaky");
    assert.deepEqual(await h.store.objects.listUnsettledIds(Thing), [flaky.id]);
    await h.tick(10 * MINUTE);
    assert.equal(passesOf(h, poison.id), 1);
    assert.ok(passesOf(h, flaky.id) > 10);
  });
});

test("Stalled a full pass and the individual pass skip a stalled object", async () => {
  await withHarness(
    { beehive: { fullPassInterval: 10_000, individualPassInterval: 7_000 } },
    async (h) => {
      await h.start();
      h.fallback = poisonous;
      const poison = await h.create("poison");
      const healthy = await h.create("healthy");
      await h.tick(5 * MINUTE);
      assert.equal(passesOf(h, poison.id), 1);
      assert.ok(passesOf(h, healthy.id) >= 30);
    },
  );
});

test("Stalled a new generation runs the object again, and a pass that settles sets Stalled=False with reason Recovered", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    h.fallback = (obj) => obj.spec.ok ? settled() : poisonous(obj);
    const obj = await h.create("poison", { ok: false });
    await h.things.update(obj.id, { ok: false, v: 2 });
    await h.flush();
    assert.deepEqual(h.passes.map((p) => p.generation), [1, 2]);
    assert.equal(stalledCondition(await h.things.get(obj.id))?.status, "True");
    assert.equal((await h.store.objects.getForReconcile(obj.id)).stalledGeneration, 2);
    await h.things.update(obj.id, { ok: true });
    await h.flush();
    const got = await h.things.get(obj.id);
    assert.equal(got.observedGeneration, 3);
    const c = stalledCondition(got);
    assert.equal(c?.status, "False");
    assert.equal(c?.reason, "Recovered");
    assert.equal((await h.store.objects.getForReconcile(obj.id)).stalledGeneration, undefined);
    // A settled object with an old Stalled=False is written no further.
    const rv = got.resourceVersion;
    await h.things.requeue(obj.id);
    await h.flush();
    assert.equal((await h.things.get(obj.id)).resourceVersion, rv);
  });
});

test("Stalled requeue runs a stalled object again at its stalled generation", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    h.fallback = poisonous;
    const obj = await h.create("poison");
    await h.tick(MINUTE);
    h.queue(obj.id, () => settled());
    await h.things.requeue(obj.id);
    await h.flush();
    assert.equal(passesOf(h, obj.id), 2);
    const got = await h.things.get(obj.id);
    assert.equal(got.observedGeneration, 1);
    assert.equal(stalledCondition(got)?.reason, "Recovered");
  });
});

test("Stalled a trigger runs a stalled object again", async () => {
  let push!: (id: number) => void;
  const feed = new ReadableStream<number>({
    start(controller) {
      push = (id) => controller.enqueue(id);
    },
  });
  await withHarness({ register: { triggerById: feed } }, async (h) => {
    await h.start();
    h.fallback = poisonous;
    const obj = await h.create("poison");
    await h.tick(MINUTE);
    push(obj.id);
    await h.flush();
    assert.equal(passesOf(h, obj.id), 2);
  });
});

test("Stalled a dependency wake runs a stalled object again", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const target = await h.bh.client(Other).create("target", { v: 1 });
    h.fallback = async (obj, cc) => {
      await cc.addDependency(target.id);
      return poisonous(obj);
    };
    const obj = await h.create("poison");
    await h.tick(MINUTE);
    const before = passesOf(h, obj.id);
    // The stall consumed the owed count it loaded and the watermark: nothing is owed now.
    assert.deepEqual(await h.store.reconcileOwed.listIds(Thing), []);
    await h.tick(10 * MINUTE);
    assert.equal(passesOf(h, obj.id), before);
    await h.bh.client(Other).update(target.id, { v: 2 });
    await h.tick(2_000);
    assert.equal(passesOf(h, obj.id), before + 1);
  });
});

test("Stalled a push from an owned object (its collection) runs the stalled deleting owner again, and the GC sweep does not", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    h.fallback = poisonous;
    const owner = await h.create("poison", {}, { finalizers: ["test/hold"] });
    const child = await h.bh.client(Other).create("child", {}, { owner: owner.id });
    await h.things.delete(owner.id); // a push: the pass stalls again, deleting
    await h.flush();
    const before = passesOf(h, owner.id);
    assert.equal(stalledCondition(await h.things.get(owner.id))?.status, "True");
    // A child still holds the owner; the GC sweep collects it, then pushes the owner once.
    await h.tick(31_000);
    await assert.rejects(h.bh.client(Other).get(child.id), { name: "NotFoundError" });
    assert.equal(passesOf(h, owner.id), before + 1);
    // Every later GC sweep leaves the stalled deleting owner alone.
    await h.tick(10 * MINUTE);
    assert.equal(passesOf(h, owner.id), before + 1);
  });
});

for (const startupFullPass of [false, true]) {
  test(
    `Stalled a restart with startupFullPass ${
      startupFullPass ? "on" : "off"
    } skips the stalled object, and a new generation then runs it`,
    async () => {
      await withFile(async (path, clock) => {
        const ids: Record<string, number> = {};
        await withHarness({ path, clock }, async (h) => {
          await h.start();
          h.fallback = poisonous;
          ids.poison = (await h.create("poison")).id;
          ids.healthy = (await h.create("healthy")).id;
        });
        await withHarness({ path, clock, register: { startupFullPass } }, async (h) => {
          h.fallback = poisonous;
          await h.start();
          await h.tick(10 * MINUTE);
          assert.equal(passesOf(h, ids.poison), 0);
          assert.equal(passesOf(h, ids.healthy), startupFullPass ? 1 : 0);
          assert.equal(stalledCondition(await h.things.get(ids.poison))?.status, "True");
          h.fallback = () => settled();
          await h.things.update(ids.poison, { fixed: true });
          await h.flush();
          assert.equal(passesOf(h, ids.poison), 1);
          assert.equal(stalledCondition(await h.things.get(ids.poison))?.reason, "Recovered");
        });
      });
    },
  );
}

test("Stalled a restart with the individual pass admits every object but the stalled one", async () => {
  await withFile(async (path, clock) => {
    const ids: Record<string, number> = {};
    await withHarness({ path, clock }, async (h) => {
      await h.start();
      h.fallback = poisonous;
      ids.poison = (await h.create("poison")).id;
      ids.healthy = (await h.create("healthy")).id;
    });
    await withHarness(
      { path, clock, register: { individualPassInterval: 10_000 } },
      async (h) => {
        h.fallback = poisonous;
        await h.start();
        await h.tick(5 * MINUTE);
        assert.equal(passesOf(h, ids.poison), 0);
        assert.ok(passesOf(h, ids.healthy) >= 20);
      },
    );
  });
});

test("Stalled a transient failure after a stall takes the retry ladder and lifts the durable stall", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    h.fallback = poisonous;
    const obj = await h.create("poison");
    h.queue(obj.id, () => fail(new Error("transient")));
    await h.things.requeue(obj.id);
    await h.flush();
    assert.equal((await h.store.objects.getForReconcile(obj.id)).stalledGeneration, undefined);
    assert.deepEqual(await h.store.objects.listUnsettledIds(Thing), [obj.id]);
    assert.notEqual((await h.things.getSchedule(obj.id)).nextRequeueAt, undefined);
    // The ladder's next rung stalls it again.
    await h.tick(1_000);
    assert.equal((await h.store.objects.getForReconcile(obj.id)).stalledGeneration, 1);
    assert.deepEqual(await h.things.getSchedule(obj.id), { nextRequeueAt: undefined });
  });
});

test("Stalled a very long or malformed message is kept bounded and well-formed on the condition and the event", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    h.fallback = () => {
      throw new PermanentError("x".repeat(4_095) + "\ud83d\ude00" + "y".repeat(100_000));
    };
    const obj = await h.create("poison");
    const c = stalledCondition(await h.things.get(obj.id));
    assert.equal(c?.status, "True");
    assert.equal(c?.reason, "PermanentError");
    assert.equal(c?.message.length, 4_096);
    assert.ok(c?.message.isWellFormed());
    const [event] = await h.things.listEvents(obj.id);
    assert.equal(event.message, c?.message);
  });
});

test("Stalled a deletion-pending stalled object without finalizers is still collected", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    h.fallback = poisonous;
    const obj = await h.create("poison");
    await h.things.delete(obj.id);
    await h.flush();
    await assert.rejects(h.things.get(obj.id), { name: "NotFoundError" });
  });
});
