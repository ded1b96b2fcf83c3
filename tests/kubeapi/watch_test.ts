/**
 * kubeApiHandler watches: the JSON-lines encoding, current objects first for
 * resourceVersion 0, resuming from a list's version, one-row Tables, the
 * name selector, initial events with their bookmark, 410 Expired, a
 * stream that ends when its reader cancels, and one chunk per
 * drain.
 *
 * @module
 */
import assert from "node:assert/strict";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import {
  call,
  Cluster,
  CLUSTERS,
  eventsOf,
  intercept,
  Node,
  TABLE,
  withStore,
} from "./_kubeapi_harness.ts";

function names(event: Record<string, unknown> | undefined): [unknown, unknown] {
  const object = event?.object as { metadata: { name: string } };
  return [event?.type, object.metadata.name];
}

test("kubeApiHandler watch with resourceVersion=0 sends the current objects as ADDED, then each change", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", { replicas: 1 });
    const response = await kubeApiHandler({ store, pollInterval: 50 })(
      new Request(`http://localhost${CLUSTERS}?watch=true&resourceVersion=0`),
    );
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "application/json");
    const events = eventsOf(response);
    assert.deepEqual(names(await events.next()), ["ADDED", "prod"]);
    await bh.client(Cluster).create("dev", {});
    assert.deepEqual(names(await events.next()), ["ADDED", "dev"]);
    await bh.client(Cluster).update(prod.id, { replicas: 2 });
    const modified = await events.next();
    assert.deepEqual(names(modified), ["MODIFIED", "prod"]);
    const object = modified!.object as { spec: unknown; metadata: { resourceVersion: unknown } };
    assert.deepEqual(object.spec, { replicas: 2 });
    assert.equal(typeof object.metadata.resourceVersion, "string");
    await store.objects.delete(prod.id);
    assert.deepEqual(names(await events.next()), ["DELETED", "prod"]);
    await events.cancel();
    assert.equal(await events.next(), undefined);
  });
});

test("kubeApiHandler watch from a list's resourceVersion sends only what changed after it", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const handle = kubeApiHandler({ store });
    const list = await call(handle, CLUSTERS);
    const rv = (list.body.metadata as { resourceVersion: string }).resourceVersion;
    await bh.client(Cluster).create("dev", {});
    const response = await handle(
      new Request(`http://localhost${CLUSTERS}?watch=1&resourceVersion=${rv}`),
    );
    const events = eventsOf(response);
    const added = await events.next();
    assert.deepEqual(names(added), ["ADDED", "dev"]);
    await events.cancel();
  });
});

test("kubeApiHandler watch sends one-row Tables for the Table Accept and honours the name selector", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    await bh.client(Cluster).create("dev", {});
    const response = await kubeApiHandler({ store, pollInterval: 50 })(
      new Request(
        `http://localhost${CLUSTERS}?watch=true&fieldSelector=metadata.name%3Ddev`,
        { headers: { accept: TABLE } },
      ),
    );
    assert.equal(response.headers.get("content-type"), TABLE);
    const events = eventsOf(response);
    const first = await events.next();
    assert.equal(first?.type, "ADDED");
    const t = first?.object as { kind: string; rows: { cells: string[] }[] };
    assert.equal(t.kind, "Table");
    assert.deepEqual(t.rows.map((r) => r.cells[0]), ["dev"]);
    await bh.client(Cluster).create("qa", {});
    const dev = await bh.client(Cluster).getByName("dev");
    await bh.client(Cluster).update(dev.id, { touched: true });
    const next = await events.next();
    assert.equal(next?.type, "MODIFIED");
    assert.deepEqual((next?.object as typeof t).rows[0].cells[0], "dev");
    await events.cancel();
    assert.equal(await events.next(), undefined);
  });
});

test("kubeApiHandler watch with sendInitialEvents sends ADDED then the initial-events-end BOOKMARK", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const handle = kubeApiHandler({ store });
    const query = "watch=true&sendInitialEvents=true&allowWatchBookmarks=true";
    const response = await handle(
      new Request(`http://localhost${CLUSTERS}?${query}&resourceVersionMatch=NotOlderThan`),
    );
    const events = eventsOf(response);
    assert.deepEqual(names(await events.next()), ["ADDED", "prod"]);
    const bookmark = await events.next();
    assert.equal(bookmark?.type, "BOOKMARK");
    const meta = (bookmark?.object as { metadata: Record<string, unknown> }).metadata;
    assert.deepEqual(meta.annotations, { "k8s.io/initial-events-end": "true" });
    assert.equal(meta.resourceVersion, String(await store.objectWrites.maxVersion(Cluster)));
    await events.cancel();

    const refused = await call(handle, `${CLUSTERS}?${query}`);
    assert.equal(refused.status, 422);
    assert.equal(refused.body.reason, "Invalid");
  });
});

test("kubeApiHandler watch from a version retention trimmed ends with a 410 Expired Status", async () => {
  await withStore(async (store, bh) => {
    for (const name of ["a", "b", "c"]) await bh.client(Cluster).create(name, {});
    await store.objectWrites.sweep({ perKind: 1, maxAge: 0 });
    const response = await kubeApiHandler({ store, pollInterval: 50 })(
      new Request(`http://localhost${CLUSTERS}?watch=true&resourceVersion=1`),
    );
    const events = eventsOf(response);
    const error = await events.next();
    assert.equal(error?.type, "ERROR");
    const status = error?.object as Record<string, unknown>;
    assert.equal(status.kind, "Status");
    assert.equal(status.code, 410);
    assert.equal(status.reason, "Expired");
    assert.equal(await events.next(), undefined);
  });
});

