/**
 * What one watch may make the server hold: its initial state is read from
 * the store a page at a time as the client takes it (never a snapshot of the
 * kind), a watcher whose client does not read is ended once its backlog
 * passes `WATCH_BACKLOG` while the others keep receiving, and a watch ends
 * after `timeoutSeconds` or, without it, a random 30 to 60 minutes.
 *
 * @module
 */
import assert from "node:assert/strict";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import { WATCH_BACKLOG } from "../../kubeapi/_watch_backlog.ts";
import { watchSeconds } from "../../kubeapi/_watch_stream.ts";
import { toNodeListener } from "../../http/node_listener.ts";
import { notApplicable, test } from "../_test.ts";
import { rawWatch } from "./_served_process.ts";
import { Cluster, CLUSTERS, eventsOf, intercept, Node, withStore } from "./_kubeapi_harness.ts";

test("kubeApiHandler streams a watch's initial state in pages read from the store, never a snapshot of the kind", async () => {
  await withStore(async (store, bh) => {
    const client = bh.client(Cluster);
    for (let i = 0; i < 600; i++) await client.create(`c${String(i).padStart(3, "0")}`, { i });
    let snapshots = 0;
    const limits: number[] = [];
    const counted = intercept(
      intercept(store, { family: "objectWrites", method: "snapshot" }, (snapshot, ...args) => {
        snapshots++;
        return snapshot(...args);
      }),
      { family: "objects", method: "list" },
      (list, gk, page) => {
        limits.push(page?.limit ?? Infinity);
        return list(gk, page);
      },
    );
    const abort = new AbortController();
    const response = await kubeApiHandler({ store: counted })(
      new Request(`http://localhost${CLUSTERS}?watch=true`, { signal: abort.signal }),
    );
    const events = eventsOf(response);
    const seen: string[] = [];
    for (let i = 0; i < 600; i++) {
      const event = await events.next();
      assert.equal(event?.type, "ADDED");
      seen.push((event!.object as { metadata: { name: string } }).metadata.name);
    }
    assert.deepEqual(seen, Array.from({ length: 600 }, (_, i) => `c${String(i).padStart(3, "0")}`));
    await client.create("later", {});
    const later = await events.next();
    assert.equal(later?.type, "ADDED");
    assert.equal((later!.object as { metadata: { name: string } }).metadata.name, "later");
    assert.equal(snapshots, 0, "no snapshot of the kind was read");
    assert.ok(limits.length >= 3 && limits.every((l) => l <= 100), `pages of ${limits}`);
    abort.abort();
    await events.cancel();
  });
});

test("kubeApiHandler reads each page of the initial state once for watches that start at one position", async () => {
  await withStore(async (store, bh) => {
    const client = bh.client(Cluster);
    for (let i = 0; i < 250; i++) await client.create(`c${i}`, {});
    let lists = 0;
    const counted = intercept(store, { family: "objects", method: "list" }, (list, ...args) => {
      lists++;
      return list(...args);
    });
    const handle = kubeApiHandler({ store: counted });
    const watches = [];
    for (let w = 0; w < 10; w++) {
      watches.push(eventsOf(await handle(new Request(`http://localhost${CLUSTERS}?watch=true`))));
    }
    for (const events of watches) {
      for (let i = 0; i < 250; i++) assert.equal((await events.next())?.type, "ADDED");
    }
    assert.equal(lists, 3, "three pages of 100, read once for ten watches");
    const selected = eventsOf(
      await handle(new Request(`http://localhost${CLUSTERS}?watch=true&labelSelector=a%3Db`)),
    );
    await client.create("d", {}, { labels: { a: "b" } });
    assert.equal((await selected.next())?.type, "ADDED");
    assert.ok(lists > 3, "another selection reads its own pages");
    for (const events of [...watches, selected]) await events.cancel();
  });
});

test("kubeApiHandler encodes a change once for all the watchers of its kind, looking its owner up once", async () => {
  await withStore(async (store, bh) => {
    const owner = await bh.client(Node).create("n1", {});
    const child = await bh.client(Cluster).create("prod", {}, { owner: owner.id });
    let lookups = 0;
    const counted = intercept(store, { family: "objects", method: "getMeta" }, (getMeta, id) => {
      lookups++;
      return getMeta(id);
    });
    const handle = kubeApiHandler({ store: counted });
    const rv = await store.getLatestResourceVersion();
    const watches = [];
    for (let i = 0; i < 20; i++) {
      watches.push(
        eventsOf(
          await handle(
            new Request(`http://localhost${CLUSTERS}?watch=true&resourceVersion=${rv}`),
          ),
        ),
      );
    }
    await bh.client(Cluster).update(child.id, { replicas: 2 });
    for (const events of watches) {
      const event = await events.next();
      assert.equal(event?.type, "MODIFIED");
      const meta = (event!.object as { metadata: { ownerReferences: { name: string }[] } })
        .metadata;
      assert.equal(meta.ownerReferences[0].name, "n1");
    }
    assert.equal(lookups, 1, "one owner lookup for twenty watchers");
    for (const events of watches) await events.cancel();
  });
});

