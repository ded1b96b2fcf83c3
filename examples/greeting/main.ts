/**
 * greeting: the minimal declarative loop. A spec, a controller that writes
 * status, and a watch (opened before the create) that prints the object
 * converging.
 *
 * Run: `deno task example:greeting` or
 * `node_modules/.bin/node --disable-warning=ExperimentalWarning examples/greeting/main.ts`.
 *
 * @module
 */
import { Beehive, settled } from "@beehive/beehive";
import { openSqliteStore } from "@beehive/beehive/sqlite";

interface GreetingSpec {
  name: string;
}
interface GreetingStatus {
  message: string;
}
const Greeting = { group: "", kind: "Greeting" };

const store = await openSqliteStore(":memory:");
const bh = new Beehive(store);
bh.register<GreetingSpec, GreetingStatus>(Greeting, async (obj, cc) => {
  const message = `Hello, ${obj.spec.name}`;
  // Level-triggered: report what should be, every time; an unchanged status writes nothing.
  await cc.updateStatus({ message });
  return settled();
});

const stop = await bh.start();
const greetings = bh.client<GreetingSpec, GreetingStatus>(Greeting);
const watch = await greetings.watchList(); // subscribe, then act
const created = await greetings.create("world", { name: "world" });
console.log(`created Greeting id=${created.id} name=${created.name}`);

for await (const change of watch) {
  if (change.id !== created.id || change.object?.status === undefined) continue;
  console.log(`converged: ${change.object.status.message}`);
  break; // ends the watch quietly
}
await stop({ signal: AbortSignal.timeout(5_000) });
await store.close();
