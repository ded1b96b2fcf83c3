/**
 * Server-side apply (`application/apply-patch+yaml`, `fieldManager`,
 * `force`) and the managed fields every write records: an apply creates,
 * leaves an unchanged object unwritten, conflicts as 409 naming the other
 * manager and field, takes the field under `force`, removes what it stopped
 * applying; an update records its manager's `Update` entry. In-process, then
 * through the real kubectl (`apply --server-side`, `--force-conflicts`,
 * client-side apply's manager).
 *
 * @module
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import type { Store } from "../../store/mod.ts";
import { test } from "../_test.ts";
import { call, Cluster, CLUSTERS, withKubectl, withStore } from "./_kubeapi_harness.ts";

type Entry = { manager: string; operation: string; fieldsType: string; fieldsV1: unknown };
type Resource = { metadata: { managedFields?: Entry[]; resourceVersion: string }; spec: unknown };
type Causes = { causes: { field: string; message: string; reason: string }[] };

const apply = (manager: string, body: unknown, query = "") => ({
  path: `${CLUSTERS}/prod?fieldManager=${manager}${query}`,
  init: {
    method: "PATCH",
    headers: { "content-type": "application/apply-patch+yaml" },
    body: JSON.stringify({ apiVersion: "kstack.sh/v1", kind: "Cluster", ...body as object }),
  },
});

const config = (spec: unknown, labels?: Record<string, string>) => ({
  metadata: { name: "prod", ...(labels === undefined ? {} : { labels }) },
  spec,
});

async function logged(store: Store): Promise<number> {
  return (await store.objectWrites.listSince(Cluster, { after: 0, limit: 10_000 })).writes.length;
}

function entries(resource: unknown): Record<string, unknown> {
  const list = (resource as Resource).metadata.managedFields ?? [];
  return Object.fromEntries(list.map((e) => [`${e.manager}/${e.operation}`, e.fieldsV1]));
}

test("kubeApiHandler server-side apply creates, leaves an unchanged object unwritten, conflicts, forces and removes what it stopped applying", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("seed", {});
    const handle = kubeApiHandler({ store });
    const send = (a: ReturnType<typeof apply>) => call(handle, a.path, a.init);

    const created = await send(apply("ops", config({ replicas: 1, zone: "a" }, { app: "shop" })));
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(entries(created.body), {
      "ops/Apply": {
        "f:metadata": { "f:labels": { "f:app": {} } },
        "f:spec": { "f:replicas": {}, "f:zone": {} },
      },
    });
    const read = await call(handle, `${CLUSTERS}/prod`);
    assert.deepEqual(entries(read.body), entries(created.body));
    assert.equal(
      (read.body as unknown as Resource).metadata.managedFields![0].fieldsType,
      "FieldsV1",
    );

    const before = await logged(store);
    const again = await send(apply("ops", config({ replicas: 1, zone: "a" }, { app: "shop" })));
    assert.equal(again.status, 200);
    assert.equal(await logged(store), before, "an unchanged apply writes nothing");

    const conflict = await send(apply("team", config({ replicas: 3 })));
    assert.equal(conflict.status, 409);
    assert.equal(conflict.body.reason, "Conflict");
    assert.match(
      String(conflict.body.message),
      /conflict with "ops" using kstack\.sh\/v1: \.spec\.replicas/,
    );
    const causes = (conflict.body.details as Causes).causes;
    assert.deepEqual(causes.map((c) => [c.reason, c.field]), [[
      "FieldManagerConflict",
      ".spec.replicas",
    ]]);
    assert.deepEqual((await bh.client(Cluster).getByName("prod")).spec, { replicas: 1, zone: "a" });

    // The same value is shared, not a conflict.
    const shared = await send(apply("team", config({ zone: "a" })));
    assert.equal(shared.status, 200);

    const forced = await send(apply("team", config({ replicas: 3, zone: "a" }), "&force=true"));
    assert.equal(forced.status, 200, JSON.stringify(forced.body));
    assert.deepEqual(entries(forced.body), {
      "ops/Apply": { "f:metadata": { "f:labels": { "f:app": {} } }, "f:spec": { "f:zone": {} } },
      "team/Apply": { "f:spec": { "f:replicas": {}, "f:zone": {} } },
    });
    assert.deepEqual((await bh.client(Cluster).getByName("prod")).spec, { replicas: 3, zone: "a" });

    // ops stops applying its label and the zone: the label goes (it alone held it), the zone
    // stays (team holds it too).
    const dropped = await send(apply("ops", { metadata: { name: "prod" } }));
    assert.equal(dropped.status, 200, JSON.stringify(dropped.body));
    const after = await bh.client(Cluster).getByName("prod");
    assert.deepEqual(after.labels, {});
    assert.deepEqual(after.spec, { replicas: 3, zone: "a" });
    assert.deepEqual(Object.keys(entries(dropped.body)), ["team/Apply"]);
  });
});

test("kubeApiHandler records an Update entry for each manager that changes fields, taking them from the others", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("seed", {});
    const handle = kubeApiHandler({ store });
    const created = await call(handle, `${CLUSTERS}?fieldManager=maker`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ metadata: { name: "prod" }, spec: { replicas: 1, zone: "a" } }),
    });
    assert.deepEqual(entries(created.body), {
      "maker/Update": { "f:spec": { "f:replicas": {}, "f:zone": {} } },
    });
    const patched = await call(handle, `${CLUSTERS}/prod?fieldManager=scaler`, {
      method: "PATCH",
      headers: { "content-type": "application/merge-patch+json" },
      body: JSON.stringify({ spec: { replicas: 5 } }),
    });
    assert.deepEqual(entries(patched.body), {
      "maker/Update": { "f:spec": { "f:zone": {} } },
      "scaler/Update": { "f:spec": { "f:replicas": {} } },
    });
    // Without a fieldManager, the User-Agent's program names the manager.
    const agent = await call(handle, `${CLUSTERS}/prod`, {
      method: "PATCH",
      headers: { "content-type": "application/merge-patch+json", "user-agent": "tool/1.0 (linux)" },
      body: JSON.stringify({ metadata: { labels: { a: "b" } } }),
    });
    assert.deepEqual(Object.keys(entries(agent.body)), [
      "maker/Update",
      "scaler/Update",
      "tool/Update",
    ]);
    const applyConflict = await call(handle, `${CLUSTERS}/prod?fieldManager=ops`, {
      method: "PATCH",
      headers: { "content-type": "application/apply-patch+yaml" },
      body: JSON.stringify({ apiVersion: "kstack.sh/v1", kind: "Cluster", spec: { replicas: 2 } }),
    });
    assert.equal(applyConflict.status, 409);
    assert.match(String(applyConflict.body.message), /conflict with "scaler"/);
  });
});

test("kubeApiHandler refuses an apply with no fieldManager, and a dry-run apply writes nothing", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("seed", {});
    const handle = kubeApiHandler({ store });
    const unnamed = await call(handle, `${CLUSTERS}/prod`, {
      method: "PATCH",
      headers: { "content-type": "application/apply-patch+yaml" },
      body: JSON.stringify({ apiVersion: "kstack.sh/v1", kind: "Cluster", spec: {} }),
    });
    assert.equal(unnamed.status, 422);
    assert.equal((unnamed.body.details as Causes).causes[0].field, "fieldManager");
    const before = await logged(store);
    const a = apply("ops", config({ replicas: 1 }), "&dryRun=All");
    const dry = await call(handle, a.path, a.init);
    assert.equal(dry.status, 201);
    assert.equal(await logged(store), before);
    await assert.rejects(bh.client(Cluster).getByName("prod"));
  });
});

test("kubeApiHandler refuses a write whose managed fields would pass the object size limit, with 422 naming the limit, and keeps the object", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("seed", {});
    const handle = kubeApiHandler({ store });
    const send = (a: ReturnType<typeof apply>) => call(handle, a.path, a.init);
    // 60,000 fields: a 0.66 MB spec, each manager's fieldsV1 about 0.84 MB; two pass 1.5 MiB.
    const spec = Object.fromEntries(
      Array.from({ length: 60_000 }, (_, i) => [`k${String(i).padStart(5, "0")}`, 1]),
    );
    const first = await send(apply("one", config(spec)));
    assert.equal(first.status, 201, JSON.stringify(first.body).slice(0, 300));
    const before = await logged(store);

    const second = await send(apply("two", config(spec)));
    assert.equal(second.status, 422, JSON.stringify(second.body).slice(0, 300));
    assert.equal(second.body.reason, "Invalid");
    const message = String(second.body.message);
    assert.equal(message.split("\n").length, 1, "one line");
    assert.match(message, /metadata\.managedFields: .*1572864 bytes \(the object size limit\)/);
    assert.ok(message.length < 400, message);
    assert.equal(await logged(store), before, "the refused apply wrote nothing");

    const read = await call(handle, `${CLUSTERS}/prod`);
    assert.equal(read.status, 200);
    assert.deepEqual(Object.keys(entries(read.body)), ["one/Apply"]);
    assert.ok(JSON.stringify(read.body).length < 1_572_864 * 2, "the object stays bounded");
  });
});

test("kubectl apply --server-side creates, leaves unchanged, configures, conflicts with another manager and takes over with --force-conflicts", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("seed", {});
    await withKubectl(store, async ({ kubectl, manifest }) => {
      const prod = (spec: unknown) => ({
        apiVersion: "kstack.sh/v1",
        kind: "Cluster",
        metadata: { name: "prod", labels: { app: "shop" } },
        spec,
      });
      const file = await manifest("prod.json", prod({ replicas: 1 }));
      const created = await kubectl("apply", "--server-side", "-f", file);
      assert.equal(created.code, 0, created.stderr);
      assert.match(created.stdout, /cluster\.kstack\.sh\/prod serverside-applied/);
      const first = await bh.client(Cluster).getByName("prod");

      const unchanged = await kubectl("apply", "--server-side", "-f", file);
      assert.equal(unchanged.code, 0, unchanged.stderr);
      assert.equal(
        (await bh.client(Cluster).getByName("prod")).resourceVersion,
        first.resourceVersion,
      );

      const configured = await kubectl(
        "apply",
        "--server-side",
        "-f",
        await manifest("prod.json", prod({ replicas: 2 })),
      );
      assert.equal(configured.code, 0, configured.stderr);
      assert.deepEqual((await bh.client(Cluster).getByName("prod")).spec, { replicas: 2 });

      const patched = await kubectl(
        "patch",
        "cluster",
        "prod",
        "--type=merge",
        "-p",
        '{"spec":{"replicas":7}}',
      );
      assert.equal(patched.code, 0, patched.stderr);
      const shown = await kubectl("get", "cluster", "prod", "-o", "json", "--show-managed-fields");
      const managers = (JSON.parse(shown.stdout).metadata.managedFields as Entry[]).map((e) =>
        `${e.manager}/${e.operation}`
      );
      assert.deepEqual(managers, ["kubectl/Apply", "kubectl-patch/Update"]);

      const conflict = await kubectl(
        "apply",
        "--server-side",
        "-f",
        await manifest("prod.json", prod({ replicas: 3 })),
      );
      assert.notEqual(conflict.code, 0);
      assert.match(conflict.stderr, /conflict with "kubectl-patch"/);
      assert.match(conflict.stderr, /\.spec\.replicas/);
      assert.deepEqual((await bh.client(Cluster).getByName("prod")).spec, { replicas: 7 });

      const forced = await kubectl("apply", "--server-side", "--force-conflicts", "-f", file);
      assert.equal(forced.code, 0, forced.stderr);
      assert.deepEqual((await bh.client(Cluster).getByName("prod")).spec, { replicas: 3 });

      const diff = await kubectl("diff", "--server-side", "-f", file);
      assert.equal(diff.code, 0, diff.stdout + diff.stderr);
    });
  });
});

test("kubectl client-side apply records kubectl-client-side-apply as an Update manager", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("seed", {});
    await withKubectl(store, async ({ kubectl, manifest }) => {
      const file = await manifest("prod.json", {
        apiVersion: "kstack.sh/v1",
        kind: "Cluster",
        metadata: { name: "prod" },
        spec: { replicas: 1 },
      });
      assert.equal((await kubectl("apply", "-f", file)).code, 0);
      const shown = await kubectl("get", "cluster", "prod", "-o", "json", "--show-managed-fields");
      const list = JSON.parse(shown.stdout).metadata.managedFields as Entry[];
      assert.deepEqual(list.map((e) => `${e.manager}/${e.operation}`), [
        "kubectl-client-side-apply/Update",
      ]);
      const fields = JSON.stringify(list[0].fieldsV1);
      assert.match(fields, /"f:spec":\{"f:replicas":\{\}\}/);
      assert.match(fields, /kubectl\.kubernetes\.io\/last-applied-configuration/);
    });
  });
});

test("kubeApiHandler answers any apply configuration, against a schema with typed lists, with a 2xx or a 4xx, never a 500", async () => {
  await withStore(async (store, bh) => {
    await store.kinds.put({
      ...Cluster,
      plural: "clusters",
      singular: "cluster",
      shortNames: [],
      namespaced: false,
      columns: "[]",
      specSchema: JSON.stringify({
        type: "object",
        properties: {
          ports: {
            type: "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            items: { type: "object" },
          },
          tags: { type: "array", "x-kubernetes-list-type": "set" },
          sel: { type: "object", "x-kubernetes-map-type": "atomic" },
        },
      }),
      statusSchema: undefined,
    });
    await bh.client(Cluster).create("seed", {});
    const handle = kubeApiHandler({ store });
    const codes = new Set<number>();
    const value = fc.letrec((tie) => ({
      leaf: fc.oneof(fc.string({ maxLength: 4 }), fc.integer(), fc.boolean(), fc.constant(null)),
      node: fc.oneof(
        { depthSize: "small" },
        tie("leaf"),
        fc.array(tie("node"), { maxLength: 3 }),
        fc.dictionary(fc.constantFrom("name", "port", "a", "b", "."), tie("node"), {
          maxKeys: 3,
        }),
      ),
    })).node;
    const spec = fc.record({
      ports: fc.oneof(value, fc.array(fc.record({ name: fc.constantFrom("a", "b"), port: value }))),
      tags: fc.oneof(value, fc.array(fc.constantFrom("x", "y", "z"))),
      sel: value,
      free: value,
    }, { requiredKeys: [] });
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("one", "two"),
        fc.boolean(),
        fc.oneof(spec, value),
        fc.option(fc.dictionary(fc.constantFrom("app", "x"), fc.string({ maxLength: 3 }))),
        async (manager, force, s, labels) => {
          const response = await handle(
            new Request(
              `http://localhost${CLUSTERS}/prod?fieldManager=${manager}&force=${force}`,
              {
                method: "PATCH",
                headers: { "content-type": "application/apply-patch+yaml" },
                body: JSON.stringify({
                  apiVersion: "kstack.sh/v1",
                  kind: "Cluster",
                  metadata: { name: "prod", ...(labels === null ? {} : { labels }) },
                  spec: s,
                }),
              },
            ),
          );
          const text = await response.text();
          codes.add(response.status);
          assert.ok(response.status < 500, `${response.status} ${text}`);
        },
      ),
      { seed: 39, numRuns: 300 },
    );
    // The campaign created, applied over, and conflicted.
    for (const code of [200, 201, 409]) assert.ok(codes.has(code), `no ${code} in ${[...codes]}`);
  });
});
