/**
 * `limits: { nameBytes, objectBytes, messageBytes }`: the pinned defaults,
 * each boundary in UTF-8 bytes, and that a refusal writes nothing.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  InvalidConditionError,
  InvalidEventError,
  InvalidNameError,
  InvalidOptionError,
  settled,
  TooLargeError,
} from "../mod.ts";
import type { GroupKind } from "../mod.ts";
import { test } from "./_test.ts";
import { withBeehive } from "./_plain.ts";

const Thing: GroupKind = { group: "test.beehive.dev", kind: "Thing" };

/** A spec whose JSON (`{"s":"…"}`) is exactly `bytes` UTF-8 bytes. */
function specOf(bytes: number): { s: string } {
  return { s: "x".repeat(bytes - 8) };
}

test("limits default to 1 024, 1 572 864 and 32 768 bytes", async () => {
  await withBeehive(undefined, async (bh, store) => {
    const things = bh.client(Thing);
    await things.create("n".repeat(1_024), {});
    await assert.rejects(things.create("n".repeat(1_025), {}), InvalidNameError);
    const at = await things.create("big", specOf(1_572_864));
    await assert.rejects(things.update(at.id, specOf(1_572_865)), TooLargeError);
    const admin = bh.adminClient(Thing);
    await admin.setCondition(at.id, { type: "A", status: "True", message: "m".repeat(32_768) });
    await assert.rejects(
      admin.setCondition(at.id, { type: "A", status: "True", message: "m".repeat(32_769) }),
      InvalidConditionError,
    );
    assert.ok((await store.objects.get(at.id)).conditions[0].message.length === 32_768);
  });
});

test("limits.nameBytes counts UTF-8 bytes, and only creates are bounded", async () => {
  await withBeehive({ limits: { nameBytes: 8 } }, async (bh, store) => {
    const things = bh.client(Thing);
    await things.create("éééé", {}); // 8 bytes
    await things.create("😀😀", {}); // 8 bytes
    const latest = await store.getLatestResourceVersion();
    for (const name of ["ééééa", "😀😀a", "123456789"]) {
      await assert.rejects(things.create(name, {}), InvalidNameError, name);
      await assert.rejects(things.getOrCreate(name, {}), InvalidNameError, name);
      await assert.rejects(things.createOrUpdate(name, {}), InvalidNameError, name);
      // A lookup of a longer name finds nothing rather than refusing.
      await assert.rejects(things.getByName(name), { name: "NotFoundError" });
    }
    assert.equal(await store.getLatestResourceVersion(), latest);
  });
});

test("limits.objectBytes bounds specs, statuses and event details at the byte", async () => {
  await withBeehive({ limits: { objectBytes: 64 } }, async (bh, store) => {
    bh.register(Thing, () => settled());
    const things = bh.client(Thing);
    const a = await things.create("a", specOf(64));
    const latest = await store.getLatestResourceVersion();
    const refused = (e: unknown) =>
      e instanceof TooLargeError && e.limit === 64 && e.bytes === 65 && e.name === "TooLargeError";
    await assert.rejects(things.create("b", specOf(65)), refused);
    await assert.rejects(things.update(a.id, specOf(65)), refused);
    await assert.rejects(things.updateByName("a", specOf(65)), refused);
    await assert.rejects(things.createOrUpdate("a", specOf(65)), refused);
    await assert.rejects(things.getOrCreate("c", specOf(65)), refused);
    const admin = bh.adminClient(Thing);
    await assert.rejects(admin.updateStatus(a.id, specOf(65)), refused);
    await assert.rejects(
      admin.addEvent(a.id, { type: "Normal", reason: "R", detail: specOf(65) }),
      refused,
    );
    // A multi-byte character counts its UTF-8 bytes: "é" is 2.
    await assert.rejects(things.update(a.id, { s: "é".repeat(29) }), TooLargeError);
    assert.equal(await store.getLatestResourceVersion(), latest);
    await admin.updateStatus(a.id, specOf(64));
    await admin.addEvent(a.id, { type: "Normal", reason: "R", detail: specOf(64) });
    await things.update(a.id, { s: "é".repeat(28) });
  });
});

