/**
 * Namespaces as resources: `/api/v1/namespaces` create (JSON and the
 * protobuf kubectl sends), get, list and watch, an empty namespace listed once
 * created, delete draining every object in the namespace (Terminating while a
 * finalizer holds one), and the real kubectl's `create ns` / `delete ns`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Beehive, defineKind, NotFoundError } from "../../mod.ts";
import type { Store } from "../../store/mod.ts";
import { kubeApiHandler, serveKubeApi } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import {
  call,
  eventsOf,
  intercept,
  KUBECTL,
  kubectlArgs,
  kubectlEnv,
  kubectlIn,
  withStore,
} from "./_kubeapi_harness.ts";

const Team = defineKind<Record<string, unknown>, unknown>({
  group: "kstack.sh",
  kind: "Team",
  namespaced: true,
});
const NAMESPACES = "/api/v1/namespaces";

async function defineTeam(store: Store): Promise<void> {
  await (await new Beehive(store, { kinds: [Team] }).start())();
}

const post = (body: unknown) => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

const namesOf = (list: Record<string, unknown>) =>
  (list.items as { metadata: { name: string } }[]).map((n) => n.metadata.name);

test("kubeApiHandler creates a namespace: an empty namespace is listed and read once created", async () => {
  await withStore(async (store) => {
    const handle = kubeApiHandler({ store });
    const created = await call(
      handle,
      NAMESPACES,
      post({
        apiVersion: "v1",
        kind: "Namespace",
        metadata: { name: "empty", labels: { t: "1" } },
      }),
    );
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.kind, "Namespace");
    const meta = created.body.metadata as Record<string, unknown>;
    assert.equal(meta.name, "empty");
    assert.equal(typeof meta.uid, "string");
    assert.deepEqual(meta.labels, { t: "1", "kubernetes.io/metadata.name": "empty" });
    assert.deepEqual(namesOf((await call(handle, NAMESPACES)).body), ["default", "empty"]);
    const one = await call(handle, `${NAMESPACES}/empty`);
    assert.equal(one.status, 200);
    assert.deepEqual(one.body.status, { phase: "Active" });
  });
});

test("kubeApiHandler namespace create answers AlreadyExists 409 for a stored one and Invalid 422 for a name that is not a DNS-1123 label", async () => {
  await withStore(async (store) => {
    const handle = kubeApiHandler({ store });
    assert.equal((await call(handle, NAMESPACES, post({ metadata: { name: "a" } }))).status, 201);
    const again = await call(handle, NAMESPACES, post({ metadata: { name: "a" } }));
    assert.equal(again.status, 409);
    assert.equal(again.body.reason, "AlreadyExists");
    for (const name of ["UPPER", "a.b", "", "x".repeat(64)]) {
      const bad = await call(handle, NAMESPACES, post({ metadata: { name } }));
      assert.equal(bad.status, 422, name);
      assert.equal(bad.body.reason, "Invalid", name);
    }
    assert.deepEqual(namesOf((await call(handle, NAMESPACES)).body), ["a", "default"]);
  });
});

test("kubeApiHandler reads, creates and patches one namespace by its name, never listing every namespace", async () => {
  await withStore(async (raw) => {
    let lists = 0;
    const store = intercept(raw, { family: "objects", method: "list" }, (list, gk, ...rest) => {
      if (gk.kind === "Namespace") lists++;
      return list(gk, ...rest);
    });
    const handle = kubeApiHandler({ store });
    for (let i = 0; i < 3; i++) {
      assert.equal(
        (await call(handle, NAMESPACES, post({ metadata: { name: `n${i}` } }))).status,
        201,
      );
    }
    assert.equal((await call(handle, `${NAMESPACES}/n1`)).status, 200);
    assert.equal((await call(handle, `${NAMESPACES}/none`)).status, 404);
    assert.equal((await call(handle, NAMESPACES, post({ metadata: { name: "n1" } }))).status, 409);
    const patched = await call(handle, `${NAMESPACES}/n2`, {
      method: "PATCH",
      headers: { "content-type": "application/merge-patch+json" },
      body: JSON.stringify({ metadata: { labels: { tier: "gold" } } }),
    });
    assert.equal(patched.status, 200);
    assert.equal((patched.body.metadata as { labels: Record<string, string> }).labels.tier, "gold");
    assert.equal(lists, 0);
    // The list of every namespace still lists them.
    assert.deepEqual(
      namesOf((await call(handle, NAMESPACES)).body).filter((n) => n !== "default"),
      [
        "n0",
        "n1",
        "n2",
      ],
    );
    assert.ok(lists > 0);
  });
});

test("kubeApiHandler namespace delete deletes every object in it, then the namespace", async () => {
  await withStore(async (store, bh) => {
    await defineTeam(store);
    const red = await bh.client(Team, { namespace: "a" }).create("red", {});
    await bh.client(Team, { namespace: "a" }).create("blue", {});
    const kept = await bh.client(Team, { namespace: "b" }).create("red", {});
    const handle = kubeApiHandler({ store });
    const answer = await call(handle, `${NAMESPACES}/a`, { method: "DELETE" });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.kind, "Namespace");
    await assert.rejects(bh.client(Team).get(red.id), NotFoundError);
    assert.equal((await bh.client(Team, { namespace: "a" }).list()).length, 0);
    assert.equal((await bh.client(Team).get(kept.id)).deletionRequestedAt, undefined);
    assert.equal((await call(handle, `${NAMESPACES}/a`)).status, 404);
    assert.deepEqual(namesOf((await call(handle, NAMESPACES)).body), ["b", "default"]);
    const missing = await call(handle, `${NAMESPACES}/a`, { method: "DELETE" });
    assert.equal(missing.status, 404);
    const forbidden = await call(handle, `${NAMESPACES}/default`, { method: "DELETE" });
    assert.equal(forbidden.status, 403);
  });
});

test("kubeApiHandler namespace delete leaves it Terminating while a finalizer holds an object, refusing creates in it, and removes it once that goes", async () => {
  await withStore(async (store, bh) => {
    await defineTeam(store);
    const red = await bh.client(Team, { namespace: "a" }).create("red", {});
    await store.objects.addFinalizer(red, "kstack.sh/cleanup");
    const handle = kubeApiHandler({ store });
    const answer = await call(handle, `${NAMESPACES}/a`, { method: "DELETE" });
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body.status, { phase: "Terminating" });
    assert.equal(
      typeof (answer.body.metadata as Record<string, unknown>).deletionTimestamp,
      "string",
    );
    const still = await call(handle, `${NAMESPACES}/a`);
    assert.deepEqual(still.body.status, { phase: "Terminating" });
    const refused = await call(
      handle,
      "/apis/kstack.sh/v1/namespaces/a/teams",
      post({ apiVersion: "kstack.sh/v1", kind: "Team", metadata: { name: "late" }, spec: {} }),
    );
    assert.equal(refused.status, 403, JSON.stringify(refused.body));
    assert.match(String(refused.body.message), /because it is being terminated/);
    await bh.adminClient(Team).deleteFinalizer(red.id, "kstack.sh/cleanup");
    assert.equal((await call(handle, `${NAMESPACES}/a`)).status, 404);
  });
});

test("kubeApiHandler namespace PUT and PATCH write its labels and annotations, storing one only in use", async () => {
  await withStore(async (store, bh) => {
    await defineTeam(store);
    await bh.client(Team, { namespace: "used" }).create("red", {});
    const handle = kubeApiHandler({ store });
    const patch = (body: unknown, type: string) => ({
      method: "PATCH",
      headers: { "content-type": type },
      body: JSON.stringify(body),
    });
    const merged = await call(
      handle,
      `${NAMESPACES}/used`,
      patch({ metadata: { labels: { tier: "gold" } } }, "application/strategic-merge-patch+json"),
    );
    assert.equal(merged.status, 200, JSON.stringify(merged.body));
    const meta = merged.body.metadata as Record<string, unknown>;
    assert.deepEqual(meta.labels, { tier: "gold", "kubernetes.io/metadata.name": "used" });
    assert.equal(typeof meta.uid, "string");
    const json = await call(
      handle,
      `${NAMESPACES}/used`,
      patch(
        [{ op: "add", path: "/metadata/annotations", value: { note: "x" } }],
        "application/json-patch+json",
      ),
    );
    assert.equal(json.status, 200, JSON.stringify(json.body));
    const stored = await bh.client({ group: "", kind: "Namespace" }).getByName("used");
    assert.deepEqual(stored.labels, { tier: "gold" });
    assert.deepEqual(stored.annotations, { note: "x" });
    const stale = await call(handle, `${NAMESPACES}/used`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ metadata: { name: "used", resourceVersion: "1" } }),
    });
    assert.equal(stale.status, 409);
    assert.equal(
      (await call(handle, `${NAMESPACES}/nope`, patch({}, "application/merge-patch+json"))).status,
      404,
    );
  });
});

test("kubeApiHandler namespace merge patch removes a label whose key is an Object.prototype name", async () => {
  await withStore(async (store, bh) => {
    await defineTeam(store);
    await bh.client(Team, { namespace: "used" }).create("red", {});
    const handle = kubeApiHandler({ store });
    const patch = (labels: Record<string, string | null>) => ({
      method: "PATCH",
      headers: { "content-type": "application/merge-patch+json" },
      body: JSON.stringify({ metadata: { labels } }),
    });
    const set = await call(handle, `${NAMESPACES}/used`, patch({ constructor: "x", tier: "gold" }));
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const removed = await call(handle, `${NAMESPACES}/used`, patch({ constructor: null }));
    assert.equal(removed.status, 200, JSON.stringify(removed.body));
    const stored = await bh.client({ group: "", kind: "Namespace" }).getByName("used");
    assert.deepEqual(stored.labels, { tier: "gold" });
  });
});

test("kubeApiHandler namespace watch sends the namespaces as ADDED, then a created one ADDED and a deleted one DELETED", async () => {
  await withStore(async (store) => {
    const handle = kubeApiHandler({ store, pollInterval: 50 });
    assert.equal((await call(handle, NAMESPACES, post({ metadata: { name: "a" } }))).status, 201);
    const abort = new AbortController();
    const events = eventsOf(
      await handle(
        new Request(`http://localhost${NAMESPACES}?watch=true`, { signal: abort.signal }),
      ),
    );
    try {
      const seen: string[] = [];
      const next = async () => {
        const e = (await events.next())!;
        seen.push(`${e.type} ${(e.object as { metadata: { name: string } }).metadata.name}`);
      };
      await next();
      await next();
      assert.equal((await call(handle, NAMESPACES, post({ metadata: { name: "b" } }))).status, 201);
      await next();
      assert.equal((await call(handle, `${NAMESPACES}/a`, { method: "DELETE" })).status, 200);
      for (;;) {
        await next();
        if (seen.at(-1) === "DELETED a") break;
      }
      assert.deepEqual(seen.slice(0, 3), ["ADDED a", "ADDED default", "ADDED b"]);
    } finally {
      abort.abort();
      await events.cancel();
    }
  });
});

test("kubectl create namespace, label it, get it while empty, delete namespace and get ns -w against serveKubeApi", async () => {
  assert.ok(existsSync(KUBECTL), `${KUBECTL} is missing: this test drives the real kubectl`);
  await withStore(async (store, bh) => {
    await defineTeam(store);
    const dir = await mkdtemp(join(tmpdir(), "beehive-namespace-resources-"));
    const server = await serveKubeApi({ store, port: 0 });
    try {
      const config = join(dir, "kubeconfig");
      await writeFile(config, server.kubeconfig());
      const kubectl = kubectlIn(dir, config);
      const created = await kubectl("create", "namespace", "team-a");
      assert.equal(created.code, 0, created.stderr);
      assert.match(created.stdout, /namespace\/team-a created/);
      const labeled = await kubectl("label", "ns", "team-a", "tier=gold");
      assert.equal(labeled.code, 0, labeled.stderr);
      assert.match(labeled.stdout, /namespace\/team-a labeled/);
      const got = await kubectl("get", "ns", "team-a", "--no-headers");
      assert.equal(got.code, 0, got.stderr);
      assert.match(got.stdout, /^team-a\s+Active/);
      const shown = await kubectl("get", "ns", "team-a", "-o", "jsonpath={.metadata.labels.tier}");
      assert.equal(shown.stdout, "gold");
      await bh.client(Team, { namespace: "team-a" }).create("red", {});
      const deleted = await kubectl("delete", "ns", "team-a", "--timeout=20s");
      assert.equal(deleted.code, 0, deleted.stderr);
      assert.match(deleted.stdout, /namespace "team-a" deleted/);
      const gone = await kubectl("get", "ns", "team-a");
      assert.notEqual(gone.code, 0);
      assert.match(gone.stderr, /namespaces "team-a" not found/);
      assert.equal((await bh.client(Team, { namespace: "team-a" }).list()).length, 0);

      const watcher = spawn(KUBECTL, kubectlArgs(dir, config, "get", "ns", "-w"), {
        env: kubectlEnv(dir),
      });
      const exited = new Promise<void>((resolve) => watcher.once("close", () => resolve()));
      let out = "";
      let asked = false;
      const late = Promise.withResolvers<void>();
      watcher.stdout.setEncoding("utf8");
      watcher.stdout.on("data", (chunk: string) => {
        out += chunk;
        if (!asked && /^default\s+Active/m.test(out)) {
          asked = true;
          kubectl("create", "namespace", "late").catch(late.reject);
        }
        if (/^late\s+Active/m.test(out)) late.resolve();
      });
      watcher.once("close", () => late.reject(new Error(`kubectl get ns -w ended:\n${out}`)));
      try {
        await late.promise;
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
