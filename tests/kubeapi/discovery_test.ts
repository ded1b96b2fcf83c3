/**
 * kubeApiHandler discovery: /version, /api, /apis, a group and its resource
 * list, a stored kind's own names, the legacy forms for an aggregated-discovery
 * Accept, the base path.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Beehive, defineKind } from "../../mod.ts";
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

test("kubeApiHandler /api answers the legacy APIVersions with v1, where events are served", async () => {
  await withStore(async (store) => {
    const api = await call(kubeApiHandler({ store }), "/api", { headers: { accept: AGGREGATED } });
    assert.equal(api.status, 200);
    assert.equal(api.type, "application/json");
    assert.equal(api.body.kind, "APIVersions");
    assert.deepEqual(api.body.versions, ["v1"]);
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
        verbs: ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
      },
      {
        name: "nodes",
        singularName: "node",
        namespaced: false,
        kind: "Node",
        verbs: ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
      },
    ]);
    assert.equal((await call(handle, "/apis/kstack.sh/v2")).status, 404);
    assert.equal((await call(handle, "/apis/other.io/v1")).status, 404);
  });
});

test("kubeApiHandler serves a stored kind under its stored plural, with its short names", async () => {
  await withStore(async (store, bh) => {
    const Fleet = defineKind({
      group: "kstack.sh",
      kind: "Fleet",
      plural: "fleetz",
      singular: "fleet",
      shortNames: ["fl"],
    });
    // A Beehive stores the definitions of the kinds it is given when it starts.
    const stop = await new Beehive(store, { kinds: [Fleet] }).start();
    await stop();
    await bh.client(Fleet).create("east", {});
    const handle = kubeApiHandler({ store });
    const list = await call(handle, "/apis/kstack.sh/v1");
    const fleet = (list.body.resources as Record<string, unknown>[]).find((r) =>
      r.kind === "Fleet"
    );
    assert.equal(fleet?.name, "fleetz");
    assert.equal(fleet?.singularName, "fleet");
    assert.deepEqual(fleet?.shortNames, ["fl"]);
    assert.equal((await call(handle, "/apis/kstack.sh/v1/fleetz/east")).status, 200);
    assert.equal((await call(handle, "/apis/kstack.sh/v1/fleets/east")).status, 404);
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

test("kubeApiHandler serves under a basePath that needs percent-encoding, given plain or encoded", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    for (const basePath of ["/my api/é/", "/my%20api/%C3%A9"]) {
      const handle = kubeApiHandler({ store, basePath });
      const got = await call(handle, "/my%20api/%C3%A9/apis/kstack.sh/v1/clusters/prod");
      assert.equal(got.status, 200, basePath);
      assert.equal((await call(handle, "/my%20api/apis")).status, 404, basePath);
    }
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
