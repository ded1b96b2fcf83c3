/**
 * `defineKind`: typed kind tokens with Standard Schema validators, checked on
 * every spec and status write, with the validator's output stored.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  defineKind,
  InvalidOptionError,
  InvalidSpecError,
  InvalidStatusError,
  settled,
  type StandardSchema,
} from "../mod.ts";
import { test } from "./_test.ts";
import { withBeehive } from "./_plain.ts";
import { type AnyObject, withHarness } from "./_beehive_harness.ts";

interface Spec {
  replicas: number;
}

/** A hand-written Standard Schema: `replicas` an integer ≥ 0, defaulting `tier` to "std". */
function specSchema(mode: "sync" | "async" = "sync"): StandardSchema<unknown, Spec> {
  const check = (value: unknown) => {
    const v = value as { replicas?: unknown; tier?: unknown } | null;
    if (typeof v !== "object" || v === null) return { issues: [{ message: "Expected an object" }] };
    if (typeof v.replicas !== "number" || !Number.isInteger(v.replicas) || v.replicas < 0) {
      return { issues: [{ message: "Expected an integer >= 0", path: ["replicas"] }] };
    }
    return { value: { replicas: v.replicas, tier: v.tier ?? "std" } as Spec };
  };
  return {
    "~standard": {
      version: 1,
      vendor: "test",
      validate: (value) =>
        mode === "sync" ? check(value) : Promise.resolve().then(() => check(value)),
    },
  };
}

const statusSchema: StandardSchema<unknown, { ready: boolean }> = {
  "~standard": {
    version: 1,
    vendor: "test",
    validate: (value) =>
      typeof (value as { ready?: unknown })?.ready === "boolean"
        ? { value: value as { ready: boolean } }
        : { issues: [{ message: "Expected a boolean", path: [{ key: "ready" }] }] },
  },
};

function kindWith(mode: "sync" | "async") {
  return defineKind({
    group: "test.beehive.dev",
    kind: "Thing",
    spec: specSchema(mode),
    status: statusSchema,
  });
}

test("defineKind returns a frozen token usable as { group, kind }", () => {
  const k = defineKind<{ a: number }, undefined>({ group: "g.dev", kind: "K" });
  assert.equal(k.group, "g.dev");
  assert.equal(k.kind, "K");
  assert.equal(k.spec, undefined);
  assert.ok(Object.isFrozen(k));
});

test("defineKind refuses a malformed kind or a validator that is not a Standard Schema v1", () => {
  assert.throws(() => defineKind({ group: "g", kind: "" }), InvalidOptionError);
  for (const bad of [{}, { "~standard": { version: 2, validate() {} } }, 5, { "~standard": {} }]) {
    assert.throws(
      () => defineKind({ group: "g", kind: "K", spec: bad as never }),
      InvalidOptionError,
    );
    assert.throws(
      () => defineKind({ group: "g", kind: "K", status: bad as never }),
      InvalidOptionError,
    );
  }
});

for (const mode of ["sync", "async"] as const) {
  test(`defineKind ${mode} spec schema: every spec write is validated and its output stored`, async () => {
    await withBeehive(undefined, async (bh, store) => {
      const Thing = kindWith(mode);
      const things = bh.client(Thing);
      const a = await things.create("a", { replicas: 1 });
      assert.deepEqual(a.spec, { replicas: 1, tier: "std" });
      assert.equal((await store.objects.get(a.id)).spec, '{"replicas":1,"tier":"std"}');
      const latest = await store.getLatestResourceVersion();
      const bad = { replicas: -1 };
      const refused = (e: unknown) =>
        e instanceof InvalidSpecError && e.issues.length === 1 &&
        e.issues[0].message === "Expected an integer >= 0" && e.message.includes("replicas");
      await assert.rejects(things.create("b", bad), refused);
      await assert.rejects(things.getOrCreate("b", bad), refused);
      await assert.rejects(things.getOrCreate("a", bad), refused);
      await assert.rejects(things.createOrUpdate("a", bad), refused);
      await assert.rejects(things.update(a.id, bad), refused);
      await assert.rejects(things.updateByName("a", bad), refused);
      assert.equal(await store.getLatestResourceVersion(), latest);
      const b = await things.update(a.id, { replicas: 2 });
      assert.deepEqual(b.spec, { replicas: 2, tier: "std" });
    });
  });
}

