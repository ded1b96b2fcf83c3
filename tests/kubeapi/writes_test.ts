/**
 * Writes through the Kubernetes API: create, replace with a resourceVersion
 * precondition, merge and JSON patches, labels and annotations,
 * the spec schema's refusal as Invalid with causes — in-process, then with
 * the real kubectl (create -f, replace -f, patch --type=merge|json, explain of a kind
 * with no stored definition).
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kubeApiHandler, serveKubeApi } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import { call, Cluster, CLUSTERS, kubectlIn, withStore } from "./_kubeapi_harness.ts";

const json = (method: string, body: unknown, type = "application/json") => ({
  method,
  headers: { "content-type": type },
  body: JSON.stringify(body),
});
type Causes = { causes: { field: string }[] };

test("kubeApiHandler creates an object from a POST and answers AlreadyExists for a taken name", async () => {
  await withStore(async (store, bh) => {
    const handle = kubeApiHandler({ store });
    await bh.client(Cluster).create("seed", {}); // makes the kind served
    const body = {
      apiVersion: "kstack.sh/v1",
      kind: "Cluster",
      metadata: { name: "prod" },
      spec: { replicas: 3 },
    };
    const created = await call(handle, CLUSTERS, json("POST", body));
    assert.equal(created.status, 201);
    assert.deepEqual(created.body.spec, { replicas: 3 });
    assert.deepEqual((await bh.client(Cluster).getByName("prod")).spec, { replicas: 3 });
    const again = await call(handle, CLUSTERS, json("POST", body));
    assert.equal(again.status, 409);
    assert.equal(again.body.reason, "AlreadyExists");
  });
});

test("kubeApiHandler stores labels and annotations from a POST, a PUT and a merge patch, where null removes a key", async () => {
  await withStore(async (store, bh) => {
    const handle = kubeApiHandler({ store });
    await bh.client(Cluster).create("seed", {});
    const created = await call(
      handle,
      CLUSTERS,
      json("POST", {
        metadata: { name: "prod", labels: { team: "a", env: "prod" }, annotations: { note: "x" } },
        spec: { replicas: 1 },
      }),
    );
    assert.equal(created.status, 201);
    const stored = await bh.client(Cluster).getByName("prod");
    assert.deepEqual(stored.labels, { team: "a", env: "prod" });
    assert.deepEqual(stored.annotations, { note: "x" });
    assert.deepEqual((created.body.metadata as Record<string, unknown>).labels, stored.labels);

    const patched = await call(
      handle,
      `${CLUSTERS}/prod`,
      json(
        "PATCH",
        { metadata: { labels: { team: null, tier: "gold" } } },
        "application/merge-patch+json",
      ),
    );
    assert.equal(patched.status, 200);
    const afterPatch = await bh.client(Cluster).getByName("prod");
    assert.deepEqual(afterPatch.labels, { env: "prod", tier: "gold" });
    // A metadata write is not a spec change: no new generation, no pass owed.
    assert.equal(afterPatch.generation, stored.generation);

    const put = await call(
      handle,
      `${CLUSTERS}/prod`,
      json("PUT", { metadata: { name: "prod", labels: { only: "this" } }, spec: { replicas: 2 } }),
    );
    assert.equal(put.status, 200);
    const afterPut = await bh.client(Cluster).getByName("prod");
    // PUT replaces the whole object: labels and annotations it leaves out are gone.
    assert.deepEqual(afterPut.labels, { only: "this" });
    assert.deepEqual(afterPut.annotations, {});
    assert.deepEqual(afterPut.spec, { replicas: 2 });
  });
});

test("kubeApiHandler refuses a malformed label or annotation with 422 naming the field, writing nothing", async () => {
  await withStore(async (store, bh) => {
    const handle = kubeApiHandler({ store });
    const prod = await bh.client(Cluster).create("prod", { replicas: 1 }, {
      labels: { team: "a" },
    });
    for (
      const metadata of [
        { labels: { "bad key!": "a" } },
        { labels: { team: "no spaces allowed" } },
        { labels: { team: 3 } },
        { labels: ["a"] },
        { annotations: { "/x": "y" } },
        JSON.parse('{"labels":{"__proto__":"x"}}'),
      ]
    ) {
      const field = Object.keys(metadata)[0];
      const post = await call(
        handle,
        CLUSTERS,
        json("POST", { metadata: { name: "dev", ...metadata }, spec: {} }),
      );
      assert.equal(post.status, 422, JSON.stringify(metadata));
      assert.equal(post.body.reason, "Invalid");
      assert.equal((post.body.details as Causes).causes[0].field, `metadata.${field}`);
      assert.match(String(post.body.message), /^Cluster\.kstack\.sh "dev" is invalid: metadata\./);
      const patch = await call(
        handle,
        `${CLUSTERS}/prod`,
        json("PATCH", { metadata, spec: { replicas: 5 } }, "application/merge-patch+json"),
      );
      assert.equal(patch.status, 422, JSON.stringify(metadata));
      assert.equal((patch.body.details as Causes).causes[0].field, `metadata.${field}`);
      const key = Object.keys(Object.values(metadata)[0] as object)[0] ?? "0";
      const jsonPatched = await call(
        handle,
        `${CLUSTERS}/prod`,
        json("PATCH", [
          {
            op: "add",
            path: `/metadata/${field}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`,
            value: "v a",
          },
          { op: "replace", path: "/spec/replicas", value: 5 },
        ], "application/json-patch+json"),
      );
      assert.equal(jsonPatched.status, 422, JSON.stringify(metadata));
    }
    await assert.rejects(bh.client(Cluster).getByName("dev"));
    const after = await bh.client(Cluster).getByName("prod");
    assert.deepEqual(after.spec, { replicas: 1 });
    assert.deepEqual(after.labels, { team: "a" });
    assert.equal(after.resourceVersion, prod.resourceVersion);
  });
});

test("kubeApiHandler replaces a spec with PUT and answers Conflict to a stale metadata.resourceVersion", async () => {
  await withStore(async (store, bh) => {
    const handle = kubeApiHandler({ store });
    const prod = await bh.client(Cluster).create("prod", { replicas: 1 });
    const rv = String(prod.resourceVersion);
    const put = await call(
      handle,
      `${CLUSTERS}/prod`,
      json("PUT", { metadata: { name: "prod", resourceVersion: rv }, spec: { replicas: 2 } }),
    );
    assert.equal(put.status, 200);
    assert.deepEqual(put.body.spec, { replicas: 2 });
    const stale = await call(
      handle,
      `${CLUSTERS}/prod`,
      json("PUT", { metadata: { name: "prod", resourceVersion: rv }, spec: { replicas: 9 } }),
    );
    assert.equal(stale.status, 409);
    assert.equal(stale.body.reason, "Conflict");
    assert.deepEqual((await bh.client(Cluster).getByName("prod")).spec, { replicas: 2 });
    const renamed = await call(
      handle,
      `${CLUSTERS}/prod`,
      json("PUT", { metadata: { name: "other" }, spec: {} }),
    );
    assert.equal(renamed.status, 400);
  });
});

test("kubeApiHandler applies merge and JSON patches to the spec", async () => {
  await withStore(async (store, bh) => {
    const handle = kubeApiHandler({ store });
    await bh.client(Cluster).create("prod", { replicas: 1, zone: "a", tags: ["x"] });
    const merged = await call(
      handle,
      `${CLUSTERS}/prod`,
      json("PATCH", { spec: { replicas: 3, zone: null } }, "application/merge-patch+json"),
    );
    assert.equal(merged.status, 200);
    assert.deepEqual(merged.body.spec, { replicas: 3, tags: ["x"] });
    const patched = await call(
      handle,
      `${CLUSTERS}/prod`,
      json("PATCH", [
        { op: "test", path: "/spec/replicas", value: 3 },
        { op: "add", path: "/spec/tags/-", value: "y" },
        { op: "replace", path: "/spec/replicas", value: 5 },
      ], "application/json-patch+json"),
    );
    assert.equal(patched.status, 200);
    assert.deepEqual(patched.body.spec, { replicas: 5, tags: ["x", "y"] });
    const failed = await call(
      handle,
      `${CLUSTERS}/prod`,
      json(
        "PATCH",
        [{ op: "test", path: "/spec/replicas", value: 1 }],
        "application/json-patch+json",
      ),
    );
    assert.equal(failed.status, 422);
    const missing = await call(
      handle,
      `${CLUSTERS}/prod`,
      json("PATCH", [{ op: "remove", path: "/spec/nope" }], "application/json-patch+json"),
    );
    assert.equal(missing.status, 422);
    assert.equal((missing.body.details as Causes).causes[0].field, "/spec/nope");
  });
});

test("kubectl create -f, replace -f and patch --type=merge|json write through serveKubeApi", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("seed", {});
    const dir = await mkdtemp(join(tmpdir(), "beehive-writes-"));
    const server = await serveKubeApi({ store, port: 0 });
    try {
      const config = join(dir, "kubeconfig");
      await writeFile(config, server.kubeconfig());
      const kubectl = kubectlIn(dir, config);
      const file = join(dir, "prod.json");
      const manifest = {
        apiVersion: "kstack.sh/v1",
        kind: "Cluster",
        metadata: { name: "prod" },
        spec: { replicas: 1 },
      };
      await writeFile(file, JSON.stringify(manifest));
      const created = await kubectl("create", "-f", file);
      assert.equal(created.code, 0, created.stderr);
      assert.match(created.stdout, /cluster\.kstack\.sh\/prod created/);

      await writeFile(file, JSON.stringify({ ...manifest, spec: { replicas: 2 } }));
      const replaced = await kubectl("replace", "-f", file);
      assert.equal(replaced.code, 0, replaced.stderr);
      assert.deepEqual((await bh.client(Cluster).getByName("prod")).spec, { replicas: 2 });

      const merge = await kubectl(
        "patch",
        "cluster",
        "prod",
        "--type=merge",
        "-p",
        '{"spec":{"replicas":3}}',
      );
      assert.equal(merge.code, 0, merge.stderr);
      const jsonPatched = await kubectl(
        "patch",
        "cluster",
        "prod",
        "--type=json",
        "-p",
        '[{"op":"add","path":"/spec/zone","value":"b"}]',
      );
      assert.equal(jsonPatched.code, 0, jsonPatched.stderr);
      assert.deepEqual((await bh.client(Cluster).getByName("prod")).spec, {
        replicas: 3,
        zone: "b",
      });

      // A kind with no stored definition is explained with a free-form spec.
      const explained = await kubectl("explain", "clusters.spec");
      assert.equal(explained.code, 0, explained.stderr);
      assert.match(explained.stdout, /^FIELD: spec <Object>$/m);

      const strategic = await kubectl("patch", "cluster", "prod", "-p", '{"spec":{}}');
      assert.notEqual(strategic.code, 0);
      assert.match(strategic.stderr, /UnsupportedMediaType|415|not supported/);

      const labelled = await kubectl(
        "patch",
        "cluster",
        "prod",
        "--type=merge",
        "-p",
        '{"metadata":{"labels":{"team":"a"}}}',
      );
      assert.equal(labelled.code, 0, labelled.stderr);
      assert.deepEqual((await bh.client(Cluster).getByName("prod")).labels, { team: "a" });
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
