/**
 * The watch benchmark: one writer updating the specs of 100 objects of one
 * kind as fast as it can (one commit per update, round robin), with 0, 1, 100
 * and 1,000 concurrent `watchList` streams on that kind, each consumed by its
 * own `for await` loop in the same thread.
 *
 * - Writer throughput: updates per CPU-second of the process (user + system,
 *   all threads) over a fixed writing time while the watchers run, beside the
 *   same writer with no watcher, alternated over rounds. CPU time rather than
 *   wall time, because other jobs on a shared machine steal cores and swing
 *   wall-clock rates by ±40%; on tmpfs the workload is CPU-bound, so on an
 *   idle machine the two agree. Wall-clock rates are printed too.
 * - Commit-to-delivery latency: for every commit and every sampled watcher,
 *   the time from the commit (its transaction's first afterCommit hook) until
 *   that watcher's loop received the object's state at or after that commit.
 *   Changes collapse per object, so a commit superseded before delivery is
 *   delivered by its successor's change; p50 and p99 over all pairs. At most
 *   ten watchers per run are sampled, spread evenly over the subscription
 *   order (every one of 1, every 10th of 100, every 100th of 1,000): a clock
 *   read and two array appends per delivery cost about 200 ns in Deno, as much
 *   as the delivery itself, and on every watcher they would count as the
 *   library's cost. The others only read each change's spec, as a consumer
 *   that does no work would.
 *
 * - Paced latency: the same, with the writer committing once every 150 ms, so
 *   each commit finds the kind quiet and the tailer reads it at once.
 *
 * The database lives on tmpfs (`/dev/shm`) when there is one, so disk noise
 * does not swamp the CPU the watchers cost; `--disk` uses the temp dir.
 *
 * Run: `deno task bench:watch` (`--batches` for watchers that take a batch of changes per
 * step, `--whole` for the whole runs of 0, 1 and 100 watchers only, `--quick` for a smoke run, `--only=<n>` for one
 * configuration, e.g. under a profiler, `--time-all` to time every watcher's
 * deliveries, `--postgres` for the PostgreSQL store on `BEEHIVE_TEST_POSTGRES_URL`,
 * whose server's CPU the CPU-time rates do not count). Figures go in
 * docs/performance.md.
 *
 * @module
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { Beehive } from "../mod.ts";
import type { Client, ObjectChange, ObjectListStream } from "../mod.ts";
import type { Store } from "../store/mod.ts";
import { openSqliteStore } from "../store/sqlite/mod.ts";
import { openPostgresStore } from "../store/postgres/mod.ts";

const QUICK = process.argv.includes("--quick");
/** `--postgres`: the PostgreSQL store, a fresh schema per run on `BEEHIVE_TEST_POSTGRES_URL`. */
const POSTGRES = process.argv.includes("--postgres");
const DISK = process.argv.includes("--disk") || !existsSync("/dev/shm");
/** `--only=<watchers>`: one configuration, no baseline (for profiling). */
const ONLY = process.argv.find((a) => a.startsWith("--only="))?.slice("--only=".length);
const OBJECTS = 100;
/** How long the writer writes in each run, in ms. */
const WRITE_MS = QUICK ? 500 : 1_500;
/** Room for the commit timestamps of one run. */
const MAX_WRITES = 1_000_000;
const ROUNDS = QUICK ? 1 : 6;
/**
 * `--batches`: every watcher takes its stream's changes a batch at a time
 * (`for await (const changes of stream.batches())`) instead of one at a time.
 */
const BATCHES = process.argv.includes("--batches");
/** `--slowdown`: only the interleaved slowdown measurement. */
const SLOWDOWN_ONLY = process.argv.includes("--slowdown");
/** `--whole`: only the whole runs, of 0, 1 and 100 watchers. */
const WHOLE_ONLY = process.argv.includes("--whole");
/** The target: a busy writer loses at most 15% to 100 watchers. */
const TARGET_SLOWDOWN = 0.15;
const Kind = { group: "bench.beehive.dev", kind: "Item" };

interface Spec {
  seq: number;
  image: string;
  replicas: number;
}

