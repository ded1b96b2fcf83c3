/**
 * validated: a typed kind whose spec and status are checked by a real
 * Standard Schema library (valibot, a dependency of this example only). A
 * request handler hands beehive whatever JSON a client sent; beehive refuses
 * what does not validate, stores the validator's output, and the controller
 * claims its objects with its own finalizer. Also shows a conflicting write
 * and a paged listing.
 *
 * Run: `deno run --allow-read --allow-write --allow-env examples/validated/main.ts` or
 * `node_modules/.bin/node --disable-warning=ExperimentalWarning examples/validated/main.ts`.
 *
 * @module
 */
import * as v from "valibot";
import {
  Beehive,
  ConflictError,
  defineKind,
  InvalidSpecError,
  settled,
  TooLargeError,
} from "@beehive/beehive";
import { openSqliteStore } from "@beehive/beehive/sqlite";

const FINALIZER = "example.com/release-capacity";

const Deployment = defineKind({
  group: "example.com",
  kind: "Deployment",
  spec: v.object({
    image: v.pipe(v.string(), v.nonEmpty("image must not be empty")),
    replicas: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(100)),
    // An omitted tier is stored as "standard": the validator's output is what is stored.
    tier: v.optional(v.picklist(["standard", "burst"]), "standard"),
  }),
  status: v.object({ readyReplicas: v.pipe(v.number(), v.integer(), v.minValue(0)) }),
});

const store = await openSqliteStore(":memory:");
const bh = new Beehive(store, { limits: { objectBytes: 4_096 } });
bh.register(Deployment, async (obj, cc) => {
  if (obj.deletionRequestedAt !== undefined) {
    console.log(`released capacity of ${obj.name}`);
    await cc.deleteFinalizer(FINALIZER);
    return settled();
  }
  // The controller claims the object itself: no caller needs to know its finalizer.
  await cc.addFinalizer(FINALIZER);
  await cc.updateStatus({ readyReplicas: obj.spec.replicas });
  return settled();
});
const stop = await bh.start();
const deployments = bh.client(Deployment);

/** What an HTTP handler would do with a request body: parse, then let beehive validate. */
async function apply(name: string, body: string): Promise<string> {
  try {
    const { object } = await deployments.createOrUpdate(name, JSON.parse(body));
    return `201 ${name}: ${JSON.stringify(object.spec)}`;
  } catch (error) {
    if (error instanceof InvalidSpecError) {
      const issues = error.issues.map((i) => i.message).join("; ");
      return `422 ${name}: ${issues}`;
    }
    if (error instanceof TooLargeError) return `413 ${name}: ${error.bytes} bytes`;
    if (error instanceof TypeError) return `400 ${name}: ${error.message}`;
    throw error;
  }
}

console.log(await apply("web", `{ "image": "nginx:1.27", "replicas": 3 }`));
console.log(await apply("api", `{ "image": "", "replicas": 250 }`));
console.log(await apply("batch", `{ "image": "worker", "replicas": 1e400 }`));
console.log(await apply("huge", JSON.stringify({ image: "x".repeat(5_000), replicas: 1 })));

// Watch web until its controller has claimed it, reported status and settled the generation.
const watch = await deployments.watch((await deployments.getByName("web")).id);
const changes = watch[Symbol.asyncIterator]();
let web = watch.object;
while (
  web?.status === undefined || web.finalizers.length === 0 ||
  web.observedGeneration !== web.generation
) {
  web = (await changes.next()).value?.object;
}
console.log(`web ready ${web.status.readyReplicas}, finalizers ${web.finalizers}`);
watch.close();

// Two writers read the same version; the second one's write is refused.
const read = await deployments.getByName("web");
await deployments.update(read.id, { ...read.spec, replicas: 4 }, {
  resourceVersion: read.resourceVersion,
});
try {
  await deployments.update(read.id, { ...read.spec, replicas: 5 }, {
    resourceVersion: read.resourceVersion,
  });
} catch (error) {
  if (!(error instanceof ConflictError)) throw error;
  console.log(`conflict: web moved on to ${error.resourceVersion}`);
}

for (const name of ["a", "b", "c"]) {
  await deployments.create(name, { image: "pause", replicas: 0, tier: "burst" });
}
const pages: string[] = [];
for (let after = 0;;) {
  const page = await deployments.list({ limit: 2, after });
  if (page.length === 0) break;
  pages.push(page.map((o) => o.name).join(","));
  after = page[page.length - 1].id;
}
console.log(`pages: ${pages.join(" | ")}`);

const gone = await deployments.watch(read.id);
await deployments.delete(read.id);
for await (const change of gone) {
  if (change.type === "Deleted") break;
}
console.log("web collected");
await stop({ signal: AbortSignal.timeout(5_000) });
await store.close();
