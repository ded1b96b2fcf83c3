/**
 * Names the API can address: a create through the API refuses a name that is
 * not a DNS-1123 subdomain (422 `Invalid` on `metadata.name`, nothing
 * written); an object the library created under such a name is still listed,
 * and a collection delete with a `metadata.name` field selector removes it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import { call, Cluster, CLUSTERS, withKubectl, withStore } from "./_kubeapi_harness.ts";

const post = (name: string) => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ metadata: { name }, spec: {} }),
});
type Causes = { causes: { field: string; reason: string }[] };

test("kubeApiHandler refuses to create a name that is not a DNS-1123 subdomain with 422 on metadata.name", async () => {
  await withStore(async (store, bh) => {
    const handle = kubeApiHandler({ store });
    await bh.client(Cluster).create("seed", {});
    for (const name of ["x/y", "..", ".", "a b", "UPPER", "émoji☃", "a".repeat(300), "-a", "a."]) {
      const refused = await call(handle, CLUSTERS, post(name));
      assert.equal(refused.status, 422, name);
      assert.equal(refused.body.reason, "Invalid");
      const causes = (refused.body.details as Causes).causes;
      assert.equal(causes[0].field, "metadata.name");
      assert.match(
        refused.body.message as string,
        /RFC 1123 subdomain|no more than 253 characters/,
      );
    }
    for (const name of ["a", "prod-1", "a.b-c.d", "9", "a".repeat(253)]) {
      const created = await call(handle, CLUSTERS, post(name));
      assert.equal(created.status, 201, name);
    }
    const dry = await call(handle, `${CLUSTERS}?dryRun=All`, post("UPPER"));
    assert.equal(dry.status, 422);
    const names = (await bh.client(Cluster).list()).map((o) => o.name);
    assert.deepEqual(names.filter((n) => !/^[a-z0-9.-]+$/.test(n)), []);
  });
});

test("kubeApiHandler lists an object the library named x/y and deletes it with a collection delete on metadata.name", async () => {
  await withStore(async (store, bh) => {
    const handle = kubeApiHandler({ store });
    const odd = await bh.client(Cluster).create("x/y", {});
    await bh.client(Cluster).create("UPPER", {});
    const keep = await bh.client(Cluster).create("keep", {});
    const listed = await call(handle, CLUSTERS);
    const names = (listed.body.items as { metadata: { name: string } }[]).map((i) =>
      i.metadata.name
    );
    assert.deepEqual(names, ["x/y", "UPPER", "keep"]);
    const selector = encodeURIComponent("metadata.name=x/y");
    const dry = await call(handle, `${CLUSTERS}?fieldSelector=${selector}&dryRun=All`, {
      method: "DELETE",
    });
    assert.equal(dry.status, 200);
    assert.equal((await bh.client(Cluster).get(odd.id)).deletionRequestedAt, undefined);
    const deleted = await call(handle, `${CLUSTERS}?fieldSelector=${selector}`, {
      method: "DELETE",
    });
    assert.equal(deleted.status, 200);
    assert.equal(deleted.body.kind, "ClusterList");
    const items = deleted.body.items as { metadata: { name: string } }[];
    assert.deepEqual(items.map((i) => i.metadata.name), ["x/y"]);
    const marked = await bh.client(Cluster).get(odd.id).catch(() => undefined);
    assert.ok(marked === undefined || marked.deletionRequestedAt !== undefined);
    assert.equal((await bh.client(Cluster).get(keep.id)).deletionRequestedAt, undefined);
    const upper = encodeURIComponent("metadata.name=UPPER");
    const byLabel = await call(handle, `${CLUSTERS}?fieldSelector=${upper}`, { method: "DELETE" });
    assert.deepEqual(
      (byLabel.body.items as { metadata: { name: string } }[]).map((i) => i.metadata.name),
      ["UPPER"],
    );
  });
});

test("kubectl create refuses a name that is not a DNS-1123 subdomain, naming metadata.name", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("seed", {});
    await withKubectl(store, async ({ kubectl, manifest }) => {
      const file = await manifest("upper.json", {
        apiVersion: "kstack.sh/v1",
        kind: "Cluster",
        metadata: { name: "UPPER" },
        spec: {},
      });
      const refused = await kubectl("create", "-f", file);
      assert.notEqual(refused.code, 0);
      assert.match(refused.stderr, /metadata\.name: Invalid value: "UPPER"/);
      await assert.rejects(bh.client(Cluster).getByName("UPPER"));
    });
  });
});
