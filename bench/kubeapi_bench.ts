/**
 * The Kubernetes API benchmark, over an in-memory SQLite store:
 *
 * - Table list: `GET /apis/kstack.sh/v1/clusters` as a meta.k8s.io Table of
 *   10,000 objects, unpaged, timed inside the process from the handler call
 *   to the whole body read (server time: no network, no client decoding).
 * - Commit to watch line: `serveKubeApi` on loopback with 1 and 100 open
 *   `?watch=true` streams (fetch clients in the same process), one merge
 *   `PATCH` of the spec through the API every 20 ms; for every update and
 *   every watcher, the time from just before the PATCH request to that
 *   watcher reading the update's JSON line. p50 and p99 over all pairs. (A
 *   write made by another process reaches the server's watches on its
 *   `pollInterval` floor instead, 500 ms by default.)
 * - Memory per open watch: heap used after a forced GC with 200 open watch
 *   streams minus before, divided by 200 (run with `--v8-flags=--expose-gc`).
 * - Tenants: a server in a process of its own over a SQLite file of 20,000
 *   objects (a 1,500-byte spec each, about 33 MB of JSON), measured from
 *   outside: its RSS (from `ps`) and `/version` latency with 0, 1,
 *   60 and 1,000 open watches from the current version (each read by a raw
 *   socket, as informers hold them), the RSS a watch adds, commit -> watch
 *   line through the API with 1, 60 and 1,000 watchers, and 60 watches
 *   without a version whose clients never read.
 * - Informers: informers of the real `@kubernetes/client-node` (a
 *   list, then a watch from its version) against `serveKubeApi` in the same
 *   process: commit -> update callback through client-node with 1 and 1,000
 *   informers (merge `PATCH` through the API every 20 ms, time from just
 *   before the request to each informer's `update`), and delete -> `delete`
 *   callback at one informer (`DELETE` through the API of an object without
 *   finalizers, with `serve` alone: no Beehive running). The raw-fetch
 *   commit -> watch line with one watch runs alternately as the floor.
 *
 * Run: `deno run -A --v8-flags=--expose-gc bench/kubeapi_bench.ts` (`--quick`
 * for a smoke run; `--only=tenants`, `--only=classic` or `--only=informers` for one part; under
 * Node, `node bench/kubeapi_bench.ts` serves from Node). Figures go in
 * docs/performance.md.
 *
 * @module
 */
import { mkdtemp, rm } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { Beehive } from "../mod.ts";
import { kubeApiHandler, serveKubeApi } from "../kubeapi/mod.ts";
import { openSqliteStore } from "../store/sqlite/mod.ts";
import { rawWatch, seedClusters, serveInProcess } from "../tests/kubeapi/_served_process.ts";
import * as k8s from "@kubernetes/client-node";

const quick = process.argv.includes("--quick");
const Cluster = { group: "kstack.sh", kind: "Cluster" };
const TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io";
const gc = (globalThis as { gc?: () => void }).gc;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function tableList(): Promise<void> {
  const n = quick ? 1000 : 10_000;
  const store = await openSqliteStore(":memory:");
  const bh = new Beehive(store);
  const client = bh.client(Cluster);
  for (let i = 0; i < n; i++) await client.create(`c-${i}`, { replicas: i % 5 });
  const handle = kubeApiHandler({ store });
  const times: number[] = [];
  for (let round = 0; round < (quick ? 3 : 7); round++) {
    const t0 = performance.now();
    const response = await handle(
      new Request("http://localhost/apis/kstack.sh/v1/clusters", { headers: { accept: TABLE } }),
    );
    const body = await response.text();
    times.push(performance.now() - t0);
    if (round === 0) {
      const rows = (JSON.parse(body).rows as unknown[]).length;
      if (rows !== n) throw new Error(`expected ${n} rows, got ${rows}`);
    }
  }
  times.sort((a, b) => a - b);
  console.log(
    `table list of ${n} objects: median ${percentile(times, 50).toFixed(0)} ms, ` +
      `min ${times[0].toFixed(0)} ms, max ${times[times.length - 1].toFixed(0)} ms ` +
      `(${times.length} rounds)`,
  );
  await store.close();
}

interface Watcher {
  readonly seen: Map<number, number>;
  readonly done: Promise<void>;
  close(): Promise<void>;
}

