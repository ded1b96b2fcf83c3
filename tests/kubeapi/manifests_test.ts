/**
 * Manifests kubectl validates with its default validation: a `kind: List`
 * (validated through `/openapi/v2`) and a multi-document file holding a
 * `Namespace` and an object in it (the core group's `/openapi/v3/api/v1`).
 *
 * @module
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Beehive, defineKind } from "../../mod.ts";
import { kubeApiHandler, serveKubeApi } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import { call, Cluster, KUBECTL, kubectlIn, withStore } from "./_kubeapi_harness.ts";

const Team = defineKind<Record<string, unknown>, unknown>({
  group: "kstack.sh",
  kind: "Team",
  namespaced: true,
});

const LIST = `apiVersion: v1
kind: List
items:
- apiVersion: kstack.sh/v1
  kind: Cluster
  metadata:
    name: fromlist
  spec:
    replicas: 2
`;

const NAMESPACED = `apiVersion: v1
kind: Namespace
metadata:
  name: team-x
---
apiVersion: kstack.sh/v1
kind: Team
metadata:
  name: red
  namespace: team-x
spec:
  size: 1
`;

test("kubeApiHandler serves the core group's OpenAPI v3 document and an OpenAPI v2 document as JSON and as kubectl's protobuf", async () => {
  await withStore(async (store) => {
    const handle = kubeApiHandler({ store });
    const index = await call(handle, "/openapi/v3");
    const paths = index.body.paths as Record<string, { serverRelativeURL: string }>;
    assert.match(paths["api/v1"].serverRelativeURL, /^\/openapi\/v3\/api\/v1\?hash=[0-9A-F]{64}$/);
    const core = await call(handle, "/openapi/v3/api/v1");
    assert.equal(core.status, 200);
    const schemas = (core.body.components as { schemas: Record<string, unknown> }).schemas;
    assert.deepEqual(
      (schemas["io.k8s.api.core.v1.Namespace"] as Record<string, unknown>)[
        "x-kubernetes-group-version-kind"
      ],
      [{ group: "", version: "v1", kind: "Namespace" }],
    );
    const v2 = await call(handle, "/openapi/v2");
    assert.equal(v2.status, 200);
    assert.equal(v2.body.swagger, "2.0");
    const pb = await handle(
      new Request("http://localhost/openapi/v2", {
        headers: { accept: "application/com.github.proto-openapi.spec.v2@v1.0+protobuf" },
      }),
    );
    assert.equal(pb.status, 200);
    const bytes = new Uint8Array(await pb.arrayBuffer());
    assert.deepEqual([...bytes.subarray(0, 5)], [0x0a, 3, 0x32, 0x2e, 0x30]); // swagger: "2.0"
  });
});

test("kubectl apply takes a kind: List and a Namespace with an object in it under its default validation", async () => {
  assert.ok(existsSync(KUBECTL), `${KUBECTL} is missing: this test drives the real kubectl`);
  await withStore(async (store, bh) => {
    await (await new Beehive(store, { kinds: [Team] }).start())();
    await bh.client(Cluster).create("prod", {}); // the kind is served once the store holds it
    const dir = await mkdtemp(join(tmpdir(), "beehive-manifests-"));
    const server = await serveKubeApi({ store, port: 0 });
    try {
      const config = join(dir, "kubeconfig");
      await writeFile(config, server.kubeconfig());
      await writeFile(join(dir, "list.yaml"), LIST);
      await writeFile(join(dir, "namespaced.yaml"), NAMESPACED);
      const kubectl = kubectlIn(dir, config);
      const list = await kubectl("apply", "-f", join(dir, "list.yaml"));
      assert.equal(list.code, 0, list.stderr);
      assert.match(list.stdout, /cluster\.kstack\.sh\/fromlist created/);
      assert.deepEqual((await bh.client(Cluster).getByName("fromlist")).spec, { replicas: 2 });
      const namespaced = await kubectl("apply", "-f", join(dir, "namespaced.yaml"));
      assert.equal(namespaced.code, 0, namespaced.stderr);
      assert.match(namespaced.stdout, /namespace\/team-x created\nteam\.kstack\.sh\/red created/);
      const again = await kubectl("apply", "-f", join(dir, "namespaced.yaml"));
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /namespace\/team-x unchanged\nteam\.kstack\.sh\/red unchanged/);
      assert.deepEqual((await bh.client(Team, { namespace: "team-x" }).getByName("red")).spec, {
        size: 1,
      });
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
