/**
 * Runs every example as its own process on the runtime running the tests, and
 * checks it printed what a person needs to see that it worked. The SQLite
 * examples run in the SQLite suites; `replicas`, which needs a PostgreSQL
 * server, runs in the PostgreSQL rerun (`BEEHIVE_TEST_STORE=postgres`,
 * `scripts/test`), on the test database, and only there.
 *
 * @module
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { freshSchema, postgresUrl } from "./_postgres.ts";
import { testStore } from "./_sqlite_driver.ts";
import { test as anyTest } from "./_test.ts";

const isDeno = "Deno" in globalThis;

/** The SQLite examples' cases: registered in the SQLite suites (the PostgreSQL rerun has its own). */
const test: typeof anyTest = testStore === "sqlite" ? anyTest : () => {};

function run(example: string, env: Record<string, string> = {}): Promise<string> {
  const file = `examples/${example}/main.ts`;
  const args = isDeno
    ? ["run", "--allow-read", "--allow-write", "--allow-env", "--allow-net", "--allow-run", file]
    : ["--disable-warning=ExperimentalWarning", file];
  const options = { timeout: 60_000, env: { ...process.env, ...env } };
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, options, (error, stdout, stderr) => {
      if (error) reject(new Error(`${example} failed: ${error.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

test("example greeting converges and prints the greeting", async () => {
  const out = await run("greeting");
  assert.match(out, /created Greeting id=1 name=world/);
  assert.match(out, /converged: Hello, world/);
});

test("example conditions reaches Ready, reads it unconfirmed after a restart, then confirms it", async () => {
  const out = await run("conditions");
  assert.match(out, /Progressing +True .*ScalingUp/);
  assert.match(out, /converged: server is Ready/);
  assert.match(
    out,
    /after restart:\n +Ready +Unknown +\(unconfirmed since restart; last known AllReplicasOnline\)/,
  );
  assert.match(out, /after the startup pass:\n +Ready +True .*Probed/);
});

test("example events renders the run timeline and resumes with only the new run", async () => {
  const out = await run("events");
  const panel = out.split("connection-health panel (newest first):")[1].split("live,")[0];
  const reasons = [...panel.matchAll(/[✓✗] (\w+) +×(\d+)/g)].map((m) => `${m[1]}×${m[2]}`);
  assert.deepEqual(reasons, [
    "Connected×4",
    "ProbeFailed×18",
    "Connected×7",
    "TLSHandshake×5",
    "Connected×16",
  ]);
  const live = out.split("live, resumed above the snapshot:")[1];
  assert.match(live, /✗ ProbeFailed +×1 /);
  assert.doesNotMatch(live, /Connected/);
});

test("example cascade removes the caches before the cluster", async () => {
  const out = await run("cascade");
  const removed = [...out.matchAll(/^(\w+) \d+: removed/gm)].map((m) => m[1]);
  assert.deepEqual(removed, ["ClusterCache", "ClusterCache", "Cluster"]);
  assert.ok(
    out.indexOf("ClusterCache 3: flushed") < out.indexOf("Cluster 1: closed connection"),
    "the cluster kept its connection until its caches were gone",
  );
  assert.match(out, /cascade complete/);
});

test("example lowpower converges and collects in well under its minute cadences", async () => {
  const out = await run("lowpower");
  const connected = Number(/connected after (\d+)ms/.exec(out)?.[1]);
  const collected = Number(/collected after (\d+)ms/.exec(out)?.[1]);
  assert.ok(connected < 10_000, `connected after ${connected}ms`);
  assert.ok(collected < 10_000, `collected after ${collected}ms`);
});

test("example fenced-devices refuses the paused ex-leader's device write and keeps only the successor's", async () => {
  const out = await run("fenced-devices");
  assert.match(out, /^b: wrote lamp \(power on\) at epoch 2$/m);
  assert.match(out, /^a: device write refused at epoch 1: FencedError$/m);
  assert.equal(out.match(/^a: lost leadership/gm)?.length, 1, out);
  assert.match(out, /^device table: lamp power=on written_by=b last_epoch=2$/m);
  assert.equal(out.match(/^device table:/gm)?.length, 1, out);
  assert.doesNotMatch(out, /warn:|error:/);
});

test("example validated refuses what its valibot schemas refuse and stores their output", async () => {
  const out = await run("validated");
  assert.match(out, /^201 web: \{"image":"nginx:1\.27","replicas":3,"tier":"standard"\}$/m);
  assert.match(out, /^422 api: image must not be empty; .*250$/m);
  assert.match(out, /^422 batch: .*Infinity/m);
  assert.match(out, /^413 huge: \d+ bytes$/m);
  assert.match(out, /^web ready 3, finalizers example\.com\/release-capacity$/m);
  assert.match(out, /^conflict: web moved on to \d+$/m);
  assert.match(out, /^pages: web,a \| b,c$/m);
  assert.ok(out.indexOf("released capacity of web") < out.indexOf("web collected"));
});

test("the demo converges twice and survives a reopen", async () => {
  const out = await run("demo");
  assert.match(out, /converged: observedGeneration 2 of generation 2/);
  assert.match(out, /demo ok/);
});

test("example deploy converges on its volume, backs up while running, and restarts with its state", async () => {
  const dir = mkdtempSync(join(tmpdir(), "beehive-deploy-"));
  try {
    const env = { BEEHIVE_DATA_DIR: dir, DEPLOY_EXAMPLE_ONCE: "1" };
    const out = await run("deploy", env);
    assert.match(out, /beehive\.db: home checked https:\/\/example\.com$/m);
    assert.match(out, /^backup backups\/beehive-[-0-9TZ.]+\.db holds home, generation 1$/m);
    assert.match(out, /^restarted: home checked https:\/\/example\.com$/m);
    // A second run on the same volume finds the object converged and keeps its generation.
    assert.match(await run("deploy", env), /holds home, generation 1$/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("example kubectl serves the store to the real kubectl, which applies, waits, lists with columns and selects by label", async () => {
  const out = await run("kubectl", { KUBECTL_EXAMPLE_ONCE: "1" });
  assert.match(out, /Kubernetes API at https:\/\/127\.0\.0\.1:\d+; kubeconfig at /);
  assert.match(out, /deployment\.apps\.example\/api created/);
  assert.match(out, /NAME\s+REPLICAS\s+AVAILABLE\s+READY\s+AGE/);
  assert.match(out, /^web\s+3\s+3\s+True\s/m);
  assert.match(out, /^api\s+2\s+2\s+True\s/m);
  assert.match(out, /^deployment\.apps\.example\/api$/m);
});

test("example console serves the console beside a controller and shows it converge", async () => {
  const out = await run("console", { CONSOLE_EXAMPLE_ONCE: "1" });
  assert.match(out, /console at http:\/\/127\.0\.0\.1:\d+\/console/);
  assert.match(out, /kinds page lists Deployment: true/);
  assert.match(out, /web Ready: True/);
});

if (testStore === "postgres") {
  anyTest(
    "example replicas: three processes on one database converge, and a standby takes over from the leader",
    async () => {
      const out = await run("replicas", {
        BEEHIVE_POSTGRES_URL: postgresUrl(),
        BEEHIVE_POSTGRES_SCHEMA: freshSchema(),
      });
      for (const n of [1, 2, 3]) {
        assert.match(
          out,
          new RegExp(`^replica-${n}: converged: 9 orders, accepted by replica-\\d$`, "m"),
        );
      }
      const leader = /all 3 replicas converged; (replica-\d) reconciled every order/.exec(out)?.[1];
      assert.ok(leader !== undefined, out);
      const took = /(replica-\d) stopped; (replica-\d) took over: 10 orders/.exec(out);
      assert.ok(took !== null, out);
      assert.equal(took[1], leader);
      assert.notEqual(took[2], leader);
      assert.match(out, new RegExp(`^${took[2]}: accepted \\S+-extra `, "m"));
      assert.match(out, /^replicas ok$/m);
    },
  );
}
