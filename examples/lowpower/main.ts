/**
 * lowpower: every cadence at minutes, and still a create converges and a
 * delete is collected in milliseconds, because every write pushes its own
 * object at commit. The periodic drivers are only backstops.
 *
 * Run: `deno task example:lowpower`.
 *
 * @module
 */
import { Beehive, settled } from "@beehive/beehive";
import { openSqliteStore } from "@beehive/beehive/sqlite";

const Panel = { group: "example.beehive.dev", kind: "Panel" };
const MINUTES = 60_000;

const store = await openSqliteStore(":memory:");
const bh = new Beehive(store, {
  owedPassInterval: 5 * MINUTES,
  gcInterval: 5 * MINUTES,
  staleDependentsInterval: 5 * MINUTES,
  watchFloorInterval: 10 * MINUTES,
  maxRetryInterval: 5 * MINUTES,
});
bh.register<{ source: string }, { connected: boolean }>(Panel, async (obj, cc) => {
  if (obj.deletionRequestedAt || obj.status?.connected) return settled();
  await cc.updateStatus({ connected: true });
  return settled();
});
const stop = await bh.start();
const panels = bh.client<{ source: string }, { connected: boolean }>(Panel);
const watch = await panels.watchList();

let t0 = performance.now();
const panel = await panels.create("connections", { source: "localhost:5432" });
console.log(`created Panel ${panel.id} (source=${panel.spec.source})`);
let connected = false;
for await (const change of watch) {
  if (change.id !== panel.id) continue;
  if (!connected && change.object?.status?.connected) {
    connected = true;
    console.log(
      `connected after ${Math.round(performance.now() - t0)}ms (the owed pass is 5m away)`,
    );
    t0 = performance.now();
    await panels.delete(panel.id);
  } else if (change.type === "Deleted") {
    console.log(
      `collected after ${Math.round(performance.now() - t0)}ms (the GC sweep is 5m away)`,
    );
    break;
  }
}
await stop({ signal: AbortSignal.timeout(5_000) });
await store.close();
