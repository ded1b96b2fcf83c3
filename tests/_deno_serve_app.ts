/**
 * An app that mounts the console and the Kubernetes API in its own
 * `Deno.serve`, as the guides show, and watches through both: a console live
 * feed and a Kubernetes watch, each read and left by the client, and
 * Kubernetes watches (objects, namespaces, events) their `timeoutSeconds` ends. Prints "done" and exits; what
 * the runtime warns goes to its stderr. Run by `deno_serve_test.ts`.
 *
 * @module
 */
import { Beehive } from "../mod.ts";
import { consoleHandler } from "../console/mod.ts";
import { kubeApiHandler } from "../kubeapi/mod.ts";
import { openSqliteStore } from "../store/sqlite/mod.ts";

const Cluster = { group: "kstack.sh", kind: "Cluster" };
const store = await openSqliteStore(":memory:");
const bh = new Beehive(store, { kinds: [Cluster] });
const stop = await bh.start();
await bh.client(Cluster).create("prod", { replicas: 1 });
const kube = kubeApiHandler({ store });
const console_ = consoleHandler({ store, basePath: "/console" });
const server = Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen() {} },
  (request) =>
    new URL(request.url).pathname.startsWith("/console") ? console_(request) : kube(request),
);
const base = `http://127.0.0.1:${server.addr.port}`;

/** Reads `path` until its body has said `until`, then leaves. */
async function readAndLeave(path: string, until: string): Promise<void> {
  const response = await fetch(base + path);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!text.includes(until)) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`${path} ended before "${until}": ${text}`);
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
}

await readAndLeave("/console/kinds/Cluster.kstack.sh/live", "retry:");
await readAndLeave("/apis/kstack.sh/v1/clusters?watch=true&resourceVersion=0", '"ADDED"');
// A watch the server ends: the response completes successfully.
const ended = await fetch(`${base}/apis/kstack.sh/v1/clusters?watch=true&timeoutSeconds=1`);
await ended.text();
// The namespace and event watches end the same ways.
await readAndLeave("/api/v1/namespaces?watch=true", '"ADDED"');
for (const path of ["/api/v1/namespaces", "/api/v1/events"]) {
  await (await fetch(`${base}${path}?watch=true&timeoutSeconds=1`)).text();
}
await server.shutdown();
await stop();
await store.close();
console.log("done");
