/**
 * One measured case of the PostgreSQL peers benchmark, run in a fresh Node 22
 * process by `bench/peers_postgres_bench.ts`: the floor, then one system, on
 * the server `BEEHIVE_TEST_POSTGRES_URL` names, each in a fresh schema; one line
 * of JSON.
 *
 * The workload (`bench/peers/case.ts`'s, on a server): each unit is durably
 * recorded in its own commit by one of `--callers` concurrent callers, then
 * processed once by a handler that makes one small durable result write. The
 * clock runs from the first record to the last unit's processing done. Result
 * rows are checked after: every unit processed, none twice.
 *
 * - the floor, measured first in every case: raw `pg`, two commits a unit (insert the unit;
 *   write its result), from the same number of callers, a pool of 10.
 * - `beehive`: `openPostgresStore(url, { schema })` with its default pool; `Client.create` per
 *   unit; a controller at concurrency `--workers` writes `status { done: true }` once and settles.
 * - `graphile-worker`: `addJob` per unit; `run({ concurrency, pollInterval: 100 })` (its
 *   LISTEN/NOTIFY as shipped), whose task inserts one result row; a pool of 10.
 * - `pg-boss`: `send` per unit, LISTEN/NOTIFY on, `batchSize` 8, burst on, polling at its
 *   minimum (0.5 s); the handler inserts one result row per job; a pool of 10.
 *
 * Server CPU a unit: the CPU time of the server processes serving this case's database
 * (`/proc`, so the server must run on this machine), sampled before and after with every
 * connection still open; a backend that ended mid-run is missed.
 *
 * Run: `node --disable-warning=ExperimentalWarning bench/peers/pg_case.ts --system=pg-boss
 * --callers=32 --workers=8 --units=5000` (graphile-worker and pg-boss from
 * `bench/peers/node_modules`: `bash bench/peers/setup`).
 *
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";
import process from "node:process";
import pg from "../_pg.ts";
import { Beehive, settled } from "../../mod.ts";
import { openPostgresStore } from "../../store/postgres/mod.ts";
import { FLOOR_KIND, FLOOR_SPEC } from "../_floor.ts";

const arg = (name: string, fallback: string): string =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;

const URL_ = process.env.BEEHIVE_TEST_POSTGRES_URL ?? "";
if (URL_ === "") throw new Error("BEEHIVE_TEST_POSTGRES_URL is not set");
const SYSTEM = arg("system", "beehive");
const CALLERS = Number(arg("callers", "1"));
const UNITS = Number(arg("units", "5000"));
/** Beehive's controller concurrency and the queues' worker concurrency. */
const WORKERS = Number(arg("workers", "1"));
const POOL = 10;
const RESULT = { done: true };
const DATABASE = decodeURIComponent(new URL(URL_).pathname.slice(1));

/** Runs `count` loops that together call `record(i)` once for every i below `n`. */
async function callers(n: number, count: number, record: (i: number) => unknown): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: count }, async () => {
    while (next < n) await record(next++);
  }));
}

