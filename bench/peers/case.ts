/**
 * One measured case of the peers benchmark, run in a fresh process by
 * `bench/peers_bench.ts`: the same workload on one system, as units/s on one line of JSON.
 *
 * The workload: each unit is durably recorded in its own commit by one of `--callers`
 * concurrent callers, then processed once by a handler that makes one durable result
 * write. The clock runs from the first record to the last unit's processing done.
 *
 * - `floor`: beehive's raw two-commit floor (`bench/_floor.ts`), no engine; the callers flag is
 *   ignored.
 * - `minimal`: the minimal two-commit floor (`bench/_floor.ts`: a table with only its primary
 *   key and name key); the callers flag is ignored.
 * - `beehive`: `Client.create` per unit; a controller does one `updateStatus` and settles.
 * - `plainjob`: `queue.add` per unit; a worker's processor inserts one result row into the
 *   same database (Node only: better-sqlite3 from `bench/peers/node_modules`).
 * - `plainjob-sqlite`: the same plainjob over `node:sqlite` (Deno or Node), through a small
 *   adapter giving `DatabaseSync` the part of better-sqlite3's API plainjob calls.
 * - `denokv`: `kv.enqueue` per unit; a `listenQueue` handler does one `kv.set` (Deno only,
 *   `--unstable-kv`).
 *
 * Run: `deno run -A --unstable-kv bench/peers/case.ts --system=denokv --callers=32 --units=2000`
 * or `node --disable-warning=ExperimentalWarning bench/peers/case.ts --system=plainjob ...`.
 *
 * @module
 */
import { createRequire } from "node:module";
import process from "node:process";
import { DatabaseSync } from "node:sqlite";
import { Beehive, settled } from "../../mod.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";
import { nodeSqliteDriver } from "../../store/sqlite/_node_sqlite.ts";
import { floor, FLOOR_KIND, FLOOR_SPEC, minimalFloor, tempFile } from "../_floor.ts";

const arg = (name: string, fallback: string): string =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(
    name.length + 3,
  ) ?? fallback;

const SYSTEM = arg("system", "beehive");
const CALLERS = Number(arg("callers", "1"));
const UNITS = Number(arg("units", "1000"));
/** Beehive's controller concurrency, and plainjob's worker count. */
const WORKERS = Number(arg("workers", "1"));
const RESULT = { done: true };
/**
 * `--labels`: beehive's creates carry three labels (`app`, `tier`, `example.com/team`), each
 * indexed, to measure what labels cost a unit (docs/performance.md, "Labels and selectors").
 */
const LABELS = process.argv.includes("--labels")
  ? { labels: { app: "web", tier: "front", "example.com/team": "shop" } }
  : undefined;
/** Where to write a CPU profile of the measured run (`.cpuprofile`, both runtimes), if set. */
const PROFILE = arg("profile", "");

/** Runs `callers` loops that together call `record(i)` once for every i below `n`. */
async function callers(
  n: number,
  count: number,
  record: (i: number) => unknown,
): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: count }, async () => {
    while (next < n) await record(next++);
  }));
}

async function beehive(n: number): Promise<number> {
  const { path, done } = tempFile();
  const store = await openSqliteStore(path, { driver: "node" });
  try {
    const bh = new Beehive(store, { concurrency: WORKERS });
    let processed = 0;
    const all = Promise.withResolvers<void>();
    bh.register<typeof FLOOR_SPEC, typeof RESULT>(FLOOR_KIND, {
      async reconcile(_obj, cc) {
        await cc.updateStatus(RESULT);
        if (++processed === n) all.resolve();
        return settled();
      },
    });
    const stop = await bh.start();
    const client = bh.client<typeof FLOOR_SPEC, typeof RESULT>(FLOOR_KIND);
    const t0 = performance.now();
    await callers(n, CALLERS, (i) => client.create(`item-${i}`, FLOOR_SPEC, LABELS));
    await all.promise;
    await stop(); // drains the last pass's settle handshake
    const rate = n / ((performance.now() - t0) / 1000);
    const unsettled = await store.objects.listUnsettledIds(FLOOR_KIND);
    if (unsettled.length !== 0) {
      throw new Error(`${unsettled.length} objects did not settle`);
    }
    return rate;
  } finally {
    await store.close();
    done();
  }
}

