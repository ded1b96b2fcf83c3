/**
 * The engine benchmark.
 *
 * 1. Throughput: N objects created through a Client and reconciled to Settled
 *    by a no-op controller (concurrency 1), as objects/s — once holding the
 *    plain store lease, once leading by leader election with every controller
 *    write fenced — beside the raw floor
 *    measured in the same run on the same schema and pragmas: one create
 *    commit and one settle commit per object, write-log appends included.
 *    Once per SQLite driver (`node:sqlite`, and the Deno FFI driver on Deno
 *    with `--allow-ffi`), each against the floor on its own driver.
 * 2. Idle cost: a started Beehive holding 10k settled objects, over one
 *    simulated minute (fake time): store calls, write calls, WAL growth, CPU.
 * 3. Memory: heap growth of a started Beehive holding 100k settled objects.
 *
 * Run: `deno task bench:engine` (`--quick` for a smoke run, `--driver=node|ffi`
 * for one driver). Idle cost and memory are measured on `node:sqlite`. Figures
 * go in docs/performance.md.
 *
 * @module
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { DatabaseSync } from "node:sqlite";
import FakeTimers from "@sinonjs/fake-timers";
import { Beehive, settled } from "../mod.ts";
import { openSqliteStore } from "../store/sqlite/mod.ts";
import { migrations, PAGE_SIZE } from "../store/sqlite/_schema.ts";
import type { Store } from "../src/store.ts";
import { type BenchDriver, benchDrivers, sqliteVersion } from "./_drivers.ts";

const QUICK = process.argv.includes("--quick");
const SIZES = QUICK ? [1_000] : [1_000, 10_000];
const IDLE_OBJECTS = QUICK ? 1_000 : 10_000;
const HEAP_OBJECTS = QUICK ? 5_000 : 100_000;
const TARGET = 0.4;
const Kind = { group: "bench.beehive.dev", kind: "Item" };
const SPEC = { image: "example.com/app:1.0", replicas: 3 };

function tempFile(): { path: string; done: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "beehive-bench-"));
  return { path: join(dir, "bench.db"), done: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The floor: per object, one create commit and one settle commit, each with its log append. */
function floor(n: number, driver: BenchDriver): number {
  const { path, done } = tempFile();
  const db = driver.raw.open(path);
  try {
    db.exec(
      `PRAGMA page_size = ${PAGE_SIZE}; PRAGMA auto_vacuum = INCREMENTAL; PRAGMA journal_mode = WAL;
      PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;`,
    );
    for (const m of migrations) db.exec(m.sql);
    const insert = db.prepare(`INSERT INTO objects ("group", kind, name, spec, resource_version,
      created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`);
    const log = db.prepare(`INSERT INTO object_writes (resource_version, object_id, "group", kind,
      op, written_at) VALUES (?, ?, ?, ?, ?, ?)`);
    const settle = db.prepare(`UPDATE objects SET observed_generation = 1, observed_at = ?,
      resource_version = ? WHERE id = ?`);
    const spec = JSON.stringify(SPEC);
    let rv = 0;
    const t0 = performance.now();
    const ids: number[] = [];
    for (let i = 0; i < n; i++) {
      const now = Date.now();
      db.exec("BEGIN IMMEDIATE");
      const id = Number(insert.get(Kind.group, Kind.kind, `item-${i}`, spec, ++rv, now, now)!.id);
      log.run(rv, id, Kind.group, Kind.kind, 1, now);
      db.exec("COMMIT");
      ids.push(id);
    }
    for (const id of ids) {
      const now = Date.now();
      db.exec("BEGIN IMMEDIATE");
      settle.run(now, ++rv, id);
      log.run(rv, id, Kind.group, Kind.kind, 2, now);
      db.exec("COMMIT");
    }
    return n / ((performance.now() - t0) / 1000);
  } finally {
    db.close();
    done();
  }
}

/**
 * Creates n objects through a Client and waits until a no-op controller
 * settled them all. `elected`: the Beehive leads by leader election, so every
 * controller write is fenced on its epoch (checked in its transaction).
 */
async function engine(
  n: number,
  driver: BenchDriver,
  elected = false,
  { callers = 1, concurrency = 1 } = {},
): Promise<number> {
  const { path, done } = tempFile();
  const store = await openSqliteStore(path, driver.options);
  try {
    const bh = new Beehive(store, { concurrency, ...(elected ? { leaderElection: {} } : {}) });
    let passes = 0;
    const all = Promise.withResolvers<void>();
    bh.register(Kind, () => {
      if (++passes === n) all.resolve();
      return settled();
    });
    const stop = await bh.start();
    while (elected && !bh.isLeader) await new Promise((resolve) => setTimeout(resolve, 1));
    const client = bh.client(Kind);
    const t0 = performance.now();
    let next = 0;
    await Promise.all(Array.from({ length: callers }, async () => {
      while (next < n) await client.create(`item-${next++}`, SPEC);
    }));
    await all.promise;
    await stop(); // drains the last pass's generation handshake
    const rate = n / ((performance.now() - t0) / 1000);
    const unsettled = await store.objects.listUnsettledIds(Kind);
    if (unsettled.length !== 0) throw new Error(`${unsettled.length} objects did not settle`);
    return rate;
  } finally {
    await store.close();
    done();
  }
}

/** Fills a store with n settled objects, in batches. */
async function fillSettled(store: Store, n: number): Promise<void> {
  for (let i = 0; i < n; i += 1000) {
    await store.within(async (tx) => {
      for (let j = i; j < Math.min(n, i + 1000); j++) {
        const o = await tx.objects.create(Kind, { name: `item-${j}`, spec: JSON.stringify(SPEC) });
        await tx.objects.setObservedGeneration({ ...Kind, id: o.id }, 1);
      }
    });
  }
}

