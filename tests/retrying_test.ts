/**
 * Retrying: a pass that fails with a transient error (the retry ladder) sets
 * the `Retrying` condition to `True` with the error's message, durably, so a
 * process without the controller (the CLI, the console) can tell an object
 * in backoff from one no controller has reached; the next pass that does not
 * fail sets it `False` (reason `Recovered`), and a permanent failure replaces
 * it with `Stalled`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { PermanentError, settled } from "../mod.ts";
import type { Store } from "../src/store.ts";
import { test } from "./_test.ts";
import { intercept } from "./_intercept.ts";
import { type AnyObject, withHarness } from "./_beehive_harness.ts";
import { stateSummary } from "../cli/_inspect.ts";

function retrying(obj: AnyObject) {
  return obj.conditions.find((c: { type: string }) => c.type === "Retrying");
}

test("Retrying a pass that throws sets Retrying=True with the error's message, and the state reads Retrying, not Pending", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    h.fallback = () => {
      throw new Error("connect ECONNREFUSED 10.0.0.1:443");
    };
    const obj = await h.create("hook");
    const got = await h.things.get(obj.id);
    const c = retrying(got);
    assert.equal(c?.status, "True");
    assert.equal(c?.reason, "ReconcileFailed");
    assert.equal(c?.message, "connect ECONNREFUSED 10.0.0.1:443");
    assert.equal(got.observedGeneration, undefined);
    assert.equal(stateSummary(got), "Retrying");
    // The ladder keeps going; the same failure writes the row no further.
    const rv = got.resourceVersion;
    await h.tick(60_000);
    assert.ok(h.passes.filter((p) => p.id === obj.id).length > 3);
    assert.equal((await h.things.get(obj.id)).resourceVersion, rv);
  });
});

test("Retrying a pass that stops failing sets Retrying=False with reason Recovered, and the state reads Settled", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    let failing = true;
    h.fallback = () => {
      if (failing) throw new Error("upstream 503");
      return settled();
    };
    const obj = await h.create("hook");
    assert.equal(retrying(await h.things.get(obj.id))?.status, "True");
    failing = false;
    await h.tick(2_000);
    const got = await h.things.get(obj.id);
    assert.equal(retrying(got)?.status, "False");
    assert.equal(retrying(got)?.reason, "Recovered");
    assert.equal(stateSummary(got), "Settled");
  });
});

test("Retrying a retrying object that fails permanently reads Stalled, its Retrying condition False", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    let permanent = false;
    h.fallback = () => {
      throw permanent ? new PermanentError("bad url", { reason: "BadUrl" }) : new Error("timeout");
    };
    const obj = await h.create("hook");
    assert.equal(retrying(await h.things.get(obj.id))?.status, "True");
    permanent = true;
    await h.tick(2_000);
    const got = await h.things.get(obj.id);
    assert.equal(retrying(got)?.status, "False");
    assert.equal(stateSummary(got), "Stalled");
  });
});

test("Retrying an object no controller has reached reads Pending", async () => {
  await withHarness({ registerThing: false }, async (h) => {
    await h.start();
    const obj = await h.things.create("idle", {});
    assert.equal(stateSummary(await h.things.get(obj.id)), "Pending");
  });
});

test("Retrying a pass that settles an object both stalled and retrying recovers both conditions in one write", async () => {
  let sets = 0;
  const wrap = (store: Store) =>
    intercept(store, { family: "conditions", method: "set" }, (set, ...args) => {
      sets++;
      return set(...args);
    });
  await withHarness({ wrap }, async (h) => {
    await h.start();
    let mode: "permanent" | "transient" | "ok" = "permanent";
    h.fallback = () => {
      if (mode === "permanent") throw new PermanentError("bad url", { reason: "BadUrl" });
      if (mode === "transient") throw new Error("timeout");
      return settled();
    };
    const obj = await h.create("hook", { v: 1 });
    assert.equal(stateSummary(await h.things.get(obj.id)), "Stalled");
    // A new generation runs again and fails for now: Retrying=True beside Stalled=True.
    mode = "transient";
    await h.things.update(obj.id, { v: 2 });
    await h.flush();
    const both = await h.things.get(obj.id);
    assert.equal(retrying(both)?.status, "True");
    assert.equal(both.conditions.find((c) => c.type === "Stalled")?.status, "True");
    mode = "ok";
    sets = 0;
    await h.tick(2_000);
    const got = await h.things.get(obj.id);
    assert.equal(sets, 1);
    assert.equal(retrying(got)?.status, "False");
    assert.equal(got.conditions.find((c) => c.type === "Stalled")?.status, "False");
    assert.equal(stateSummary(got), "Settled");
  });
});
