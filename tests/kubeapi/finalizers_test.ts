/**
 * `metadata.finalizers` through the API, as the API server takes them: a
 * create sets them, a patch or replace sets the whole list in the same write
 * as the rest, no new finalizer may be added once deletion is requested, and
 * removing the last one of a deleting object finishes its delete — the
 * usual way to unstick an object whose controller is gone.
 *
 * @module
 */
import assert from "node:assert/strict";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import type { Store } from "../../mod.ts";
import { test } from "../_test.ts";
import { call, Cluster, CLUSTERS, withKubectl, withStore } from "./_kubeapi_harness.ts";

const json = (method: string, body: unknown, type = "application/json") => ({
  method,
  headers: { "content-type": type },
  body: JSON.stringify(body),
});

async function logged(store: Store): Promise<number> {
  return (await store.objectWrites.listSince(Cluster, { after: 0, limit: 10_000 })).writes.length;
}

test("kubeApiHandler sets the whole finalizer list from a patch or a replace, in one write with the spec", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("seed", {});
    const handle = kubeApiHandler({ store });
    const created = await call(
      handle,
      CLUSTERS,
      json("POST", { metadata: { name: "prod", finalizers: ["a.io/x"] }, spec: { n: 1 } }),
    );
    assert.equal(created.status, 201);
    const before = await logged(store);
    const patched = await call(
      handle,
      `${CLUSTERS}/prod`,
      json(
        "PATCH",
        { metadata: { finalizers: ["a.io/x", "b.io/y"] }, spec: { n: 2 } },
        "application/merge-patch+json",
      ),
    );
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.equal(await logged(store), before + 1);
    assert.deepEqual((await bh.client(Cluster).getByName("prod")).finalizers, ["a.io/x", "b.io/y"]);
    // A replace without finalizers holds none, as on the API server.
    const replaced = await call(
      handle,
      `${CLUSTERS}/prod`,
      json("PUT", { metadata: { name: "prod" }, spec: { n: 2 } }),
    );
    assert.equal(replaced.status, 200);
    assert.deepEqual((await bh.client(Cluster).getByName("prod")).finalizers, []);
    const bad = await call(
      handle,
      `${CLUSTERS}/prod`,
      json("PATCH", { metadata: { finalizers: [""] } }, "application/merge-patch+json"),
    );
    assert.equal(bad.status, 422);
  });
});

test("kubectl patch removing the last finalizer of a deleting object finishes its delete; adding one then is refused", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("seed", {});
    await withKubectl(store, async ({ kubectl, manifest }) => {
      const file = await manifest("prod.json", {
        apiVersion: "kstack.sh/v1",
        kind: "Cluster",
        metadata: { name: "prod", finalizers: ["a.io/x"] },
        spec: {},
      });
      assert.equal((await kubectl("create", "-f", file)).code, 0);
      const held = await kubectl("delete", "cluster", "prod", "--wait=false");
      assert.equal(held.code, 0, held.stderr);
      assert.notEqual((await bh.client(Cluster).getByName("prod")).deletionRequestedAt, undefined);

      const added = await kubectl(
        "patch",
        "cluster",
        "prod",
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":["a.io/x","b.io/y"]}}',
      );
      assert.notEqual(added.code, 0);
      assert.match(added.stderr, /no new finalizers can be added if the object is being deleted/);

      const dry = await kubectl(
        "patch",
        "cluster",
        "prod",
        "--type=json",
        "--dry-run=server",
        "-p",
        '[{"op":"remove","path":"/metadata/finalizers"}]',
      );
      assert.equal(dry.code, 0, dry.stderr);
      assert.deepEqual((await bh.client(Cluster).getByName("prod")).finalizers, ["a.io/x"]);

      const removed = await kubectl(
        "patch",
        "cluster",
        "prod",
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/metadata/finalizers"}]',
      );
      assert.equal(removed.code, 0, removed.stderr);
      await assert.rejects(bh.client(Cluster).getByName("prod"));
    });
  });
});
