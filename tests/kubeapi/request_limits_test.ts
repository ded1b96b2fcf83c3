/**
 * The server's two concurrency limits: `maxInflight` non-watch requests at
 * once and `maxWatches` open watches; past either, 429 `TooManyRequests`
 * with `Retry-After`, and a slot frees when its request (or watch) ends.
 *
 * @module
 */
import assert from "node:assert/strict";
import { InvalidOptionError } from "../../mod.ts";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import { call, Cluster, CLUSTERS, eventsOf, intercept, withStore } from "./_kubeapi_harness.ts";

test("kubeApiHandler answers 429 with Retry-After past maxInflight requests, and serves again once one ends", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const gate = Promise.withResolvers<void>();
    let entered = 0;
    const twoIn = Promise.withResolvers<void>();
    const held = intercept(store, { family: "objects", method: "list" }, async (list, ...args) => {
      if (++entered === 2) twoIn.resolve();
      await gate.promise;
      return list(...args);
    });
    const handle = kubeApiHandler({ store: held, maxInflight: 2 });
    const first = call(handle, CLUSTERS);
    const second = call(handle, CLUSTERS);
    await twoIn.promise;
    const response = await handle(new Request(`http://localhost${CLUSTERS}`));
    assert.equal(response.status, 429);
    assert.equal(response.headers.get("retry-after"), "1");
    const status = await response.json();
    assert.equal(status.reason, "TooManyRequests");
    assert.equal(status.details.retryAfterSeconds, 1);
    assert.equal((await call(handle, "/apis")).status, 429, "every non-watch request counts");
    gate.resolve();
    assert.equal((await first).status, 200);
    assert.equal((await second).status, 200);
    assert.equal((await call(handle, CLUSTERS)).status, 200);
  });
});

test("kubeApiHandler answers 429 past maxWatches open watches, frees a slot when a watch ends, and counts no watch against maxInflight", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const handle = kubeApiHandler({ store, maxWatches: 2, maxInflight: 1 });
    const open = async () => {
      const abort = new AbortController();
      const response = await handle(
        new Request(`http://localhost${CLUSTERS}?watch=true`, { signal: abort.signal }),
      );
      return { response, abort };
    };
    const a = await open();
    const b = await open();
    assert.equal(a.response.status, 200);
    assert.equal(b.response.status, 200);
    const events = eventsOf(a.response);
    assert.equal((await events.next())?.type, "ADDED");
    const third = await open();
    assert.equal(third.response.status, 429);
    assert.equal(third.response.headers.get("retry-after"), "1");
    assert.equal((await third.response.json()).reason, "TooManyRequests");
    assert.equal((await call(handle, CLUSTERS)).status, 200, "watches hold no inflight slot");
    await events.cancel();
    const again = await open();
    assert.equal(again.response.status, 200);
    await again.response.body?.cancel();
    await b.response.body?.cancel();
  });
});

test("kubeApiHandler refuses a maxWatches or maxInflight that is not a positive integer", async () => {
  await withStore((store) => {
    for (const bad of [0, -1, 1.5, Number.NaN, "10"]) {
      assert.throws(() => kubeApiHandler({ store, maxWatches: bad as number }), InvalidOptionError);
      assert.throws(
        () => kubeApiHandler({ store, maxInflight: bad as number }),
        InvalidOptionError,
      );
    }
    return Promise.resolve();
  });
});
