/**
 * The real kubectl against a kind defined `namespaced: true`: `get` in the
 * context's namespace (`default`), `-n` and `-A` (with its NAMESPACE
 * column), `apply -n`, `delete -n`, `describe -n` with the object's events,
 * `get namespaces`, and a token scoped to namespaces refused outside them.
 *
 * @module
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Beehive, defineKind, NotFoundError } from "../../mod.ts";
import type { Store } from "../../store/mod.ts";
import { serveKubeApi } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import { KUBECTL, kubectlIn, withStore } from "./_kubeapi_harness.ts";

const Team = defineKind<Record<string, unknown>, unknown>({
  group: "kstack.sh",
  kind: "Team",
  namespaced: true,
});

/** Stores Team's definition as the app's process would when it starts. */
async function defineTeam(store: Store): Promise<void> {
  await (await new Beehive(store, { kinds: [Team] }).start())();
}

/** Runs `fn` with kubectl pointed at a server over `store` (`options` beyond the store and port). */
async function withKubectl(
  store: Store,
  options: Partial<Parameters<typeof serveKubeApi>[0]>,
  fn: (kubectl: ReturnType<typeof kubectlIn>, dir: string) => Promise<void>,
): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "beehive-namespaces-"));
  const server = await serveKubeApi({ store, port: 0, ...options });
  try {
    const config = join(dir, "kubeconfig");
    await writeFile(config, server.kubeconfig());
    await fn(kubectlIn(dir, config), dir);
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

const rowsOf = (stdout: string) => stdout.trim().split("\n").map((l) => l.split(/\s+/));

test("kubectl gets, applies, deletes and describes a namespaced kind's objects with -n and lists them with -A", async () => {
  assert.ok(existsSync(KUBECTL), `${KUBECTL} is missing: this test drives the real kubectl`);
  await withStore(async (store, bh) => {
    await defineTeam(store);
    await bh.client(Team, { namespace: "default" }).create("home", { size: 1 });
    const red = await bh.client(Team, { namespace: "a" }).create("red", { size: 2 });
    await bh.client(Team, { namespace: "b" }).create("red", { size: 3 });
    await bh.adminClient(Team).addEvent(red.id, {
      type: "Warning",
      reason: "Understaffed",
      message: "red needs two more",
    });
    await withKubectl(store, {}, async (kubectl, dir) => {
      // No -n: the context's namespace, which is default.
      const home = await kubectl("get", "teams", "--no-headers");
      assert.equal(home.code, 0, home.stderr);
      assert.deepEqual(rowsOf(home.stdout).map((r) => r[0]), ["home"]);

      const inA = await kubectl("get", "teams", "-n", "a", "-o", "jsonpath={.items[*].spec.size}");
      assert.equal(inA.code, 0, inA.stderr);
      assert.equal(inA.stdout, "2");
      const one = await kubectl("get", "team", "red", "-n", "b", "-o", "jsonpath={.spec.size}");
      assert.equal(one.code, 0, one.stderr);
      assert.equal(one.stdout, "3");
      const missing = await kubectl("get", "team", "red", "-n", "c");
      assert.notEqual(missing.code, 0);
      assert.match(missing.stderr, /NotFound/);

      const all = await kubectl("get", "teams", "-A");
      assert.equal(all.code, 0, all.stderr);
      const [header, ...rows] = rowsOf(all.stdout);
      assert.deepEqual(header.slice(0, 2), ["NAMESPACE", "NAME"]);
      assert.deepEqual(rows.map((r) => r.slice(0, 2)), [
        ["default", "home"],
        ["a", "red"],
        ["b", "red"],
      ]);

      const file = join(dir, "blue.json");
      await writeFile(
        file,
        JSON.stringify({
          apiVersion: "kstack.sh/v1",
          kind: "Team",
          metadata: { name: "blue" },
          spec: { size: 5 },
        }),
      );
      const applied = await kubectl("apply", "-n", "a", "-f", file);
      assert.equal(applied.code, 0, applied.stderr);
      assert.match(applied.stdout, /team\.kstack\.sh\/blue created/);
      assert.deepEqual((await bh.client(Team, { namespace: "a" }).getByName("blue")).spec, {
        size: 5,
      });
      await writeFile(
        file,
        JSON.stringify({
          apiVersion: "kstack.sh/v1",
          kind: "Team",
          metadata: { name: "blue", namespace: "b" },
          spec: {},
        }),
      );
      const mismatched = await kubectl("apply", "-n", "a", "-f", file);
      assert.notEqual(mismatched.code, 0);
      assert.match(mismatched.stderr, /namespace/);

      const described = await kubectl("describe", "team", "red", "-n", "a");
      assert.equal(described.code, 0, described.stderr);
      assert.match(described.stdout, /^Namespace:\s+a$/m);
      assert.match(
        described.stdout,
        /Events:[\s\S]*Warning\s+Understaffed\s+\S+\s+beehive\s+red needs two more/,
      );
      const quiet = await kubectl("describe", "team", "red", "-n", "b");
      assert.equal(quiet.code, 0, quiet.stderr);
      assert.match(quiet.stdout, /Events:\s+<none>/);

      const deleted = await kubectl("delete", "team", "red", "-n", "b");
      assert.equal(deleted.code, 0, deleted.stderr);
      assert.match(deleted.stdout, /team\.kstack\.sh "red" deleted/);
      await assert.rejects(bh.client(Team, { namespace: "b" }).getByName("red"), NotFoundError);
      const kept = await bh.client(Team, { namespace: "a" }).getByName("red");
      assert.equal(kept.deletionRequestedAt, undefined);
    });
  });
});

test("kubectl with a token scoped to namespaces is refused 403 outside them and across them", async () => {
  assert.ok(existsSync(KUBECTL), `${KUBECTL} is missing: this test drives the real kubectl`);
  await withStore(async (store, bh) => {
    await defineTeam(store);
    await bh.client(Team, { namespace: "a" }).create("red", {});
    await bh.client(Team, { namespace: "b" }).create("red", {});
    await withKubectl(store, {
      tls: true,
      tokens: [{ token: "team-a-token-0123456789", user: "alice", namespaces: ["a"] }],
    }, async (kubectl) => {
      const inside = await kubectl("get", "teams", "-n", "a", "--no-headers");
      assert.equal(inside.code, 0, inside.stderr);
      assert.match(inside.stdout, /^red\s/);

      const outside = await kubectl("get", "team", "red", "-n", "b");
      assert.notEqual(outside.code, 0);
      assert.match(outside.stderr, /Forbidden/);
      assert.match(outside.stderr, /User "alice" cannot get resource "teams"/);
      assert.match(outside.stderr, /in the namespace "b"/);

      const across = await kubectl("get", "teams", "-A");
      assert.notEqual(across.code, 0);
      assert.match(across.stderr, /Forbidden/);
      assert.match(across.stderr, /at the cluster scope/);

      // A namespace read by name is in that namespace; the list is cluster-scoped.
      const own = await kubectl("get", "namespace", "a", "--no-headers");
      assert.equal(own.code, 0, own.stderr);
      assert.match(own.stdout, /^a\s+Active/);
      const other = await kubectl("get", "namespace", "b");
      assert.match(other.stderr, /Forbidden/);
      const namespaces = await kubectl("get", "namespaces");
      assert.match(namespaces.stderr, /cannot list resource "namespaces" .* at the cluster scope/);

      const deleted = await kubectl("delete", "team", "red", "-n", "b");
      assert.notEqual(deleted.code, 0);
      assert.match(deleted.stderr, /Forbidden/);
      assert.equal(
        (await bh.client(Team, { namespace: "b" }).getByName("red")).deletionRequestedAt,
        undefined,
      );
    });
  });
});

test("kubectl get namespaces lists the namespaces objects use and default, as a table and a NamespaceList, and delete namespace deletes its objects", async () => {
  assert.ok(existsSync(KUBECTL), `${KUBECTL} is missing: this test drives the real kubectl`);
  await withStore(async (store, bh) => {
    await defineTeam(store);
    await bh.client(Team, { namespace: "b" }).create("red", {});
    await bh.client(Team, { namespace: "a" }).create("red", {});
    await bh.client(Team, { namespace: "a" }).create("blue", {});
    await withKubectl(store, {}, async (kubectl) => {
      const resources = await kubectl("api-resources", "--api-group=", "--no-headers");
      assert.equal(resources.code, 0, resources.stderr);
      const row = rowsOf(resources.stdout).find((r) => r[0] === "namespaces");
      assert.deepEqual(row, ["namespaces", "ns", "v1", "false", "Namespace"]);

      const listed = await kubectl("get", "namespaces");
      assert.equal(listed.code, 0, listed.stderr);
      assert.deepEqual(rowsOf(listed.stdout), [
        ["NAME", "STATUS"],
        ["a", "Active"],
        ["b", "Active"],
        ["default", "Active"],
      ]);

      const json = await kubectl("get", "ns", "-o", "json");
      assert.equal(json.code, 0, json.stderr);
      const list = JSON.parse(json.stdout);
      assert.equal(list.kind, "List"); // kubectl's wrapper around the NamespaceList's items
      assert.deepEqual(list.items.map((n: { kind: string }) => n.kind), [
        "Namespace",
        "Namespace",
        "Namespace",
      ]);

      const one = await kubectl("get", "namespace", "a", "-o", "jsonpath={.status.phase}");
      assert.equal(one.code, 0, one.stderr);
      assert.equal(one.stdout, "Active");
      const selected = await kubectl(
        "get",
        "ns",
        "-l",
        "kubernetes.io/metadata.name=b",
        "--no-headers",
      );
      assert.equal(selected.code, 0, selected.stderr);
      assert.deepEqual(rowsOf(selected.stdout).map((r) => r[0]), ["b"]);

      const missing = await kubectl("get", "namespace", "c");
      assert.notEqual(missing.code, 0);
      assert.match(missing.stderr, /namespaces "c" not found/);
      const deleted = await kubectl("delete", "namespace", "a", "--timeout=20s");
      assert.equal(deleted.code, 0, deleted.stderr);
      assert.match(deleted.stdout, /namespace "a" deleted/);
      assert.equal((await bh.client(Team, { namespace: "a" }).list()).length, 0);
    });
  });
});
