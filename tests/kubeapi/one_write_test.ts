/**
 * One change, one write: a request that changes an object's labels,
 * annotations and spec together is one commit and one `MODIFIED` — a
 * `kubectl apply`, a `PUT` and a merge patch, through the real kubectl and
 * in-process.
 *
 * @module
 */
import assert from "node:assert/strict";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import type { Store } from "../../store/mod.ts";
import { test } from "../_test.ts";
import { call, Cluster, CLUSTERS, eventsOf, withKubectl, withStore } from "./_kubeapi_harness.ts";

/** The write-log entries of Cluster after `rv`, as [name id, op]. */
async function writesSince(store: Store, rv: number): Promise<string[]> {
  const { writes } = await store.objectWrites.listSince(Cluster, { after: rv, limit: 100 });
  return writes.map((w) => w.op);
}

test("kubectl apply changing labels and spec together is one commit and one MODIFIED", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("seed", {});
    await withKubectl(store, async ({ kubectl, manifest }) => {
      const prod = {
        apiVersion: "kstack.sh/v1",
        kind: "Cluster",
        metadata: { name: "prod", labels: { env: "dev" } },
        spec: { replicas: 1 },
      };
      const applied = await kubectl("apply", "-f", await manifest("prod.json", prod));
      assert.equal(applied.code, 0, applied.stderr);
      const before = await bh.client(Cluster).getByName("prod");
      const abort = new AbortController();
      const watch = await kubeApiHandler({ store })(
        new Request(
          `http://localhost${CLUSTERS}?watch=1&resourceVersion=${before.resourceVersion}`,
          {
            signal: abort.signal,
          },
        ),
      );
      const events = eventsOf(watch);
      const changed = {
        ...prod,
        metadata: { name: "prod", labels: { env: "prod" }, annotations: { note: "x" } },
        spec: { replicas: 2 },
      };
      const again = await kubectl("apply", "-f", await manifest("prod.json", changed));
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /cluster\.kstack\.sh\/prod configured/);
      assert.deepEqual(await writesSince(store, before.resourceVersion), ["update"]);
      const after = await bh.client(Cluster).getByName("prod");
      assert.deepEqual(after.labels, { env: "prod" });
      assert.equal(after.annotations.note, "x");
      assert.deepEqual(after.spec, { replicas: 2 });
      const modified = await events.next();
      assert.equal(modified?.type, "MODIFIED");
      const object = modified!.object as { metadata: { resourceVersion: string } };
      assert.equal(object.metadata.resourceVersion, String(after.resourceVersion));
      // The next event is the next write's: no second MODIFIED for the same change.
      await bh.client(Cluster).create("sentinel", {});
      const next = await events.next();
      assert.equal(next?.type, "ADDED");
      abort.abort();
      await events.cancel().catch(() => {});
    });
  });
});

test("kubeApiHandler writes a PUT and a merge patch changing labels, annotations and spec as one commit", async () => {
  await withStore(async (store, bh) => {
    const handle = kubeApiHandler({ store });
    const prod = await bh.client(Cluster).create("prod", { replicas: 1 }, {
      labels: { env: "dev" },
    });
    const put = await call(handle, `${CLUSTERS}/prod`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        metadata: { name: "prod", labels: { env: "prod" }, annotations: { a: "1" } },
        spec: { replicas: 2 },
      }),
    });
    assert.equal(put.status, 200);
    assert.deepEqual(await writesSince(store, prod.resourceVersion), ["update"]);
    const mid = await bh.client(Cluster).getByName("prod");
    const patched = await call(handle, `${CLUSTERS}/prod`, {
      method: "PATCH",
      headers: { "content-type": "application/merge-patch+json" },
      body: JSON.stringify({ metadata: { labels: { env: null } }, spec: { replicas: 3 } }),
    });
    assert.equal(patched.status, 200);
    assert.deepEqual(await writesSince(store, mid.resourceVersion), ["update"]);
    const after = await bh.client(Cluster).getByName("prod");
    assert.deepEqual(after.labels, {});
    assert.deepEqual(after.spec, { replicas: 3 });
    assert.equal(after.generation, mid.generation + 1);
  });
});
