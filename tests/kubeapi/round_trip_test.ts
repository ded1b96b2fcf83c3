/**
 * Round trips: what `kubectl get -o yaml` prints can be fed back to `create`,
 * `apply` and `replace --force`. A create ignores the server-set fields
 * (`uid`, `resourceVersion`, `creationTimestamp`, `generation`,
 * `managedFields`, `status`) and accepts `metadata.finalizers` as the API
 * server does — `replace --force` used to delete the object and then fail to
 * create it again.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Beehive, settled, unsettled } from "../../mod.ts";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import { openSqliteStore } from "../_sqlite_driver.ts";
import { test } from "../_test.ts";
import { call, Cluster, CLUSTERS, withKubectl, withStore } from "./_kubeapi_harness.ts";

const FINALIZER = "kstack.sh/cleanup";

test("kubeApiHandler creates from a body carrying server-set fields, ignoring them, and keeps its finalizers", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("seed", {});
    const handle = kubeApiHandler({ store });
    const created = await call(handle, `${CLUSTERS}?fieldValidation=Strict`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        apiVersion: "kstack.sh/v1",
        kind: "Cluster",
        metadata: {
          name: "prod",
          uid: "12345",
          resourceVersion: "999",
          generation: 7,
          creationTimestamp: "2020-01-01T00:00:00Z",
          managedFields: [{ manager: "kubectl", operation: "Update", fieldsType: "FieldsV1" }],
          finalizers: [FINALIZER],
          labels: { env: "prod" },
        },
        spec: { replicas: 2 },
        status: { phase: "Ready", conditions: [] },
      }),
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const stored = await bh.client(Cluster).getByName("prod");
    assert.deepEqual(stored.finalizers, [FINALIZER]);
    assert.notEqual(String(stored.id), "12345");
    assert.equal(stored.generation, 1);
    assert.equal(stored.status, undefined);
    assert.ok(stored.createdAt.getTime() > Date.parse("2021-01-01T00:00:00Z"));
  });
});

test("kubectl get -o yaml round-trips through replace --force, create and apply, finalizers included", async () => {
  const store = await openSqliteStore(":memory:");
  const bh = new Beehive(store, { gcInterval: 50, watchFloorInterval: 100, owedPassInterval: 100 });
  bh.register(Cluster, async (obj, cc) => {
    if (obj.deletionRequestedAt !== undefined) {
      await cc.deleteFinalizer(FINALIZER);
      return settled();
    }
    if (!obj.finalizers.includes(FINALIZER)) {
      await cc.addFinalizer(FINALIZER);
      return unsettled().requeueAfter(50);
    }
    await cc.setConditions([{ type: "Ready", status: "True", reason: "Provisioned" }]);
    return settled();
  });
  const stop = await bh.start();
  try {
    const first = await bh.client(Cluster).create("inventory", { replicas: 3 }, {
      labels: { app: "shop" },
    });
    await withKubectl(store, async ({ kubectl, manifest }) => {
      const ready = await kubectl("wait", "--for=condition=Ready", "cluster/inventory");
      assert.equal(ready.code, 0, ready.stderr);
      const yaml = await kubectl("get", "cluster", "inventory", "-o", "yaml");
      assert.equal(yaml.code, 0, yaml.stderr);
      assert.match(yaml.stdout, /finalizers:\n {2}- kstack\.sh\/cleanup/);
      const file = await manifest("inventory.yaml", yaml.stdout);
      // Its resourceVersion is current: apply takes it (and adds its last-applied annotation).
      const applied = await kubectl("apply", "-f", file);
      assert.equal(applied.code, 0, applied.stderr);
      assert.equal((await bh.client(Cluster).getByName("inventory")).id, first.id);

      const replaced = await kubectl("replace", "--force", "-f", file, "--timeout=30s");
      assert.equal(replaced.code, 0, replaced.stderr);
      assert.match(replaced.stdout, /cluster\.kstack\.sh\/inventory replaced/);
      const second = await bh.client(Cluster).getByName("inventory");
      assert.notEqual(second.id, first.id);
      assert.deepEqual(second.spec, { replicas: 3 });
      assert.deepEqual(second.labels, { app: "shop" });
      assert.deepEqual(second.finalizers, [FINALIZER]);

      const deleted = await kubectl("delete", "cluster", "inventory", "--timeout=30s");
      assert.equal(deleted.code, 0, deleted.stderr);
      const created = await kubectl("create", "-f", file);
      assert.equal(created.code, 0, created.stderr);
      const third = await bh.client(Cluster).getByName("inventory");
      assert.deepEqual([third.spec, third.labels], [{ replicas: 3 }, { app: "shop" }]);
    });
  } finally {
    await stop();
    await store.close();
  }
});