interface RunResult {
  watchers: number;
  writes: number;
  /** Writes per CPU-second of the process. */
  writesPerSec: number;
  /** Writes per wall-clock second. */
  wallPerSec: number;
  /** Commit-to-visibility latency of every (commit, sampled watcher) pair, sorted. */
  latencies: Float64Array;
  delivered: number;
  drainMs: number;
}

/**
 * Calls `fn` on each change the stream delivers, until it ends; with `timed`,
 * passes the time it was received (read once per step: with `--batches`, once
 * for the whole batch, which arrived at one moment).
 */
async function consume(
  stream: ObjectListStream<Spec, unknown>,
  timed: boolean,
  fn: (change: ObjectChange<Spec, unknown>, at: number) => void,
): Promise<void> {
  if (!BATCHES) {
    for await (const change of stream) fn(change, timed ? performance.now() : 0);
    return;
  }
  for await (const changes of stream.batches()) {
    const at = timed ? performance.now() : 0;
    for (const change of changes) fn(change, at);
  }
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

/**
 * A store that records when each of the writer's spec writes committed, by
 * the writer's sequence: a spec write made alone when it resolves (it resolves
 * at its commit), one inside a transaction at the transaction's first
 * afterCommit hook.
 */
function timingStore(inner: Store, commitAt: Float64Array, current: { seq: number }): Store {
  const objects = new Proxy(inner.objects, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop !== "updateSpec") return typeof value === "function" ? value.bind(target) : value;
      return (...args: Parameters<Store["objects"]["updateSpec"]>) => {
        const seq = current.seq;
        return target.updateSpec(...args).then((r) => {
          if (seq >= 0) commitAt[seq] = performance.now();
          return r;
        });
      };
    },
  });
  return new Proxy(inner, {
    get(target, prop) {
      if (prop === "objects") return objects;
      if (prop === "within") {
        return <T>(fn: (tx: Store) => Promise<T>) =>
          target.within((tx) => {
            const seq = current.seq;
            // Registered first, so it runs right after COMMIT, before the watch wake.
            tx.afterCommit(() => {
              if (seq >= 0) commitAt[seq] = performance.now();
            });
            return fn(tx);
          });
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** At most this many watchers per run record delivery times (`--time-all`: every one). */
const SAMPLED = process.argv.includes("--time-all") ? Infinity : 10;

/** A paced writer: this many commits, one every `PACE_MS`, instead of writing flat out. */
const PACED_WRITES = QUICK ? 5 : 20;
const PACE_MS = 150;

/** A fresh directory for one run's database: tmpfs unless `--disk`. */
function benchDir(): string {
  return mkdtempSync(join(DISK ? tmpdir() : "/dev/shm", "beehive-watch-bench-"));
}

/** The store one run writes to: a SQLite file in `dir`, or with `--postgres` a fresh schema. */
function openBenchStore(dir: string): Promise<Store> {
  if (!POSTGRES) return openSqliteStore(join(dir, "bench.db"));
  const url = process.env.BEEHIVE_TEST_POSTGRES_URL;
  if (!url) throw new Error("--postgres needs BEEHIVE_TEST_POSTGRES_URL");
  const schema = `bench_${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
  return openPostgresStore(url, { schema });
}

/** Creates the kind's objects the writer updates round robin; resolves to their ids. */
async function seedItems(client: Client<Spec, unknown>): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < OBJECTS; i++) {
    ids.push((await client.create(`item-${i}`, { seq: -1, image: "app:1", replicas: 3 })).id);
  }
  return ids;
}

async function run(watchers: number, paced = false): Promise<RunResult> {
  const dir = benchDir();
  const store = await openBenchStore(dir);
  try {
    const commitAt = new Float64Array(MAX_WRITES);
    const current = { seq: -1 };
    const bh = new Beehive(timingStore(store, commitAt, current));
    const client = bh.client<Spec, unknown>(Kind);
    const ids = await seedItems(client);
    // Per watcher: the sequence numbers it received and when, in order.
    const gotSeq: number[][] = [];
    const gotAt: number[][] = [];
    const newest: number[] = [];
    const counts: number[] = [];
    const streams: ObjectListStream<Spec, unknown>[] = [];
    const loops: Promise<void>[] = [];
    const every = Math.max(1, Math.ceil(watchers / SAMPLED));
    for (let w = 0; w < watchers; w++) {
      const stream = await client.watchList();
      streams.push(stream);
      newest.push(-1);
      counts.push(0);
      if (w % every !== 0) {
        loops.push((async () => {
          let n = 0;
          await consume(stream, false, (change) => {
            const seq = change.object!.spec.seq;
            n++;
            if (seq > newest[w]) newest[w] = seq;
          });
          counts[w] = n;
        })());
        continue;
      }
      const seqs: number[] = [];
      const ats: number[] = [];
      gotSeq.push(seqs);
      gotAt.push(ats);
      loops.push((async () => {
        await consume(stream, true, (change, at) => {
          const seq = change.object!.spec.seq;
          ats.push(at);
          seqs.push(seq);
          if (seq > newest[w]) newest[w] = seq;
        });
        counts[w] = seqs.length;
      })());
    }
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let writes = 0;
    if (paced) {
      for (; writes < PACED_WRITES; writes++) {
        current.seq = writes;
        await client.update(ids[writes % OBJECTS], { seq: writes, image: "app:1", replicas: 3 });
        await new Promise((r) => setTimeout(r, PACE_MS));
      }
    }
    while (!paced && performance.now() - t0 < WRITE_MS) {
      // A timer check every 64 writes keeps the loop itself off the profile.
      for (let i = 0; i < 64; i++, writes++) {
        current.seq = writes;
        await client.update(ids[writes % OBJECTS], { seq: writes, image: "app:1", replicas: 3 });
      }
    }
    const elapsed = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const cpuMs = (cpu.user + cpu.system) / 1000;
    current.seq = -1;
    // The last commit is the newest state of its object and the highest version:
    // a watcher that received it has received everything before it.
    const d0 = performance.now();
    while (newest.some((s) => s < writes - 1)) await new Promise((r) => setTimeout(r, 1));
    const drainMs = performance.now() - d0;
    for (const s of streams) s.close();
    await Promise.all(loops);
    // Each delivery of object o at seq s makes every commit to o in (previous s, s] visible.
    const latencies = new Float64Array(writes * gotSeq.length);
    let k = 0;
    const delivered = counts.reduce((a, b) => a + b, 0);
    for (let w = 0; w < gotSeq.length; w++) {
      const last = new Array<number>(OBJECTS).fill(-1);
      const seqs = gotSeq[w];
      const ats = gotAt[w];
      for (let i = 0; i < seqs.length; i++) {
        const s = seqs[i];
        const o = s % OBJECTS;
        const from = last[o] < 0 ? o : last[o] + OBJECTS;
        for (let c = from; c <= s; c += OBJECTS) latencies[k++] = ats[i] - commitAt[c];
        if (s > last[o]) last[o] = s;
      }
    }
    const all = latencies.subarray(0, k).sort();
    return {
      watchers,
      writes,
      writesPerSec: writes / (cpuMs / 1000),
      wallPerSec: writes / (elapsed / 1000),
      latencies: all,
      delivered,
      drainMs,
    };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Writes in one chunk of the interleaved slowdown measurement. */
const CHUNK = 256;
/** Writing time of one block of interleaved chunks, in ms. */
const BLOCK_MS = QUICK ? 300 : 1_500;
/** Blocks in the interleaved measurement. */
const BLOCKS = QUICK ? 2 : 10;
/** Promise turns after a chunk: its last deliveries reach their consumers inside it. */
const FLUSH_TURNS = 400;

/** A kind with its watchers attached, kept open across chunks. */
interface Rig {
  readonly watchers: number;
  /** CPU time (ms) and writes of every chunk so far. */
  cpuMs: number;
  writes: number;
  /** Writes one chunk, round robin, and lets the deliveries it caused run. */
  chunk(): Promise<void>;
  close(): Promise<void>;
}

async function rig(watchers: number): Promise<Rig> {
  const dir = benchDir();
  const store = await openBenchStore(dir);
  const bh = new Beehive(store);
  const client = bh.client<Spec, unknown>(Kind);
  const ids = await seedItems(client);
  const streams: ObjectListStream<Spec, unknown>[] = [];
  const loops: Promise<void>[] = [];
  for (let w = 0; w < watchers; w++) {
    const stream = await client.watchList();
    streams.push(stream);
    // Each loop reads every change's spec, as a consumer that does no work would.
    loops.push((async () => {
      let newest = -1;
      await consume(stream, false, (change) => {
        const seq = change.object!.spec.seq;
        if (seq > newest) newest = seq;
      });
    })());
  }
  let seq = 0;
  const r: Rig = {
    watchers,
    cpuMs: 0,
    writes: 0,
    async chunk() {
      const cpu0 = process.cpuUsage();
      for (let i = 0; i < CHUNK; i++, seq++) {
        await client.update(ids[seq % OBJECTS], { seq, image: "app:1", replicas: 3 });
      }
      for (let i = 0; i < FLUSH_TURNS; i++) await null;
      const cpu = process.cpuUsage(cpu0);
      r.cpuMs += (cpu.user + cpu.system) / 1000;
      r.writes += CHUNK;
    },
    async close() {
      for (const s of streams) s.close();
      await Promise.all(loops);
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return r;
}

/**
 * The writer's slowdown by watchers, from kinds open side by side in one
 * store each: chunks of writes go to every kind in turn (in a shuffled order
 * each round), and each kind's CPU time per write over a block of rounds is
 * set against the unwatched kind's in the same block. The machine's speed
 * drifts by far more than the effect between two whole runs, and a core that
 * idled runs slower for a while; interleaved chunks that never idle see the
 * same machine. A chunk's drains run on its own commits (the writer never
 * yields to a timer), and the promise turns after it let its deliveries
 * finish inside it. Resolves the per-block slowdowns of each count, sorted.
 */
async function interleavedSlowdowns(counts: readonly number[]): Promise<Map<number, number[]>> {
  const rigs = [await rig(0)];
  for (const w of counts) rigs.push(await rig(w));
  try {
    // Warm-up: JIT and page cache.
    for (let i = 0; i < 8; i++) for (const r of rigs) await r.chunk();
    const out = new Map<number, number[]>(counts.map((w) => [w, []]));
    let seed = 7;
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    for (let block = 0; block < BLOCKS; block++) {
      const before = rigs.map((r) => ({ cpuMs: r.cpuMs, writes: r.writes }));
      const t0 = performance.now();
      while (performance.now() - t0 < BLOCK_MS) {
        const order = [...rigs].sort(() => random() - 0.5);
        for (const r of order) await r.chunk();
      }
      const perWrite = rigs.map((r, i) =>
        (r.cpuMs - before[i].cpuMs) / (r.writes - before[i].writes)
      );
      counts.forEach((w, i) => out.get(w)!.push(1 - perWrite[0] / perWrite[i + 1]));
    }
    for (const xs of out.values()) xs.sort((a, b) => a - b);
    return out;
  } finally {
    for (const r of rigs) await r.close();
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

const started = performance.now();
const deno = (globalThis as { Deno?: { version: { deno: string } } }).Deno;
const runtime = deno !== undefined ? `Deno ${deno.version.deno}` : `Node ${process.versions.node}`;
console.log(
  `watch benchmark: ${OBJECTS} objects, ${runtime}, ${cpus().length} cores, database on ${
    DISK ? "disk" : "tmpfs"
  }, watchers take ${BATCHES ? "a batch of changes" : "one change"} per step${
    QUICK ? " (quick)" : ""
  }`,
);

if (ONLY !== undefined) {
  const r = await run(Number(ONLY));
  console.log(
    `${r.watchers} watchers: ${fmt(r.writesPerSec)} writes/CPU-s, ${fmt(r.wallPerSec)} writes/s, ${
      fmt(r.delivered)
    } deliveries, p50 ${fmt(percentile(r.latencies, 0.5), 1)} ms, p99 ${
      fmt(percentile(r.latencies, 0.99), 1)
    } ms`,
  );
  process.exit(0);
}

if (!SLOWDOWN_ONLY) {
  // Warm-up: JIT and page cache.
  await run(0);
  await run(100);

  const byWatchers = new Map<number, RunResult[]>();
  for (let round = 0; round < ROUNDS; round++) {
    // The slow configuration runs once; the others alternate, the baseline first and last.
    const order = round === 0 && !WHOLE_ONLY
      ? [0, 1, 100, 1000]
      : round % 2 === 1
      ? [100, 0, 1]
      : [0, 100, 1];
    for (const w of order) {
      const r = await run(w);
      byWatchers.set(w, [...(byWatchers.get(w) ?? []), r]);
      console.log(
        `  round ${round + 1}: ${fmt(w)} watchers: ${fmt(r.writesPerSec)} writes/CPU-s (${
          fmt(r.wallPerSec)
        } wall)${
          w === 0
            ? ""
            : `, ${fmt(r.delivered)} deliveries, p50 ${
              fmt(percentile(r.latencies, 0.5), 1)
            } ms, p99 ${fmt(percentile(r.latencies, 0.99), 1)} ms`
        }`,
      );
    }
  }

  const baseline = median(byWatchers.get(0)!.map((r) => r.writesPerSec));
  console.log("");
  console.log(
    "| watchers | writes/CPU-s | vs no watchers | writes/s (wall) | deliveries/s | p50 latency | p99 latency | drain after the writer stops |",
  );
  console.log(
    "| -------: | -----------: | -------------: | --------------: | -----------: | ----------: | ----------: | ---------------------------: |",
  );
  for (const w of WHOLE_ONLY ? [0, 1, 100] : [0, 1, 100, 1000]) {
    const results = byWatchers.get(w)!;
    const rate = median(results.map((r) => r.writesPerSec));
    const wall = median(results.map((r) => r.wallPerSec));
    // Latencies from the median-throughput round.
    const mid = [...results].sort((a, b) => a.writesPerSec - b.writesPerSec)[
      Math.floor(results.length / 2)
    ];
    const slowdown = 1 - rate / baseline;
    const dash = "—";
    console.log(
      `| ${fmt(w)} | ${fmt(rate)} | ${
        w === 0 ? dash : `${slowdown >= 0 ? "−" : "+"}${fmt(Math.abs(slowdown) * 100, 1)}%`
      } | ${fmt(wall)} | ${w === 0 ? dash : fmt(mid.delivered / (WRITE_MS / 1000))} | ${
        w === 0 ? dash : `${fmt(percentile(mid.latencies, 0.5), 1)} ms`
      } | ${w === 0 ? dash : `${fmt(percentile(mid.latencies, 0.99), 1)} ms`} | ${
        w === 0 ? dash : `${fmt(mid.drainMs, 0)} ms`
      } |`,
    );
  }
  if (WHOLE_ONLY) process.exit(0);
  console.log("");
  console.log("| watchers (paced writer, one commit / 150 ms) | p50 latency | p99 latency |");
  console.log("| -------------------------------------------: | ----------: | ----------: |");
  for (const w of [1, 100, 1000]) {
    const r = await run(w, true);
    console.log(
      `| ${fmt(w)} | ${fmt(percentile(r.latencies, 0.5), 2)} ms | ${
        fmt(percentile(r.latencies, 0.99), 2)
      } ms |`,
    );
  }
}
console.log("");
console.log(
  `Writer slowdown, interleaved: ${BLOCKS} blocks of ${
    fmt(BLOCK_MS)
  } ms, chunks of ${CHUNK} writes on every kind in turn, each kind's CPU time per write against the unwatched kind's in the same block`,
);
console.log("");
console.log("| watchers | median slowdown | range over blocks |");
console.log("| -------: | --------------: | :---------------- |");
const pct = (x: number) => `${x < 0 ? "−" : ""}${fmt(Math.abs(x) * 100, 1)}%`;
// 1,000 watchers on their own: their heap would slow every kind's collections beside them.
const interleaved = new Map([
  ...await interleavedSlowdowns([1, 100]),
  ...await interleavedSlowdowns([1000]),
]);
for (const [w, xs] of interleaved) {
  console.log(`| ${fmt(w)} | ${pct(median(xs))} | ${pct(xs[0])} – ${pct(xs[xs.length - 1])} |`);
}
const at100 = median(interleaved.get(100)!);
console.log("");
console.log(
  `writer slowdown at 100 watchers (interleaved median): ${fmt(at100 * 100, 1)}% (target ≤ ${
    TARGET_SLOWDOWN * 100
  }%): ${at100 <= TARGET_SLOWDOWN ? "PASS" : "OVER"}`,
);
console.log(`total ${fmt((performance.now() - started) / 1000, 1)} s`);
