/**
 * The heap and main-thread cost of the console's live feeds on a kind of
 * 50,000 objects: N feeds through `consoleHandler` (one shared watch from the
 * current version), against N `watchList()` calls, the way each feed opened
 * its own watch before (a snapshot of the whole kind each). Reports the heap
 * retained once every feed is open (after a forced GC) and the wall time to
 * open them.
 *
 * ```sh
 * node_modules/.bin/deno run -A --v8-flags=--expose-gc bench/console_feeds_bench.ts [objects] [feeds]
 * ```
 *
 * @module
 */
import { Beehive } from "../mod.ts";
import { consoleHandler } from "../console/mod.ts";
import { openSqliteStore } from "../store/sqlite/mod.ts";

const OBJECTS = Number(Deno.args[0] ?? 50_000);
const FEEDS = Number(Deno.args[1] ?? 200);
const Kind = { group: "bench.beehive.dev", kind: "Item" };

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with --v8-flags=--expose-gc");

/** Lets aborted watches wind down (a benchmark may wait on time; a test may not). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

function heapMb(): number {
  gc!();
  gc!();
  return Deno.memoryUsage().heapUsed / 1_048_576;
}

const dir = Deno.makeTempDirSync();
const store = await openSqliteStore(`${dir}/feeds.db`);
try {
  const bh = new Beehive(store);
  const items = bh.client(Kind);
  const BATCH = 1_000;
  for (let i = 0; i < OBJECTS; i += BATCH) {
    await store.within(async (tx) => {
      const c = new Beehive(tx).client(Kind);
      for (let j = i; j < Math.min(OBJECTS, i + BATCH); j++) {
        await c.create(`item-${j}`, { index: j, labels: { tier: "bench", zone: `z${j % 7}` } });
      }
    });
  }
  void items;

  for (const round of [1, 2]) {
    // A: the console's feeds, one shared watch of the kind.
    {
      const handle = consoleHandler({ store, maxLiveFeeds: FEEDS });
      await settle();
      const base = heapMb();
      const aborts: AbortController[] = [];
      const bodies: ReadableStream<Uint8Array>[] = [];
      const t0 = performance.now();
      for (let i = 0; i < FEEDS; i++) {
        const abort = new AbortController();
        const r = await handle(
          new Request("http://localhost/kinds/Item.bench.beehive.dev/live", {
            signal: abort.signal,
          }),
        );
        aborts.push(abort);
        bodies.push(r.body!);
      }
      const ms = performance.now() - t0;
      const heap = heapMb() - base;
      console.log(
        `round ${round} console feeds: ${FEEDS} feeds open in ${ms.toFixed(0)} ms, ` +
          `heap +${heap.toFixed(1)} MB (${(heap * 1024 / FEEDS).toFixed(1)} kB/feed)`,
      );
      for (const a of aborts) a.abort();
      for (const b of bodies) await b.cancel();
    }
    // B: a watchList per feed, as before.
    {
      const b2 = new Beehive(store, { watchFloorInterval: 500 });
      const n = Math.min(FEEDS, 20);
      await settle();
      const base = heapMb();
      const aborts: AbortController[] = [];
      const t0 = performance.now();
      for (let i = 0; i < n; i++) {
        const abort = new AbortController();
        await b2.client(Kind).watchList({ signal: abort.signal });
        aborts.push(abort);
      }
      const ms = performance.now() - t0;
      const heap = heapMb() - base;
      console.log(
        `round ${round} watchList per feed: ${n} feeds open in ${ms.toFixed(0)} ms ` +
          `(${(ms / n).toFixed(0)} ms/feed), heap +${heap.toFixed(1)} MB (${
            (heap / n).toFixed(1)
          } MB/feed)`,
      );
      for (const a of aborts) a.abort();
    }
  }
} finally {
  await store.close();
  Deno.removeSync(dir, { recursive: true });
}
