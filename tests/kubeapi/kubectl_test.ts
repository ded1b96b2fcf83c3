/**
 * The machine's real kubectl against kubeApiHandler on a loopback server
 * (Deno.serve under Deno, node:http under Node), with a temporary kubeconfig
 * and discovery cache: api-resources, get as a table, -o json and -o yaml,
 * --chunk-size, get -w seeing a change, delete waiting for the collection.
 *
 * @module
 */
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Beehive } from "../../mod.ts";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import { openTestStore } from "../_sqlite_driver.ts";
import { test } from "../_test.ts";
import { Cluster, serve } from "./_kubeapi_harness.ts";

const KUBECTL = "/usr/bin/kubectl";

function kubeconfig(server: string): string {
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: beehive",
    "  cluster:",
    `    server: ${server}`,
    "contexts:",
    "- name: beehive",
    "  context:",
    "    cluster: beehive",
    "    user: beehive",
    "current-context: beehive",
    "users:",
    "- name: beehive",
    "  user: {}",
    "",
  ].join("\n");
}

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

test("kubectl api-resources, get, get -o json|yaml, --chunk-size, get -w and delete work against kubeApiHandler", async () => {
  assert.ok(
    existsSync(KUBECTL),
    `${KUBECTL} is missing: this test drives the real kubectl (>= 1.29); install it to run the suite`,
  );
  const dir = await mkdtemp(join(tmpdir(), "beehive-kubectl-"));
  const store = await openTestStore(":memory:");
  const bh = new Beehive(store, { gcInterval: 50, watchFloorInterval: 100 });
  const stop = await bh.start();
  const seen: string[] = [];
  const handle = kubeApiHandler({ store, pollInterval: 100 });
  const server = await serve((request) => {
    seen.push(new URL(request.url).search);
    return handle(request);
  });
  try {
    const config = join(dir, "kubeconfig");
    await writeFile(config, kubeconfig(server.url));
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir };
    const args = (rest: string[]) => [
      "--kubeconfig",
      config,
      "--cache-dir",
      join(dir, "cache"),
      "--request-timeout=20s",
      ...rest,
    ];
    const kubectl = (...rest: string[]) =>
      new Promise<Run>((resolve) => {
        execFile(KUBECTL, args(rest), { env, timeout: 60_000 }, (error, stdout, stderr) => {
          const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
          resolve({ code, stdout, stderr });
        });
      });

    const prod = await bh.client(Cluster).create("prod", { replicas: 3 });
    await bh.adminClient(Cluster).setCondition(prod.id, { type: "Ready", status: "True" });
    await bh.client(Cluster).create("dev", { replicas: 1 });
    await bh.client(Cluster).create("qa", { replicas: 1 });

    const resources = await kubectl("api-resources");
    assert.equal(resources.code, 0, resources.stderr);
    assert.match(resources.stdout, /^clusters\s+kstack\.sh\/v1\s+false\s+Cluster$/m);

    const table = await kubectl("get", "clusters");
    assert.equal(table.code, 0, table.stderr);
    const lines = table.stdout.trim().split("\n").map((l) => l.split(/\s+/));
    assert.deepEqual(lines[0], ["NAME", "READY", "AGE"]);
    assert.deepEqual(lines.slice(1).map((l) => l.slice(0, 2)), [
      ["prod", "True"],
      ["dev", "-"],
      ["qa", "-"],
    ]);

    const json = await kubectl("get", "cluster", "prod", "-o", "json");
    assert.equal(json.code, 0, json.stderr);
    const obj = JSON.parse(json.stdout);
    assert.equal(obj.apiVersion, "kstack.sh/v1");
    assert.equal(obj.metadata.uid, String(prod.id));
    assert.deepEqual(obj.spec, { replicas: 3 });
    assert.equal(obj.status.conditions[0].type, "Ready");

    const yaml = await kubectl("get", "clusters.kstack.sh", "prod", "-o", "yaml");
    assert.equal(yaml.code, 0, yaml.stderr);
    assert.match(yaml.stdout, /^kind: Cluster$/m);
    assert.match(yaml.stdout, /^ {2}resourceVersion: "\d+"$/m);

    seen.length = 0;
    const chunked = await kubectl("get", "clusters", "--chunk-size=2", "--no-headers");
    assert.equal(chunked.code, 0, chunked.stderr);
    assert.deepEqual(chunked.stdout.trim().split("\n").map((l) => l.split(/\s+/)[0]), [
      "prod",
      "dev",
      "qa",
    ]);
    assert.ok(seen.some((q) => q.includes("continue=")), `no continued page in ${seen}`);

    const watcher = spawn(KUBECTL, args(["get", "clusters", "-w"]), { env });
    const exited = new Promise<void>((resolve) => watcher.once("close", () => resolve()));
    let out = "";
    let created = false;
    const late = Promise.withResolvers<void>();
    watcher.stdout.setEncoding("utf8");
    watcher.stdout.on("data", (chunk: string) => {
      out += chunk;
      if (!created && /^qa\s/m.test(out)) {
        created = true;
        bh.client(Cluster).create("late", {}).catch(late.reject);
      }
      if (/^late\s/m.test(out)) late.resolve();
    });
    watcher.once("close", () => late.reject(new Error(`kubectl get -w ended early:\n${out}`)));
    try {
      await late.promise;
    } finally {
      watcher.kill();
      await exited;
    }
    assert.match(out, /^NAME\s+READY\s+AGE$/m);

    const deleted = await kubectl("delete", "cluster", "dev");
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.match(deleted.stdout, /cluster\.kstack\.sh "dev" deleted/);
    const gone = await kubectl("get", "cluster", "dev");
    assert.equal(gone.code, 1);
    assert.match(
      gone.stderr,
      /Error from server \(NotFound\): clusters\.kstack\.sh "dev" not found/,
    );
  } finally {
    await server.close();
    await stop();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
});
