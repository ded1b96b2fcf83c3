/**
 * conditions: progress through conditions. A Server scales up one replica per
 * pass, reporting Progressing and a liveness Ready condition, and asks to come
 * back with `unsettled().requeueAfter(…)` until it is done. Then the process
 * "restarts": the liveness condition reads Unknown / unconfirmed until a
 * controller in the new process confirms it again.
 *
 * Run: `deno task example:conditions`.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Beehive, type Condition, settled, unsettled } from "@beehive/beehive";
import { openSqliteStore } from "@beehive/beehive/sqlite";

interface ServerSpec {
  replicas: number;
}
interface ServerStatus {
  onlineReplicas: number;
}
const Server = { group: "example.beehive.dev", kind: "Server" };

function render(conditions: readonly Condition[]): string {
  if (conditions.length === 0) return "  (none)";
  return conditions.map((c) => {
    if (c.unconfirmed) {
      return `  ${c.type.padEnd(12)} Unknown  (unconfirmed since restart; last known ${c.reason})`;
    }
    const since = ((Date.now() - c.transitionedAt.getTime()) / 1000).toFixed(1);
    return `  ${c.type.padEnd(12)} ${
      c.status.padEnd(8)
    } for ${since}s  ${c.reason}: "${c.message}"`;
  }).join("\n");
}

const dir = mkdtempSync(join(tmpdir(), "beehive-conditions-"));
const path = join(dir, "servers.db");
try {
  // --- first process: scale up ---------------------------------------------
  let store = await openSqliteStore(path);
  let bh = new Beehive(store);
  const online = new Map<number, number>(); // in-process state, lost on restart
  bh.register<ServerSpec, ServerStatus>(Server, async (obj, cc) => {
    const k = Math.min((online.get(obj.id) ?? 0) + 1, obj.spec.replicas);
    online.set(obj.id, k);
    const message = `${k}/${obj.spec.replicas} replicas online`;
    if (k < obj.spec.replicas) {
      await cc.setConditions([
        { type: "Progressing", status: "True", reason: "ScalingUp", message },
        { type: "Ready", status: "False", reason: "ScalingUp", message, liveness: true },
      ]);
      await cc.updateStatus({ onlineReplicas: k });
      return unsettled().requeueAfter(300);
    }
    await cc.within(async (tx) => {
      await tx.deleteCondition("Progressing");
      await tx.setCondition({
        type: "Ready",
        status: "True",
        reason: "AllReplicasOnline",
        message,
        liveness: true,
      });
      await tx.updateStatus({ onlineReplicas: k });
    });
    return settled();
  });
  let stop = await bh.start();
  const servers = bh.client<ServerSpec, ServerStatus>(Server);
  const watch = await servers.watchList();
  const web = await servers.create("web", { replicas: 3 });
  console.log(`created Server id=${web.id} replicas=3`);
  for await (const change of watch) {
    if (change.id !== web.id || change.object === undefined) continue;
    console.log(`rv=${change.resourceVersion} conditions:\n${render(change.object.conditions)}`);
    const ready = change.object.conditions.find((c) => c.type === "Ready");
    if (ready?.status === "True") break;
  }
  console.log("converged: server is Ready");
  await stop();
  await store.close();

  // --- second process: the liveness condition is unconfirmed until re-checked ---
  store = await openSqliteStore(path);
  bh = new Beehive(store);
  const before = await bh.client<ServerSpec, ServerStatus>(Server).get(web.id);
  console.log(`after restart:\n${render(before.conditions)}`);
  const confirmed = Promise.withResolvers<void>();
  bh.register<ServerSpec, ServerStatus>(Server, async (obj, cc) => {
    await cc.setCondition({
      type: "Ready",
      status: "True",
      reason: "Probed",
      message: `${obj.spec.replicas}/${obj.spec.replicas} replicas online`,
      liveness: true,
    });
    confirmed.resolve();
    return settled();
  }, { startupFullPass: true }); // this kind owns in-process state: re-check it once per process
  stop = await bh.start();
  await confirmed.promise;
  await stop();
  const after = await bh.client<ServerSpec, ServerStatus>(Server).get(web.id);
  console.log(`after the startup pass:\n${render(after.conditions)}`);
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
