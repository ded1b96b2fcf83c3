/**
 * The CLI as a Kubernetes user reaches for it: kinds named loosely, a
 * suggestion on a miss and exit 1 for an unknown kind in every command,
 * `-o yaml`, `wait --for=condition`, and paths relative to where the user
 * started the command.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Beehive } from "../../mod.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";
import { test } from "../_test.ts";
import { tempDir } from "../_beehive_harness.ts";
import { cli, Cluster, Output, writeFixture } from "./_cli_harness.ts";

async function withFixture(fn: (db: string, dir: ReturnType<typeof tempDir>) => Promise<void>) {
  const dir = tempDir();
  try {
    const db = dir.file("fixture.db");
    await writeFixture(db);
    await fn(db, dir);
  } finally {
    dir.remove();
  }
}

test("cli get names a kind by kind, plural or lowercase, without its group", async () => {
  await withFixture(async (db) => {
    const full = await cli([db, "get", "Cluster.kstack.sh", "-o", "json"]);
    for (const name of ["cluster", "clusters", "CLUSTER", "clusters.kstack.sh"]) {
      const r = await cli([db, "get", name, "-o", "json"]);
      assert.equal(r.code, 0, r.err);
      assert.equal(r.out, full.out, name);
    }
  });
});

test("cli takes kubectl's kind/name form wherever a kind and a name go", async () => {
  await withFixture(async (db) => {
    const spaced = await cli([db, "get", "clusters", "prod", "-o", "json"]);
    const slashed = await cli([db, "get", "clusters/prod", "-o", "json"]);
    assert.equal(slashed.code, 0, slashed.err);
    assert.equal(slashed.out, spaced.out);
    assert.equal((await cli([db, "describe", "cluster/prod"])).code, 0);
    const missing = await cli([db, "delete", "cluster/nope"]);
    assert.equal(missing.err, 'error: Cluster.kstack.sh "nope" not found\n');
  });
});

test("cli answers an unknown kind with exit 1 and a suggestion in every command, watch included", async () => {
  await withFixture(async (db) => {
    const commands = [
      ["get", "Clustr.kstack.sh"],
      ["get", "Clustr.kstack.sh", "prod"],
      ["describe", "Clustr.kstack.sh", "prod"],
      ["events", "Clustr.kstack.sh", "prod"],
      ["watch", "Clustr.kstack.sh"],
      ["wait", "Clustr.kstack.sh", "prod", "--for=delete"],
      ["delete", "Clustr.kstack.sh", "prod"],
      ["requeue", "Clustr.kstack.sh", "prod"],
    ];
    for (const args of commands) {
      const r = await cli([db, ...args], { signal: AbortSignal.abort() });
      assert.equal(r.code, 1, args.join(" "));
      assert.equal(
        r.err,
        'error: unknown kind "Clustr.kstack.sh"; did you mean Cluster.kstack.sh?\n',
      );
      assert.equal(r.out, "");
    }
  });
});

test("cli get -o yaml prints the object as YAML, quoting what needs it", async () => {
  await withFixture(async (db) => {
    const r = await cli([db, "get", "clusters", "prod", "-o", "yaml"]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^name: prod\n/m);
    assert.match(r.out, /^spec:\n {2}replicas: 3\n/m);
    assert.match(r.out, /^conditions:\n- type: Progressing\n {2}status: "False"\n/m);
    assert.match(r.out, /^createdAt: "\d{4}-\d\d-\d\dT/m);
    const list = await cli([db, "get", "clusters", "-o", "yaml"]);
    assert.match(list.out, /^- id: \d+\n/);
    assert.equal(list.out.match(/^- id:/gm)?.length, 2);
  });
});

test("cli watch -o yaml prints one YAML document per change", async () => {
  await withFixture(async (db) => {
    const r = await cli([db, "watch", "clusters", "-o", "yaml"], { signal: AbortSignal.abort() });
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, "");
    const abort = new AbortController();
    const out = new Output();
    const running = cli([db, "watch", "clusters", "-o", "yaml"], {
      signal: abort.signal,
      stdout: out,
    });
    await out.until((t) => (t.match(/^---$/gm)?.length ?? 0) === 2, "two documents");
    abort.abort();
    assert.equal((await running).code, 0);
    assert.match(out.text, /^---\ntype: Added\nid: \d+\nresourceVersion: \d+\nobject:\n {2}id: /);
    assert.match(out.text, /^ {2}name: staging$/m);
  });
});

test("cli wait returns once the condition holds and exits 1 when the timeout passes first", async () => {
  await withFixture(async (db) => {
    const ready = await cli([db, "wait", "cluster", "prod", "--for=condition=Ready"]);
    assert.equal(ready.code, 0, ready.err);
    assert.equal(ready.out, "Cluster.kstack.sh/prod condition met\n");
    const falseOk = await cli([db, "wait", "cluster", "prod", "--for=condition=progressing=false"]);
    assert.equal(falseOk.code, 0, falseOk.err);
    const late = await cli([
      db,
      "wait",
      "cluster",
      "staging",
      "--for=condition=Ready",
      "--timeout=50ms",
    ]);
    assert.equal(late.code, 1);
    assert.equal(
      late.err,
      "error: timed out waiting for condition=Ready on Cluster.kstack.sh/staging\n",
    );
    const gone = await cli([db, "wait", "cluster", "nope", "--for=delete"]);
    assert.equal(gone.code, 0, gone.err);
    const missing = await cli([db, "wait", "cluster", "nope", "--for=condition=Ready"]);
    assert.equal(missing.code, 1);
    assert.equal(missing.err, 'error: Cluster.kstack.sh "nope" not found\n');
  });
});

test("cli wait sees a condition another writer sets while it waits", async () => {
  await withFixture(async (db) => {
    const waiting = cli([
      db,
      "wait",
      "cluster",
      "staging",
      "--for=condition=Ready",
      "--timeout=20s",
    ]);
    const store = await openSqliteStore(db);
    try {
      const bh = new Beehive(store);
      const staging = await bh.client(Cluster).getByName("staging");
      await bh.adminClient(Cluster).setConditions(staging.id, [
        { type: "Ready", status: "True", reason: "Up" },
      ]);
      const r = await waiting;
      assert.equal(r.code, 0, r.err);
      assert.equal(r.out, "Cluster.kstack.sh/staging condition met\n");
    } finally {
      await store.close();
    }
  });
});

test("cli resolves a relative store path from the directory it was started in", async () => {
  await withFixture(async (_db, dir) => {
    const r = await cli(["fixture.db", "kinds"], { cwd: dir.path });
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^Cluster\.kstack\.sh +clusters +- +- +2$/m);
  });
});