const freshSchema = () => `peers_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;

/** Clock ticks a second, as `/proc/<pid>/stat` counts CPU time. */
const TICKS = 100;

/** CPU ticks of each server process serving the case's database (their titles name it). */
function serverCpu(): Map<string, number> {
  const ticks = new Map<string, number>();
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const title = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      if (!title.startsWith("postgres: ") || !title.includes(` ${DATABASE} `)) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks.set(pid, Number(fields[11]) + Number(fields[12])); // utime, stime
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return ticks;
}

/** CPU seconds the server processes alive at `after` spent since `before`. */
function serverCpuSince(before: Map<string, number>, after: Map<string, number>): number {
  let ticks = 0;
  for (const [pid, t] of after) ticks += t - (before.get(pid) ?? 0);
  return ticks / TICKS;
}

/** A pool on `schema` (its search path). */
const poolOn = (schema: string, max = POOL) =>
  new pg.Pool({ connectionString: URL_, max, options: `-c search_path=${schema}` });

async function dropSchema(schema: string): Promise<void> {
  const c = new pg.Client({ connectionString: URL_ });
  await c.connect();
  try {
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await c.end();
  }
}

interface Measured {
  rate: number;
  serverMsPerUnit: number;
}

/** Measures `run` (which resolves once every unit is processed, connections still open). */
async function measured(run: () => Promise<() => Promise<void>>): Promise<Measured> {
  const cpu0 = serverCpu();
  const t0 = performance.now();
  const close = await run();
  const ms = performance.now() - t0;
  const cpu = serverCpuSince(cpu0, serverCpu());
  await close();
  return { rate: UNITS / (ms / 1000), serverMsPerUnit: cpu * 1000 / UNITS };
}

/** Raw `pg`, two commits a unit: insert the unit; write its result. */
async function floor(): Promise<Measured> {
  const schema = freshSchema();
  const setup = poolOn("public", 1);
  await setup.query(`CREATE SCHEMA "${schema}"`);
  await setup.query(`CREATE TABLE "${schema}".units (id BIGINT GENERATED BY DEFAULT AS IDENTITY
    PRIMARY KEY, name TEXT NOT NULL UNIQUE, spec TEXT NOT NULL, result TEXT)`);
  await setup.end();
  const pool = poolOn(schema);
  try {
    const spec = JSON.stringify(FLOOR_SPEC);
    const result = JSON.stringify(RESULT);
    const out = await measured(async () => {
      await callers(UNITS, CALLERS, async (i) => {
        const { rows } = await pool.query({
          name: "insert",
          text: "INSERT INTO units (name, spec) VALUES ($1, $2) RETURNING id",
          values: [`item-${i}`, spec],
        });
        await pool.query({
          name: "result",
          text: "UPDATE units SET result = $1 WHERE id = $2",
          values: [result, rows[0].id],
        });
      });
      return () => Promise.resolve();
    });
    const { rows } = await pool.query("SELECT count(*) AS n FROM units WHERE result IS NOT NULL");
    if (Number(rows[0].n) !== UNITS) throw new Error(`floor: ${rows[0].n} results`);
    return out;
  } finally {
    await pool.end();
    await dropSchema(schema);
  }
}

async function beehive(): Promise<Measured & { passes: number }> {
  const schema = freshSchema();
  const store = await openPostgresStore(URL_, { schema });
  let calls = 0;
  try {
    const bh = new Beehive(store, { concurrency: WORKERS });
    const seen = new Set<string>();
    const all = Promise.withResolvers<void>();
    bh.register<typeof FLOOR_SPEC, typeof RESULT>(FLOOR_KIND, {
      async reconcile(obj, cc) {
        calls++;
        await cc.updateStatus(RESULT);
        seen.add(obj.name);
        if (seen.size === UNITS) all.resolve();
        return settled();
      },
    });
    const stop = await bh.start();
    const client = bh.client<typeof FLOOR_SPEC, typeof RESULT>(FLOOR_KIND);
    const out = await measured(async () => {
      await callers(UNITS, CALLERS, (i) => client.create(`item-${i}`, FLOOR_SPEC));
      await all.promise;
      await stop(); // drains the last pass's settle
      return () => Promise.resolve();
    });
    const unsettled = await store.objects.listUnsettledIds(FLOOR_KIND);
    const done = (await store.objects.list(FLOOR_KIND)).filter((o) => o.status === '{"done":true}');
    // A unit's result is its status, one row whatever the passes; a pass more than one a unit
    // (level-triggered: a requeue may run one again) is reported, not a double result.
    if (unsettled.length !== 0 || done.length !== UNITS || calls < UNITS) {
      throw new Error(
        `beehive: ${done.length} results, ${unsettled.length} unsettled, ${calls} passes`,
      );
    }
    return { ...out, passes: calls };
  } finally {
    await store.close();
    await dropSchema(schema);
  }
}

/** Creates the results table in `schema` (a unit's id, once). */
async function resultsTable(schema: string): Promise<void> {
  const setup = poolOn("public", 1);
  await setup.query(`CREATE SCHEMA "${schema}"`);
  await setup.query(`CREATE TABLE "${schema}".results (unit TEXT NOT NULL, result TEXT NOT NULL)`);
  await setup.end();
}

/** Every unit has exactly one result row. */
async function checkResults(system: string, schema: string): Promise<void> {
  const pool = poolOn(schema, 1);
  try {
    const { rows } = await pool.query(
      "SELECT count(*) AS n, count(DISTINCT unit) AS units FROM results",
    );
    if (Number(rows[0].n) !== UNITS || Number(rows[0].units) !== UNITS) {
      throw new Error(`${system}: ${rows[0].n} result rows for ${rows[0].units} of ${UNITS} units`);
    }
  } finally {
    await pool.end();
  }
}

// Imported by name at run time: the queues live in bench/peers/node_modules, Node only.
const GRAPHILE = "graphile-worker";
const PGBOSS = "pg-boss";

async function graphileWorker(): Promise<Measured> {
  const schema = freshSchema();
  const jobs = `${schema}_gw`;
  await resultsTable(schema);
  const gw = await import(GRAPHILE);
  const logger = new gw.Logger(() => () => {});
  let done = 0;
  const all = Promise.withResolvers<void>();
  const runner = await gw.run({
    connectionString: URL_,
    schema: jobs,
    maxPoolSize: POOL,
    concurrency: WORKERS,
    pollInterval: 100,
    noHandleSignals: true,
    logger,
    taskList: {
      unit: async (payload: { name: string }, helpers: { query: pg.Pool["query"] }) => {
        await helpers.query(`INSERT INTO "${schema}".results (unit, result) VALUES ($1, $2)`, [
          payload.name,
          JSON.stringify(RESULT),
        ]);
        if (++done === UNITS) all.resolve();
      },
    },
  });
  try {
    const out = await measured(async () => {
      await callers(
        UNITS,
        CALLERS,
        (i) => runner.addJob("unit", { name: `item-${i}`, spec: FLOOR_SPEC }),
      );
      await all.promise;
      return () => Promise.resolve();
    });
    await checkResults("graphile-worker", schema);
    return out;
  } finally {
    await runner.stop();
    await dropSchema(schema);
    await dropSchema(jobs);
  }
}

async function pgBoss(): Promise<Measured> {
  const schema = freshSchema();
  const jobs = `${schema}_boss`;
  await resultsTable(schema);
  const { PgBoss } = await import(PGBOSS);
  const boss = new PgBoss({
    connectionString: URL_,
    schema: jobs,
    max: POOL,
    useListenNotify: true,
    schedule: false,
  });
  boss.on("error", (error: unknown) => console.error(error));
  await boss.start();
  await boss.createQueue("unit", { notify: true });
  const db = boss.getDb();
  let done = 0;
  const all = Promise.withResolvers<void>();
  try {
    await boss.work("unit", {
      batchSize: 8,
      localConcurrency: WORKERS,
      pollingIntervalSeconds: 0.5,
      notifyPollingIntervalSeconds: 0.5,
      burstWhenBatchFull: true,
    }, async (batch: { data: { name: string } }[]) => {
      for (const job of batch) {
        await db.executeSql(`INSERT INTO "${schema}".results (unit, result) VALUES ($1, $2)`, [
          job.data.name,
          JSON.stringify(RESULT),
        ]);
      }
      done += batch.length;
      if (done >= UNITS) all.resolve();
    });
    const out = await measured(async () => {
      await callers(
        UNITS,
        CALLERS,
        (i) => boss.send("unit", { name: `item-${i}`, spec: FLOOR_SPEC }),
      );
      await all.promise;
      return () => Promise.resolve();
    });
    await checkResults("pg-boss", schema);
    return out;
  } finally {
    await boss.stop({ graceful: true, wait: true, timeout: 30_000 });
    await dropSchema(schema);
    await dropSchema(jobs);
  }
}

const cpu0 = process.cpuUsage();
const floorResult = await floor();
const cpu1 = process.cpuUsage(cpu0);
const cpuStart = process.cpuUsage();
const rss0 = process.memoryUsage().rss;
let out: Measured;
if (SYSTEM === "beehive") out = await beehive();
else if (SYSTEM === "graphile-worker") out = await graphileWorker();
else if (SYSTEM === "pg-boss") out = await pgBoss();
else throw new RangeError(`Cannot run case: current value of --system is ${SYSTEM}`);
const cpu = process.cpuUsage(cpuStart);
console.log(JSON.stringify({
  system: SYSTEM,
  callers: CALLERS,
  workers: WORKERS,
  units: UNITS,
  ...out,
  cpuUsPerUnit: (cpu.user + cpu.system) / UNITS,
  floor: floorResult.rate,
  floorServerMsPerUnit: floorResult.serverMsPerUnit,
  floorCpuUsPerUnit: (cpu1.user + cpu1.system) / UNITS,
  rssGrowthMb: (process.memoryUsage().rss - rss0) / 2 ** 20,
}));