async function openWatch(url: string, wanted: (v: number) => void): Promise<Watcher> {
  const abort = new AbortController();
  const response = await fetch(`${url}/apis/kstack.sh/v1/clusters?watch=true&resourceVersion=0`, {
    signal: abort.signal,
  });
  const seen = new Map<number, number>();
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const done = (async () => {
    let buffer = "";
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        buffer += value;
        for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          const at = performance.now();
          const step = JSON.parse(line).object?.spec?.step;
          if (typeof step === "number" && !seen.has(step)) {
            seen.set(step, at);
            wanted(step);
          }
        }
      }
    } catch {
      // aborted
    }
  })();
  return {
    seen,
    done,
    close: async () => {
      abort.abort();
      await reader.cancel().catch(() => {});
      await done;
    },
  };
}

async function watchLatency(watchers: number): Promise<void> {
  const store = await openSqliteStore(":memory:");
  const bh = new Beehive(store);
  const client = bh.client(Cluster);
  await client.create("prod", { step: -1 });
  const server = await serveKubeApi({ store, port: 0, pollInterval: 500 });
  const arrivals = new Map<number, number>();
  let waiting: { step: number; resolve: () => void } | undefined;
  const wanted = (step: number) => {
    arrivals.set(step, (arrivals.get(step) ?? 0) + 1);
    if (waiting !== undefined && waiting.step === step && arrivals.get(step) === watchers) {
      waiting.resolve();
    }
  };
  const open: Watcher[] = [];
  for (let i = 0; i < watchers; i++) open.push(await openWatch(server.url, wanted));
  const steps = quick ? 20 : watchers > 1 ? 100 : 300;
  const started = new Map<number, number>();
  for (let step = 0; step < steps; step++) {
    const all = Promise.withResolvers<void>();
    waiting = { step, resolve: all.resolve };
    started.set(step, performance.now());
    // Through the API (as kubectl patch would): the server's own Beehive hears the commit.
    const patched = await fetch(`${server.url}/apis/kstack.sh/v1/clusters/prod`, {
      method: "PATCH",
      headers: { "content-type": "application/merge-patch+json" },
      body: JSON.stringify({ spec: { step } }),
    });
    await patched.body?.cancel();
    await all.promise;
    await new Promise((r) => setTimeout(r, 20));
  }
  const latencies: number[] = [];
  for (const w of open) {
    for (const [step, at] of w.seen) {
      if (step >= 0) latencies.push(at - started.get(step)!);
    }
  }
  latencies.sort((a, b) => a - b);
  console.log(
    `commit -> watch line, ${watchers} watch(es): p50 ${
      percentile(latencies, 50).toFixed(2)
    } ms, ` +
      `p99 ${percentile(latencies, 99).toFixed(2)} ms (${latencies.length} deliveries)`,
  );
  await Promise.all(open.map((w) => w.close()));
  await server.close();
  await store.close();
}

async function memoryPerWatch(): Promise<void> {
  if (gc === undefined) {
    console.log("memory per watch: skipped (run with --v8-flags=--expose-gc)");
    return;
  }
  const n = quick ? 20 : 200;
  const store = await openSqliteStore(":memory:");
  await new Beehive(store).client(Cluster).create("prod", {});
  const server = await serveKubeApi({ store, port: 0 });
  // Warm the paths once so their code and caches are not counted.
  const warm = await openWatch(server.url, () => {});
  await warm.close();
  gc();
  const before = process.memoryUsage().heapUsed;
  const open: Watcher[] = [];
  const ready = Promise.withResolvers<void>();
  let added = 0;
  const wanted = () => {
    if (++added === n) ready.resolve();
  };
  for (let i = 0; i < n; i++) open.push(await openWatch(server.url, wanted));
  const patched = await fetch(`${server.url}/apis/kstack.sh/v1/clusters/prod`, {
    method: "PATCH",
    headers: { "content-type": "application/merge-patch+json" },
    body: JSON.stringify({ spec: { step: 0 } }),
  });
  await patched.body?.cancel();
  await ready.promise;
  gc();
  const after = process.memoryUsage().heapUsed;
  console.log(
    `memory per open watch (server and client sides, one process): ` +
      `${((after - before) / n / 1024).toFixed(1)} KiB (${n} watches)`,
  );
  await Promise.all(open.map((w) => w.close()));
  await server.close();
  await store.close();
}

