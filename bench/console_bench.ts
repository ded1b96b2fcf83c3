/**
 * The console's cost at fleet scale: for a kind of 1,000, 10,000 and 50,000
 * objects, the bytes and server time of a kind's page (the first page, a
 * page deep in the kind, a filtered page that reads its full scan budget, a
 * page filtered by a label selector that 1% of the objects match, read
 * through the store's label index, and the same 1% selected by a negative
 * requirement, which no index answers),
 * of the kinds page, and the bytes a live page receives per changed object.
 * Server time is the handler's, in-process (median of 15 runs).
 *
 * ```sh
 * node_modules/.bin/deno run -A bench/console_bench.ts [sizes, comma-separated]
 * ```
 *
 * @module
 */
import { Beehive } from "../mod.ts";
import { consoleHandler } from "../console/mod.ts";
import { openSqliteStore } from "../store/sqlite/mod.ts";

const SIZES = (Deno.args[0] ?? "1000,10000,50000").split(",").map(Number);
const RUNS = 15;
const UPDATES = 20;
const Kind = { group: "bench.beehive.dev", kind: "Item" };

async function measure(
  handle: (r: Request) => Promise<Response>,
  path: string,
): Promise<{ bytes: number; ms: number }> {
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    const response = await handle(new Request(`http://localhost${path}`));
    const body = new Uint8Array(await response.arrayBuffer());
    times.push(performance.now() - t0);
    if (response.status !== 200) throw new Error(`${path}: ${response.status}`);
    bytes = body.length;
  }
  times.sort((a, b) => a - b);
  return { bytes, ms: times[Math.floor(RUNS / 2)] };
}

/** Bytes a kind feed sends for UPDATES condition writes, per write. */
async function bytesPerUpdate(
  handle: (r: Request) => Promise<Response>,
  bh: Beehive,
  ids: number[],
): Promise<number> {
  const abort = new AbortController();
  const feed = await handle(
    new Request(`http://localhost/kinds/${Kind.kind}.${Kind.group}/live`, { signal: abort.signal }),
  );
  const reader = feed.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!text.includes("retry:")) text += decoder.decode((await reader.read()).value);
  const start = new TextEncoder().encode(text).length;
  let bytes = 0;
  const admin = bh.adminClient(Kind);
  for (let i = 0; i < UPDATES; i++) {
    await admin.setCondition(ids[i], { type: "Ready", status: "True", reason: "Bench" });
  }
  let events = 0;
  while (events < UPDATES) {
    const { value } = await reader.read();
    bytes += value!.length;
    events += decoder.decode(value).split("event: change").length - 1;
  }
  void start;
  abort.abort();
  await reader.cancel().catch(() => {});
  return bytes / UPDATES;
}

const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
const ms = (n: number) => `${n.toFixed(1)} ms`;

console.log(
  "| objects | first page | largest page (limit=250) | page deep in the kind | filtered page (full scan budget) | labels=ring=canary (1%, label index) | labels=ring!=main (1%, no index) | kinds page | bytes per live update |",
);
console.log("|---:|---|---|---|---|---|---|---|---:|");
for (const size of SIZES) {
  const dir = Deno.makeTempDirSync();
  const store = await openSqliteStore(`${dir}/console.db`);
  try {
    const bh = new Beehive(store);
    const ids: number[] = [];
    for (let i = 0; i < size; i += 1_000) {
      await store.within(async (tx) => {
        const c = new Beehive(tx).client(Kind);
        for (let j = i; j < Math.min(size, i + 1_000); j++) {
          const o = await c.create(`item-${String(j).padStart(6, "0")}`, { index: j }, {
            labels: { ring: j % 100 === 0 ? "canary" : "main" },
          });
          if (ids.length < UPDATES) ids.push(o.id);
        }
      });
    }
    const handle = consoleHandler({ store, pollInterval: 50 });
    const path = `/kinds/${Kind.kind}.${Kind.group}`;
    const first = await measure(handle, path);
    const largest = await measure(handle, `${path}?limit=250`);
    const deep = await measure(handle, `${path}?after=${ids[0] + Math.floor(size * 0.9)}`);
    const filtered = await measure(handle, `${path}?prefix=none`);
    const labelled = await measure(handle, `${path}?labels=ring%3Dcanary`);
    const negative = await measure(handle, `${path}?labels=ring!%3Dmain`);
    const kinds = await measure(handle, "/");
    const perUpdate = await bytesPerUpdate(handle, bh, ids);
    console.log(
      `| ${size.toLocaleString("en")} | ${kb(first.bytes)}, ${ms(first.ms)} | ${
        kb(largest.bytes)
      }, ${ms(largest.ms)} | ${kb(deep.bytes)}, ${ms(deep.ms)} | ${kb(filtered.bytes)}, ${
        ms(filtered.ms)
      } | ${kb(labelled.bytes)}, ${ms(labelled.ms)} | ${kb(negative.bytes)}, ${ms(negative.ms)} | ${
        kb(kinds.bytes)
      }, ${ms(kinds.ms)} | ${Math.round(perUpdate)} B |`,
    );
  } finally {
    await store.close();
    Deno.removeSync(dir, { recursive: true });
  }
}
