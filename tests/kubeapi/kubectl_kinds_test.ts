/**
 * The real kubectl against a kind whose definition a Beehive stored: `get`
 * prints its columns, `explain` its schema, `create -f` with kubectl's
 * default (strict) validation leaves validation to the server through
 * `/openapi/v3`, which refuses undeclared fields and schema violations by
 * name; server-side apply of what create wrote shares its fields.
 *
 * @module
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Beehive, defineKind, type StandardSchema } from "../../mod.ts";
import { serveKubeApi } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import { KUBECTL, kubectlIn, withStore } from "./_kubeapi_harness.ts";

interface ClusterSpec {
  replicas: number;
  zone?: string;
}

const SPEC_SCHEMA = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  description: "What the cluster should be.",
  required: ["replicas"],
  properties: {
    replicas: { type: "integer", minimum: 0, description: "How many nodes to run." },
    zone: { type: "string", description: "The zone the nodes run in." },
    network: { $ref: "#/$defs/Network" },
  },
  $defs: {
    Network: {
      type: "object",
      description: "How the nodes are reached.",
      properties: { cidr: { type: "string", description: "The address range." } },
    },
  },
};

/** A spec validator that describes itself as JSON Schema, as zod ≥ 4.2 and arktype do. */
const specValidator: StandardSchema<unknown, ClusterSpec> = {
  "~standard": {
    version: 1,
    vendor: "test",
    validate: (value) => {
      const s = value as ClusterSpec;
      return Number.isInteger(s?.replicas) && s.replicas >= 0
        ? { value: s }
        : { issues: [{ message: "replicas must be a whole number ≥ 0", path: ["replicas"] }] };
    },
    jsonSchema: { input: () => SPEC_SCHEMA, output: () => SPEC_SCHEMA },
  } as StandardSchema<unknown, ClusterSpec>["~standard"],
};

const Cluster = defineKind<ClusterSpec, unknown>({
  group: "kstack.sh",
  kind: "Cluster",
  shortNames: ["cl"],
  columns: [
    { name: "Replicas", jsonPath: ".spec.replicas", type: "integer" },
    { name: "Zone", jsonPath: ".spec.zone" },
  ],
  spec: specValidator,
});