test("defineKind status schema validates controller and admin status writes", async () => {
  const Thing = kindWith("async");
  await withHarness({ registerThing: false }, async (h) => {
    const seen: AnyObject[] = [];
    let write: unknown = { ready: "yes" };
    let outcome: unknown;
    h.bh.register(Thing, async (obj, cc) => {
      seen.push(obj);
      outcome = await cc.updateStatus(write as { ready: boolean }).then(() => "ok", (e) => e);
      return settled();
    });
    await h.start();
    const a = await h.bh.client(Thing).create("a", { replicas: 1 });
    await h.flush();
    assert.ok(outcome instanceof InvalidStatusError, String(outcome));
    assert.deepEqual((outcome as InvalidStatusError).issues[0].path, [{ key: "ready" }]);
    assert.equal((await h.bh.client(Thing).get(a.id)).status, undefined);
    write = { ready: true };
    await h.bh.client(Thing).requeue(a.id);
    await h.flush();
    assert.equal(outcome, "ok");
    assert.deepEqual((await h.bh.client(Thing).get(a.id)).status, { ready: true });
    const admin = h.bh.adminClient(Thing);
    await assert.rejects(admin.updateStatus(a.id, { ready: 1 } as never), InvalidStatusError);
  });
});

test("defineKind registered token validates writes through a plain { group, kind } client", async () => {
  await withBeehive(undefined, async (bh) => {
    const Thing = kindWith("sync");
    bh.register(Thing, () => settled());
    const plain = bh.client({ group: Thing.group, kind: Thing.kind });
    await assert.rejects(plain.create("a", { replicas: "x" }), InvalidSpecError);
    assert.deepEqual((await plain.create("b", { replicas: 3 })).spec, { replicas: 3, tier: "std" });
  });
});

test("defineKind a validator that throws rejects with its error and writes nothing", async () => {
  await withBeehive(undefined, async (bh, store) => {
    const boom = new Error("validator exploded");
    const Thing = defineKind({
      group: "test.beehive.dev",
      kind: "Thing",
      spec: {
        "~standard": {
          version: 1,
          vendor: "t",
          validate: () => {
            throw boom;
          },
        },
      },
    });
    const AsyncThing = defineKind({
      group: "test.beehive.dev",
      kind: "AsyncThing",
      spec: { "~standard": { version: 1, vendor: "t", validate: () => Promise.reject(boom) } },
    });
    await assert.rejects(bh.client(Thing).create("a", {}), (e) => e === boom);
    await assert.rejects(bh.client(AsyncThing).create("a", {}), (e) => e === boom);
    assert.equal(await store.getLatestResourceVersion(), 0);
  });
});

test("defineKind a validator returning a malformed result rejects with TypeError and writes nothing", async () => {
  await withBeehive(undefined, async (bh, store) => {
    const results: unknown[] = [undefined, null, 5, "ok", {}, { issues: "bad" }, { issues: 5 }];
    let i = 0;
    for (const result of results) {
      const Thing = defineKind({
        group: "test.beehive.dev",
        kind: `Thing${i++}`,
        spec: { "~standard": { version: 1, vendor: "t", validate: () => result as never } },
      });
      await assert.rejects(bh.client(Thing).create("a", {}), TypeError, JSON.stringify(result));
    }
    assert.equal(await store.getLatestResourceVersion(), 0);
  });
});

test("defineKind a validator's output is checked as strictly as a caller's value", async () => {
  await withBeehive({ limits: { objectBytes: 32 } }, async (bh, store) => {
    const Grow = defineKind({
      group: "test.beehive.dev",
      kind: "Grow",
      spec: {
        "~standard": {
          version: 1,
          vendor: "t",
          validate: () => ({ value: { s: "x".repeat(64) } }),
        },
      },
    });
    const Nan = defineKind({
      group: "test.beehive.dev",
      kind: "Nan",
      spec: { "~standard": { version: 1, vendor: "t", validate: () => ({ value: { n: NaN } }) } },
    });
    await assert.rejects(bh.client(Grow).create("a", { s: "" }), { name: "TooLargeError" });
    await assert.rejects(bh.client(Nan).create("a", { n: 0 }), TypeError);
    assert.equal(await store.getLatestResourceVersion(), 0);
  });
});

test("defineKind types flow from the token into register and client", async () => {
  await withBeehive(undefined, async (bh) => {
    const Thing = defineKind<{ replicas: number }, { ready: boolean }>({
      group: "test.beehive.dev",
      kind: "Typed",
    });
    bh.register(Thing, async (obj, cc) => {
      const n: number = obj.spec.replicas;
      await cc.updateStatus({ ready: n > 0 });
      // @ts-expect-error the status type flows from the token
      await cc.updateStatus({ ready: "yes" });
      return settled();
    });
    const things = bh.client(Thing);
    // @ts-expect-error the spec type flows from the token
    await things.create("bad", { replicas: "3" }).catch(() => {});
    const a = await things.create("a", { replicas: 3 });
    const r: number = a.spec.replicas;
    assert.equal(r, 3);
    // Inferred from a schema's output type.
    const Inferred = kindWith("sync");
    const i = await bh.client(Inferred).create("i", { replicas: 1 });
    const n: number = i.spec.replicas;
    assert.equal(n, 1);
  });
});
