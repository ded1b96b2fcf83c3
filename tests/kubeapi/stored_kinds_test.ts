/**
 * What the Kubernetes API reads from a kind's stored definition: its printer
 * columns in Tables, its scope in discovery, its JSON Schemas as OpenAPI v3
 * (`/openapi/v3`), and `fieldValidation` on writes judged against them.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Store } from "../../store/mod.ts";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import { call, Cluster, CLUSTERS, eventsOf, TABLE, withStore } from "./_kubeapi_harness.ts";

const SPEC_SCHEMA = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  description: "What the cluster should be.",
  required: ["replicas"],
  properties: {
    replicas: { type: "integer", minimum: 0, description: "How many nodes." },
    zone: { type: ["string", "null"], description: "Where it runs." },
    tier: { const: "gold" },
    network: { $ref: "#/$defs/Network" },
    labels: { type: "object", additionalProperties: { type: "string" } },
    extra: { type: "object", additionalProperties: true },
    nodes: { type: "array", items: { type: "object", properties: { name: { type: "string" } } } },
  },
  $defs: {
    Network: {
      type: "object",
      properties: { cidr: { type: "string", description: "The address range." } },
    },
  },
};
const STATUS_SCHEMA = {
  type: "object",
  properties: { nodes: { type: "integer", exclusiveMinimum: 0 } },
};

/** Stores Cluster's definition as a Beehive's start would, with `columns` and both schemas. */
async function defineCluster(
  store: Store,
  o: { columns?: unknown[]; namespaced?: boolean; schemas?: boolean } = {},
): Promise<void> {
  await store.kinds.put({
    ...Cluster,
    plural: "clusters",
    singular: "cluster",
    shortNames: ["cl"],
    namespaced: o.namespaced ?? false,
    columns: JSON.stringify(o.columns ?? []),
    specSchema: o.schemas === false ? undefined : JSON.stringify(SPEC_SCHEMA),
    statusSchema: o.schemas === false ? undefined : JSON.stringify(STATUS_SCHEMA),
  });
}

const json = (method: string, body: unknown, type = "application/json") => ({
  method,
  headers: { "content-type": type },
  body: JSON.stringify(body),
});
type Causes = { causes: { field: string; message: string }[] };
type Table = {
  columnDefinitions: { name: string; type: string; format: string }[];
  rows: { cells: unknown[] }[];
};

test("kubeApiHandler prints a stored kind's columns between NAME and READY, as Kubernetes prints a custom resource's", async () => {
  await withStore(async (store, bh) => {
    await defineCluster(store, {
      columns: [
        { name: "Replicas", jsonPath: ".spec.replicas", type: "integer" },
        { name: "CIDR", jsonPath: ".spec.network.cidr" },
        { name: "Nodes", jsonPath: ".spec.nodes" },
        { name: "First", jsonPath: ".spec.nodes[0].name" },
        { name: "Ready", jsonPath: ".status.conditions[0].status" },
        { name: "Since", jsonPath: ".metadata.creationTimestamp", type: "date" },
        { name: "Filtered", jsonPath: ".spec.nodes[*].name" },
      ],
    });
    const prod = await bh.client(Cluster).create("prod", {
      replicas: 3,
      network: { cidr: "10.0.0.0/8" },
      nodes: [{ name: "n1" }],
    });
    await bh.adminClient(Cluster).setCondition(prod.id, { type: "Ready", status: "True" });
    await bh.client(Cluster).create("dev", { replicas: 1 });
    const handle = kubeApiHandler({ store });
    const list = await call(handle, CLUSTERS, { headers: { accept: TABLE } });
    assert.equal(list.status, 200);
    const t = list.body as unknown as Table;
    assert.deepEqual(t.columnDefinitions.map((c) => [c.name, c.type]), [
      ["Name", "string"],
      ["Replicas", "integer"],
      ["CIDR", "string"],
      ["Nodes", "string"],
      ["First", "string"],
      ["Ready", "string"],
      ["Since", "date"],
      ["Filtered", "string"],
      ["Ready", "string"],
      ["Age", "string"],
    ]);
    const [prodRow, devRow] = t.rows.map((r) => r.cells);
    assert.deepEqual(prodRow.slice(0, 6), [
      "prod",
      3,
      "10.0.0.0/8",
      '[{"name":"n1"}]',
      "n1",
      "True",
    ]);
    assert.match(String(prodRow[6]), /^\d+s$/);
    // A path outside the subset, and a value that is missing, are null: kubectl prints them blank.
    assert.equal(prodRow[7], null);
    assert.deepEqual(devRow.slice(0, 6), ["dev", 1, null, null, null, null]);

    const one = await call(handle, `${CLUSTERS}/prod`, { headers: { accept: TABLE } });
    assert.equal((one.body as unknown as Table).rows[0].cells[1], 3);

    const response = await handle(
      new Request(`http://localhost${CLUSTERS}?watch=true&fieldSelector=metadata.name%3Ddev`, {
        headers: { accept: TABLE },
      }),
    );
    const events = eventsOf(response);
    const added = (await events.next())?.object as unknown as Table;
    assert.equal(added.columnDefinitions[1].name, "Replicas");
    assert.deepEqual(added.rows[0].cells.slice(0, 2), ["dev", 1]);
    await events.cancel();
    assert.equal(await events.next(), undefined);
  });
});