/** The part of better-sqlite3 this case (and plainjob) uses. */
interface BetterSqlite3Database {
  exec(sql: string): unknown;
  prepare(
    sql: string,
  ): {
    run(...params: (number | string)[]): unknown;
    get(): Record<string, unknown> | undefined;
  };
  pragma(sql: string, options?: { simple: true }): unknown;
  close(): void;
}

/**
 * `node:sqlite`'s `DatabaseSync` with the part of better-sqlite3's API plainjob
 * calls: `pragma`, `transaction(fn).immediate(...)` and `close`; `exec` and
 * `prepare` are `DatabaseSync`'s own (its statements take better-sqlite3's bare
 * `@name` parameters, and `run` returns `{ changes, lastInsertRowid }` alike).
 */
class NodeSqliteAsBetterSqlite3 {
  readonly #db: DatabaseSync;
  constructor(path: string) {
    this.#db = new DatabaseSync(path);
  }
  exec(sql: string): this {
    this.#db.exec(sql);
    return this;
  }
  prepare(sql: string) {
    return this.#db.prepare(sql);
  }
  pragma(sql: string, options?: { simple: true }): unknown {
    const rows = this.#db.prepare(`PRAGMA ${sql}`).all();
    return options?.simple ? Object.values(rows[0] ?? {})[0] : rows;
  }
  transaction<A extends unknown[], T>(
    fn: (...args: A) => T,
  ): { immediate(...args: A): T } {
    const db = this.#db;
    return {
      immediate(...args: A): T {
        db.exec("BEGIN IMMEDIATE");
        try {
          const result = fn(...args);
          db.exec("COMMIT");
          return result;
        } catch (error) {
          if (db.isTransaction) db.exec("ROLLBACK");
          throw error;
        }
      },
    };
  }
  close(): void {
    this.#db.close();
  }
}

/** The part of plainjobs this case uses. */
interface Plainjobs {
  defineQueue(options: { connection: BetterSqlite3Database; logger: Logger }): {
    add(type: string, data: unknown): { id: number };
    close(): void;
  };
  defineWorker(
    type: string,
    processor: (job: { id: number; data: string }) => void,
    options: {
      queue: unknown;
      logger: Logger;
      pollIntervall: number;
      onCompleted: () => void;
    },
  ): { start(): Promise<void>; stop(): Promise<void> };
}

interface Logger {
  error(...a: unknown[]): void;
  warn(...a: unknown[]): void;
  info(...a: unknown[]): void;
  debug(...a: unknown[]): void;
}

const silent: Logger = { error() {}, warn() {}, info() {}, debug() {} };

async function plainjob(
  n: number,
  over: "better-sqlite3" | "node:sqlite",
): Promise<{ rate: number; sqlite: string; synchronous: unknown }> {
  const require = createRequire(import.meta.url);
  const Database = over === "node:sqlite"
    ? NodeSqliteAsBetterSqlite3
    : require("better-sqlite3") as new (path: string) => BetterSqlite3Database;
  const { defineQueue, defineWorker } = require("plainjobs") as Plainjobs;
  const { path, done } = tempFile();
  const db = new Database(path);
  // defineQueue sets journal_mode = WAL, synchronous = NORMAL (1) and busy_timeout itself.
  const queue = defineQueue({ connection: db, logger: silent });
  try {
    db.exec(
      "CREATE TABLE results (job_id INTEGER PRIMARY KEY, result TEXT NOT NULL)",
    );
    const insertResult = db.prepare(
      "INSERT INTO results (job_id, result) VALUES (?, ?)",
    );
    let processed = 0;
    const all = Promise.withResolvers<void>();
    const workers = Array.from(
      { length: WORKERS },
      () =>
        defineWorker("unit", (job) => {
          insertResult.run(job.id, JSON.stringify(RESULT));
        }, {
          queue,
          logger: silent,
          // The default is 1000 ms: an idle worker would sleep through most of a short run.
          pollIntervall: 1,
          onCompleted: () => {
            if (++processed === n) all.resolve();
          },
        }),
    );
    const running = workers.map((w) => w.start());
    const t0 = performance.now();
    await callers(n, CALLERS, () => queue.add("unit", FLOOR_SPEC));
    await all.promise;
    const rate = n / ((performance.now() - t0) / 1000);
    await Promise.all(workers.map((w) => w.stop()));
    await Promise.all(running);
    const results = Number(
      db.prepare("SELECT count(*) AS n FROM results").get()!.n,
    );
    if (results !== n) throw new Error(`${results} results for ${n} units`);
    return {
      rate,
      sqlite: String(db.prepare("SELECT sqlite_version() AS v").get()!.v),
      synchronous: db.pragma("synchronous", { simple: true }),
    };
  } finally {
    queue.close();
    done();
  }
}

