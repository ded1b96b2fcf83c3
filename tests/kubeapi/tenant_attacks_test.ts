/**
 * The attacks a tenant's token can make, against a server in a process of
 * its own whose memory is read from outside (`VmRSS`): a JSON patch copy
 * bomb from a token limited to one namespace is refused and the server keeps
 * its memory and answers; and the real kubectl applies a 40 KiB spec.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Beehive, defineKind } from "../../mod.ts";
import { serveKubeApi } from "../../kubeapi/mod.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";
import { test } from "../_test.ts";
import { Cluster, kubectlIn, withStore } from "./_kubeapi_harness.ts";
import { serveInProcess } from "./_served_process.ts";
import { copyBomb } from "./_attacks.ts";

const Team = defineKind<Record<string, unknown>, unknown>({
  group: "kstack.sh",
  kind: "Team",
  namespaced: true,
});
const MB = 1024 * 1024;

test("a served process refuses a tenant's copy bomb with 422 and keeps its memory and its answers", async () => {
  const dir = await mkdtemp(join(tmpdir(), "beehive-tenant-"));
  const db = join(dir, "beehive.db");
  const store = await openSqliteStore(db);
  await (await new Beehive(store, { kinds: [Team] }).start())();
  await new Beehive(store).client(Team, { namespace: "team-a" }).create("red", { size: 1 });
  await store.close();
  const token = "team-a-token-0001";
  const server = await serveInProcess(db, {
    tokens: [{ token, user: "tenant", namespaces: ["team-a"] }],
  });
  try {
    const headers = { authorization: `Bearer ${token}` };
    const version = await fetch(`${server.url}/version`, { headers });
    assert.equal(version.status, 200);
    await version.body?.cancel();
    const before = server.rss();
    for (let i = 0; i < 3; i++) {
      const answer = await fetch(`${server.url}/apis/kstack.sh/v1/namespaces/team-a/teams/red`, {
        method: "PATCH",
        headers: { ...headers, "content-type": "application/json-patch+json" },
        body: JSON.stringify(copyBomb("/spec")),
      });
      assert.equal(answer.status, 422);
      assert.match((await answer.json()).message, /object size limit/);
    }
    const after = server.rss();
    const still = await fetch(`${server.url}/version`, { headers });
    assert.equal(still.status, 200);
    await still.body?.cancel();
    assert.ok(
      after - before < 200 * MB,
      `RSS went from ${(before / MB).toFixed(0)} MB to ${(after / MB).toFixed(0)} MB`,
    );
  } finally {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
});

test("kubectl apply of a 40 KiB spec works, as create of the same file does", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("seed", {});
    const dir = await mkdtemp(join(tmpdir(), "beehive-apply-"));
    const server = await serveKubeApi({ store, port: 0 });
    try {
      const config = join(dir, "kubeconfig");
      await writeFile(config, server.kubeconfig());
      const kubectl = kubectlIn(dir, config);
      const notes = Array.from({ length: 400 }, (_, i) => `note ${i} ${"x".repeat(100)}`);
      const manifest = {
        apiVersion: "kstack.sh/v1",
        kind: "Cluster",
        metadata: { name: "big" },
        spec: { notes },
      };
      const file = join(dir, "big.json");
      await writeFile(file, JSON.stringify(manifest));
      assert.ok(JSON.stringify(manifest).length > 40 * 1024);
      const created = await kubectl("apply", "-f", file);
      assert.equal(created.code, 0, created.stderr);
      assert.match(created.stdout, /cluster\.kstack\.sh\/big created/);
      await writeFile(file, JSON.stringify({ ...manifest, spec: { notes: notes.slice(1) } }));
      const configured = await kubectl("apply", "-f", file);
      assert.equal(configured.code, 0, configured.stderr);
      assert.match(configured.stdout, /cluster\.kstack\.sh\/big configured/);
      assert.deepEqual((await bh.client(Cluster).getByName("big")).spec, {
        notes: notes.slice(1),
      });
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
