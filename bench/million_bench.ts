/**
 * The 1M-object report: a store holding 1,000,000 objects (100,000 with
 * `--quick`), of which 1% are owed a pass.
 *
 * 1. Fill: the objects written in batches of 5,000 per transaction (not the
 *    measured path; it only has to be quick).
 * 2. Cold start to converged, in a fresh process: open the store, start a
 *    Beehive, and wait until the owed 1% have each had their pass (one status
 *    write, settled).
 * 3. Memory at rest of that started Beehive: RSS and V8 heap, beside the
 *    fresh process before it opened the store.
 * 4. The owed pass against outstanding work: the pass's two listings (objects
 *    with an unsettled generation, objects with an owed count) with 0, 1,000
 *    and 10,000 objects outstanding among all of them; its cost should follow
 *    the outstanding count, not the store's size.
 *
 * Run: `deno task bench:million` (`--quick` for 100,000 objects). Figures go in
 * docs/performance.md ("A million objects").
 *
 * @module
 */
import { statSync } from "node:fs";
import { cpus } from "node:os";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { Beehive, settled } from "../mod.ts";
import { openSqliteStore } from "../store/sqlite/mod.ts";
import type { Store } from "../src/store.ts";
import { FLOOR_KIND as Kind, FLOOR_SPEC as SPEC, tempFile } from "./_floor.ts";

const QUICK = process.argv.includes("--quick");
const OBJECTS = QUICK ? 100_000 : 1_000_000;
const OWED = OBJECTS / 100;
const BATCH = 5_000;
const OUTSTANDING = [0, 1_000, 10_000];
const REPEATS = 15;

const gc = (globalThis as { gc?: () => void }).gc;
const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
const ms = (t: number) => t.toFixed(t < 10 ? 2 : 0);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Writes `OBJECTS` objects; every 100th is left owed (its generation not observed). */
async function fill(path: string): Promise<number> {
  const store = await openSqliteStore(path);
  try {
    const spec = JSON.stringify(SPEC);
    const t0 = performance.now();
    for (let i = 0; i < OBJECTS; i += BATCH) {
      await store.within(async (tx) => {
        for (let j = i; j < Math.min(OBJECTS, i + BATCH); j++) {
          const o = await tx.objects.create(Kind, { name: `item-${j}`, spec });
          if (j % 100 !== 99) await tx.objects.setObservedGeneration({ ...Kind, id: o.id }, 1);
        }
      });
    }
    return performance.now() - t0;
  } finally {
    await store.close();
  }
}

/** The owed pass's store work: both listings, as the reconciler runs them. */
async function owedListings(store: Store): Promise<number> {
  const unsettled = await store.objects.listUnsettledIds(Kind);
  const owed = await store.reconcileOwed.listIds(Kind);
  return unsettled.length + owed.length;
}

/** Gives `count` settled objects a new generation, in batches: they become outstanding. */
async function unsettle(store: Store, ids: readonly number[], version: number): Promise<void> {
  const spec = JSON.stringify({ ...SPEC, replicas: 100 + version });
  for (let i = 0; i < ids.length; i += BATCH) {
    await store.within(async (tx) => {
      for (const id of ids.slice(i, i + BATCH)) {
        await tx.objects.updateSpec({ ...Kind, id }, { spec });
      }
    });
  }
}

/** In a fresh process: cold start to converged, memory at rest, the owed pass. */
async function measure(path: string): Promise<void> {
  gc?.();
  const before = process.memoryUsage();
  const t0 = performance.now();
  const store = await openSqliteStore(path);
  const tOpen = performance.now();
  const bh = new Beehive(store);
  let passes = 0;
  const all = Promise.withResolvers<void>();
  bh.register<typeof SPEC, { done: boolean }>(Kind, {
    async reconcile(_obj, cc) {
      await cc.updateStatus({ done: true });
      if (++passes === OWED) all.resolve();
      return settled();
    },
  });
  const stop = await bh.start();
  const tStart = performance.now();
  await all.promise;
  const tConverged = performance.now();
  console.log(
    `cold start (fresh process): open ${ms(tOpen - t0)} ms, start() ${ms(tStart - tOpen)} ms, ` +
      `converged (${OWED} owed passes done) ${ms(tConverged - t0)} ms after open began ` +
      `(${Math.round(OWED / ((tConverged - tStart) / 1000))} passes/s)`,
  );

  // Let the start-up sweeps (GC, stale dependents) finish before measuring at rest.
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  gc?.();
  const atRest = process.memoryUsage();
  console.log(
    `memory at rest, started Beehive over ${OBJECTS} objects: RSS ${mb(atRest.rss)} MB ` +
      `(+${mb(atRest.rss - before.rss)} MB over the fresh process before opening), heap used ` +
      `${mb(atRest.heapUsed)} MB (+${mb(atRest.heapUsed - before.heapUsed)} MB)`,
  );
  await stop();

  console.log("");
  console.log(`owed pass (its two listings) over ${OBJECTS} objects, median of ${REPEATS}:`);
  console.log("");
  console.log("| outstanding | ms per pass | µs per outstanding object |");
  console.log("| ---: | ---: | ---: |");
  const stride = OBJECTS / OUTSTANDING.at(-1)!;
  const ids = (await store.objects.listIds(Kind)).filter((_, i) => i % stride === 3);
  let unsettled = 0;
  for (const [step, outstanding] of OUTSTANDING.entries()) {
    await unsettle(store, ids.slice(unsettled, outstanding), step + 2);
    unsettled = outstanding;
    const times: number[] = [];
    for (let r = 0; r < REPEATS; r++) {
      const t = performance.now();
      const found = await owedListings(store);
      times.push(performance.now() - t);
      if (found !== outstanding) throw new Error(`found ${found} outstanding, not ${outstanding}`);
    }
    const m = median(times);
    console.log(
      `| ${outstanding.toLocaleString("en-US")} | ${ms(m)} | ${
        outstanding === 0 ? "—" : (m * 1000 / outstanding).toFixed(2)
      } |`,
    );
  }
  await store.close();
}

const MEASURE = process.argv.find((a) => a.startsWith("--measure="))?.slice("--measure=".length);
if (MEASURE !== undefined) {
  await measure(MEASURE);
} else {
  const cpu = cpus()[0]?.model ?? "unknown CPU";
  console.log(`1M-object report — ${new Date().toISOString()} — ${cpus().length} × ${cpu}`);
  console.log(
    `Deno ${Deno.version.deno}; ${OBJECTS.toLocaleString("en-US")} objects, ${OWED} owed`,
  );
  if (gc === undefined) console.log("(run with --v8-flags=--expose-gc for precise heap figures)");
  console.log("");
  const { path, done } = tempFile();
  try {
    const fillMs = await fill(path);
    console.log(
      `fill: ${(fillMs / 1000).toFixed(1)} s (${
        Math.round(OBJECTS / (fillMs / 1000)).toLocaleString("en-US")
      } objects/s in batches of ${BATCH}); file ${mb(statSync(path).size)} MB`,
    );
    const { success } = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--v8-flags=--expose-gc",
        fileURLToPath(import.meta.url),
        `--measure=${path}`,
        ...(QUICK ? ["--quick"] : []),
      ],
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    if (!success) throw new Error("the measuring process failed");
  } finally {
    done();
  }
}