test("kubectl get prints a stored kind's columns, explain its schema, and create -f validates on the server", async () => {
  assert.ok(existsSync(KUBECTL), `${KUBECTL} is missing: this test drives the real kubectl`);
  await withStore(async (store) => {
    // The app's process stores the kind's definition when it starts; the API server has no token.
    await (await new Beehive(store, { kinds: [Cluster] }).start())();
    const bh = new Beehive(store);
    await bh.client(Cluster).create("prod", { replicas: 3, zone: "eu-1" });
    const dir = await mkdtemp(join(tmpdir(), "beehive-kinds-"));
    const server = await serveKubeApi({ store, port: 0 });
    try {
      const config = join(dir, "kubeconfig");
      await writeFile(config, server.kubeconfig());
      const kubectl = kubectlIn(dir, config);

      const table = await kubectl("get", "cl");
      assert.equal(table.code, 0, table.stderr);
      const lines = table.stdout.trim().split("\n").map((l) => l.split(/\s+/));
      assert.deepEqual(lines[0], ["NAME", "REPLICAS", "ZONE", "READY", "AGE"]);
      assert.deepEqual(lines[1].slice(0, 4), ["prod", "3", "eu-1", "-"]);

      const explained = await kubectl("explain", "clusters");
      assert.equal(explained.code, 0, explained.stderr);
      assert.match(explained.stdout, /^KIND:\s+Cluster$/m);
      assert.match(explained.stdout, /^\s+spec\s+<Object>$/m);
      const spec = await kubectl("explain", "cluster.spec");
      assert.equal(spec.code, 0, spec.stderr);
      assert.match(spec.stdout, /What the cluster should be\./);
      assert.match(spec.stdout, /^\s+replicas\s+<integer> -required-$/m);
      assert.match(spec.stdout, /How many nodes to run\./);
      assert.match(spec.stdout, /^\s+network\s+<Object>$/m);
      const network = await kubectl("explain", "cluster.spec.network");
      assert.equal(network.code, 0, network.stderr);
      assert.match(network.stdout, /^\s+cidr\s+<string>$/m);

      const file = join(dir, "dev.json");
      const manifest = (spec: unknown) => ({
        apiVersion: "kstack.sh/v1",
        kind: "Cluster",
        metadata: { name: "dev" },
        spec,
      });
      await writeFile(file, JSON.stringify(manifest({ replicas: 1, zonee: "b" })));
      const unknown = await kubectl("create", "-f", file);
      assert.notEqual(unknown.code, 0);
      assert.match(unknown.stderr, /spec\.zonee/);
      assert.match(unknown.stderr, /unknown field/);

      // --validate=warn drops the field and kubectl prints the server's warning.
      await writeFile(
        file,
        JSON.stringify({ ...manifest({ replicas: 1, size: 1 }), metadata: { name: "warned" } }),
      );
      const warned = await kubectl("create", "-f", file, "--validate=warn");
      assert.equal(warned.code, 0, warned.stderr);
      assert.match(warned.stderr, /Warning: unknown field "spec\.size"/);
      assert.deepEqual((await bh.client(Cluster).getByName("warned")).spec, { replicas: 1 });
      // --validate=false drops it silently.
      await writeFile(
        file,
        JSON.stringify({ ...manifest({ replicas: 1, size: 1 }), metadata: { name: "quiet" } }),
      );
      const quiet = await kubectl("create", "-f", file, "--validate=false");
      assert.equal(quiet.code, 0, quiet.stderr);
      assert.doesNotMatch(quiet.stderr, /unknown field/);
      assert.deepEqual((await bh.client(Cluster).getByName("quiet")).spec, { replicas: 1 });

      await writeFile(file, JSON.stringify(manifest({ replicas: -1 })));
      const invalid = await kubectl("create", "-f", file);
      assert.notEqual(invalid.code, 0);
      assert.match(invalid.stderr, /The Cluster "dev" is invalid/);
      assert.match(invalid.stderr, /spec\.replicas/);

      await writeFile(file, JSON.stringify(manifest({ replicas: 1, zone: "b" })));
      const created = await kubectl("create", "-f", file);
      assert.equal(created.code, 0, created.stderr);
      assert.match(created.stdout, /cluster\.kstack\.sh\/dev created/);
      assert.deepEqual((await bh.client(Cluster).getByName("dev")).spec, {
        replicas: 1,
        zone: "b",
      });

      // The same values kubectl create set: shared with its manager, no conflict.
      const serverSide = await kubectl("apply", "--server-side", "-f", file);
      assert.equal(serverSide.code, 0, serverSide.stderr);
      assert.match(serverSide.stdout, /cluster\.kstack\.sh\/dev serverside-applied/);
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

test("kubectl apply -f creates and updates through the last-applied annotation, and label, annotate and get -l work (a malformed -l is BadRequest)", async () => {
  assert.ok(existsSync(KUBECTL), `${KUBECTL} is missing: this test drives the real kubectl`);
  await withStore(async (store) => {
    await (await new Beehive(store, { kinds: [Cluster] }).start())();
    const bh = new Beehive(store);
    const dir = await mkdtemp(join(tmpdir(), "beehive-apply-"));
    const server = await serveKubeApi({ store, port: 0 });
    try {
      const config = join(dir, "kubeconfig");
      await writeFile(config, server.kubeconfig());
      const kubectl = kubectlIn(dir, config);
      const file = join(dir, "web.yaml");
      const manifest = (replicas: number, team: string) =>
        [
          "apiVersion: kstack.sh/v1",
          "kind: Cluster",
          "metadata:",
          "  name: web",
          "  labels:",
          `    team: ${team}`,
          "spec:",
          `  replicas: ${replicas}`,
          "",
        ].join("\n");

      await writeFile(file, manifest(2, "a"));
      const created = await kubectl("apply", "-f", file);
      assert.equal(created.code, 0, created.stderr);
      assert.match(created.stdout, /cluster\.kstack\.sh\/web created/);
      let web = await bh.client(Cluster).getByName("web");
      assert.deepEqual(web.spec, { replicas: 2 });
      assert.deepEqual(web.labels, { team: "a" });
      const lastApplied = web.annotations["kubectl.kubernetes.io/last-applied-configuration"];
      assert.deepEqual(JSON.parse(lastApplied).spec, { replicas: 2 });

      const unchanged = await kubectl("apply", "-f", file);
      assert.equal(unchanged.code, 0, unchanged.stderr);
      assert.match(unchanged.stdout, /cluster\.kstack\.sh\/web unchanged/);

      await writeFile(file, manifest(3, "b"));
      const updated = await kubectl("apply", "-f", file);
      assert.equal(updated.code, 0, updated.stderr);
      assert.match(updated.stdout, /cluster\.kstack\.sh\/web configured/);
      web = await bh.client(Cluster).getByName("web");
      assert.deepEqual(web.spec, { replicas: 3 });
      assert.deepEqual(web.labels, { team: "b" });

      await writeFile(file, manifest(-1, "c"));
      const invalid = await kubectl("apply", "-f", file);
      assert.notEqual(invalid.code, 0);
      assert.match(invalid.stderr, /The Cluster "web" is invalid/);
      assert.match(invalid.stderr, /spec\.replicas/);
      web = await bh.client(Cluster).getByName("web");
      assert.deepEqual(web.spec, { replicas: 3 });
      assert.deepEqual(web.labels, { team: "b" });

      await bh.client(Cluster).create("db", { replicas: 1 });
      const labelled = await kubectl("label", "cluster", "db", "tier=data", "team=b");
      assert.equal(labelled.code, 0, labelled.stderr);
      assert.match(labelled.stdout, /cluster\.kstack\.sh\/db labeled/);
      const annotated = await kubectl("annotate", "cluster", "db", "owner=ops@example.com");
      assert.equal(annotated.code, 0, annotated.stderr);
      const db = await bh.client(Cluster).getByName("db");
      assert.deepEqual(db.labels, { tier: "data", team: "b" });
      assert.equal(db.annotations.owner, "ops@example.com");
      const removed = await kubectl("label", "cluster", "db", "tier-");
      assert.equal(removed.code, 0, removed.stderr);
      assert.deepEqual((await bh.client(Cluster).getByName("db")).labels, { team: "b" });

      const selected = await kubectl("get", "clusters", "-l", "team=b", "--no-headers");
      assert.equal(selected.code, 0, selected.stderr);
      assert.deepEqual(selected.stdout.trim().split("\n").map((l) => l.split(/\s+/)[0]), [
        "web",
        "db",
      ]);
      const none = await kubectl("get", "clusters", "-l", "team=z");
      assert.equal(none.code, 0, none.stderr);
      assert.match(none.stderr, /No resources found/);
      const malformed = await kubectl("get", "clusters", "-l", "team in (b");
      assert.notEqual(malformed.code, 0);
      assert.match(malformed.stderr, /BadRequest/);
      assert.match(malformed.stderr, /invalid label selector: .*team in \(b/);
      const shown = await kubectl("get", "cluster", "db", "--show-labels", "--no-headers");
      assert.equal(shown.code, 0, shown.stderr);
      assert.match(shown.stdout, /team=b$/m);
      const column = await kubectl("get", "cluster", "db", "-L", "tier,team");
      assert.equal(column.code, 0, column.stderr);
      assert.match(column.stdout, /^NAME\s+REPLICAS\s+ZONE\s+READY\s+AGE\s+TIER\s+TEAM$/m);
      // A missing value prints blank, as Kubernetes prints a custom resource's missing column.
      const row = column.stdout.trim().split("\n")[1].split(/\s+/);
      assert.deepEqual([row[0], row[1], row[2], row[4]], ["db", "1", "-", "b"]);
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

test("kubectl apply -f stores the stored schema's defaults, as the API server defaults a custom resource", async () => {
  assert.ok(existsSync(KUBECTL), `${KUBECTL} is missing: this test drives the real kubectl`);
  const HOOK_SCHEMA = {
    type: "object",
    required: ["url", "maxAttempts"],
    properties: {
      url: { type: "string" },
      maxAttempts: { type: "integer", minimum: 1, default: 5 },
      targets: {
        type: "array",
        items: { type: "object", properties: { port: { type: "integer", default: 443 } } },
      },
    },
  };
  const Hook = defineKind<{ url: string; maxAttempts: number }>({
    group: "kstack.sh",
    kind: "Hook",
    spec: {
      "~standard": {
        version: 1,
        vendor: "test",
        validate: (value) => ({ value: value as { url: string; maxAttempts: number } }),
        jsonSchema: { input: () => HOOK_SCHEMA, output: () => HOOK_SCHEMA },
      },
    } as StandardSchema<unknown, { url: string; maxAttempts: number }>,
  });
  await withStore(async (store) => {
    await (await new Beehive(store, { kinds: [Hook] }).start())();
    const dir = await mkdtemp(join(tmpdir(), "beehive-defaults-"));
    const server = await serveKubeApi({ store, port: 0 });
    try {
      const config = join(dir, "kubeconfig");
      await writeFile(config, server.kubeconfig());
      const kubectl = kubectlIn(dir, config);
      const file = join(dir, "hook.yaml");
      await writeFile(
        file,
        [
          "apiVersion: kstack.sh/v1",
          "kind: Hook",
          "metadata:",
          "  name: deliver",
          "spec:",
          "  url: https://example.com/hook",
          "  targets:",
          "  - {}",
          "",
        ].join("\n"),
      );
      const applied = await kubectl("apply", "-f", file);
      assert.equal(applied.code, 0, applied.stderr);
      const expected = {
        url: "https://example.com/hook",
        maxAttempts: 5,
        targets: [{ port: 443 }],
      };
      const shown = await kubectl("get", "hooks", "deliver", "-o", "json");
      assert.equal(shown.code, 0, shown.stderr);
      assert.deepEqual(JSON.parse(shown.stdout).spec, expected);
      const plain = new Beehive(store).client({ group: "kstack.sh", kind: "Hook" });
      assert.deepEqual((await plain.getByName("deliver")).spec, expected);
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