test("kubeApiHandler serves a kind stored as namespaced in namespaces, its discovery saying so", async () => {
  await withStore(async (store, bh) => {
    await defineCluster(store, { namespaced: true });
    await bh.client(Cluster, { namespace: "team-a" }).create("prod", { replicas: 1 });
    const handle = kubeApiHandler({ store });
    const resources = await call(handle, "/apis/kstack.sh/v1");
    const [cluster] = resources.body.resources as { namespaced: boolean }[];
    assert.equal(cluster.namespaced, true);
    const inside = await call(handle, "/apis/kstack.sh/v1/namespaces/team-a/clusters/prod");
    assert.equal(inside.status, 200);
    assert.equal((inside.body.metadata as { namespace: string }).namespace, "team-a");
    assert.equal((await call(handle, `${CLUSTERS}/prod`)).status, 404);
  });
});

test("kubeApiHandler serves a kind's new scope once discovery has read its changed definition", async () => {
  await withStore(async (store, bh) => {
    await defineCluster(store);
    await bh.client(Cluster).create("prod", { replicas: 1 });
    const handle = kubeApiHandler({ store });
    const before = (await call(handle, "/apis/kstack.sh/v1")).body.resources as {
      namespaced: boolean;
    }[];
    assert.equal(before[0].namespaced, false);
    await defineCluster(store, { namespaced: true });
    const [cluster] = (await call(handle, "/apis/kstack.sh/v1")).body.resources as {
      namespaced: boolean;
    }[];
    assert.equal(cluster.namespaced, true);
    assert.equal((await call(handle, "/apis/kstack.sh/v1/namespaces/a/clusters")).status, 200);
  });
});

test("kubeApiHandler serves /openapi/v3 as an index of hashed group-version documents under its base path", async () => {
  await withStore(async (store, bh) => {
    await defineCluster(store);
    await bh.client(Cluster).create("prod", { replicas: 1 });
    await bh.client({ group: "other.io", kind: "Thing" }).create("a", {});
    const handle = kubeApiHandler({ store, basePath: "/k8s" });
    const index = await call(handle, "/k8s/openapi/v3");
    assert.equal(index.status, 200);
    const paths = index.body.paths as Record<string, { serverRelativeURL: string }>;
    // The core group's document (Namespace) is listed too.
    assert.deepEqual(Object.keys(paths).sort(), [
      "api/v1",
      "apis/kstack.sh/v1",
      "apis/other.io/v1",
    ]);
    const url = paths["apis/kstack.sh/v1"].serverRelativeURL;
    assert.match(url, /^\/k8s\/openapi\/v3\/apis\/kstack\.sh\/v1\?hash=[0-9A-F]{64}$/);
    const doc = await call(handle, url);
    assert.equal(doc.status, 200);
    assert.equal(doc.body.openapi, "3.0.0");

    // The hash follows the document: a changed schema is a new URL, so caches refetch.
    await store.kinds.put({
      ...Cluster,
      plural: "clusters",
      singular: "cluster",
      shortNames: [],
      namespaced: false,
      columns: "[]",
      specSchema: JSON.stringify({ type: "object" }),
      statusSchema: undefined,
    });
    const again = await call(handle, "/k8s/openapi/v3");
    const moved = (again.body.paths as typeof paths)["apis/kstack.sh/v1"].serverRelativeURL;
    assert.notEqual(moved, url);

    // /openapi/v2 is served without definitions, for kubectl's validation of a kind: List.
    assert.equal((await call(handle, "/k8s/openapi/v2")).status, 200);
    assert.equal((await call(handle, "/k8s/openapi/v3/apis/none.io/v1")).status, 404);
    assert.equal((await call(handle, "/k8s/openapi/v3/apis/kstack.sh/v2")).status, 404);
    assert.equal((await call(handle, "/k8s/openapi/v3", { method: "POST" })).status, 405);
  });
});

