/**
 * The cost of writes through the Kubernetes API, on file-backed SQLite (Deno):
 *
 * - Write costs: server time (handler call to body read, in-process) of a
 *   client-side apply (kubectl's merge patch carrying the last-applied
 *   annotation), a server-side apply and a merge patch changing one of a
 *   spec's 50 fields, and of `dryRun=All` against the real write (create,
 *   patch). Kinds alternate within each round; medians of 300 rounds.
 * - Creates a second: `serveKubeApi` on loopback, plain HTTP and TLS, 16
 *   clients in a Worker (their own thread and event loop) POSTing creates;
 *   the floor is 16 concurrent in-process `client.create` calls on the same
 *   kind of store. Rounds alternate HTTP, TLS and the floor.
 *
 * Run: `deno run -A bench/kubeapi_writes_bench.ts` (`--quick` for a smoke
 * run, `--only=writes` or `--only=creates` for one part). Figures go in
 * docs/performance.md.
 *
 * @module
 */
import process from "node:process";
import { Beehive } from "../mod.ts";
import { kubeApiHandler, serveKubeApi } from "../kubeapi/mod.ts";
import { openSqliteStore } from "../store/sqlite/mod.ts";

const quick = process.argv.includes("--quick");
const Cluster = { group: "kstack.sh", kind: "Cluster" };

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
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
if (run("writes")) await writeCosts();
if (run("creates")) await createRate();
