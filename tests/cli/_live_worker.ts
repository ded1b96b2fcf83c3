/**
 * A live beehive process for the CLI tests: runs a Widget controller on the
 * database at argv[2] (Ready = True with reason `Gen<generation>`), keeps
 * writing a Ticker's status while it runs (the Ticker carries a liveness
 * condition, Connected = True), prints `ready` once started, and
 * stops cleanly when its standard input closes.
 *
 * @module
 */
import process from "node:process";
import { Beehive, settled } from "../../mod.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";

const path = process.argv[2];
const store = await openSqliteStore(path);
// Short pass cadences: the objects the CLI creates are found by the owed pass
// whether or not cross-process wakes reach this process.
const bh = new Beehive(store, {
  owedPassInterval: 100,
  watchFloorInterval: 100,
  gcInterval: 100,
});
const Widget = { group: "test.beehive", kind: "Widget" };
const Ticker = { group: "test.beehive", kind: "Ticker" };
bh.register<{ size: number }, { size: number }>(Widget, async (obj, cc) => {
  await cc.updateStatus({ size: obj.spec.size });
  await cc.setCondition({ type: "Ready", status: "True", reason: `Gen${obj.generation}` });
  await cc.addEvent({
    type: "Normal",
    reason: "Reconciled",
    message: `generation ${obj.generation}`,
  });
  return settled();
});
const stop = await bh.start();
const ticker = (await bh.client<{ n: number }, { n: number }>(Ticker).getOrCreate("tick", { n: 0 }))
  .object;
const admin = bh.adminClient<{ n: number }>(Ticker);
// What this process alone can vouch for: it reads Unknown to everyone once the process is gone.
await admin.setConditions(ticker.id, [{ type: "Connected", status: "True", liveness: true }]);

let running = true;
const ticking = (async () => {
  for (let n = 1; running; n++) {
    await admin.updateStatus(ticker.id, { n });
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
})();
process.stdin.resume();
const ended = new Promise<void>((resolve) => process.stdin.once("end", () => resolve()));
process.stdout.write("ready\n");
await ended;
running = false;
await ticking;
await stop({ signal: AbortSignal.timeout(10_000) });
await store.close();
process.stdin.pause();
