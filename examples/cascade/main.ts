/**
 * cascade: finalizers plus an owner-driven delete cascade across kinds. A
 * Cluster holds a connection that its caches use; deleting the Cluster marks
 * the caches, which flush and go first; the Cluster keeps its connection open
 * until `hasIncomingEdges()` says nothing holds it, then goes last.
 *
 * Run: `deno task example:cascade`.
 *
 * @module
 */
import { Beehive, settled } from "@beehive/beehive";
import { openSqliteStore } from "@beehive/beehive/sqlite";

interface ClusterSpec {
  endpoint: string;
}
interface ClusterStatus {
  connected: boolean;
}
interface CacheSpec {
  clusterId: number;
}
interface CacheStatus {
  entries: number;
}
const Cluster = { group: "example.beehive.dev", kind: "Cluster" };
const Cache = { group: "example.beehive.dev", kind: "ClusterCache" };
const CONNECTION = "example.beehive.dev/connection";
const FLUSH = "example.beehive.dev/cache-flush";

const store = await openSqliteStore(":memory:");
const bh = new Beehive(store, { gcInterval: 1_500 });
bh.register<ClusterSpec, ClusterStatus>(Cluster, async (obj, cc) => {
  if (obj.deletionRequestedAt) {
    if (await cc.hasIncomingEdges()) {
      console.log(`Cluster ${obj.id}: caches still attached; holding connection open`);
      return settled();
    }
    console.log(`Cluster ${obj.id}: closed connection; releasing finalizer`);
    await cc.deleteFinalizer(CONNECTION);
    return settled();
  }
  await cc.updateStatus({ connected: true });
  return settled();
});
bh.register<CacheSpec, CacheStatus>(Cache, async (obj, cc) => {
  if (obj.deletionRequestedAt) {
    console.log(`ClusterCache ${obj.id}: flushed local cache; releasing finalizer`);
    await cc.deleteFinalizer(FLUSH);
    return settled();
  }
  await cc.updateStatus({ entries: 42 });
  return settled();
});

const stop = await bh.start();
const clusters = bh.client<ClusterSpec, ClusterStatus>(Cluster);
const caches = bh.client<CacheSpec, CacheStatus>(Cache);
const clusterWatch = await clusters.watchList();
const cacheWatch = await caches.watchList();

const cluster = await clusters.create("primary", { endpoint: "db.example:5432" }, {
  finalizers: [CONNECTION],
});
console.log(`created Cluster ${cluster.id} (finalizers=[${cluster.finalizers}])`);
for (const name of ["cache-0", "cache-1"]) {
  const c = await caches.create(name, { clusterId: cluster.id }, {
    owner: cluster.id,
    finalizers: [FLUSH],
  });
  console.log(`created ClusterCache ${c.id} owned by Cluster ${cluster.id}`);
}

const ready = new Set<number>();
// Two watches deliver independently, so the order of removal is read from resource versions.
const removed: { label: string; rv: number }[] = [];
const allRemoved = Promise.withResolvers<void>();
let deleting = false;
async function follow<S, T>(
  stream: AsyncIterable<
    { type: string; id: number; resourceVersion: number; object?: { status?: T } }
  >,
  label: string,
  isReady: (status: T) => boolean,
): Promise<void> {
  for await (const change of stream) {
    if (change.type === "Deleted") {
      removed.push({ label: `${label} ${change.id}`, rv: change.resourceVersion });
      if (removed.length === 3) allRemoved.resolve();
      continue;
    }
    const status = change.object?.status;
    if (!deleting && status !== undefined && isReady(status) && !ready.has(change.id)) {
      ready.add(change.id);
      console.log(`${label} ${change.id}: ready`);
      if (ready.size === 3) {
        deleting = true;
        console.log(`\nall ready; deleting Cluster ${cluster.id}, watch the cascade:`);
        await clusters.delete(cluster.id);
      }
    }
  }
}
const followers = [
  follow<ClusterSpec, ClusterStatus>(clusterWatch, "Cluster", (s) => s.connected),
  follow<CacheSpec, CacheStatus>(cacheWatch, "ClusterCache", (s) => s.entries > 0),
];
await allRemoved.promise;
clusterWatch.close();
cacheWatch.close();
await Promise.all(followers);
removed.sort((a, b) => a.rv - b.rv);
for (const r of removed) console.log(`${r.label}: removed (rv ${r.rv})`);
if (!removed[2].label.startsWith("Cluster ")) throw new Error("the cluster must go last");
console.log("\ncascade complete: caches drained first, the cluster's connection last");
await stop({ signal: AbortSignal.timeout(5_000) });
await store.close();