test("kubeApiHandler watch ends its stream when its reader cancels before any change", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const rv = await store.objectWrites.maxVersion(Cluster);
    const response = await kubeApiHandler({ store, pollInterval: 50 })(
      new Request(`http://localhost${CLUSTERS}?watch=true&resourceVersion=${rv}`),
    );
    const events = eventsOf(response);
    const pending = events.next();
    await events.cancel();
    assert.equal(await pending, undefined);
  });
});

test("kubeApiHandler watch with timeoutSeconds ends the stream on its own", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const handle = kubeApiHandler({ store });
    const bad = await call(handle, `${CLUSTERS}?watch=true&timeoutSeconds=-1`);
    assert.equal(bad.status, 400);
    const rv = await store.objectWrites.maxVersion(Cluster);
    const response = await handle(
      new Request(`http://localhost${CLUSTERS}?watch=true&resourceVersion=${rv}&timeoutSeconds=1`),
    );
    assert.equal(await eventsOf(response).next(), undefined);
  });
});

test("kubeApiHandler watch with a labelSelector sends an object leaving the selection as DELETED and one entering as ADDED", async () => {
  await withStore(async (store, bh) => {
    const clusters = bh.client(Cluster);
    const prod = await clusters.create("prod", {}, { labels: { env: "prod" } });
    await clusters.create("dev", {}, { labels: { env: "dev" } });
    const response = await kubeApiHandler({ store, pollInterval: 50 })(
      new Request(
        `http://localhost${CLUSTERS}?watch=true&resourceVersion=0&labelSelector=env%3Dprod`,
      ),
    );
    assert.equal(response.status, 200);
    const events = eventsOf(response);
    assert.deepEqual(names(await events.next()), ["ADDED", "prod"]);
    await clusters.updateMetadata(prod.id, { labels: { env: "staging" } });
    const left = await events.next();
    assert.deepEqual(names(left), ["DELETED", "prod"]);
    const metadata = (left!.object as { metadata: { labels: unknown } }).metadata;
    assert.deepEqual(metadata.labels, { env: "staging" });
    const qa = await clusters.create("qa", {});
    await clusters.updateMetadata(qa.id, { labels: { env: "prod" } });
    assert.deepEqual(names(await events.next()), ["ADDED", "qa"]);
    await events.cancel();
    assert.equal(await events.next(), undefined);
    const bad = await kubeApiHandler({ store })(
      new Request(`http://localhost${CLUSTERS}?watch=true&labelSelector=env%20in%20prod`),
    );
    assert.equal(bad.status, 400);
    await bad.body?.cancel();
  });
});

test("kubeApiHandler watch with a labelSelector resumed from a list's resourceVersion sends no DELETED for an object it never showed", async () => {
  await withStore(async (store, bh) => {
    const clusters = bh.client(Cluster);
    await clusters.create("prod", {}, { labels: { env: "prod" } });
    const handle = kubeApiHandler({ store, pollInterval: 50 });
    const list = await call(handle, `${CLUSTERS}?labelSelector=env%3Dprod`);
    const rv = (list.body.metadata as { resourceVersion: string }).resourceVersion;
    const abort = new AbortController();
    const response = await handle(
      new Request(
        `http://localhost${CLUSTERS}?watch=true&resourceVersion=${rv}&labelSelector=env%3Dprod`,
        { signal: abort.signal },
      ),
    );
    const events = eventsOf(response);
    try {
      await clusters.create("devonly", {}, { labels: { env: "dev" } });
      await clusters.create("qa", {}, { labels: { env: "prod" } });
      assert.deepEqual(names(await events.next()), ["ADDED", "qa"]);
    } finally {
      abort.abort();
      await events.cancel();
    }
  });
});

test("kubeApiHandler watch sends the changes one commit made as one chunk, looking their shared owner up once", async () => {
  await withStore(async (store, bh) => {
    const owner = await bh.client(Node).create("n1", {});
    await bh.client(Cluster).create("seed", {}); // the kind is served once it holds an object
    let lookups = 0;
    const counted = intercept(store, { family: "objects", method: "getMeta" }, (original, id) => {
      lookups++;
      return original(id);
    });
    const handle = kubeApiHandler({ store: counted, pollInterval: 20 });
    const list = await call(handle, CLUSTERS);
    const rv = (list.body.metadata as { resourceVersion: string }).resourceVersion;
    const response = await handle(
      new Request(`http://localhost${CLUSTERS}?watch=1&resourceVersion=${rv}`),
    );
    const reader = response.body!.getReader();
    lookups = 0;
    // One transaction: one commit, read by one drain.
    await store.within(async (tx) => {
      for (const name of ["a", "b", "c", "d"]) {
        const child = await tx.objects.create(Cluster, {
          name,
          spec: "{}",
          specVersion: 0,
          finalizers: [],
        });
        await tx.edges.add({ fromId: child.id, toId: owner.id, relation: "owned_by" });
      }
    });
    const { value } = await reader.read();
    const lines = new TextDecoder().decode(value).trimEnd().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((e) => [e.type, e.object.metadata.name]), [
      ["ADDED", "a"],
      ["ADDED", "b"],
      ["ADDED", "c"],
      ["ADDED", "d"],
    ]);
    for (const e of lines) assert.equal(e.object.metadata.ownerReferences[0].name, "n1");
    assert.equal(lookups, 1, "the owner looked up once for the chunk");
    await reader.cancel();
  });
});
