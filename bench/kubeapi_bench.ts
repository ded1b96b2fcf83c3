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
 *
 * Run: `deno run -A --v8-flags=--expose-gc bench/kubeapi_bench.ts` (`--quick`
 * for a smoke run). Figures go in docs/performance.md.
 *
 * @module
 */
import process from "node:process";
import { Beehive } from "../mod.ts";
import { kubeApiHandler, serveKubeApi } from "../kubeapi/mod.ts";
import { openSqliteStore } from "../store/sqlite/mod.ts";

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
      new Request("http://bench/apis/kstack.sh/v1/clusters", { headers: { accept: TABLE } }),
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

await memoryPerWatch();
await tableList();
await watchLatency(1);
await watchLatency(100);
