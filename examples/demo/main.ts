/**
 * The demo: opens a SQLite store in a temporary file, writes an object,
 * reports status and a condition on it the way a controller would, reads it
 * back, and shows the write log that watches and drivers tail.
 *
 * Run: `npm run demo` (or `deno task demo`).
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NameTakenError } from "@beehive/beehive";
import { openSqliteStore } from "@beehive/beehive/sqlite";

const dir = mkdtempSync(join(tmpdir(), "beehive-demo-"));
const path = join(dir, "demo.db");
const Greeting = { group: "demo.beehive.dev", kind: "Greeting" };

try {
  const store = await openSqliteStore(path);
  const created = await store.objects.create(Greeting, {
    name: "hello",
    spec: JSON.stringify({ to: "world" }),
  });
  console.log(
    `created ${Greeting.kind} "${created.name}" (id ${created.id}, generation ${created.generation})`,
  );

  const ref = { ...Greeting, id: created.id };
  await store.within(async (tx) => {
    await tx.objects.updateStatus(ref, { status: JSON.stringify({ message: "Hello, world!" }) });
    await tx.conditions.set(ref, [{ type: "Ready", status: "True", reason: "Greeted" }]);
    await tx.objects.setObservedGeneration(ref, created.generation);
  });

  try {
    await store.objects.create(Greeting, { name: "hello", spec: "{}" });
  } catch (error) {
    if (error instanceof NameTakenError) console.log(`a second "hello" is refused: ${error.name}`);
    else throw error;
  }
  await store.close();

  // Reopen the file: everything committed is still there.
  const reopened = await openSqliteStore(path);
  const read = await reopened.objects.getByName({ ...Greeting, name: "hello" });
  const ready = read.conditions.find((c) => c.type === "Ready");
  console.log(`after reopening: status ${read.status}, Ready=${ready?.status} (${ready?.reason})`);
  console.log(`settled: observedGeneration ${read.observedGeneration} of ${read.generation}`);
  const log = await reopened.objectWrites.listSince(Greeting, { after: 0, limit: 100 });
  console.log(`write log: ${log.writes.map((w) => `${w.op}@${w.resourceVersion}`).join(" ")}`);
  await reopened.close();
  console.log("demo ok");
} finally {
  rmSync(dir, { recursive: true, force: true });
}
