/**
 * console: the web console served beside a running controller. A Deployment
 * controller rolls out replicas one pass at a time (Progressing, then Ready),
 * and the console at http://127.0.0.1:8080/console shows it converge live.
 *
 * Run: `deno task example:console` (Ctrl-C to stop) or
 * `node_modules/.bin/node --disable-warning=ExperimentalWarning examples/console/main.ts`.
 * `CONSOLE_EXAMPLE_ONCE=1` makes a bounded run: it fetches its own pages,
 * prints what it saw and exits (the examples test does this). `PORT` picks
 * the port (0 = any free one).
 *
 * @module
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import process from "node:process";
import { Beehive, settled, unsettled } from "@beehive/beehive";
import { openSqliteStore } from "@beehive/beehive/sqlite";
import { consoleHandler, toNodeListener } from "@beehive/beehive/console";

interface DeploymentSpec {
  replicas: number;
}
interface DeploymentStatus {
  readyReplicas: number;
}
const Deployment = { group: "apps.example", kind: "Deployment" };
const once = process.env.CONSOLE_EXAMPLE_ONCE === "1";

const store = await openSqliteStore(":memory:");
const bh = new Beehive(store);
bh.register<DeploymentSpec, DeploymentStatus>(Deployment, async (obj, cc) => {
  const ready = Math.min(obj.spec.replicas, (obj.status?.readyReplicas ?? 0) + 1);
  await cc.updateStatus({ readyReplicas: ready });
  if (ready < obj.spec.replicas) {
    await cc.setConditions([
      { type: "Progressing", status: "True", reason: "ScalingUp", message: `${ready} ready` },
      { type: "Ready", status: "False", reason: "ScalingUp" },
    ]);
    return unsettled().requeueAfter(once ? 10 : 1_000);
  }
  await cc.setConditions([
    { type: "Progressing", status: "False", reason: "Done" },
    { type: "Ready", status: "True", reason: "AllReplicasReady", message: `${ready} ready` },
  ]);
  await cc.addEvent({ type: "Normal", reason: "RolledOut", message: `${ready} replicas` });
  return settled();
});
const stop = await bh.start();
const deployments = bh.client<DeploymentSpec, DeploymentStatus>(Deployment);
const web = await deployments.create("web", { replicas: 3 });
await deployments.create("worker", { replicas: 2 });

// Node's HTTP server through the fetch adapter runs on Deno and Node alike;
// under Deno, `Deno.serve({ port }, handler)` works as well.
const handler = consoleHandler({ store, basePath: "/console" });
const server = createServer(toNodeListener(handler));
const port = Number(process.env.PORT ?? (once ? 0 : 8080));
await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/console`;
console.log(`console at ${url}`);

async function shutdown(): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await stop({ signal: AbortSignal.timeout(5_000) });
  await store.close();
}

if (once) {
  const watch = await deployments.watch(web.id);
  if (watch.object?.status?.readyReplicas !== 3) {
    for await (const change of watch) if (change.object?.status?.readyReplicas === 3) break;
  }
  watch.close();
  const kinds = await (await fetch(`${url}/`)).text();
  console.log(`kinds page lists Deployment: ${kinds.includes("Deployment.apps.example")}`);
  const page = await (await fetch(`${url}/objects/${web.id}`)).text();
  const ready = /<tr data-condition="Ready">\s*<td>Ready<\/td>\s*<td[^>]*>(\w+)</.exec(page)?.[1];
  console.log(`web Ready: ${ready}`);
  await shutdown();
} else {
  console.log("Ctrl-C to stop");
  process.once("SIGINT", () => void shutdown());
}