test("kubeApiHandler's OpenAPI document carries the stored schemas as OpenAPI 3.0, the group-version-kind and fieldValidation on patch", async () => {
  await withStore(async (store, bh) => {
    await defineCluster(store);
    await bh.client(Cluster).create("prod", { replicas: 1 });
    const handle = kubeApiHandler({ store });
    const doc = (await call(handle, "/openapi/v3/apis/kstack.sh/v1")).body;
    // deno-lint-ignore no-explicit-any
    const schemas = (doc.components as any).schemas;
    const cluster = schemas["sh.kstack.v1.Cluster"];
    assert.deepEqual(cluster["x-kubernetes-group-version-kind"], [
      { group: "kstack.sh", version: "v1", kind: "Cluster" },
    ]);
    const spec = cluster.properties.spec;
    assert.equal(spec.description, "What the cluster should be.");
    assert.deepEqual(spec.required, ["replicas"]);
    assert.equal(spec.$schema, undefined);
    assert.equal(spec.$defs, undefined);
    assert.deepEqual(spec.properties.zone, {
      description: "Where it runs.",
      nullable: true,
      type: "string",
    });
    assert.deepEqual(spec.properties.tier, { enum: ["gold"] });
    // $refs are inlined: kubectl explain walks properties.
    assert.deepEqual(spec.properties.network, {
      type: "object",
      properties: { cidr: { type: "string", description: "The address range." } },
    });
    const status = cluster.properties.status;
    assert.deepEqual(status.properties.nodes, {
      type: "integer",
      minimum: 0,
      exclusiveMinimum: true,
    });
    assert.equal(status.properties.conditions.type, "array");
    assert.deepEqual(cluster.properties.metadata.allOf, [
      { $ref: "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" },
    ]);
    assert.ok(schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].properties.labels);

    // deno-lint-ignore no-explicit-any
    const patch = (doc.paths as any)["/apis/kstack.sh/v1/clusters/{name}"].patch;
    assert.deepEqual(patch["x-kubernetes-group-version-kind"], {
      group: "kstack.sh",
      version: "v1",
      kind: "Cluster",
    });
    assert.ok(
      patch.parameters.some((p: { name: string; in: string }) =>
        p.name === "fieldValidation" && p.in === "query"
      ),
    );
  });
});

test("kubeApiHandler's OpenAPI document bounds a schema whose $refs recurse or fan out", async () => {
  await withStore(async (store, bh) => {
    // Each level refers to the next twice: inlined whole, 2^40 nodes.
    const $defs: Record<string, unknown> = {};
    for (let i = 0; i < 40; i++) {
      $defs[`L${i}`] = {
        type: "object",
        properties: { a: { $ref: `#/$defs/L${i + 1}` }, b: { $ref: `#/$defs/L${i + 1}` } },
      };
    }
    $defs.L40 = { type: "object", properties: { self: { $ref: "#/$defs/L40" } } };
    await store.kinds.put({
      ...Cluster,
      plural: "clusters",
      singular: "cluster",
      shortNames: [],
      namespaced: false,
      columns: "[]",
      specSchema: JSON.stringify({ $ref: "#/$defs/L0", $defs }),
      statusSchema: undefined,
    });
    await bh.client(Cluster).create("prod", {});
    const handle = kubeApiHandler({ store });
    const doc = await call(handle, "/openapi/v3/apis/kstack.sh/v1");
    assert.equal(doc.status, 200);
    assert.ok(JSON.stringify(doc.body).length < 5_000_000);
  });
});

