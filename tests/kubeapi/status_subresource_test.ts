/**
 * The `/status` subresource of every kind: replace, merge patch, JSON patch
 * and server-side apply write the stored status and the conditions (never the spec), a stale
 * `resourceVersion` is a 409, a malformed condition a 422, and the real
 * kubectl's `patch --subresource=status`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kubeApiHandler, serveKubeApi } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import { call, Cluster, CLUSTERS, KUBECTL, kubectlIn, withStore } from "./_kubeapi_harness.ts";

const send = (method: string, body: unknown, type = "application/json") => ({
  method,
  headers: { "content-type": type },
  body: JSON.stringify(body),
});

test("kubeApiHandler PUT …/status replaces the status and the conditions and leaves the spec", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", { replicas: 3 });
    const handle = kubeApiHandler({ store });
    const answer = await call(
      handle,
      `${CLUSTERS}/prod/status`,
      send("PUT", {
        metadata: { name: "prod", resourceVersion: String(prod.resourceVersion) },
        spec: { replicas: 99 },
        status: {
          phase: "Running",
          observedGeneration: 42,
          conditions: [{ type: "Ready", status: "True", reason: "Up", message: "all good" }],
        },
      }),
    );
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const got = await bh.client(Cluster).get(prod.id);
    assert.deepEqual(got.spec, { replicas: 3 });
    assert.deepEqual(got.status, { phase: "Running" });
    assert.equal(got.observedGeneration, undefined);
    assert.deepEqual(
      got.conditions.map((c) => [c.type, c.status, c.reason, c.message]),
      [["Ready", "True", "Up", "all good"]],
    );
    const status = answer.body.status as Record<string, unknown>;
    assert.equal(status.phase, "Running");
  });
});

test("kubeApiHandler PATCH …/status as a merge or JSON patch changes only the status, removing a condition no longer named", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", { replicas: 3 });
    await bh.adminClient(Cluster).updateStatus(prod.id, { phase: "Pending", nodes: 1 });
    await bh.adminClient(Cluster).setConditions(prod.id, [
      { type: "Ready", status: "False" },
      { type: "Synced", status: "True" },
    ]);
    const handle = kubeApiHandler({ store });
    const merged = await call(
      handle,
      `${CLUSTERS}/prod/status`,
      send(
        "PATCH",
        { spec: { replicas: 7 }, status: { phase: "Running" } },
        "application/merge-patch+json",
      ),
    );
    assert.equal(merged.status, 200, JSON.stringify(merged.body));
    let got = await bh.client(Cluster).get(prod.id);
    assert.deepEqual(got.spec, { replicas: 3 });
    assert.deepEqual(got.status, { phase: "Running", nodes: 1 });
    assert.deepEqual(got.conditions.map((c) => c.type), ["Ready", "Synced"]);
    const patched = await call(
      handle,
      `${CLUSTERS}/prod/status`,
      send("PATCH", [
        { op: "replace", path: "/status/conditions", value: [{ type: "Ready", status: "True" }] },
        { op: "remove", path: "/status/nodes" },
      ], "application/json-patch+json"),
    );
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    got = await bh.client(Cluster).get(prod.id);
    assert.deepEqual(got.status, { phase: "Running" });
    assert.deepEqual(got.conditions.map((c) => [c.type, c.status]), [["Ready", "True"]]);
  });
});

test("kubeApiHandler …/status answers Conflict 409 for a stale resourceVersion and Invalid 422 for a malformed condition, writing nothing", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", {});
    await bh.client(Cluster).update(prod.id, { moved: true });
    const handle = kubeApiHandler({ store });
    const stale = await call(
      handle,
      `${CLUSTERS}/prod/status`,
      send("PUT", {
        metadata: { name: "prod", resourceVersion: String(prod.resourceVersion) },
        status: { phase: "Running" },
      }),
    );
    assert.equal(stale.status, 409);
    assert.equal(stale.body.reason, "Conflict");
    for (
      const conditions of [
        [{ type: "Ready", status: "Maybe" }],
        [{ status: "True" }],
        [{ type: "A", status: "True" }, { type: "A", status: "False" }],
        "Ready",
      ]
    ) {
      const bad = await call(
        handle,
        `${CLUSTERS}/prod/status`,
        send("PATCH", { status: { conditions } }, "application/merge-patch+json"),
      );
      assert.equal(bad.status, 422, JSON.stringify(conditions));
      assert.equal(bad.body.reason, "Invalid");
    }
    const got = await bh.client(Cluster).get(prod.id);
    assert.equal(got.status, undefined);
    assert.deepEqual(got.conditions, []);
  });
});

test("kubeApiHandler server-side apply on …/status merges the configuration's status and leaves the spec", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", { replicas: 3 });
    await bh.adminClient(Cluster).updateStatus(prod.id, { phase: "Pending", nodes: 1 });
    const handle = kubeApiHandler({ store });
    const applied = await call(
      handle,
      `${CLUSTERS}/prod/status?fieldManager=status-writer`,
      send("PATCH", {
        apiVersion: "kstack.sh/v1",
        kind: "Cluster",
        metadata: { name: "prod" },
        spec: { replicas: 9 },
        status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
      }, "application/apply-patch+yaml"),
    );
    assert.equal(applied.status, 200, JSON.stringify(applied.body));
    const got = await bh.client(Cluster).get(prod.id);
    assert.deepEqual(got.spec, { replicas: 3 });
    assert.deepEqual(got.status, { phase: "Running", nodes: 1 });
    assert.deepEqual(got.conditions.map((c) => [c.type, c.status]), [["Ready", "True"]]);
    const unnamed = await call(
      handle,
      `${CLUSTERS}/prod/status`,
      send(
        "PATCH",
        { apiVersion: "kstack.sh/v1", kind: "Cluster" },
        "application/apply-patch+yaml",
      ),
    );
    assert.equal(unnamed.status, 422);
  });
});

test("kubectl patch --subresource=status writes the status through the API", async () => {
  assert.ok(existsSync(KUBECTL), `${KUBECTL} is missing: this test drives the real kubectl`);
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", { replicas: 3 });
    const dir = await mkdtemp(join(tmpdir(), "beehive-status-"));
    const server = await serveKubeApi({ store, port: 0 });
    try {
      const config = join(dir, "kubeconfig");
      await writeFile(config, server.kubeconfig());
      const kubectl = kubectlIn(dir, config);
      const patched = await kubectl(
        "patch",
        "cluster",
        "prod",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}',
      );
      assert.equal(patched.code, 0, patched.stderr);
      assert.match(patched.stdout, /cluster\.kstack\.sh\/prod patched/);
      const ready = await kubectl("get", "cluster", "prod", "--no-headers");
      assert.match(ready.stdout, /^prod\s+True\s/);
      const got = await bh.client(Cluster).get(prod.id);
      assert.deepEqual(got.status, { phase: "Running" });
      const phase = await kubectl(
        "get",
        "cluster",
        "prod",
        "--subresource=status",
        "-o",
        "jsonpath={.status.phase}",
      );
      assert.equal(phase.code, 0, phase.stderr);
      assert.equal(phase.stdout, "Running");
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