test("limits.messageBytes bounds condition and event messages", async () => {
  await withBeehive({ limits: { messageBytes: 4 } }, async (bh, store) => {
    bh.register(Thing, () => settled());
    const a = await bh.client(Thing).create("a", {});
    const admin = bh.adminClient(Thing);
    const latest = await store.getLatestResourceVersion();
    await assert.rejects(
      admin.setConditions(a.id, [
        { type: "A", status: "True", message: "ok" },
        { type: "B", status: "True", message: "ééé" },
      ]),
      InvalidConditionError,
    );
    await assert.rejects(
      admin.addEvent(a.id, { type: "Normal", reason: "R", message: "12345" }),
      InvalidEventError,
    );
    assert.equal(await store.getLatestResourceVersion(), latest);
    assert.deepEqual(await bh.client(Thing).listEvents(a.id), []);
    await admin.setCondition(a.id, { type: "A", status: "True", message: "éé" });
    await admin.addEvent(a.id, { type: "Normal", reason: "R", message: "1234" });
  });
});

test("limits.fieldBytes bounds a kind's group and kind before any client, admin client or controller exists", async () => {
  await withBeehive({ limits: { fieldBytes: 8 } }, (bh) => {
    bh.client({ group: "a.b.c.de", kind: "Eightchr" });
    for (const kind of [{ group: "a.b.c.def", kind: "K" }, { group: "", kind: "Ninechars" }]) {
      assert.throws(() => bh.client(kind), InvalidOptionError);
      assert.throws(() => bh.adminClient(kind), InvalidOptionError);
      assert.throws(() => bh.register(kind, () => settled()), InvalidOptionError);
    }
    assert.throws(() => bh.client({ group: "g", kind: "k".repeat(1_000_000) }), (e: Error) => {
      return e instanceof InvalidOptionError && e.message.length < 300 &&
        /limits\.fieldBytes/.test(e.message);
    });
    return Promise.resolve();
  });
});

test("limits.fieldBytes bounds condition types and reasons, event reasons and categories, finalizers", async () => {
  const Tiny: GroupKind = { group: "", kind: "T" };
  await withBeehive({ limits: { fieldBytes: 4 } }, async (bh, store) => {
    bh.register(Tiny, () => settled());
    const a = await bh.client(Tiny).create("a", {});
    const admin = bh.adminClient(Tiny);
    const latest = await store.getLatestResourceVersion();
    const big = "é".repeat(3); // 6 bytes
    await assert.rejects(admin.setCondition(a.id, { type: big, status: "True" }), /type/);
    await assert.rejects(
      admin.setCondition(a.id, { type: "A", status: "True", reason: big }),
      (e: Error) => e instanceof InvalidConditionError && /reason/.test(e.message),
    );
    await assert.rejects(
      admin.addEvent(a.id, { type: "Normal", reason: big }),
      (e: Error) => e instanceof InvalidEventError && /reason/.test(e.message),
    );
    await assert.rejects(
      admin.addEvent(a.id, { type: "Normal", reason: "R", category: big }),
      (e: Error) => e instanceof InvalidEventError && /category/.test(e.message),
    );
    await assert.rejects(admin.addFinalizer(a.id, big), InvalidOptionError);
    await assert.rejects(
      bh.client(Tiny).create("b", {}, { finalizers: [big] }),
      InvalidOptionError,
    );
    assert.equal(await store.getLatestResourceVersion(), latest);
    assert.deepEqual(await bh.client(Tiny).listEvents(a.id), []);
    await admin.setCondition(a.id, { type: "éé", status: "True", reason: "abcd" });
    await admin.addEvent(a.id, { type: "Normal", reason: "abcd", category: "éé" });
    await admin.addFinalizer(a.id, "éé");
  });
});

test("limits.conditionsPerObject bounds one batch and what the object holds after it", async () => {
  await withBeehive({ limits: { conditionsPerObject: 3 } }, async (bh, store) => {
    bh.register(Thing, () => settled());
    const a = await bh.client(Thing).create("a", {});
    const admin = bh.adminClient(Thing);
    const c = (type: string) => ({ type, status: "True" as const });
    await assert.rejects(
      admin.setConditions(a.id, [c("A"), c("B"), c("C"), c("D")]),
      (e: Error) =>
        e instanceof InvalidConditionError && /conditionsPerObject \(3\)/.test(e.message),
    );
    await admin.setConditions(a.id, [c("A"), c("B")]);
    await admin.setConditions(a.id, [c("B"), c("C")]); // rewrites B, adds C: 3 in all
    const latest = await store.getLatestResourceVersion();
    await assert.rejects(admin.setCondition(a.id, c("D")), InvalidConditionError);
    assert.equal(await store.getLatestResourceVersion(), latest);
    await admin.setCondition(a.id, { type: "A", status: "False" }); // an existing type is fine
    await admin.deleteCondition(a.id, "C");
    await admin.setCondition(a.id, c("D"));
    assert.deepEqual((await store.objects.get(a.id)).conditions.map((x) => x.type), [
      "A",
      "B",
      "D",
    ]);
  });
});

