/**
 * The figures behind "Where beehive's time goes" in docs/performance.md: for
 * the peers workload, beehive's transaction statements per unit and the time
 * spent in each, and the WAL pages each system appends per unit.
 *
 * Run: `deno run -A bench/peers/explain.ts` (beehive only), or with Node for
 * plainjob's WAL pages too:
 * `node --disable-warning=ExperimentalWarning bench/peers/explain.ts`
 * (`--callers=32 --workers=8` for the concurrent case; `--no-checkpointer` for the store without
 * its background checkpointer; `--statements` to time every statement, not only transaction
 * control). For the CPU profile,
 * `node --cpu-prof bench/peers/case.ts --system=beehive --units=10000`.
 *
 * @module
 */
import { statSync } from "node:fs";
import { createRequire } from "node:module";
import process from "node:process";
import { Beehive, settled } from "../../mod.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";
import { SqliteStore } from "../../store/sqlite/sqlite_store.ts";
import { uncheckpointedNodeDriver } from "../_drivers.ts";
import { nodeSqliteDriver } from "../../store/sqlite/_node_sqlite.ts";
import { FLOOR_KIND as Kind, FLOOR_SPEC as SPEC, tempFile } from "../_floor.ts";
import { PAGE_SIZE } from "../../store/sqlite/_schema.ts";

const arg = (name: string, fallback: number): number =>
  Number(
    process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(
      name.length + 3,
    ) ?? fallback,
  );
const CALLERS = arg("callers", 1);
const WORKERS = arg("workers", 1);
const UNITS = 2_000;
/** `--no-checkpointer`: the store without its background checkpointer (as before 2026-12-02). */
const NO_CHECKPOINTER = process.argv.includes("--no-checkpointer");
/** How long each COMMIT took, in ms. */
const commitTimes: number[] = [];
/** Few enough units that no checkpoint resets the WAL in between. */
const WAL_UNITS = 40;
/**
 * `--statements`: time every prepared statement's calls as well, keyed by the
 * start of its SQL (the timing itself adds about a microsecond a call).
 */
const STATEMENTS = process.argv.includes("--statements");

/** How a statement's calls are listed: its SQL, spaces folded, cut to 90 characters. */
function statementKey(sql: string): string {
  return sql.replace(/\s+/g, " ").trim().slice(0, 90);
}

/** Calls and time spent, by statement. */
type Seen = Map<string, { calls: number; ms: number }>;

/** Runs `call`, counting it and its time into `seen` under `key`; returns what it returned. */
function timed<R>(seen: Seen, key: string, call: () => R, took?: (ms: number) => void): R {
  const entry = seen.get(key) ?? { calls: 0, ms: 0 };
  seen.set(key, entry);
  const t = performance.now();
  try {
    return call();
  } finally {
    const ms = performance.now() - t;
    entry.calls++;
    entry.ms += ms;
    took?.(ms);
  }
}

/** Times every `run`, `get` and `all` call of `statement` into `seen` under `key`. */
function tapStatement<S extends object>(statement: S, key: string, seen: Seen): S {
  for (const method of ["run", "get", "all"] as const) {
    const original = (statement as Record<string, unknown>)[method];
    if (typeof original !== "function") continue;
    const bound = original.bind(statement) as (...args: unknown[]) => unknown;
    (statement as Record<string, unknown>)[method] = (...args: unknown[]) =>
      timed(seen, key, () => bound(...args));
  }
  return statement;
}

/**
 * Counts and times every `exec` (transaction control) on connections opened
 * from now on, and with `--statements` every prepared statement's calls.
 */
function tapExec(): Seen {
  const seen: Seen = new Map();
  const open = nodeSqliteDriver.open.bind(nodeSqliteDriver);
  (nodeSqliteDriver as { open: typeof open }).open = (path) => {
    const conn = open(path);
    if (STATEMENTS) {
      const prepare = conn.prepare.bind(conn);
      (conn as { prepare: typeof prepare }).prepare = (sql) =>
        tapStatement(prepare(sql), statementKey(sql), seen);
    }
    const exec = conn.exec.bind(conn);
    (conn as { exec: typeof exec }).exec = (sql) => {
      const key = sql.trim().split(/\s+/).slice(0, 2).join(" ");
      const took = key === "COMMIT" ? (ms: number) => void commitTimes.push(ms) : undefined;
      return timed(seen, key, () => exec(sql), took);
    };
    return conn;
  };
  return seen;
}

