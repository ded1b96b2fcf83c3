/**
 * Strict JSON: a spec, status or event detail holding a non-finite number is
 * refused with a TypeError naming the path, and nothing is written.
 *
 * @module
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { settled } from "../mod.ts";
import type { GroupKind } from "../mod.ts";
import { encodeJson } from "../src/model/_codec.ts";
import { test } from "./_test.ts";
import { withBeehive } from "./_plain.ts";

const Thing: GroupKind = { group: "test.beehive.dev", kind: "Thing" };

test("encodeJson refuses NaN and the infinities with a TypeError naming the path", () => {
  const cases: [unknown, string][] = [
    [{ replicas: NaN }, "spec.replicas"],
    [{ a: [1, { b: Infinity }] }, "spec.a[1].b"],
    [{ "x-y": -Infinity }, 'spec["x-y"]'],
    [[new Number(NaN)], "spec[0]"],
    [NaN, "spec"],
    [{ toJSON: () => ({ q: Infinity }) }, "spec.q"],
  ];
  for (const [value, path] of cases) {
    assert.throws(
      () => encodeJson(value, "spec"),
      (e: unknown) => e instanceof TypeError && e.message.startsWith(`Cannot encode ${path} `),
      path,
    );
  }
});

test("encodeJson keeps finite numbers, -0 and toJSON values as JSON.stringify does", () => {
  for (const v of [{ n: 1e308, z: -0, d: new Date(0) }, [1, null, "s"], 0, { a: undefined }]) {
    assert.equal(encodeJson(v, "spec"), JSON.stringify(v));
  }
});

test("Client writes refuse a non-finite number before writing anything", async () => {
  await withBeehive(undefined, async (bh, store) => {
    bh.register(Thing, () => settled());
    const things = bh.client(Thing);
    const a = await things.create("a", { replicas: 1 });
    const latest = await store.getLatestResourceVersion();
    const bad = { replicas: JSON.parse("1e400") };
    const names = (e: unknown) => e instanceof TypeError && e.message.includes("spec.replicas");
    await assert.rejects(things.create("b", bad), names);
    await assert.rejects(things.getOrCreate("b", bad), names);
    await assert.rejects(things.createOrUpdate("a", bad), names);
    await assert.rejects(things.update(a.id, bad), names);
    await assert.rejects(things.updateByName("a", bad), names);
    const admin = bh.adminClient(Thing);
    await assert.rejects(
      admin.updateStatus(a.id, { ratio: NaN }),
      (e: unknown) => e instanceof TypeError && e.message.includes("status.ratio"),
    );
    await assert.rejects(
      admin.addEvent(a.id, { type: "Normal", reason: "R", detail: { at: [Infinity] } }),
      (e: unknown) => e instanceof TypeError && e.message.includes("detail.at[0]"),
    );
    assert.equal(await store.getLatestResourceVersion(), latest);
    assert.deepEqual((await things.get(a.id)).spec, { replicas: 1 });
  });
});

test("encodeJson agrees with JSON.stringify wherever no non-finite number is reachable", () => {
  class Box {
    readonly n: number;
    constructor(n: number) {
      this.n = n;
    }
  }
  const deep = (levels: number, leaf: unknown) => {
    let v: unknown = leaf;
    for (let i = 0; i < levels; i++) v = [v];
    return v;
  };
  const values: unknown[] = [
    new Box(1),
    new Map([[1, 2]]),
    Object.assign(Object.create(null), { a: 1 }),
    { d: new Date(0), nested: { toJSON: () => [1, 2] } },
    [undefined, () => 1, Symbol("s")],
    deep(300, 1),
    {
      get g() {
        return 5;
      },
    },
  ];
  for (const v of values) assert.equal(encodeJson(v, "spec"), JSON.stringify(v));
  fc.assert(
    fc.property(fc.jsonValue(), (v) => assert.equal(encodeJson(v, "spec"), JSON.stringify(v))),
    { seed: 20_261_201, numRuns: 500 },
  );
});

test("encodeJson finds a non-finite number on the plain and the exact paths alike", () => {
  const deep = (levels: number, leaf: unknown) => {
    let v: unknown = leaf;
    for (let i = 0; i < levels; i++) v = { a: v };
    return v;
  };
  assert.throws(() => encodeJson(deep(10, NaN), "spec"), /spec(\.a){10} /);
  assert.throws(() => encodeJson(deep(300, NaN), "spec"), /spec(\.a){300} /);
  class Box {
    readonly n: number;
    constructor(n: number) {
      this.n = n;
    }
  }
  assert.throws(() => encodeJson({ box: new Box(Infinity) }, "spec"), /spec\.box\.n /);
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  assert.throws(() => encodeJson(cyclic, "spec"), TypeError);
  const throwing = {
    get x(): number {
      throw new RangeError("getter refuses");
    },
  };
  assert.throws(() => encodeJson(throwing, "spec"), TypeError);
});
