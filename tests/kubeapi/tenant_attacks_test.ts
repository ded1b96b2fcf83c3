/**
 * The attacks a tenant's token can make, against a server in a process of
 * its own whose memory is read from outside (`VmRSS`): a JSON patch copy
 * bomb from a token limited to one namespace is refused and the server keeps
 * its memory and answers; 60 watches whose clients never read, on a kind of
 * 20,000 objects, hold neither its memory nor its answers; a watcher that
 * stops reading under 5,000 writes is disconnected while another keeps
 * receiving; and the real kubectl applies a 40 KiB spec.
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
import { rawWatch, seedClusters, serveInProcess } from "./_served_process.ts";
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

test("a served process with 20,000 objects holds 60 watches whose clients never read in under 500 MB, and answers /version", async () => {
  const dir = await mkdtemp(join(tmpdir(), "beehive-watchers-"));
  const db = join(dir, "beehive.db");
  await seedClusters(db, 20_000, 1_500);
  const server = await serveInProcess(db);
  const watches: Awaited<ReturnType<typeof rawWatch>>[] = [];
  try {
    const idle = server.rss();
    for (let i = 0; i < 60; i++) {
      // Each socket stops reading at its first bytes: the server sees a client that never reads.
      watches.push(await rawWatch(server.url, "/apis/kstack.sh/v1/clusters?watch=true"));
    }
    await Promise.all(watches.map((w) => w.firstBytes));
    const started = performance.now();
    const version = await fetch(`${server.url}/version`);
    assert.equal(version.status, 200);
    await version.body?.cancel();
    const versionMs = performance.now() - started;
    const held = server.rss();
    console.log(
      `[tenants] 60 non-reading watches on 20,000 objects: RSS ${(idle / MB).toFixed(0)} MB ` +
        `idle, ${(held / MB).toFixed(0)} MB with the watches; /version answered in ` +
        `${versionMs.toFixed(0)} ms`,
    );
    assert.ok(held < 500 * MB, `RSS ${(held / MB).toFixed(0)} MB`);
  } finally {
    for (const w of watches) w.destroy();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
});

test("a served process disconnects a watcher that stops reading under 5,000 writes, while another keeps receiving every one", async () => {
  const dir = await mkdtemp(join(tmpdir(), "beehive-stalled-"));
  const db = join(dir, "beehive.db");
  await seedClusters(db, 1, 10);
  const server = await serveInProcess(db, { pollInterval: 20 });
  const store = await openSqliteStore(db);
  const stalledWatch = await rawWatch(
    server.url,
    `/apis/kstack.sh/v1/clusters?watch=true&resourceVersion=${await store
      .getLatestResourceVersion()}`,
  );
  try {
    const reading = await fetch(
      `${server.url}/apis/kstack.sh/v1/clusters?watch=true&resourceVersion=${await store
        .getLatestResourceVersion()}`,
    );
    const seen = namesOf(reading.body!);
    const client = new Beehive(store).client(Cluster);
    const pad = "x".repeat(5_000);
    for (let i = 0; i < 5_000; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, j) => client.create(`w${i + j}`, { pad })),
      );
      // Paced on the reading watcher, which takes each hundred before the next is written.
      await seen.until(`w${i + 99}`);
    }
    assert.equal(seen.names.length, 5_000, "the reading watcher got every write");
    assert.equal(new Set(seen.names).size, 5_000);
    await seen.cancel();
    const stalled = await stalledWatch.drain();
    console.log(
      `[tenants] stalled watcher under 5,000 writes: disconnected after ${stalled} events; ` +
        `RSS ${(server.rss() / MB).toFixed(0)} MB`,
    );
    assert.ok(stalled < 5_000, `the stalled watcher got ${stalled} events`);
  } finally {
    stalledWatch.destroy();
    await store.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
});

/** A watch body's objects' names as they arrive. */
function namesOf(body: ReadableStream<Uint8Array>) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const names: string[] = [];
  let buffer = "";
  return {
    names,
    /** Reads until `name` has arrived. */
    async until(name: string): Promise<void> {
      while (names[names.length - 1] !== name) {
        const { done, value } = await reader.read();
        if (done) throw new Error(`the watch ended after ${names.length} events`);
        buffer += value;
        let nl;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          names.push(JSON.parse(buffer.slice(0, nl)).object.metadata.name);
          buffer = buffer.slice(nl + 1);
        }
      }
    },
    cancel: () => reader.cancel(),
  };
}
