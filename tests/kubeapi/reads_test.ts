/**
 * kubeApiHandler reads: the object mapping, Tables, chunked lists and
 * selectors.
 *
 * @module
 */
import assert from "node:assert/strict";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import { call, Cluster, CLUSTERS, intercept, Node, TABLE, withStore } from "./_kubeapi_harness.ts";

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

test("kubeApiHandler maps an object's metadata, spec and status as DESIGN-3 pins them", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", { replicas: 3 });
    await bh.adminClient(Cluster).updateStatus(prod.id, { phase: "Up" });
    await bh.adminClient(Cluster).setCondition(prod.id, {
      type: "Ready",
      status: "True",
      reason: "Provisioned",
      message: "all up",
    });
    await store.objects.setObservedGeneration(prod, 1);
    await store.objects.addFinalizer(prod, "kstack.sh/cleanup");
    const n1 = await bh.client(Node).create("n1", { cpu: 2 }, { owner: prod.id });
    await bh.client(Cluster).delete(prod.id);
    const handle = kubeApiHandler({ store });

    const got = await call(handle, `${CLUSTERS}/prod`);
    assert.equal(got.status, 200);
    assert.equal(got.type, "application/json");
    const current = await bh.client(Cluster).get(prod.id);
    const meta = got.body.metadata as Record<string, unknown>;
    assert.equal(got.body.apiVersion, "kstack.sh/v1");
    assert.equal(got.body.kind, "Cluster");
    assert.equal(meta.name, "prod");
    assert.equal(meta.uid, String(prod.id));
    assert.equal(meta.resourceVersion, String(current.resourceVersion));
    assert.equal(meta.generation, 1);
    assert.match(meta.creationTimestamp as string, RFC3339);
    assert.match(meta.deletionTimestamp as string, RFC3339);
    assert.deepEqual(meta.finalizers, ["kstack.sh/cleanup"]);
    assert.deepEqual(meta.labels, {});
    assert.deepEqual(meta.annotations, {});
    assert.deepEqual(got.body.spec, { replicas: 3 });
    const status = got.body.status as Record<string, unknown>;
    assert.equal(status.phase, "Up");
    assert.equal(status.observedGeneration, 1);
    const [ready] = status.conditions as Record<string, unknown>[];
    assert.equal(ready.type, "Ready");
    assert.equal(ready.status, "True");
    assert.equal(ready.reason, "Provisioned");
    assert.equal(ready.message, "all up");
    assert.equal(ready.observedGeneration, 1);
    assert.match(ready.lastTransitionTime as string, RFC3339);

    const node = await call(handle, "/apis/kstack.sh/v1/nodes/n1");
    const nodeMeta = node.body.metadata as Record<string, unknown>;
    assert.equal(nodeMeta.uid, String(n1.id));
    assert.deepEqual(nodeMeta.ownerReferences, [{
      apiVersion: "kstack.sh/v1",
      kind: "Cluster",
      name: "prod",
      uid: String(prod.id),
      controller: true,
      blockOwnerDeletion: true,
    }]);
    assert.deepEqual(node.body.status, { conditions: [] });
    assert.equal((await call(handle, `${CLUSTERS}/prod/status`)).body.kind, "Cluster");
  });
});

test("kubeApiHandler lists as a <Kind>List whose resourceVersion is a string", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    await bh.client(Cluster).create("dev", {});
    const list = await call(kubeApiHandler({ store }), CLUSTERS);
    assert.equal(list.status, 200);
    assert.equal(list.body.kind, "ClusterList");
    assert.equal(list.body.apiVersion, "kstack.sh/v1");
    const meta = list.body.metadata as Record<string, unknown>;
    assert.equal(meta.resourceVersion, String(await store.objectWrites.maxVersion(Cluster)));
    assert.equal(meta.continue, undefined);
    const items = list.body.items as { metadata: { name: string } }[];
    assert.deepEqual(items.map((i) => i.metadata.name), ["prod", "dev"]);
  });
});

test("kubeApiHandler answers a Table for the Table Accept: NAME, READY, AGE and metadata rows", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", {});
    await bh.adminClient(Cluster).setCondition(prod.id, { type: "Ready", status: "False" });
    await bh.client(Cluster).create("dev", {});
    const handle = kubeApiHandler({ store });
    const t = await call(handle, `${CLUSTERS}?limit=500`, {
      headers: {
        accept: `${TABLE},application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json`,
      },
    });
    assert.equal(t.status, 200);
    assert.equal(t.type, TABLE);
    assert.equal(t.body.kind, "Table");
    assert.equal(t.body.apiVersion, "meta.k8s.io/v1");
    const columns = t.body.columnDefinitions as { name: string; format: string }[];
    assert.deepEqual(columns.map((c) => c.name), ["Name", "Ready", "Age"]);
    assert.equal(columns[0].format, "name");
    const rows = t.body.rows as { cells: string[]; object: Record<string, unknown> }[];
    assert.deepEqual(rows.map((r) => r.cells.slice(0, 2)), [["prod", "False"], ["dev", "-"]]);
    assert.match(rows[0].cells[2], /^\d+s$/);
    assert.equal(rows[0].object.kind, "PartialObjectMetadata");
    assert.equal((rows[0].object.metadata as { uid: string }).uid, String(prod.id));

    const bare = await call(handle, `${CLUSTERS}?includeObject=None`, {
      headers: { accept: TABLE },
    });
    assert.equal((bare.body.rows as object[]).every((r) => !("object" in r)), true);
    const whole = await call(handle, `${CLUSTERS}/prod?includeObject=Object`, {
      headers: { accept: TABLE },
    });
    assert.equal((whole.body.rows as { object: { kind: string } }[])[0].object.kind, "Cluster");
    const beta = await call(handle, CLUSTERS, {
      headers: { accept: "application/json;as=Table;v=v1beta1;g=meta.k8s.io" },
    });
    assert.equal(beta.body.apiVersion, "meta.k8s.io/v1beta1");
    assert.equal(beta.type, "application/json;as=Table;v=v1beta1;g=meta.k8s.io");
  });
});

