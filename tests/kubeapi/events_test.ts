/**
 * Beehive events as core/v1 Events: the EventList with involvedObject field
 * selectors (what kubectl describe sends), namespaces, the core discovery
 * document, the events watch, and the real kubectl's describe, get events
 * and get events -w.
 *
 * @module
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kubeApiHandler, serveKubeApi } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import {
  call,
  Cluster,
  eventsOf,
  KUBECTL,
  kubectlArgs,
  kubectlEnv,
  kubectlIn,
  TABLE,
  withStore,
} from "./_kubeapi_harness.ts";

type Item = Record<string, Record<string, unknown> & unknown>;

test("kubeApiHandler serves an object's events as core/v1 Events selected by involvedObject fields", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", {});
    const dev = await bh.client(Cluster).create("dev", {});
    const admin = bh.adminClient(Cluster);
    await admin.addEvent(prod.id, { type: "Normal", reason: "Scaled", message: "to 3" });
    await admin.addEvent(prod.id, { type: "Normal", reason: "Scaled", message: "to 4" });
    await admin.addEvent(dev.id, { type: "Warning", reason: "Failed", message: "no quota" });
    const handle = kubeApiHandler({ store });
    const selector = encodeURIComponent(
      `involvedObject.name=prod,involvedObject.namespace=,involvedObject.kind=Cluster,involvedObject.uid=${prod.id}`,
    );
    const list = await call(handle, `/api/v1/events?fieldSelector=${selector}`);
    assert.equal(list.status, 200);
    assert.equal(list.body.kind, "EventList");
    const items = list.body.items as Item[];
    assert.equal(items.length, 1);
    assert.deepEqual(
      {
        reason: items[0].reason,
        message: items[0].message,
        type: items[0].type,
        count: items[0].count,
      },
      { reason: "Scaled", message: "to 4", type: "Normal", count: 2 },
    );
    assert.deepEqual(items[0].involvedObject, {
      apiVersion: "kstack.sh/v1",
      kind: "Cluster",
      name: "prod",
      uid: String(prod.id),
      resourceVersion: String(prod.resourceVersion),
    });
    assert.match(String(items[0].firstTimestamp), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.match(String(items[0].lastTimestamp), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    const all = await call(handle, "/api/v1/namespaces/default/events");
    assert.deepEqual((all.body.items as Item[]).map((i) => i.reason).sort(), ["Failed", "Scaled"]);
    const elsewhere = await call(handle, "/api/v1/namespaces/team-a/events");
    assert.deepEqual(elsewhere.body.items, []);
    const warnings = await call(handle, "/api/v1/events?fieldSelector=type%3DWarning");
    assert.deepEqual((warnings.body.items as Item[]).map((i) => i.reason), ["Failed"]);
    const bad = await call(handle, "/api/v1/events?fieldSelector=spec.x%3D1");
    assert.equal(bad.status, 400);
    const table = await call(handle, "/api/v1/events", { headers: { accept: TABLE } });
    assert.equal(table.body.kind, "Table");
    assert.equal((table.body.rows as unknown[]).length, 2);
  });
});

test("kubeApiHandler serves the core group's discovery with the events and namespaces resources alone", async () => {
  await withStore(async (store) => {
    const handle = kubeApiHandler({ store });
    assert.deepEqual((await call(handle, "/api")).body.versions, ["v1"]);
    const v1 = await call(handle, "/api/v1");
    const resources = v1.body.resources as { name: string; namespaced: boolean; verbs: string[] }[];
    assert.deepEqual(resources.map((r) => [r.name, r.namespaced, r.verbs]), [
      ["events", true, ["get", "list", "watch"]],
      ["namespaces", false, ["create", "delete", "get", "list", "patch", "update", "watch"]],
    ]);
    assert.equal((await call(handle, "/api/v1/pods")).status, 404);
  });
});

test("kubectl describe shows an object's events and kubectl get events lists them", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", { replicas: 3 });
    await bh.adminClient(Cluster).addEvent(prod.id, {
      type: "Warning",
      reason: "ProvisioningFailed",
      message: "the zone has no capacity",
    });
    const dir = await mkdtemp(join(tmpdir(), "beehive-events-"));
    const server = await serveKubeApi({ store, port: 0 });
    try {
      const config = join(dir, "kubeconfig");
      await writeFile(config, server.kubeconfig());
      const kubectl = kubectlIn(dir, config);
      const described = await kubectl("describe", "cluster", "prod");
      assert.equal(described.code, 0, described.stderr);
      assert.match(described.stdout, /^Name:\s+prod$/m);
      assert.match(
        described.stdout,
        /Events:[\s\S]*Warning\s+ProvisioningFailed\s+\S+\s+beehive\s+the zone has no capacity/,
      );
      const events = await kubectl("get", "events", "-A");
      assert.equal(events.code, 0, events.stderr);
      assert.match(
        events.stdout,
        /default\s+\S+\s+Warning\s+ProvisioningFailed\s+cluster\/prod\s+the zone has no capacity/,
      );
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

test("kubeApiHandler events watch sends the events as ADDED, then a new run as ADDED and one observed again as MODIFIED", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", {});
    const admin = bh.adminClient(Cluster);
    await admin.addEvent(prod.id, { type: "Normal", reason: "Scaled", message: "to 3" });
    const handle = kubeApiHandler({ store, pollInterval: 20 });
    const abort = new AbortController();
    const response = await handle(
      new Request("http://localhost/api/v1/namespaces/default/events?watch=true", {
        signal: abort.signal,
      }),
    );
    assert.equal(response.status, 200);
    const events = eventsOf(response);
    const brief = (e: Record<string, unknown> | undefined) => {
      const ev = e!.object as { reason: string; count: number; message: string };
      return [e!.type, ev.reason, ev.count, ev.message];
    };
    try {
      assert.deepEqual(brief(await events.next()), ["ADDED", "Scaled", 1, "to 3"]);
      await admin.addEvent(prod.id, { type: "Warning", reason: "Failed", message: "no quota" });
      assert.deepEqual(brief(await events.next()), ["ADDED", "Failed", 1, "no quota"]);
      await admin.addEvent(prod.id, { type: "Warning", reason: "Failed", message: "still none" });
      assert.deepEqual(brief(await events.next()), ["MODIFIED", "Failed", 2, "still none"]);
    } finally {
      abort.abort();
      await events.cancel();
    }
  });
});

test("kubectl get events -w shows an event recorded after it started", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", {});
    await bh.adminClient(Cluster).addEvent(prod.id, { type: "Normal", reason: "Created" });
    const dir = await mkdtemp(join(tmpdir(), "beehive-events-watch-"));
    const server = await serveKubeApi({ store, port: 0, pollInterval: 50 });
    try {
      const config = join(dir, "kubeconfig");
      await writeFile(config, server.kubeconfig());
      const watcher = spawn(KUBECTL, kubectlArgs(dir, config, "get", "events", "-w"), {
        env: kubectlEnv(dir),
      });
      const exited = new Promise<void>((resolve) => watcher.once("close", () => resolve()));
      let out = "";
      let recorded = false;
      const seen = Promise.withResolvers<void>();
      watcher.stdout.setEncoding("utf8");
      watcher.stdout.on("data", (chunk: string) => {
        out += chunk;
        if (!recorded && /Created/.test(out)) {
          recorded = true;
          bh.adminClient(Cluster).addEvent(prod.id, {
            type: "Warning",
            reason: "Degraded",
            message: "one node down",
          }).catch(seen.reject);
        }
        if (/Degraded\s+cluster\/prod\s+one node down/.test(out)) seen.resolve();
      });
      watcher.once("close", () => seen.reject(new Error(`kubectl get events -w ended:\n${out}`)));
      try {
        await seen.promise;
      } finally {
        watcher.kill();
        await exited;
      }
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