/** Counts calls through a store, and which of them are writes. */
function countingStore(store: Store): { store: Store; calls: () => number; writes: () => number } {
  let calls = 0;
  let writes = 0;
  const WRITE = /^(create|update|set|delete|add|stamp|decrement|sweep|watermark|reclaim|within)/;
  const wrap = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(t, key, receiver) {
        const v = Reflect.get(t, key, receiver);
        if (typeof v === "function") {
          return (...args: unknown[]) => {
            calls++;
            if (WRITE.test(String(key))) writes++;
            return v.apply(t, args);
          };
        }
        if (typeof v === "object" && v !== null && typeof key === "string") return wrap(v);
        return v;
      },
    });
  return { store: wrap(store), calls: () => calls, writes: () => writes };
}

async function idle(): Promise<Record<string, number>> {
  const { path, done } = tempFile();
  const raw = await openSqliteStore(path);
  try {
    await fillSettled(raw, IDLE_OBJECTS);
    const counted = countingStore(raw);
    const clock = FakeTimers.install({
      now: Date.now(),
      toFake: ["Date", "setTimeout", "clearTimeout", "setInterval", "clearInterval"],
    });
    try {
      const bh = new Beehive(counted.store);
      bh.register(Kind, () => settled());
      const stop = await bh.start();
      await clock.tickAsync(1_000); // let the start-up passes finish
      const calls0 = counted.calls();
      const writes0 = counted.writes();
      const wal0 = statSync(`${path}-wal`).size;
      // data_version, read from another connection, moves with every commit that changed the file.
      const probe = new DatabaseSync(path);
      const version = () => Number(probe.prepare("PRAGMA data_version").get()!.data_version);
      const version0 = version();
      const cpu0 = process.cpuUsage();
      await clock.tickAsync(60_000);
      const cpu = process.cpuUsage(cpu0);
      const result = {
        "store calls per minute": counted.calls() - calls0,
        "write-method calls per minute (sweeps that found nothing to do)": counted.writes() -
          writes0,
        "commits that changed the database": version() - version0,
        "WAL bytes appended per minute": statSync(`${path}-wal`).size - wal0,
        "CPU ms per minute": Math.round((cpu.user + cpu.system) / 1000),
      };
      probe.close();
      await stop();
      return result;
    } finally {
      clock.uninstall();
    }
  } finally {
    await raw.close();
    done();
  }
}

async function heap(): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  const { path, done } = tempFile();
  const store = await openSqliteStore(path);
  try {
    await fillSettled(store, HEAP_OBJECTS);
    gc?.();
    const before = process.memoryUsage().heapUsed;
    const bh = new Beehive(store);
    bh.register(Kind, () => settled());
    const stop = await bh.start();
    // Let the start-up passes (owed pass, GC sweep, stale-dependents sweep) finish.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    gc?.();
    const after = process.memoryUsage().heapUsed;
    await stop();
    return (after - before) / 1e6;
  } finally {
    await store.close();
    done();
  }
}

const cpu = cpus()[0]?.model ?? "unknown CPU";
console.log(`engine benchmark — ${new Date().toISOString()} — ${cpus().length} × ${cpu}`);
console.log("");
const { drivers, notes } = await benchDrivers();
console.log(drivers.map((d) => `${d.name}: SQLite ${sqliteVersion(d.raw)}`).join(", "));
for (const note of notes) console.log(`(${note})`);
console.log("");
console.log(
  "| objects | driver | engine obj/s | floor obj/s | ratio | target | verdict | fenced leader obj/s | fenced ratio |",
);
console.log("| ---: | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |");
for (const n of SIZES) {
  for (const driver of drivers) {
    const f = floor(n, driver);
    const e = await engine(n, driver);
    const l = await engine(n, driver, true);
    const ratio = e / f;
    console.log(
      `| ${n} | ${driver.name} | ${e.toFixed(0)} | ${f.toFixed(0)} | ${
        (ratio * 100).toFixed(0)
      }% | ${TARGET * 100}% | ${ratio >= TARGET ? "PASS" : "UNDER"} | ${l.toFixed(0)} | ${
        (l / f * 100).toFixed(0)
      }% |`,
    );
  }
}
console.log("");
console.log("Concurrent callers (group commit), node:sqlite, against the same floor:");
console.log("");
console.log("| objects | callers | concurrency | engine obj/s | floor obj/s | ratio |");
console.log("| ---: | ---: | ---: | ---: | ---: | ---: |");
const nodeDriver = drivers[0];
for (const n of SIZES) {
  const f = floor(n, nodeDriver);
  for (const [callers, concurrency] of [[1, 1], [32, 8], [100, 8]]) {
    const e = await engine(n, nodeDriver, false, { callers, concurrency });
    console.log(
      `| ${n} | ${callers} | ${concurrency} | ${e.toFixed(0)} | ${f.toFixed(0)} | ${
        (e / f * 100).toFixed(0)
      }% |`,
    );
  }
}
console.log("");
console.log(`idle Beehive holding ${IDLE_OBJECTS} settled objects, one simulated minute:`);
for (const [k, v] of Object.entries(await idle())) console.log(`- ${k}: ${v}`);
const growth = await heap();
console.log("");
console.log(
  `heap growth at rest for ${HEAP_OBJECTS} settled objects: ${
    growth.toFixed(1)
  } MB (target ≤ 50 MB)${
    (globalThis as { gc?: unknown }).gc
      ? ""
      : " (run with --v8-flags=--expose-gc for a precise figure)"
  }`,
);
