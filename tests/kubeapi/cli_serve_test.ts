/**
 * `beehive <store> serve` run as a program: writes a kubeconfig the real
 * kubectl uses over generated TLS with a generated token, and stops cleanly
 * on SIGTERM; in-process: a relative store path resolves from the working
 * directory, a missing store is an error, a bad flag is a usage error, and
 * `--help` shows serve's usage.
 *
 * @module
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { Beehive } from "../../mod.ts";
// The CLI serves SQLite files: the store is made with the real SQLite opener whatever the test store.
import { openSqliteStore } from "../../store/sqlite/mod.ts";
import { test } from "../_test.ts";
import { cli, Output, whileServing } from "../cli/_cli_harness.ts";
import { Cluster, kubectlIn } from "./_kubeapi_harness.ts";

const isDeno = "Deno" in globalThis;

test("beehive serve --tls --kubeconfig writes a kubeconfig kubectl uses and stops cleanly on SIGTERM", async () => {
  const dir = await mkdtemp(join(tmpdir(), "beehive-cli-serve-"));
  const db = join(dir, "beehive.db");
  const store = await openSqliteStore(db);
  await new Beehive(store).client(Cluster).create("prod", {});
  await store.close();
  const config = join(dir, "kubeconfig");
  const args = isDeno
    ? ["run", "--allow-read", "--allow-write", "--allow-env", "--allow-net", "cli/mod.ts"]
    : ["--disable-warning=ExperimentalWarning", "cli/mod.ts"];
  const child = spawn(
    process.execPath,
    [...args, db, "serve", "--port", "0", "--tls", "--kubeconfig", config],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const exited = new Promise<number | null>((resolve) =>
    child.once("close", (code) => resolve(code))
  );
  let stderr = "";
  const serving = Promise.withResolvers<void>();
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => {
    stderr += chunk;
    if (stderr.includes("serving the Kubernetes API at https://127.0.0.1:")) serving.resolve();
  });
  child.once("close", () => serving.reject(new Error(`serve ended early:\n${stderr}`)));
  try {
    await serving.promise;
    assert.equal((await stat(config)).mode & 0o777, 0o600);
    assert.match(
      await readFile(config, "utf8"),
      /certificate-authority-data: \S+\n[\s\S]*token: "/,
    );
    const got = await kubectlIn(dir, config)("get", "clusters", "--no-headers");
    assert.equal(got.code, 0, got.stderr);
    assert.match(got.stdout, /^prod\s/);
  } finally {
    // process.kill, not child.kill: Deno reports a child killed through its handle as signalled.
    process.kill(child.pid!, "SIGTERM");
  }
  assert.equal(await exited, 0, stderr);
  assert.match(stderr, /stopped\n$/);
  await rm(dir, { recursive: true, force: true });
});

test("beehive serve resolves a relative store path from the working directory and stops when its signal aborts", async () => {
  const dir = await mkdtemp(join(tmpdir(), "beehive-cli-serve-"));
  try {
    const store = await openSqliteStore(join(dir, "beehive.db"));
    await new Beehive(store).client(Cluster).create("prod", {});
    await store.close();
    await whileServing("beehive.db", dir, async (url) => {
      const list = await fetch(`${url}/apis/kstack.sh/v1/clusters`);
      assert.equal(list.status, 200);
      const body = await list.json();
      assert.deepEqual(body.items.map((o: { metadata: { name: string } }) => o.metadata.name), [
        "prod",
      ]);
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("what kubectl get -o yaml prints through beehive serve, a List or one resource, beehive apply -f takes back unchanged", async () => {
  const dir = await mkdtemp(join(tmpdir(), "beehive-cli-serve-"));
  try {
    const db = join(dir, "beehive.db");
    const store = await openSqliteStore(db);
    const clusters = new Beehive(store).client(Cluster);
    await clusters.create("prod", { replicas: 3 }, { labels: { env: "prod" } });
    await clusters.create("dev", { replicas: 1 }, { annotations: { owner: "me" } });
    await store.close();
    await whileServing(db, dir, async (url) => {
      const config = join(dir, "kubeconfig");
      await writeFile(
        config,
        [
          "apiVersion: v1",
          "kind: Config",
          "clusters:",
          `- name: beehive\n  cluster:\n    server: ${url}`,
          "users:",
          "- name: anyone\n  user: {}",
          "contexts:",
          "- name: beehive\n  context:\n    cluster: beehive\n    user: anyone",
          "current-context: beehive",
          "",
        ].join("\n"),
      );
      const kubectl = kubectlIn(dir, config);
      const list = await kubectl("get", "clusters", "-o", "yaml");
      assert.equal(list.code, 0, list.stderr);
      assert.match(list.stdout, /^kind: List$/m);
      const listFile = join(dir, "clusters.yaml");
      await writeFile(listFile, list.stdout);
      const applied = await cli([db, "apply", "-f", listFile]);
      assert.equal(applied.code, 0, applied.err);
      assert.equal(
        applied.out,
        "Cluster.kstack.sh/prod unchanged\nCluster.kstack.sh/dev unchanged\n",
      );
      const one = await kubectl("get", "cluster", "prod", "-o", "yaml");
      assert.equal(one.code, 0, one.stderr);
      const edited = one.stdout.replace(/^ {2}replicas: 3$/m, "  replicas: 4");
      assert.notEqual(edited, one.stdout);
      const again = await cli([db, "apply", "-f", "-"], { stdin: edited });
      assert.equal(again.code, 0, again.err);
      assert.equal(again.out, "Cluster.kstack.sh/prod configured\n");
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("beehive serve reports a missing store and refuses bad flags, and --help shows serve's usage where beehive's lists serve", async () => {
  const dir = await mkdtemp(join(tmpdir(), "beehive-cli-serve-"));
  try {
    const missing = await cli(["nope.db", "serve", "--port", "0"], { cwd: dir });
    assert.equal(missing.code, 1);
    assert.equal(missing.err, "error: no database at nope.db\n");
    for (const args of [["x.db", "serve", "--help"], ["serve", "--help"]]) {
      const help = await cli(args);
      assert.equal(help.code, 0);
      assert.match(help.out, /^Usage: beehive <store> serve \[--port N\] \[--tls\]/);
    }
    assert.match((await cli(["--help"])).out, /^ {2}serve {5}Serve the store as a Kubernetes API/m);
    for (
      const [args, message] of [
        [["x.db", "serve", "--port", "70000"], /--port must be an integer from 0 to 65535/],
        [["x.db", "serve", "extra"], /serve takes 0 arguments, got 1/],
        [["x.db", "serve", "-o", "json"], /serve has no -o flag/],
        [["x.db", "get", "clusters", "--tls"], /get has no --tls flag/],
        [["x.db", "kinds", "--kubeconfig", "k"], /kinds has no --kubeconfig flag/],
      ] as const
    ) {
      const refused = await cli(args, { cwd: dir });
      assert.equal(refused.code, 2, args.join(" "));
      assert.match(refused.err, message);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("beehive serve --kubeconfig leaves the kubeconfig mode 0600 also when the file existed world-readable", async () => {
  const dir = await mkdtemp(join(tmpdir(), "beehive-cli-serve-"));
  try {
    const store = await openSqliteStore(join(dir, "beehive.db"));
    await new Beehive(store).client(Cluster).create("prod", {});
    await store.close();
    const config = join(dir, "kubeconfig");
    await writeFile(config, "old\n", { mode: 0o644 });
    await chmod(config, 0o644);
    const abort = new AbortController();
    const stderr = new Output();
    const run = cli(["beehive.db", "serve", "--port", "0", "--tls", "--kubeconfig", config], {
      signal: abort.signal,
      stderr,
      cwd: dir,
    });
    await stderr.until((t) => t.includes("serving the Kubernetes API"), "serving");
    assert.equal((await stat(config)).mode & 0o777, 0o600);
    assert.match(await readFile(config, "utf8"), /token: "/);
    abort.abort();
    assert.equal((await run).code, 0);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("beehive serve --max-watches, --max-inflight and --max-body-bytes bound the server, and refuse a value out of range", async () => {
  const dir = await mkdtemp(join(tmpdir(), "beehive-cli-serve-"));
  try {
    const store = await openSqliteStore(join(dir, "beehive.db"));
    await new Beehive(store).client(Cluster).create("prod", {});
    await store.close();
    const abort = new AbortController();
    const stdout = new Output();
    const run = cli([
      "beehive.db",
      "serve",
      "--port",
      "0",
      "--max-watches",
      "1",
      "--max-inflight",
      "5",
      "--max-body-bytes=2048",
    ], { signal: abort.signal, stdout, cwd: dir });
    await stdout.until((t) => t.includes("current-context: beehive"), "the kubeconfig");
    const url = /server: "(http:\/\/127\.0\.0\.1:\d+)"/.exec(stdout.text)![1];
    const watch = await fetch(`${url}/apis/kstack.sh/v1/clusters?watch=true`);
    assert.equal(watch.status, 200);
    const second = await fetch(`${url}/apis/kstack.sh/v1/clusters?watch=true`);
    assert.equal(second.status, 429);
    assert.equal(second.headers.get("retry-after"), "1");
    await second.body?.cancel();
    await watch.body?.cancel();
    const big = await fetch(`${url}/apis/kstack.sh/v1/clusters`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ metadata: { name: "big" }, spec: { pad: "x".repeat(4096) } }),
    });
    assert.equal(big.status, 413);
    await big.body?.cancel();
    abort.abort();
    assert.equal((await run).code, 0);
    for (
      const [flag, v] of [["--max-watches", "0"], ["--max-inflight", "x"], [
        "--max-body-bytes",
        "100",
      ]]
    ) {
      const refused = await cli(["beehive.db", "serve", flag, v], { cwd: dir });
      assert.equal(refused.code, 2, flag);
      assert.match(refused.err, new RegExp(`${flag} must be an integer of at least`));
    }
    const elsewhere = await cli(["beehive.db", "get", "clusters", "--max-watches", "1"], {
      cwd: dir,
    });
    assert.match(elsewhere.err, /get has no --max-watches flag/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
