/**
 * Delete → `DELETED` at a watch, through the Kubernetes API, on file-backed
 * SQLite (Deno): `serveKubeApi` on loopback (plain HTTP), a watch resumed
 * from a list as an informer opens it, and a client that deletes one object
 * at a time and times until the watch's `DELETED` line for it arrives.
 *
 * - `api`: `DELETE …/<name>` (the API server's delete: the object is gone
 *   when the answer is sent), with no Beehive running on the store.
 * - `gc` (the floor this replaced): `Client.delete` marks the object and a
 *   running Beehive with a controller for the kind collects it after the
 *   object's pass.
 *
 * Rounds alternate the two. Reports the DELETE answer's time and delete →
 * DELETED, p50 and p99.
 *
 * Run: `deno run -A bench/kubeapi_delete_bench.ts` (`--quick` for a smoke run).
 *
 * @module
 */
import process from "node:process";
import { Beehive, settled } from "../mod.ts";
import { serveKubeApi } from "../kubeapi/mod.ts";
import { openSqliteStore } from "../store/sqlite/mod.ts";

const quick = process.argv.includes("--quick");
const Cluster = { group: "kstack.sh", kind: "Cluster" };
const ROUNDS = quick ? 2 : 4;
const PER_ROUND = quick ? 10 : 50;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** The watch's lines, one parsed event at a time. */
function lines(body: ReadableStream<Uint8Array>) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  return {
    async next(): Promise<{ type: string; name: string }> {
      for (;;) {
        const nl = buffer.indexOf("\n");
        if (nl >= 0) {
          const event = JSON.parse(buffer.slice(0, nl));
          buffer = buffer.slice(nl + 1);
          return { type: event.type, name: event.object.metadata.name };
        }
        const { done, value } = await reader.read();
        if (done) throw new Error("the watch ended");
        buffer += value;
      }
    },
    cancel: () => reader.cancel(),
  };
}

async function measure(mode: "api" | "gc", round: number) {
  const dir = await Deno.makeTempDir();
  const store = await openSqliteStore(`${dir}/beehive.db`);
  const bh = new Beehive(store);
  // The floor: a controller for the kind, whose pass over a deletion-pending object collects it.
  if (mode === "gc") bh.register(Cluster, () => settled());
  const stop = mode === "gc" ? await bh.start() : undefined;
  const server = await serveKubeApi({ store, port: 0 });
  const base = `${server.url}/apis/kstack.sh/v1/clusters`;
  const clusters = bh.client(Cluster);
  const ids: number[] = [];
  for (let i = 0; i < PER_ROUND; i++) ids.push((await clusters.create(`c${round}-${i}`, {})).id);
  const list = await (await fetch(base)).json();
  const abort = new AbortController();
  const watch = await fetch(`${base}?watch=true&resourceVersion=${list.metadata.resourceVersion}`, {
    signal: abort.signal,
  });
  const events = lines(watch.body!);
  const answers: number[] = [];
  const seen: number[] = [];
  try {
    for (let i = 0; i < PER_ROUND; i++) {
      const name = `c${round}-${i}`;
      const started = performance.now();
      if (mode === "api") {
        const r = await fetch(`${base}/${name}`, { method: "DELETE" });
        await r.body?.cancel();
        if (r.status !== 200) throw new Error(`DELETE answered ${r.status}`);
      } else {
        await clusters.delete(ids[i]);
      }
      answers.push(performance.now() - started);
      for (;;) {
        const e = await events.next();
        if (e.type === "DELETED" && e.name === name) break;
      }
      seen.push(performance.now() - started);
    }
  } finally {
    abort.abort();
    await events.cancel().catch(() => {});
    await server.close();
    await stop?.();
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
  return { answers, seen };
}

const only = process.argv.find((a) => a.startsWith("--only="))?.slice(7);
const modes = (only === undefined ? ["api", "gc"] : only.split(",")) as ("api" | "gc")[];
const results = {
  api: { answers: [] as number[], seen: [] as number[] },
  gc: { answers: [] as number[], seen: [] as number[] },
};
for (let round = 0; round < ROUNDS; round++) {
  for (const mode of round % 2 === 0 ? modes : [...modes].reverse()) {
    const r = await measure(mode, round);
    results[mode].answers.push(...r.answers);
    results[mode].seen.push(...r.seen);
  }
}
for (const mode of modes) {
  const a = results[mode].answers.sort((x, y) => x - y);
  const s = results[mode].seen.sort((x, y) => x - y);
  console.log(
    `${mode}: ${s.length} deletes; answer p50 ${percentile(a, 50).toFixed(1)} ms, p99 ${
      percentile(a, 99).toFixed(1)
    } ms; delete -> DELETED p50 ${percentile(s, 50).toFixed(1)} ms, p99 ${
      percentile(s, 99).toFixed(1)
    } ms`,
  );
}
