/**
 * The real kubectl against a reconciling controller: `apply -f` creates, `wait
 * --for=condition=Ready` returns once the controller makes the object
 * Ready, and `delete` waits while the controller's finalizer holds, ending
 * when it is removed; and `delete` returns when the object is collected
 * before kubectl's wait opens its watch (a watch with nothing to send still
 * answers its headers).
 *
 * @module
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Beehive, settled, unsettled } from "../../mod.ts";
import { serveKubeApi } from "../../kubeapi/mod.ts";
import { openSqliteStore } from "../_sqlite_driver.ts";
import { test } from "../_test.ts";
import {
  Cluster,
  intercept,
  KUBECTL,
  kubectlArgs,
  kubectlEnv,
  kubectlIn,
} from "./_kubeapi_harness.ts";

const FINALIZER = "kstack.sh/cleanup";

test("kubectl wait --for=condition=Ready returns once a controller reconciles, and delete waits for its finalizer", async () => {
  const dir = await mkdtemp(join(tmpdir(), "beehive-lifecycle-"));
  const store = await openSqliteStore(":memory:");
  // The API server writes through its own Beehive, as another process would: the controller's
  // owed pass is what finds those writes, so it runs often here.
  const bh = new Beehive(store, { gcInterval: 50, watchFloorInterval: 100, owedPassInterval: 100 });
  bh.register(Cluster, async (obj, cc) => {
    if (obj.deletionRequestedAt !== undefined) return settled(); // the finalizer holds
    if (!obj.finalizers.includes(FINALIZER)) {
      await cc.addFinalizer(FINALIZER);
      await cc.setConditions([{ type: "Ready", status: "False", reason: "Provisioning" }]);
      return unsettled().requeueAfter(100);
    }
    await cc.setConditions([{ type: "Ready", status: "True", reason: "Provisioned" }]);
    return settled();
  });
  const stop = await bh.start();
  const server = await serveKubeApi({ store, port: 0, pollInterval: 100 });
  try {
    await bh.client(Cluster).create("seed", {});
    const config = join(dir, "kubeconfig");
    await writeFile(config, server.kubeconfig());
    const kubectl = kubectlIn(dir, config);
    const file = join(dir, "prod.json");
    await writeFile(
      file,
      JSON.stringify({ apiVersion: "kstack.sh/v1", kind: "Cluster", metadata: { name: "prod" } }),
    );
    const created = await kubectl("apply", "-f", file);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /cluster\.kstack\.sh\/prod created/);
    const waited = await kubectl("wait", "--for=condition=Ready", "cluster/prod", "--timeout=30s");
    assert.equal(waited.code, 0, waited.stderr);
    assert.match(waited.stdout, /cluster\.kstack\.sh\/prod condition met/);
    const prod = await bh.client(Cluster).getByName("prod");
    assert.deepEqual(prod.finalizers, [FINALIZER]);

    const child = spawn(
      KUBECTL,
      kubectlArgs(dir, config, "delete", "cluster", "prod", "--timeout=30s"),
      {
        env: kubectlEnv(dir),
      },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    const exited = new Promise<number | null>((resolve) => child.once("close", resolve));
    let finished = false;
    void exited.then(() => (finished = true));
    const stream = await bh.client(Cluster).watch(prod.id);
    try {
      for await (const change of stream) {
        if (change.object?.deletionRequestedAt !== undefined) break;
      }
    } finally {
      stream.close();
    }
    // The object is still there, its finalizer held: kubectl is still waiting.
    assert.equal(finished, false, `kubectl delete ended while the finalizer held:\n${stderr}`);
    await bh.adminClient(Cluster).deleteFinalizer(prod.id, FINALIZER);
    assert.equal(await exited, 0, stderr);
    assert.match(stdout, /cluster\.kstack\.sh "prod" deleted/);
    await assert.rejects(bh.client(Cluster).getByName("prod"));
  } finally {
    await server.close();
    await stop();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test("kubectl delete returns when the object is collected before its wait opens a watch", async () => {
  const dir = await mkdtemp(join(tmpdir(), "beehive-lifecycle-"));
  const store = await openSqliteStore(":memory:");
  const bh = new Beehive(store, { gcInterval: 50, watchFloorInterval: 100 });
  const stop = await bh.start();
  // kubectl deletes, reads the object (still there, deletion pending), lists it by name and
  // watches from the list's position. The list holds back until the collector has removed the
  // object, so it comes back empty and the watch that follows has nothing to send, ever.
  const collectedFirst = intercept(store, {
    family: "objectWrites",
    method: "maxVersion",
  }, async (original, ...args) => {
    const pending = await bh.client(Cluster).getByName("prod").catch(() => undefined);
    if (pending?.deletionRequestedAt !== undefined) {
      const stream = await bh.client(Cluster).watch(pending.id);
      try {
        for await (const change of stream) if (change.type === "Deleted") break;
      } finally {
        stream.close();
      }
    }
    return await original(...args);
  });
  const server = await serveKubeApi({ store: collectedFirst, port: 0, pollInterval: 100 });
  try {
    await bh.client(Cluster).create("prod", {});
    const config = join(dir, "kubeconfig");
    await writeFile(config, server.kubeconfig());
    const deleted = await kubectlIn(dir, config)("delete", "cluster", "prod");
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.match(deleted.stdout, /cluster\.kstack\.sh "prod" deleted/);
  } finally {
    await server.close();
    await stop();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
});