test("kubeApiHandler refuses fields the stored schema does not declare under fieldValidation=Strict, naming each, writing nothing", async () => {
  await withStore(async (store, bh) => {
    await defineCluster(store);
    await bh.client(Cluster).create("prod", { replicas: 1 });
    const handle = kubeApiHandler({ store });
    const strict = `${CLUSTERS}?fieldValidation=Strict`;
    const body = {
      apiVersion: "kstack.sh/v1",
      kind: "Cluster",
      metadata: { name: "dev", colour: "red" },
      spec: {
        replicas: 1,
        replicaz: 2,
        network: { cidr: "10.0.0.0/8", mask: 8 },
        labels: { any: "key" },
        extra: { anything: { goes: true } },
        nodes: [{ name: "n1", size: "xl" }],
      },
      status: { whatever: 1 },
      surplus: true,
    };
    const created = await call(handle, strict, json("POST", body));
    assert.equal(created.status, 422);
    assert.equal(created.body.reason, "Invalid");
    assert.deepEqual((created.body.details as Causes).causes.map((c) => c.field).sort(), [
      "metadata.colour",
      "spec.network.mask",
      "spec.nodes[0].size",
      "spec.replicaz",
      "surplus",
    ]);
    assert.match(String(created.body.message), /unknown field "spec\.replicaz"/);
    // Kubernetes names the kind, not the resource, in Invalid: kubectl prints `The Cluster "dev" is invalid`.
    assert.match(String(created.body.message), /^Cluster\.kstack\.sh "dev" is invalid: /);
    assert.equal((created.body.details as { kind: string }).kind, "Cluster");
    assert.equal((await call(handle, `${CLUSTERS}/dev`)).status, 404);

    const put = await call(
      handle,
      `${CLUSTERS}/prod?fieldValidation=Strict`,
      json("PUT", { metadata: { name: "prod" }, spec: { replicas: 2, size: 1 } }),
    );
    assert.equal(put.status, 422);
    assert.deepEqual((put.body.details as Causes).causes.map((c) => c.field), ["spec.size"]);
    const merge = await call(
      handle,
      `${CLUSTERS}/prod?fieldValidation=Strict`,
      json("PATCH", { spec: { size: 1 } }, "application/merge-patch+json"),
    );
    assert.equal(merge.status, 422);
    assert.deepEqual((merge.body.details as Causes).causes.map((c) => c.field), ["spec.size"]);
    const jsonPatched = await call(
      handle,
      `${CLUSTERS}/prod?fieldValidation=Strict`,
      json(
        "PATCH",
        [{ op: "add", path: "/spec/size", value: 1 }],
        "application/json-patch+json",
      ),
    );
    assert.equal(jsonPatched.status, 422);
    assert.deepEqual((await bh.client(Cluster).getByName("prod")).spec, { replicas: 1 });

    const known = await call(
      handle,
      `${CLUSTERS}/prod?fieldValidation=Strict`,
      json("PATCH", { spec: { replicas: 4 } }, "application/merge-patch+json"),
    );
    assert.equal(known.status, 200);
  });
});

test("kubeApiHandler drops undeclared fields under fieldValidation Warn (the default) with a Warning header, and under Ignore silently", async () => {
  await withStore(async (store, bh) => {
    await defineCluster(store);
    await bh.client(Cluster).create("seed", { replicas: 0 });
    const handle = kubeApiHandler({ store });
    const post = (query: string, name: string) =>
      handle(
        new Request(
          `http://localhost${CLUSTERS}${query}`,
          json("POST", {
            metadata: { name },
            spec: { replicas: 1, size: 1, network: { cidr: "10.0.0.0/8", mask: 8 } },
            surplus: true,
          }),
        ),
      );
    const warned = await post("", "warned");
    assert.equal(warned.status, 201);
    assert.equal(
      warned.headers.get("warning"),
      '299 - "unknown field \\"spec.size\\"", 299 - "unknown field \\"spec.network.mask\\"", ' +
        '299 - "unknown field \\"surplus\\""',
    );
    const answered = await warned.json();
    assert.deepEqual(answered.spec, { replicas: 1, network: { cidr: "10.0.0.0/8" } });
    assert.equal(answered.surplus, undefined);
    assert.deepEqual((await bh.client(Cluster).getByName("warned")).spec, {
      replicas: 1,
      network: { cidr: "10.0.0.0/8" },
    });
    const ignored = await post("?fieldValidation=Ignore", "ignored");
    assert.equal(ignored.status, 201);
    assert.equal(ignored.headers.get("warning"), null);
    await ignored.body?.cancel();
    assert.deepEqual((await bh.client(Cluster).getByName("ignored")).spec, {
      replicas: 1,
      network: { cidr: "10.0.0.0/8" },
    });
    const bad = await call(
      handle,
      `${CLUSTERS}?fieldValidation=strict`,
      json("POST", { metadata: { name: "x" }, spec: {} }),
    );
    assert.equal(bad.status, 400);
    assert.match(String(bad.body.message), /fieldValidation must be Ignore, Warn or Strict/);
  });
});

