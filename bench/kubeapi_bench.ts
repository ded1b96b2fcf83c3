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
 * - Write costs: server time (handler call to body read, in-process,
 *   file-backed SQLite) of a client-side apply, a server-side apply and a
 *   merge patch changing one of a spec's 50 fields, and of `dryRun=All`
 *   against the real write (create, patch).
 * - Creates a second: `serveKubeApi` on loopback, plain HTTP and TLS, 16
 *   clients in a Worker POSTing creates; the floor is 16 concurrent
 *   in-process `client.create` calls on the same kind of store.
 *
 * Run: `deno run -A --v8-flags=--expose-gc bench/kubeapi_bench.ts` (`--quick`
 * for a smoke run, `--only=memory,table,watch,writes,creates` for some).
 * Figures go in docs/performance.md.
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

/** Runs the load worker against `url` and reports creates a second and latencies. */
async function createLoad(
  url: string,
  ca: string | undefined,
  total: number,
  prefix: string,
): Promise<{ rate: number; p50: number; p99: number }> {
  const worker = new Worker(new URL("./_kubeapi_load_worker.ts", import.meta.url).href, {
    type: "module",
  });
  const done = Promise.withResolvers<
    { elapsed: number; latencies: number[]; failures: string[] }
  >();
  worker.onmessage = (e) => done.resolve(e.data);
  worker.onerror = (e) => done.reject(e);
  worker.postMessage({ url, ca, clients: 16, total, prefix });
  const { elapsed, latencies, failures } = await done.promise;
  worker.terminate();
  if (failures.length > 0) throw new Error(`creates failed: ${failures.join(", ")}`);
  latencies.sort((a, b) => a - b);
  return {
    rate: total / (elapsed / 1000),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

/** The CA a TLS server's kubeconfig carries, as PEM. */
function caOf(kubeconfig: string): string {
  const data = /certificate-authority-data: (\S+)/.exec(kubeconfig)?.[1];
  if (data === undefined) throw new Error("the kubeconfig carries no CA");
  return atob(data);
}

/**
 * Creates a second through the API from 16 parallel clients (a Worker, so
 * they do not share the server's event loop) on loopback, plain HTTP and TLS,
 * against the floor: the same store taking 16 concurrent `client.create`
 * calls in-process. Rounds alternate plain, TLS and floor.
 */
async function createRate(): Promise<void> {
  const total = quick ? 400 : 4000;
  const rounds = quick ? 1 : 3;
  const results: Record<string, { rate: number; p50: number; p99: number }[]> = {
    floor: [],
    http: [],
    https: [],
  };
  for (let round = 0; round < rounds; round++) {
    for (const mode of ["http", "https", "floor"] as const) {
      const dir = await Deno.makeTempDir();
      const store = await openSqliteStore(`${dir}/bench.db`);
      await new Beehive(store).client(Cluster).create("seed", {});
      if (mode === "floor") {
        const client = new Beehive(store).client(Cluster);
        const latencies: number[] = [];
        let next = 0;
        const loop = async () => {
          for (;;) {
            const i = next++;
            if (i >= total) return;
            const t0 = performance.now();
            await client.create(`f-${i}`, { replicas: i % 5, zone: "a" }, {
              labels: { app: "bench" },
            });
            latencies.push(performance.now() - t0);
          }
        };
        const t0 = performance.now();
        await Promise.all(Array.from({ length: 16 }, loop));
        const elapsed = performance.now() - t0;
        latencies.sort((a, b) => a - b);
        results.floor.push({
          rate: total / (elapsed / 1000),
          p50: percentile(latencies, 50),
          p99: percentile(latencies, 99),
        });
      } else {
        const server = await serveKubeApi({
          store,
          port: 0,
          ...(mode === "https" ? { tls: true as const } : {}),
        });
        const ca = mode === "https" ? caOf(server.kubeconfig()) : undefined;
        results[mode].push(await createLoad(server.url, ca, total, `${mode}-${round}`));
        await server.close();
      }
      await store.close();
      await Deno.remove(dir, { recursive: true });
    }
  }
  for (const [mode, runs] of Object.entries(results)) {
    const best = runs.reduce((a, b) => a.rate >= b.rate ? a : b);
    const rates = runs.map((r) => r.rate.toFixed(0)).join(", ");
    console.log(
      `creates/s, 16 clients, ${mode}: best ${best.rate.toFixed(0)}/s (rounds: ${rates}), ` +
        `p50 ${best.p50.toFixed(1)} ms, p99 ${
          best.p99.toFixed(1)
        } ms (${total} creates, file store)`,
    );
  }
}

/** A spec of 50 fields. */
function fiftyFields(round: number): Record<string, unknown> {
  const spec: Record<string, unknown> = {};
  for (let i = 0; i < 49; i++) spec[`field${i}`] = `value-${i}`;
  spec.round = round;
  return spec;
}

/** The median of `times`, in ms. */
function median(times: number[]): number {
  return [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)];
}

/**
 * Server time of a write (handler call to body read, in-process, file-backed
 * SQLite): a client-side apply (kubectl's merge patch carrying the
 * last-applied annotation) and a server-side apply, each changing one of an
 * object's 50 spec fields; a plain merge patch as their floor; and the
 * cost of `dryRun=All` against the real write, for a create and a patch.
 * Kinds alternate within each round.
 */
async function writeCosts(): Promise<void> {
  const dir = await Deno.makeTempDir();
  const store = await openSqliteStore(`${dir}/bench.db`);
  const handle = kubeApiHandler({ store });
  await new Beehive(store).client(Cluster).create("seed", {});
  const base = "http://localhost/apis/kstack.sh/v1/clusters";
  const send = async (path: string, init: RequestInit): Promise<number> => {
    const t0 = performance.now();
    const response = await handle(new Request(`${base}${path}`, init));
    await response.text();
    if (response.status >= 300) throw new Error(`${init.method} ${path}: ${response.status}`);
    return performance.now() - t0;
  };
  const body = (spec: unknown, extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      apiVersion: "kstack.sh/v1",
      kind: "Cluster",
      metadata: { name: "x", ...extra },
      spec,
    });
  const post = (name: string, query = "") =>
    send(`${query}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: body(fiftyFields(0)).replace('"name":"x"', `"name":"${name}"`),
    });
  for (const name of ["csa", "merge"]) await post(name);
  // The server-side applied object is created by its manager's first apply: a create by
  // another manager would own the fields, and the apply conflict with it.
  await send("/ssa?fieldManager=kubectl", {
    method: "PATCH",
    headers: { "content-type": "application/apply-patch+yaml" },
    body: body(fiftyFields(0)).replace('"name":"x"', '"name":"ssa"'),
  });
  const times: Record<string, number[]> = {
    "client-side apply": [],
    "server-side apply": [],
    "merge patch": [],
    "create": [],
    "create, dryRun": [],
    "patch, dryRun": [],
  };
  const rounds = quick ? 20 : 300;
  for (let round = 1; round <= rounds; round++) {
    const spec = fiftyFields(round);
    const lastApplied = body(spec).replace('"name":"x"', '"name":"csa"');
    times["client-side apply"].push(
      await send("/csa?fieldManager=kubectl-client-side-apply", {
        method: "PATCH",
        headers: { "content-type": "application/merge-patch+json" },
        body: JSON.stringify({
          metadata: {
            annotations: { "kubectl.kubernetes.io/last-applied-configuration": lastApplied },
          },
          spec: { round },
        }),
      }),
    );
    times["server-side apply"].push(
      await send("/ssa?fieldManager=kubectl", {
        method: "PATCH",
        headers: { "content-type": "application/apply-patch+yaml" },
        body: body(spec).replace('"name":"x"', '"name":"ssa"'),
      }),
    );
    times["merge patch"].push(
      await send("/merge", {
        method: "PATCH",
        headers: { "content-type": "application/merge-patch+json" },
        body: JSON.stringify({ spec: { round } }),
      }),
    );
    times["patch, dryRun"].push(
      await send("/merge?dryRun=All", {
        method: "PATCH",
        headers: { "content-type": "application/merge-patch+json" },
        body: JSON.stringify({ spec: { round: -round } }),
      }),
    );
    times["create, dryRun"].push(await post(`d-${round}`, "?dryRun=All"));
    times["create"].push(await post(`c-${round}`));
  }
  for (const [what, list] of Object.entries(times)) {
    console.log(`server time, ${what} (50-field spec): median ${median(list).toFixed(3)} ms`);
  }
  await store.close();
  await Deno.remove(dir, { recursive: true });
}

const only = process.argv.find((a) => a.startsWith("--only="))?.slice("--only=".length)
  .split(",");
const run = (name: string) => only === undefined || only.includes(name);
if (run("memory")) await memoryPerWatch();
if (run("table")) await tableList();
if (run("watch")) {
  await watchLatency(1);
  await watchLatency(100);
}
if (run("writes")) await writeCosts();
if (run("creates")) await createRate();
