/**
 * The child process of the OpenTelemetry end-to-end test: a Beehive given the
 * real `@opentelemetry/api` meter and tracer (Deno's built-in SDK exports them
 * when `OTEL_DENO=true`), reconciling one object that settles and one that
 * stalls; it exits once both have, so the exporter flushes.
 *
 * @module
 */
import { metrics, trace } from "@opentelemetry/api";
import { Beehive, PermanentError, settled } from "../../mod.ts";
import { openTestStore } from "../_sqlite_driver.ts";

const Thing = { group: "test.beehive.dev", kind: "Thing" };

const store = await openTestStore(":memory:");
const bh = new Beehive(store, {
  meter: metrics.getMeter("beehive-e2e"),
  tracer: trace.getTracer("beehive-e2e"),
});
const tracer = trace.getTracer("beehive-e2e");
bh.register(Thing, async (obj) => {
  if (obj.name === "poison") throw new PermanentError("never", { reason: "Poison" });
  // After an await, a span the controller starts is still the pass span's child.
  await Promise.resolve();
  tracer.startActiveSpan("controller work", (span) => span.end());
  return settled();
});
const stop = await bh.start();
const things = bh.client(Thing);
const stream = await things.watchList();
await things.create("ok", {});
await things.create("poison", {});
const done = (
  objects: readonly {
    name: string;
    observedGeneration?: number;
    conditions: readonly { type: string }[];
  }[],
) =>
  objects.some((o) => o.name === "ok" && o.observedGeneration === 1) &&
  objects.some((o) => o.name === "poison" && o.conditions.some((c) => c.type === "Stalled"));
const seen = new Map<
  number,
  { name: string; observedGeneration?: number; conditions: readonly { type: string }[] }
>();
for (const o of stream.objects) seen.set(o.id, o);
if (!done([...seen.values()])) {
  for await (const change of stream) {
    if (change.object !== undefined) seen.set(change.id, change.object);
    if (done([...seen.values()])) break;
  }
}
stream.close();
await stop();
await store.close();
console.log("done");