test("kubeApiHandler drops the undeclared fields a PUT or a patch adds and keeps those already stored", async () => {
  await withStore(async (store, bh) => {
    await defineCluster(store);
    // The library stores what its schema takes: an undeclared field written by the app stays.
    await bh.client(Cluster).create("prod", { replicas: 1, legacy: "kept" });
    const handle = kubeApiHandler({ store });
    const put = await call(
      handle,
      `${CLUSTERS}/prod`,
      json("PUT", { metadata: { name: "prod" }, spec: { replicas: 2, legacy: "kept", size: 1 } }),
    );
    assert.equal(put.status, 200);
    assert.deepEqual((await bh.client(Cluster).getByName("prod")).spec, {
      replicas: 2,
      legacy: "kept",
    });
    const merged = await call(
      handle,
      `${CLUSTERS}/prod?fieldValidation=Ignore`,
      json("PATCH", { spec: { replicas: 3, colour: "red" } }, "application/merge-patch+json"),
    );
    assert.equal(merged.status, 200);
    const jsonPatched = await call(
      handle,
      `${CLUSTERS}/prod`,
      json(
        "PATCH",
        [{ op: "add", path: "/spec/nodes", value: [{ name: "n1", size: "xl" }] }],
        "application/json-patch+json",
      ),
    );
    assert.equal(jsonPatched.status, 200);
    assert.deepEqual((await bh.client(Cluster).getByName("prod")).spec, {
      replicas: 3,
      legacy: "kept",
      nodes: [{ name: "n1" }],
    });
  });
});

test("kubeApiHandler under fieldValidation=Strict takes any spec of a kind without a stored schema, and judges a JSON patch by what it adds", async () => {
  await withStore(async (store, bh) => {
    await defineCluster(store, { schemas: false });
    await bh.client(Cluster).create("prod", { anything: { at: "all" } });
    const handle = kubeApiHandler({ store });
    const created = await call(
      handle,
      `${CLUSTERS}?fieldValidation=Strict`,
      json("POST", { metadata: { name: "dev" }, spec: { free: [1, 2] } }),
    );
    assert.equal(created.status, 201);

    // A field stored before the schema declared properties does not fail a later patch.
    await defineCluster(store);
    const patched = await call(
      handle,
      `${CLUSTERS}/prod?fieldValidation=Strict`,
      json(
        "PATCH",
        [{ op: "add", path: "/spec/replicas", value: 2 }],
        "application/json-patch+json",
      ),
    );
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
  });
});

test("kubeApiHandler writes neither labels nor spec when a patch carries both and the stored schema refuses the spec", async () => {
  await withStore(async (store, bh) => {
    await defineCluster(store);
    await bh.client(Cluster).create("prod", { replicas: 1 }, { labels: { team: "a" } });
    const handle = kubeApiHandler({ store });
    const patched = await call(
      handle,
      `${CLUSTERS}/prod`,
      json(
        "PATCH",
        { metadata: { labels: { team: "b" } }, spec: { replicas: -1 } },
        "application/merge-patch+json",
      ),
    );
    assert.equal(patched.status, 422);
    assert.equal((patched.body.details as Causes).causes[0].field, "spec.replicas");
    assert.match(
      String(patched.body.message),
      /^Cluster\.kstack\.sh "prod" is invalid: spec\.replicas/,
    );
    const after = await bh.client(Cluster).getByName("prod");
    assert.deepEqual(after.labels, { team: "a" });
    assert.deepEqual(after.spec, { replicas: 1 });
  });
});

test("kubeApiHandler judges a member named __proto__ like any other, in schemas and in bodies", async () => {
  await withStore(async (store, bh) => {
    await store.kinds.put({
      ...Cluster,
      plural: "clusters",
      singular: "cluster",
      shortNames: [],
      namespaced: false,
      columns: "[]",
      specSchema:
        '{"type":"object","properties":{"__proto__":{"type":"string"},"a":{"type":"integer"}}}',
      statusSchema: undefined,
    });
    await bh.client(Cluster).create("seed", {});
    const handle = kubeApiHandler({ store });
    const doc = await call(handle, "/openapi/v3/apis/kstack.sh/v1");
    // deno-lint-ignore no-explicit-any
    const spec = (doc.body.components as any).schemas["sh.kstack.v1.Cluster"].properties.spec;
    assert.deepEqual(Object.keys(spec.properties), ["__proto__", "a"]);
    const declared = await call(handle, `${CLUSTERS}?fieldValidation=Strict`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"metadata":{"name":"a"},"spec":{"__proto__":"x"}}',
    });
    assert.equal(declared.status, 201, JSON.stringify(declared.body));
    await defineCluster(store);
    const undeclared = await call(handle, `${CLUSTERS}?fieldValidation=Strict`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"metadata":{"name":"b"},"spec":{"replicas":1,"__proto__":{}}}',
    });
    assert.equal(undeclared.status, 422);
    assert.deepEqual((undeclared.body.details as Causes).causes.map((c) => c.field), [
      "spec.__proto__",
    ]);
  });
});