test("kubeApiHandler chunks a list by limit and continue, every page at the first page's version", async () => {
  await withStore(async (store, bh) => {
    for (const name of ["a", "b", "c", "d", "e"]) await bh.client(Cluster).create(name, {});
    const handle = kubeApiHandler({ store });
    const names: string[] = [];
    const versions = new Set<unknown>();
    let path = `${CLUSTERS}?limit=2`;
    let pages = 0;
    for (;;) {
      const page = await call(handle, path);
      assert.equal(page.status, 200);
      pages++;
      const meta = page.body.metadata as { resourceVersion: string; continue?: string };
      versions.add(meta.resourceVersion);
      names.push(
        ...(page.body.items as { metadata: { name: string } }[]).map((i) => i.metadata.name),
      );
      if (pages === 1) await bh.client(Cluster).create("f", {});
      if (meta.continue === undefined) break;
      path = `${CLUSTERS}?limit=2&continue=${encodeURIComponent(meta.continue)}`;
    }
    assert.deepEqual(names, ["a", "b", "c", "d", "e", "f"]);
    assert.equal(pages, 3);
    assert.equal(versions.size, 1);
    const bad = await call(handle, `${CLUSTERS}?limit=2&continue=not-a-token`);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.reason, "BadRequest");
  });
});

test("kubeApiHandler filters by the metadata.name field selector and by label selectors", async () => {
  await withStore(async (store, bh) => {
    for (const name of ["prod", "dev", "qa"]) await bh.client(Cluster).create(name, {});
    const dev = await bh.client(Cluster).getByName("dev");
    await bh.client(Cluster).updateMetadata(dev.id, { labels: { app: "web", env: "dev" } });
    const handle = kubeApiHandler({ store });
    const names = async (query: string) => {
      const list = await call(handle, `${CLUSTERS}?${query}`);
      assert.equal(list.status, 200, JSON.stringify(list.body));
      return (list.body.items as { metadata: { name: string } }[]).map((i) => i.metadata.name);
    };
    assert.deepEqual(await names("fieldSelector=metadata.name%3Ddev"), ["dev"]);
    assert.deepEqual(await names("fieldSelector=metadata.name%3D%3Dnope"), []);
    assert.deepEqual(await names("fieldSelector=metadata.name!%3Ddev"), ["prod", "qa"]);
    assert.deepEqual(await names("labelSelector=app%3Dweb"), ["dev"]);
    assert.deepEqual(await names("labelSelector=!legacy,env%20notin%20(dev)"), ["prod", "qa"]);
    for (
      const query of [
        "fieldSelector=spec.replicas%3D3",
        "labelSelector=a%20in%20(b",
        "labelSelector=%3D%3D",
      ]
    ) {
      const bad = await call(handle, `${CLUSTERS}?${query}`);
      assert.equal(bad.status, 400, query);
      assert.equal(bad.body.reason, "BadRequest");
    }
  });
});

test("kubeApiHandler passes a label selector to the store's list, which reads only the matching objects", async () => {
  await withStore(async (store, bh) => {
    for (let i = 0; i < 30; i++) {
      await bh.client(Cluster).create(`c${i}`, {}, {
        labels: { app: i % 10 === 0 ? "web" : "db" },
      });
    }
    const seen: { selector: unknown; rows: number }[] = [];
    const recording = intercept(store, { family: "objects", method: "list" }, async (
      list,
      gk,
      page,
    ) => {
      const rows = await list(gk, page);
      seen.push({ selector: page?.labelSelector, rows: rows.length });
      return rows;
    });
    const handle = kubeApiHandler({ store: recording });
    const list = await call(handle, `${CLUSTERS}?labelSelector=app%3Dweb&limit=2`);
    assert.equal(list.status, 200, JSON.stringify(list.body));
    const items = list.body.items as { metadata: { name: string } }[];
    assert.deepEqual(items.map((i) => i.metadata.name), ["c0", "c10"]);
    assert.ok((list.body.metadata as { continue?: string }).continue !== undefined);
    assert.deepEqual(seen, [{
      selector: [{ key: "app", operator: "In", values: ["web"] }],
      rows: 3,
    }]);
  });
});

test("kubeApiHandler answers a malformed label selector 400 with the parser's message, reading no object", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    let lists = 0;
    const counting = intercept(store, { family: "objects", method: "list" }, (list, ...args) => {
      lists++;
      return list(...args);
    });
    const handle = kubeApiHandler({ store: counting });
    const bad = await call(handle, `${CLUSTERS}?labelSelector=env%20in%20(prod`);
    assert.deepEqual([bad.status, bad.body.reason], [400, "BadRequest"]);
    assert.match(String(bad.body.message), /^invalid label selector: .*env in \(prod/);
    assert.equal(lists, 0);
  });
});