/** The part of Deno KV this case uses. */
interface Kv {
  enqueue(value: unknown): Promise<{ ok: boolean }>;
  listenQueue(handler: (message: unknown) => Promise<void>): Promise<void>;
  set(key: unknown[], value: unknown): Promise<{ ok: boolean }>;
  close(): void;
}

async function denokv(
  n: number,
): Promise<{ rate: number; journalMode: unknown }> {
  const deno = (globalThis as { Deno?: { openKv?: (path: string) => Promise<Kv> } }).Deno;
  if (deno?.openKv === undefined) {
    throw new Error("Deno KV needs Deno with --unstable-kv");
  }
  const { path, done } = tempFile();
  const kv = await deno.openKv(path);
  try {
    const seen = new Set<number>();
    const all = Promise.withResolvers<void>();
    const listening = kv.listenQueue(async (message) => {
      const { id } = message as { id: number };
      await kv.set(["result", id], RESULT);
      seen.add(id); // delivery is at least once: count each unit once
      if (seen.size === n) all.resolve();
    });
    const t0 = performance.now();
    await callers(n, CALLERS, (i) => kv.enqueue({ id: i, spec: FLOOR_SPEC }));
    await all.promise;
    const rate = n / ((performance.now() - t0) / 1000);
    kv.close();
    await listening;
    const file = new DatabaseSync(path);
    const journalMode = file.prepare("PRAGMA journal_mode").get()!.journal_mode;
    file.close();
    return { rate, journalMode };
  } finally {
    done();
  }
}

/**
 * Profiles the case through `node:inspector` (Deno has no `--cpu-prof`; Node's would also
 * sample start-up), so both runtimes are sampled the same way, at 100 µs.
 */
async function profiled<T>(run: () => Promise<T>): Promise<T> {
  if (PROFILE === "") return run();
  const { Session } = await import("node:inspector");
  const { writeFileSync } = await import("node:fs");
  const session = new Session();
  session.connect();
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) =>
      session.post(method, params ?? {}, (e, r) => e ? reject(e) : resolve(r))
    );
  await post("Profiler.enable");
  await post("Profiler.setSamplingInterval", { interval: 100 });
  await post("Profiler.start");
  const out = await run();
  const { profile } = await post("Profiler.stop") as { profile: unknown };
  writeFileSync(PROFILE, JSON.stringify(profile));
  session.disconnect();
  return out;
}

const runtime = "Deno" in globalThis ? "deno" : "node";
// CPU time of the whole case (every thread: the store's checkpoint worker too), which holds
// steadier than wall-clock rates on a machine other work shares.
const cpu0 = process.cpuUsage();
let out: Record<string, unknown>;
if (SYSTEM === "floor") out = { rate: floor(UNITS, nodeSqliteDriver) };
else if (SYSTEM === "minimal") {
  out = { rate: minimalFloor(UNITS, nodeSqliteDriver) };
} else if (SYSTEM === "beehive") {
  out = { rate: await profiled(() => beehive(UNITS)) };
} else if (SYSTEM === "plainjob") {
  out = await profiled(() => plainjob(UNITS, "better-sqlite3"));
} else if (SYSTEM === "plainjob-sqlite") {
  out = await profiled(() => plainjob(UNITS, "node:sqlite"));
} else if (SYSTEM === "denokv") out = await denokv(UNITS);
else {throw new RangeError(
    `Cannot run case: current value of --system is ${SYSTEM}`,
  );}
const cpu = process.cpuUsage(cpu0);
const cpuUsPerUnit = (cpu.user + cpu.system) / UNITS;
console.log(
  JSON.stringify({
    system: SYSTEM,
    runtime,
    callers: CALLERS,
    units: UNITS,
    ...(LABELS === undefined ? {} : { labels: 3 }),
    ...out,
    cpuUsPerUnit,
  }),
);