test("limits.conditionsPerObject holds inside a pass, counted from the pass's read", async () => {
  await withBeehive({ limits: { conditionsPerObject: 2 } }, async (bh, store) => {
    const outcomes: string[] = [];
    const { promise, resolve } = Promise.withResolvers<void>();
    bh.register(Thing, async (_obj, cc) => {
      await cc.setCondition({ type: "A", status: "True" });
      await cc.setCondition({ type: "B", status: "True" });
      await cc.setCondition({ type: "C", status: "True" }).then(
        () => outcomes.push("written"),
        (e) => outcomes.push(e.name),
      );
      resolve();
      return settled();
    });
    const stop = await bh.start();
    const a = await bh.client(Thing).create("a", {});
    await promise;
    await stop();
    assert.deepEqual(outcomes, ["InvalidConditionError"]);
    assert.deepEqual((await store.objects.get(a.id)).conditions.map((x) => x.type), ["A", "B"]);
  });
});

test("limits.finalizersPerObject bounds a create's finalizers and what addFinalizer leaves", async () => {
  await withBeehive({ limits: { finalizersPerObject: 2 } }, async (bh, store) => {
    bh.register(Thing, () => settled());
    const things = bh.client(Thing);
    await assert.rejects(
      things.create("x", {}, { finalizers: ["a", "b", "c"] }),
      (e: Error) => e instanceof InvalidOptionError && /finalizersPerObject \(2\)/.test(e.message),
    );
    const a = await things.create("a", {}, { finalizers: ["f1"] });
    const admin = bh.adminClient(Thing);
    await admin.addFinalizer(a.id, "f2");
    await admin.addFinalizer(a.id, "f2"); // present: a no-op, not a third
    await assert.rejects(admin.addFinalizer(a.id, "f3"), InvalidOptionError);
    assert.deepEqual((await store.objects.getMeta(a.id)).finalizers, ["f1", "f2"]);
  });
});

/** `{ a: { a: … } }` nested `depth` objects deep (`{}` is 1). */
function nested(depth: number): unknown {
  let v: unknown = {};
  for (let i = 1; i < depth; i++) v = { a: v };
  return v;
}

test("limits.nestingDepth bounds specs, statuses and event details, far below a stack overflow", async () => {
  await withBeehive({ limits: { nestingDepth: 8 } }, async (bh, store) => {
    bh.register(Thing, () => settled());
    const things = bh.client(Thing);
    const a = await things.create("a", nested(8));
    const admin = bh.adminClient(Thing);
    const latest = await store.getLatestResourceVersion();
    const refused = (e: unknown) =>
      e instanceof TooLargeError && e.field === "nestingDepth" && e.limit === 8 &&
      /limits\.nestingDepth/.test(e.message);
    await assert.rejects(things.create("b", nested(9)), refused);
    await assert.rejects(things.update(a.id, [[[[[[[[[]]]]]]]]]), refused);
    await assert.rejects(admin.updateStatus(a.id, nested(9)), refused);
    await assert.rejects(
      admin.addEvent(a.id, { type: "Normal", reason: "R", detail: nested(9) }),
      refused,
    );
    assert.equal(await store.getLatestResourceVersion(), latest);
    await admin.updateStatus(a.id, nested(8));
  });
  // The default refuses a value deep enough to overflow the stack with TooLargeError.
  await withBeehive(undefined, async (bh) => {
    await assert.rejects(bh.client(Thing).create("deep", nested(100_000)), {
      name: "TooLargeError",
    });
    await bh.client(Thing).create("ok", nested(64));
  });
});

test("an invalid name's error quotes a bounded prefix of it", async () => {
  await withBeehive(undefined, async (bh) => {
    const name = `\u0000${"n".repeat(1_000_066)}`;
    await assert.rejects(bh.client(Thing).create(name, {}), (e: Error) => {
      return e instanceof InvalidNameError && e.message.length < 300;
    });
    const lone = `${"n".repeat(500)}\uD800`;
    await assert.rejects(bh.client(Thing).create(lone, {}), (e: Error) => {
      return e instanceof InvalidNameError && e.message.length < 300 &&
        /\(501 characters\)/.test(e.message);
    });
  });
});