test("kubeApiHandler ends a watch whose client does not read once its backlog passes WATCH_BACKLOG, while the others keep receiving", async () => {
  await withStore(async (store, bh) => {
    const client = bh.client(Cluster);
    await client.create("seed", {});
    const handle = kubeApiHandler({ store });
    const rv = await store.getLatestResourceVersion();
    const open = () =>
      handle(new Request(`http://localhost${CLUSTERS}?watch=true&resourceVersion=${rv}`));
    const reading = eventsOf(await open());
    const stalled = await open();
    const writes = WATCH_BACKLOG * 2;
    for (let i = 0; i < writes; i += 100) {
      for (let j = i; j < i + 100; j++) await client.create(`o${j}`, {});
      // Paced on the reading watcher: it takes each hundred before the next is written.
      for (let j = i; j < i + 100; j++) {
        const event = await reading.next();
        assert.equal((event?.object as { metadata: { name: string } }).metadata.name, `o${j}`);
      }
    }
    const lines = (await stalled.text()).split("\n").filter((l) => l !== "");
    assert.ok(lines.length < writes, `the stalled watcher got ${lines.length} of ${writes}`);
    await client.create("after", {});
    const after = await reading.next();
    assert.equal((after?.object as { metadata: { name: string } }).metadata.name, "after");
    await reading.cancel();
  });
});

test("watchSeconds is timeoutSeconds when given, else from 30 to 60 minutes", () => {
  assert.equal(watchSeconds(5), 5);
  assert.equal(watchSeconds(undefined, 0), 30 * 60);
  assert.equal(watchSeconds(0, 0.999999), 60 * 60 - 1);
  for (let i = 0; i < 100; i++) {
    const s = watchSeconds(undefined);
    assert.ok(s >= 30 * 60 && s < 60 * 60, String(s));
  }
});

test("toNodeListener pulls the next body chunk only once a full socket buffer drains", async () => {
  let pulls = 0;
  const pulled: (() => void)[] = [];
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulls++;
      pulled.shift()?.();
      if (pulls > 3) controller.close();
      else controller.enqueue(new Uint8Array([pulls]));
    },
  }, { highWaterMark: 0 });
  const listeners = new Map<string, () => void>();
  let waiting = Promise.withResolvers<void>();
  const written: number[] = [];
  const wrote = Promise.withResolvers<void>();
  const ended = Promise.withResolvers<void>();
  const res = {
    writeHead: () => {},
    write(chunk: Uint8Array) {
      written.push(chunk[0]);
      wrote.resolve();
      return false; // the socket's buffer is full after every chunk
    },
    end: () => ended.resolve(),
    on: () => {},
    once(event: string, listener: () => void) {
      listeners.set(event, listener);
      waiting.resolve();
    },
    off(event: string) {
      listeners.delete(event);
    },
  };
  toNodeListener(() => Promise.resolve(new Response(body)))({ headers: {} }, res);
  await wrote.promise;
  await waiting.promise;
  assert.deepEqual(written, [1]);
  assert.equal(pulls, 1, "no chunk is pulled while the socket is full");
  for (const expected of [2, 3]) {
    const next = Promise.withResolvers<void>();
    pulled.push(next.resolve);
    waiting = Promise.withResolvers<void>();
    listeners.get("drain")!();
    await next.promise;
    assert.equal(pulls, expected, "one chunk is pulled per drain");
    if (expected < 3) await waiting.promise;
  }
  await waiting.promise;
  listeners.get("drain")?.();
  await ended.promise;
  assert.deepEqual(written, [1, 2, 3]);
});

const DENO_SERVE =
  "Deno.serve disconnects a watcher that stops reading once its backlog is full, while another keeps receiving";
const deno = (globalThis as {
  Deno?: {
    serve(
      options: { hostname: string; port: number; onListen(): void },
      handler: (request: Request) => Promise<Response>,
    ): { addr: { port: number }; shutdown(): Promise<void> };
  };
}).Deno;
if (deno === undefined) notApplicable(DENO_SERVE, "Deno.serve is Deno's");
else {
  test(DENO_SERVE, async () => {
    await withStore(async (store, bh) => {
      const client = bh.client(Cluster);
      await client.create("seed", {});
      const server = deno.serve(
        { hostname: "127.0.0.1", port: 0, onListen() {} },
        kubeApiHandler({ store }),
      );
      const url = `http://127.0.0.1:${server.addr.port}`;
      const rv = await store.getLatestResourceVersion();
      const path = `${CLUSTERS}?watch=true&resourceVersion=${rv}`;
      const stalled = await rawWatch(url, path);
      const reading = eventsOf(await fetch(`${url}${path}`));
      try {
        const pad = "x".repeat(5_000);
        const writes = WATCH_BACKLOG * 3;
        for (let i = 0; i < writes; i += 100) {
          for (let j = i; j < i + 100; j++) await client.create(`o${j}`, { pad });
          for (let j = i; j < i + 100; j++) {
            const event = await reading.next();
            assert.equal((event?.object as { metadata: { name: string } }).metadata.name, `o${j}`);
          }
        }
        const got = await stalled.drain();
        assert.ok(got < writes, `the stalled watcher got ${got} of ${writes}`);
      } finally {
        stalled.destroy();
        await reading.cancel();
        await server.shutdown();
      }
    });
  });
}
