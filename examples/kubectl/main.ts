/**
 * kubectl: a controller's store served as a Kubernetes API, so the real
 * `kubectl` lists, watches, applies and labels its objects. A Deployment kind
 * is stored with its names and printer columns; its controller rolls replicas
 * out one pass at a time. The server listens on 127.0.0.1 over HTTPS with a
 * generated CA and token, and writes a kubeconfig beside the database.
 *
 * Run: `deno task example:kubectl` (Ctrl-C to stop), then in another shell
 * `kubectl --kubeconfig <printed path> get deploy -w`, `kubectl … apply -f -`,
 * `kubectl … label deploy web tier=front`, `kubectl … explain deploy`.
 * `KUBECTL_EXAMPLE_ONCE=1` makes a bounded run: it drives `/usr/bin/kubectl`
 * against itself, prints what it saw and exits (the examples test does this).
 *
 * @module
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { Beehive, defineKind, settled, unsettled } from "@beehive/beehive";
import { openSqliteStore } from "@beehive/beehive/sqlite";
import { serveKubeApi } from "@beehive/beehive/kubeapi";

interface DeploymentSpec {
  replicas: number;
}
interface DeploymentStatus {
  readyReplicas: number;
}
const Deployment = defineKind<DeploymentSpec, DeploymentStatus>({
  group: "apps.example",
  kind: "Deployment",
  shortNames: ["deploy"],
  columns: [
    { name: "Replicas", jsonPath: ".spec.replicas", type: "integer" },
    { name: "Available", jsonPath: ".status.readyReplicas", type: "integer" },
  ],
});
const once = process.env.KUBECTL_EXAMPLE_ONCE === "1";

const dir = mkdtempSync(join(tmpdir(), "beehive-kubectl-"));
const store = await openSqliteStore(join(dir, "beehive.db"));
const bh = new Beehive(store);
bh.register(Deployment, async (obj, cc) => {
  const ready = Math.min(obj.spec.replicas, (obj.status?.readyReplicas ?? 0) + 1);
  await cc.updateStatus({ readyReplicas: ready });
  if (ready < obj.spec.replicas) {
    await cc.setConditions([{ type: "Ready", status: "False", reason: "ScalingUp" }]);
    return unsettled().requeueAfter(once ? 10 : 1_000);
  }
  await cc.setConditions([{ type: "Ready", status: "True", reason: "AllReplicasReady" }]);
  return settled();
});
// start() stores the kind's definition: the API serves it under its names and columns. The
// API's writes (kubectl apply) reach this controller at once: it shares the store handle.
const stop = await bh.start();
await bh.client(Deployment).create("web", { replicas: 3 });

// A generated CA and certificate, and one bearer token with every verb: kubectl sends a token
// only over TLS.
const server = await serveKubeApi({
  store,
  port: once ? 0 : 6443,
  tls: true,
  tokens: [{ token: crypto.randomUUID(), user: "admin" }],
});
const kubeconfig = join(dir, "kubeconfig");
writeFileSync(kubeconfig, server.kubeconfig(), { mode: 0o600 });
console.log(`Kubernetes API at ${server.url}; kubeconfig at ${kubeconfig}`);

async function shutdown(): Promise<void> {
  await server.close();
  await stop({ signal: AbortSignal.timeout(5_000) });
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}

/** Runs the machine's kubectl against this server. */
function kubectl(input: string | undefined, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      "/usr/bin/kubectl",
      ["--kubeconfig", kubeconfig, "--cache-dir", join(dir, "cache"), ...args],
      { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir }, timeout: 30_000 },
      (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
    );
    child.stdin?.end(input ?? "");
  });
}

if (once) {
  try {
    const manifest = JSON.stringify({
      apiVersion: "apps.example/v1",
      kind: "Deployment",
      metadata: { name: "api", labels: { tier: "back" } },
      spec: { replicas: 2 },
    });
    process.stdout.write(await kubectl(manifest, "apply", "-f", "-"));
    await kubectl(
      undefined,
      "wait",
      "deploy/api",
      "deploy/web",
      "--for=condition=Ready",
      "--timeout=20s",
    );
    process.stdout.write(await kubectl(undefined, "get", "deploy"));
    process.stdout.write(
      await kubectl(undefined, "get", "deploy", "-l", "tier=back", "-o", "name"),
    );
  } finally {
    await shutdown();
  }
} else {
  console.log("Ctrl-C to stop");
  process.once("SIGINT", () => void shutdown());
}
