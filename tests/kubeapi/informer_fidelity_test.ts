/**
 * What an informer relies on: one MODIFIED per write and one DELETED per
 * collection on a watch resumed from a list; a resourceVersion above the
 * store's answered 504 "Too large resource version" (list and watch);
 * `resourceVersionMatch` honoured or refused, never ignored.
 *
 * @module
 */
import assert from "node:assert/strict";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import { call, Cluster, CLUSTERS, eventsOf, withStore } from "./_kubeapi_harness.ts";

test("kubeApiHandler watch from a list sees one MODIFIED for a write of labels and spec and one DELETED for a delete", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", { replicas: 1 });
    const handle = kubeApiHandler({ store, pollInterval: 50 });
    const list = await call(handle, CLUSTERS);
    const rv = (list.body.metadata as { resourceVersion: string }).resourceVersion;
    const abort = new AbortController();
    const events = eventsOf(
      await handle(
        new Request(`http://localhost${CLUSTERS}?watch=true&resourceVersion=${rv}`, {
          signal: abort.signal,
        }),
      ),
    );
    try {
      const patched = await call(handle, `${CLUSTERS}/prod`, {
        method: "PATCH",
        headers: { "content-type": "application/merge-patch+json" },
        body: JSON.stringify({ metadata: { labels: { env: "prod" } }, spec: { replicas: 3 } }),
      });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      assert.equal((await call(handle, `${CLUSTERS}/prod`, { method: "DELETE" })).status, 200);
      await bh.client(Cluster).create("marker", {});
      const seen: string[] = [];
      for (;;) {
        const e = (await events.next())!;
        const name = (e.object as { metadata: { name: string } }).metadata.name;
        seen.push(`${e.type} ${name}`);
        if (name === "marker") break;
      }
      assert.deepEqual(seen, ["MODIFIED prod", "DELETED prod", "ADDED marker"]);
    } finally {
      abort.abort();
      await events.cancel();
    }
  });
});

test("kubeApiHandler answers a resourceVersion above the store's with 504 Timeout Too large resource version, on a list and a watch", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const handle = kubeApiHandler({ store });
    const latest = await store.getLatestResourceVersion();
    for (
      const path of [
        `${CLUSTERS}?resourceVersion=${latest + 100}`,
        `${CLUSTERS}?resourceVersion=${latest + 100}&resourceVersionMatch=NotOlderThan`,
        `${CLUSTERS}?watch=true&resourceVersion=${latest + 100}`,
        `/api/v1/namespaces?watch=true&resourceVersion=${latest + 100}`,
      ]
    ) {
      const answer = await call(handle, path);
      assert.equal(answer.status, 504, path);
      assert.equal(answer.body.reason, "Timeout", path);
      assert.equal(
        answer.body.message,
        `Too large resource version: ${latest + 100}, current: ${latest}`,
      );
      const details = answer.body.details as { causes: { reason: string }[] };
      assert.equal(details.causes[0].reason, "ResourceVersionTooLarge");
    }
  });
});

test("kubeApiHandler list honours resourceVersionMatch: Exact where the kind is unchanged since, 410 where it changed, 422 when malformed", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", {});
    const handle = kubeApiHandler({ store });
    const at = prod.resourceVersion;
    const exact = await call(
      handle,
      `${CLUSTERS}?resourceVersion=${at}&resourceVersionMatch=Exact`,
    );
    assert.equal(exact.status, 200);
    assert.equal((exact.body.metadata as { resourceVersion: string }).resourceVersion, String(at));
    const older = await call(
      handle,
      `${CLUSTERS}?resourceVersion=${at}&resourceVersionMatch=NotOlderThan`,
    );
    assert.equal(older.status, 200);
    await bh.client(Cluster).update(prod.id, { moved: true });
    const stale = await call(
      handle,
      `${CLUSTERS}?resourceVersion=${at}&resourceVersionMatch=Exact`,
    );
    assert.equal(stale.status, 410);
    assert.equal(stale.body.reason, "Expired");
    for (
      const query of [
        "resourceVersionMatch=Exact",
        `resourceVersion=${at}&resourceVersionMatch=Sometime`,
        "resourceVersion=0&resourceVersionMatch=Exact",
      ]
    ) {
      const bad = await call(handle, `${CLUSTERS}?${query}`);
      assert.equal(bad.status, 422, query);
      assert.equal(bad.body.reason, "Invalid", query);
    }
  });
});
