/**
 * kubeApiHandler discovery: /version, /api, /apis, a group and its resource
 * list, the legacy forms for an aggregated-discovery Accept, the base path.
 *
 * @module
 */
import assert from "node:assert/strict";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import { call, Cluster, intercept, Node, withStore } from "./_kubeapi_harness.ts";

const AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList," +
  "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

test("kubeApiHandler /version names the Kubernetes API level it speaks", async () => {
  await withStore(async (store) => {
    const v = await call(kubeApiHandler({ store }), "/version");
    assert.equal(v.status, 200);
    assert.equal(v.body.major, "1");
    assert.match(v.body.gitVersion as string, /^v1\.\d+\.\d+/);
  });
});

test("kubeApiHandler /api is a NotFound Status: there is no core group", async () => {
  await withStore(async (store) => {
    const api = await call(kubeApiHandler({ store }), "/api", { headers: { accept: AGGREGATED } });
    assert.equal(api.status, 404);
    assert.equal(api.body.kind, "Status");
    assert.equal(api.body.reason, "NotFound");
  });
});

test("kubeApiHandler /apis lists each stored group once at v1, in the legacy form", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    await bh.client(Node).create("n1", {});
    await bh.client({ group: "", kind: "Core" }).create("skipped", {});
    const apis = await call(kubeApiHandler({ store }), "/apis", {
      headers: { accept: AGGREGATED },
    });
    assert.equal(apis.status, 200);
    assert.equal(apis.type, "application/json");
    assert.equal(apis.body.kind, "APIGroupList");
    const gv = { groupVersion: "kstack.sh/v1", version: "v1" };
    assert.deepEqual(apis.body.groups, [{
      name: "kstack.sh",
      versions: [gv],
      preferredVersion: gv,
    }]);
  });
});

test("kubeApiHandler /apis/<group>/v1 lists the kinds as cluster-scoped plurals with their verbs", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    await bh.client(Node).create("n1", {});
    const handle = kubeApiHandler({ store });
    const group = await call(handle, "/apis/kstack.sh");
    assert.equal(group.body.kind, "APIGroup");
    const list = await call(handle, "/apis/kstack.sh/v1");
    assert.equal(list.status, 200);
    assert.equal(list.body.kind, "APIResourceList");
    assert.equal(list.body.groupVersion, "kstack.sh/v1");
    assert.deepEqual(list.body.resources, [
      {
        name: "clusters",
        singularName: "cluster",
        namespaced: false,
        kind: "Cluster",
        verbs: ["delete", "get", "list", "watch"],
      },
      {
        name: "nodes",
        singularName: "node",
        namespaced: false,
        kind: "Node",
        verbs: ["delete", "get", "list", "watch"],
      },
    ]);
    assert.equal((await call(handle, "/apis/kstack.sh/v2")).status, 404);
    assert.equal((await call(handle, "/apis/other.io/v1")).status, 404);
  });
});

test("kubeApiHandler serves under basePath, answers NotFound outside it, and rejects bad options", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const handle = kubeApiHandler({ store, basePath: "/k8s/" });
    assert.equal((await call(handle, "/k8s/apis/kstack.sh/v1/clusters/prod")).status, 200);
    const outside = await call(handle, "/apis");
    assert.equal(outside.status, 404);
    assert.equal(outside.body.reason, "NotFound");
    assert.throws(() => kubeApiHandler({ store, basePath: "k8s" }), TypeError);
    assert.throws(() => kubeApiHandler({ store, pollInterval: 0 }), /pollInterval/);
  });
});

test("kubeApiHandler finds a kind stored after it started, and looks a known kind up without listing kinds", async () => {
  await withStore(async (store, bh) => {
    let scans = 0;
    const counting = intercept(
      store,
      { family: "objectWrites", method: "listSinceAll" },
      (listSinceAll, ...args) => {
        scans++;
        return listSinceAll(...args);
      },
    );
    const handle = kubeApiHandler({ store: counting });
    assert.equal((await call(handle, "/apis/kstack.sh/v1/clusters")).status, 404);
    await bh.client(Cluster).create("prod", {});
    assert.equal((await call(handle, "/apis/kstack.sh/v1/clusters")).status, 200);
    const before = scans;
    assert.ok(before > 0, "the kind lookups listed no kinds");
    assert.equal((await call(handle, "/apis/kstack.sh/v1/clusters/prod")).status, 200);
    assert.equal(scans, before);
  });
});
