/**
 * events: a connection-health timeline rendered from event runs (×count,
 * first–last), read with `watchEvents`, then resumed from a saved position so
 * only what is new arrives.
 *
 * Run: `deno task example:events`.
 *
 * @module
 */
import { Beehive, type Event, settled } from "@beehive/beehive";
import { openSqliteStore } from "@beehive/beehive/sqlite";

interface Probe {
  type: "Normal" | "Warning";
  reason: string;
  message?: string;
  detail?: { endpoint: string; latencyMs: number };
  count: number;
}
interface ClusterSpec {
  endpoint: string;
  probes: Probe[];
}
interface ClusterStatus {
  reachable: boolean;
  probedGeneration: number;
}
const Cluster = { group: "kstack.sh", kind: "Cluster" };

function time(d: Date): string {
  return d.toISOString().slice(11, 19);
}

function render(run: Event): string {
  const mark = run.type === "Warning" ? "✗" : "✓";
  const line = `  ${time(run.lastAt)}  ${mark} ${run.reason.padEnd(14)} ×${
    String(run.count).padEnd(3)
  } ${time(run.firstAt)}–${time(run.lastAt)}`;
  return run.message === "" ? line : `${line}   "${run.message}"`;
}

const store = await openSqliteStore(":memory:");
const bh = new Beehive(store);
bh.register<ClusterSpec, ClusterStatus>(Cluster, async (obj, cc) => {
  // The status marker makes the pass idempotent: these probes were already logged.
  if ((obj.status?.probedGeneration ?? 0) >= obj.generation) return settled();
  await cc.within(async (tx) => {
    for (const p of obj.spec.probes) {
      for (let i = 0; i < p.count; i++) {
        await tx.addEvent({ category: "connection", ...p });
      }
    }
    const last = obj.spec.probes.at(-1);
    await tx.updateStatus({ reachable: last?.type === "Normal", probedGeneration: obj.generation });
  });
  return settled();
});

const stop = await bh.start();
const clusters = bh.client<ClusterSpec, ClusterStatus>(Cluster);
const timeout = { endpoint: "10.0.0.1:443", latencyMs: 5000 };
const created = await clusters.create("primary", {
  endpoint: "10.0.0.1:443",
  probes: [
    { type: "Normal", reason: "Connected", count: 16 },
    { type: "Warning", reason: "TLSHandshake", message: "x509: certificate expired", count: 5 },
    { type: "Normal", reason: "Connected", count: 7 },
    { type: "Warning", reason: "ProbeFailed", message: "i/o timeout", detail: timeout, count: 18 },
    { type: "Normal", reason: "Connected", count: 4 },
  ],
});
console.log(`created Cluster id=${created.id} endpoint=${created.spec.endpoint}`);

// Wait until the controller has settled this generation.
const one = await clusters.watch(created.id);
if ((one.object?.observedGeneration ?? 0) < created.generation) {
  for await (const change of one) {
    const o = change.object;
    if (o !== undefined && (o.observedGeneration ?? 0) >= o.generation) break;
  }
}
one.close();

const panel = await clusters.watchEvents(created.id, { category: "connection" });
console.log("\nconnection-health panel (newest first):");
for (const run of panel.runs) console.log(render(run));
const saved = panel.resourceVersion; // a checkpoint a reader would persist
panel.close();

// Later, a reader resumes from its checkpoint: it receives only what is new.
const resumed = await clusters.watchEvents(created.id, {
  category: "connection",
  resumeFrom: saved,
});
await clusters.update(created.id, {
  endpoint: "10.0.0.1:443",
  probes: [{
    type: "Warning",
    reason: "ProbeFailed",
    message: "i/o timeout",
    detail: timeout,
    count: 1,
  }],
});
console.log("\nlive, resumed above the snapshot:");
for await (const run of resumed) {
  console.log(render(run));
  break;
}
await stop({ signal: AbortSignal.timeout(5_000) });
await store.close();
