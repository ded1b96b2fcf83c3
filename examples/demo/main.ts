/**
 * The demo: a Greeting kind whose controller writes a status and a Ready
 * condition. It creates a greeting, lets the controller converge it, changes
 * the spec and watches it converge again, then reopens the database to show
 * the state survived.
 *
 * Run: `npm run demo` (or `deno task demo`).
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Beehive, type BeehiveObject, settled } from "@beehive/beehive";
import { openSqliteStore } from "@beehive/beehive/sqlite";

interface GreetingSpec {
  to: string;
}
interface GreetingStatus {
  message: string;
}
type Greeting = BeehiveObject<GreetingSpec, GreetingStatus>;

const Greeting = { group: "demo.beehive.dev", kind: "Greeting" };
const dir = mkdtempSync(join(tmpdir(), "beehive-demo-"));
const path = join(dir, "demo.db");

try {
  const store = await openSqliteStore(path);
  const bh = new Beehive(store);

  // Resolves when the controller has settled a given generation of "hello".
  const waiting = new Map<number, () => void>();
  bh.register<GreetingSpec, GreetingStatus>(Greeting, {
    async reconcile(obj, cc) {
      const message = `Hello, ${obj.spec.to}!`;
      await cc.updateStatus({ message });
      await cc.setCondition({ type: "Ready", status: "True", reason: "Greeted", message });
      console.log(`  reconciled ${obj.name} at generation ${obj.generation}: "${message}"`);
      queueMicrotask(() => waiting.get(obj.generation)?.());
      return settled();
    },
  });
  const settledAt = (generation: number) =>
    new Promise<void>((resolve) => waiting.set(generation, resolve));

  const stop = await bh.start();
  const greetings = bh.client<GreetingSpec, GreetingStatus>(Greeting);

  console.log("create hello → world");
  const first = settledAt(1);
  const created = await greetings.create("hello", { to: "world" });
  await first;

  console.log("update hello → beehive");
  const second = settledAt(2);
  await greetings.update(created.id, { to: "beehive" });
  await second;

  // Stopping drains the passes, including the generation handshake they record.
  await stop();
  await store.close();

  const reopened = await openSqliteStore(path);
  const read: Greeting = await new Beehive(reopened).client<GreetingSpec, GreetingStatus>(Greeting)
    .get(created.id);
  const ready = read.conditions.find((c) => c.type === "Ready");
  console.log(`after reopening: status "${read.status?.message}", Ready=${ready?.status}`);
  console.log(
    `converged: observedGeneration ${read.observedGeneration} of generation ${read.generation}`,
  );
  await reopened.close();
  if (read.observedGeneration !== read.generation) throw new Error("the demo did not converge");
  console.log("demo ok");
} finally {
  rmSync(dir, { recursive: true, force: true });
}