/** A watch over a raw socket that reads everything and notes when each `step` arrives. */
function socketWatch(
  url: string,
  path: string,
  onStep: (step: number, at: number) => void,
): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`);
      resolve(socket);
    });
    socket.once("error", reject);
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      const at = performance.now();
      for (const m of chunk.matchAll(/"step":(\d+)/g)) onStep(Number(m[1]), at);
    });
  });
}

/** Median and p99 of `/version` round trips, in ms. */
async function versionLatency(url: string, n: number): Promise<string> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await fetch(`${url}/version`);
    await r.body?.cancel();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return `/version p50 ${percentile(times, 50).toFixed(1)} ms, max ${
    times[times.length - 1].toFixed(1)
  } ms`;
}

/**
 * A server in its own process over 20,000 objects (about 33 MB of JSON): its
 * RSS read with `ps` and `/version` latency with 0, 60 and 1,000 open watches
 * (from the current version, as informers hold them, each read by a raw
 * socket), the memory a watch costs, 60 watches without a version whose
 * clients never read, and commit -> watch line with 1 and 1,000 watchers.
 */
async function tenants(): Promise<void> {
  const objects = quick ? 2_000 : 20_000;
  const dir = await mkdtemp(join(tmpdir(), "beehive-bench-tenants-"));
  const db = join(dir, "beehive.db");
  await seedClusters(db, objects, 1_500);
  const server = await serveInProcess(db);
  const MB = 1024 * 1024;
  const sockets: Socket[] = [];
  try {
    const store = await openSqliteStore(db);
    const rv = await store.getLatestResourceVersion();
    await store.close();
    const path = `/apis/kstack.sh/v1/clusters?watch=true&resourceVersion=${rv}`;
    console.log(`tenants: ${objects} objects, server pid ${server.pid}`);
    await versionLatency(server.url, 5);
    const rss0 = server.rss();
    console.log(
      `  0 watches: RSS ${(rss0 / MB).toFixed(0)} MB, ${await versionLatency(server.url, 20)}`,
    );
    let arrivals = 0;
    let want = 0;
    let arrived: (() => void) | undefined;
    const started = new Map<number, number>();
    const latencies: number[] = [];
    const onStep = (step: number, at: number) => {
      const t0 = started.get(step);
      if (t0 === undefined) return;
      latencies.push(at - t0);
      if (++arrivals === want) arrived?.();
    };
    const latency = async (watchers: number, steps: number) => {
      latencies.length = 0;
      for (let step = 1; step <= steps; step++) {
        arrivals = 0;
        want = watchers;
        const all = Promise.withResolvers<void>();
        arrived = all.resolve;
        started.set(step, performance.now());
        const r = await fetch(`${server.url}/apis/kstack.sh/v1/clusters/c0`, {
          method: "PATCH",
          headers: { "content-type": "application/merge-patch+json" },
          body: JSON.stringify({ spec: { step } }),
        });
        await r.body?.cancel();
        await all.promise;
        started.delete(step);
      }
      latencies.sort((a, b) => a - b);
      return `commit -> watch line p50 ${percentile(latencies, 50).toFixed(2)} ms, p99 ${
        percentile(latencies, 99).toFixed(2)
      } ms (${latencies.length} deliveries)`;
    };
    for (const target of [1, 60, 1_000]) {
      while (sockets.length < target) sockets.push(await socketWatch(server.url, path, onStep));
      const line = await latency(target, quick ? 10 : target === 1_000 ? 20 : 50);
      const rss = server.rss();
      console.log(
        `  ${target} watches: RSS ${(rss / MB).toFixed(0)} MB (${
          ((rss - rss0) / target / 1024).toFixed(0)
        } KiB a watch over 0), ${await versionLatency(server.url, 20)}; ${line}`,
      );
    }
    for (const s of sockets.splice(0)) s.destroy();
    const idle: Awaited<ReturnType<typeof rawWatch>>[] = [];
    for (let i = 0; i < 60; i++) {
      idle.push(await rawWatch(server.url, "/apis/kstack.sh/v1/clusters?watch=true"));
    }
    await Promise.all(idle.map((w) => w.firstBytes));
    const v = await versionLatency(server.url, 5);
    console.log(
      `  60 watches without a version whose clients never read: RSS ${
        (server.rss() / MB).toFixed(0)
      } MB, ${v}`,
    );
    for (const w of idle) w.destroy();
  } finally {
    for (const s of sockets) s.destroy();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** A client-node informer of the Clusters at `url`, calling `on` with each callback's object. */
async function clientNodeInformer(
  url: string,
  on: (verb: "add" | "update" | "delete", obj: k8s.KubernetesObject) => void,
): Promise<{ stop(): Promise<void> }> {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "b", server: url, skipTLSVerify: true }],
    users: [{ name: "b" }],
    contexts: [{ name: "b", cluster: "b", user: "b" }],
    currentContext: "b",
  });
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  const informer = k8s.makeInformer<k8s.KubernetesObject>(
    kc,
    "/apis/kstack.sh/v1/clusters",
    () =>
      api.listClusterCustomObject({
        group: "kstack.sh",
        version: "v1",
        plural: "clusters",
      }) as Promise<k8s.KubernetesListObject<k8s.KubernetesObject>>,
  );
  for (const verb of ["add", "update", "delete"] as const) {
    informer.on(verb, (obj: k8s.KubernetesObject) => on(verb, obj));
  }
  informer.on("error", () => {}); // a stop aborts the watch, reported as an error
  await informer.start();
  return { stop: () => informer.stop() };
}

/** Commit -> update callback through client-node with `count` informers. */
async function informerLatency(count: number): Promise<void> {
  const store = await openSqliteStore(":memory:");
  await new Beehive(store).client(Cluster).create("prod", { step: -1 });
  const server = await serveKubeApi({ store, port: 0, maxWatches: count + 10 });
  const started = new Map<number, number>();
  const latencies: number[] = [];
  const arrivals = new Map<number, number>();
  let waiting: { step: number; resolve: () => void } | undefined;
  const informers = [];
  for (let i = 0; i < count; i++) {
    informers.push(
      await clientNodeInformer(server.url, (verb, obj) => {
        const step = (obj as { spec?: { step?: number } }).spec?.step;
        if (verb !== "update" || typeof step !== "number" || step < 0) return;
        latencies.push(performance.now() - started.get(step)!);
        arrivals.set(step, (arrivals.get(step) ?? 0) + 1);
        if (waiting?.step === step && arrivals.get(step) === count) waiting.resolve();
      }),
    );
  }
  const steps = quick ? 10 : count > 1 ? 30 : 200;
  for (let step = 0; step < steps; step++) {
    const all = Promise.withResolvers<void>();
    waiting = { step, resolve: all.resolve };
    started.set(step, performance.now());
    const patched = await fetch(`${server.url}/apis/kstack.sh/v1/clusters/prod`, {
      method: "PATCH",
      headers: { "content-type": "application/merge-patch+json" },
      body: JSON.stringify({ spec: { step } }),
    });
    await patched.body?.cancel();
    await all.promise;
    await new Promise((r) => setTimeout(r, 20));
  }
  latencies.sort((a, b) => a - b);
  console.log(
    `client-node informers, commit -> update callback, ${count} informer(s): p50 ${
      percentile(latencies, 50).toFixed(2)
    } ms, p99 ${percentile(latencies, 99).toFixed(2)} ms (${latencies.length} deliveries)`,
  );
  for (const informer of informers) await informer.stop();
  await server.close();
  await store.close();
}

/** Delete through the API -> delete callback at one client-node informer, serve alone. */
async function informerDelete(): Promise<void> {
  const store = await openSqliteStore(":memory:");
  await new Beehive(store).client(Cluster).create("seed", {});
  const server = await serveKubeApi({ store, port: 0 });
  const waits = new Map<string, () => void>();
  const informer = await clientNodeInformer(server.url, (verb, obj) => {
    waits.get(`${verb} ${obj.metadata?.name}`)?.();
  });
  const seen = (entry: string) => new Promise<void>((resolve) => waits.set(entry, resolve));
  const times: number[] = [];
  for (let i = 0; i < (quick ? 10 : 100); i++) {
    const added = seen(`add d${i}`);
    const created = await fetch(`${server.url}/apis/kstack.sh/v1/clusters`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        apiVersion: "kstack.sh/v1",
        kind: "Cluster",
        metadata: { name: `d${i}` },
        spec: {},
      }),
    });
    await created.body?.cancel();
    await added;
    const deleted = seen(`delete d${i}`);
    const t0 = performance.now();
    const answer = await fetch(`${server.url}/apis/kstack.sh/v1/clusters/d${i}`, {
      method: "DELETE",
    });
    await answer.body?.cancel();
    await deleted;
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  console.log(
    `client-node informer, DELETE -> delete callback (serve alone): p50 ${
      percentile(times, 50).toFixed(2)
    } ms, p99 ${percentile(times, 99).toFixed(2)} ms (${times.length} deletes)`,
  );
  await informer.stop();
  await server.close();
  await store.close();
}

async function informers(): Promise<void> {
  // The floor, alternated: the same commits read by a raw fetch watch in the same process.
  for (let round = 0; round < 2; round++) {
    await watchLatency(1);
    await informerLatency(1);
  }
  await informerDelete();
  await informerLatency(quick ? 50 : 1000);
}

const only = process.argv.find((a) => a.startsWith("--only="))?.slice("--only=".length);
if (only === undefined || only === "tenants") await tenants();
if (only === undefined || only === "informers") await informers();
if (only === undefined || only === "classic") {
  await memoryPerWatch();
  await tableList();
  await watchLatency(1);
  await watchLatency(100);
}