/** Runs the peers workload on beehive; resolves to ms elapsed and the WAL pages appended. */
async function beehive(
  n: number,
  onStarted = () => {},
): Promise<{ ms: number; pages: number }> {
  const { path, done } = tempFile();
  const store = NO_CHECKPOINTER
    ? SqliteStore.open(path, {}, uncheckpointedNodeDriver)
    : await openSqliteStore(path, { driver: "node" });
  try {
    const bh = new Beehive(store, { concurrency: WORKERS });
    let processed = 0;
    const all = Promise.withResolvers<void>();
    bh.register(Kind, {
      async reconcile(_obj, cc) {
        await cc.updateStatus({ done: true });
        if (++processed === n) all.resolve();
        return settled();
      },
    });
    const stop = await bh.start();
    onStarted();
    const pages0 = walPages(path);
    const client = bh.client(Kind);
    const t0 = performance.now();
    let next = 0;
    await Promise.all(Array.from({ length: CALLERS }, async () => {
      while (next < n) await client.create(`item-${next++}`, SPEC);
    }));
    await all.promise;
    await stop();
    return { ms: performance.now() - t0, pages: walPages(path) - pages0 };
  } finally {
    await store.close();
    done();
  }
}

/** WAL frames in `path`'s WAL, each a page of `pageSize` bytes and its 24-byte header. */
function walPages(path: string, pageSize = PAGE_SIZE): number {
  try {
    return statSync(`${path}-wal`).size / (pageSize + 24);
  } catch {
    return 0;
  }
}

/** plainjob's WAL pages per unit for the same workload (Node only). */
async function plainjobPages(n: number): Promise<number> {
  const require = createRequire(import.meta.url);
  const Database = require("better-sqlite3");
  const { defineQueue, defineWorker } = require("plainjobs");
  const silent = { error() {}, warn() {}, info() {}, debug() {} };
  const { path, done } = tempFile();
  const db = new Database(path);
  const queue = defineQueue({ connection: db, logger: silent });
  try {
    db.exec(
      "CREATE TABLE results (job_id INTEGER PRIMARY KEY, result TEXT NOT NULL)",
    );
    const insert = db.prepare(
      "INSERT INTO results (job_id, result) VALUES (?, ?)",
    );
    let processed = 0;
    const all = Promise.withResolvers<void>();
    const worker = defineWorker("unit", (job: { id: number }) => {
      insert.run(job.id, '{"done":true}');
    }, {
      queue,
      logger: silent,
      pollIntervall: 1,
      onCompleted: () => {
        if (++processed === n) all.resolve();
      },
    });
    const pageSize = Number(db.pragma("page_size", { simple: true }));
    const pages0 = walPages(path, pageSize);
    const running = worker.start();
    for (let i = 0; i < n; i++) queue.add("unit", SPEC);
    await all.promise;
    await worker.stop();
    await running;
    return (walPages(path, pageSize) - pages0) / n;
  } finally {
    queue.close();
    done();
  }
}

const runtime = "Deno" in globalThis ? "Deno" : "Node";
const seen = tapExec();
const { ms } = await beehive(UNITS, () => {
  seen.clear();
  commitTimes.length = 0;
});
console.log(
  `beehive on ${runtime}, ${CALLERS} caller(s), concurrency ${WORKERS}: ` +
    `${(ms * 1000 / UNITS).toFixed(0)} µs a unit; transaction statements per unit:`,
);
for (const [key, { calls, ms: spent }] of seen) {
  console.log(
    `- ${key}: ${(calls / UNITS).toFixed(2)} a unit, ${
      (spent * 1000 / UNITS).toFixed(1)
    } µs a unit`,
  );
}
const sorted = [...commitTimes].sort((a, b) => a - b);
const at = (q: number) => (sorted[Math.floor(q * (sorted.length - 1))] * 1000).toFixed(0);
const total = sorted.reduce((a, b) => a + b, 0);
const slow = sorted.filter((t) => t > 0.5);
console.log(
  `COMMIT: p50 ${at(0.5)} µs, p99 ${at(0.99)} µs, max ${at(1)} µs; ${slow.length} over 0.5 ms, ` +
    `${(100 * slow.reduce((a, b) => a + b, 0) / total).toFixed(0)}% of all COMMIT time` +
    (NO_CHECKPOINTER ? " (no background checkpointer)" : ""),
);
const { pages } = await beehive(WAL_UNITS);
console.log(
  `WAL pages appended per unit: beehive ${(pages / WAL_UNITS).toFixed(1)}`,
);
if (runtime === "Node") {
  console.log(
    `WAL pages appended per unit: plainjob ${(await plainjobPages(WAL_UNITS)).toFixed(1)}`,
  );
}
