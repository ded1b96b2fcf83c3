/**
 * The CLI and labels: `watch -l` narrows the watch and reports an object that
 * stops matching as deleted, `describe` prints `Labels:` and `Annotations:`
 * as kubectl does (control characters made visible), `get --show-labels`
 * adds a LABELS column, and `-o json|yaml` carry both maps.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Beehive } from "../../mod.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";
import { test } from "../_test.ts";
import { tempDir } from "../_beehive_harness.ts";
import { cli, Cluster, Output } from "./_cli_harness.ts";

async function withLabelled(fn: (db: string) => Promise<void>) {
  const dir = tempDir();
  try {
    const db = dir.file("labels.db");
    const store = await openSqliteStore(db);
    try {
      const clusters = new Beehive(store).client(Cluster);
      await clusters.create("web-1", {}, {
        labels: { tier: "web", "example.com/team": "a" },
        annotations: { note: "line one\nline two\u001b[31m", "example.com/owner": "ops" },
      });
      await clusters.create("db-1", {}, { labels: { tier: "db" } });
      await clusters.create("bare", {});
    } finally {
      await store.close();
    }
    await fn(db);
  } finally {
    dir.remove();
  }
}

test("cli describe prints Labels and Annotations like kubectl describe", async () => {
  await withLabelled(async (db) => {
    const r = await cli([db, "describe", "cluster", "web-1"]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^Labels: +example\.com\/team=a\n +tier=web\n/m);
    assert.match(
      r.out,
      /^Annotations: +example\.com\/owner: ops\n +note: line one\\nline two\?\[31m\n/m,
    );
    assert.ok(!r.out.includes("\u001b"), "no escape reaches the terminal");
    const bare = await cli([db, "describe", "cluster", "bare"]);
    assert.match(bare.out, /^Labels: +<none>\n/m);
    assert.match(bare.out, /^Annotations: +<none>\n/m);
  });
});

test("cli get and describe -o json and -o yaml carry labels and annotations", async () => {
  await withLabelled(async (db) => {
    const got = JSON.parse((await cli([db, "get", "cluster", "web-1", "-o", "json"])).out);
    assert.deepEqual(got.labels, { "example.com/team": "a", tier: "web" });
    assert.equal(got.annotations["example.com/owner"], "ops");
    const described = JSON.parse(
      (await cli([db, "describe", "cluster", "web-1", "-o", "json"])).out,
    );
    assert.deepEqual(described.labels, got.labels);
    assert.deepEqual(described.annotations, got.annotations);
    const yaml = (await cli([db, "get", "cluster", "web-1", "-o", "yaml"])).out;
    assert.match(yaml, /^labels:\n {2}example\.com\/team: a\n {2}tier: web\n/m);
    assert.match(yaml, /^annotations:\n {2}example\.com\/owner: ops\n/m);
  });
});

test("cli get --show-labels adds a LABELS column", async () => {
  await withLabelled(async (db) => {
    const r = await cli([db, "get", "cluster", "--show-labels"]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^NAME +ID +GEN +READY +STATE +CONDITIONS +AGE +LABELS$/m);
    assert.match(r.out, /^web-1 .* example\.com\/team=a,tier=web$/m);
    assert.match(r.out, /^bare .* <none>$/m);
    const plain = await cli([db, "get", "cluster"]);
    assert.ok(!plain.out.includes("LABELS"));
  });
});

test("cli watch -l prints only matching objects and reports one that stops matching as Deleted", async () => {
  await withLabelled(async (db) => {
    const out = new Output();
    const abort = new AbortController();
    const watching = cli([db, "watch", "cluster", "-l", "tier=web", "-o", "json"], {
      signal: abort.signal,
      stdout: out,
    });
    await out.until((t) => t.includes('"name":"web-1"'), "the snapshot");
    const store = await openSqliteStore(db);
    try {
      const clusters = new Beehive(store).client(Cluster);
      const db1 = await clusters.getByName("db-1");
      const web1 = await clusters.getByName("web-1");
      await clusters.updateMetadata(db1.id, { labels: { tier: "web" } });
      await out.until((t) => /"type":"Added"[^\n]*"name":"db-1"/.test(t), "db-1 joining");
      await clusters.updateMetadata(web1.id, { labels: { tier: "db" } });
      await out.until((t) => /"type":"Deleted"[^\n]*"name":"web-1"/.test(t), "web-1 leaving");
    } finally {
      await store.close();
    }
    abort.abort();
    const r = await watching;
    assert.equal(r.code, 0, r.err);
    const changes = out.jsonLines() as {
      type: string;
      object: { name: string; labels: Record<string, string> };
    }[];
    assert.deepEqual(changes.map((c) => [c.type, c.object.name, c.object.labels.tier]), [
      ["Added", "web-1", "web"],
      ["Added", "db-1", "web"],
      ["Deleted", "web-1", "db"],
    ]);
  });
});

test("cli watch refuses a malformed -l with a usage error", async () => {
  await withLabelled(async (db) => {
    const r = await cli([db, "watch", "cluster", "-l", "tier in (web"]);
    assert.equal(r.code, 2);
    assert.match(r.err, /labelSelector/);
  });
});
