/**
 * The PostgreSQL store against a raw floor on the same server, written with
 * the same client: create→settled through a Beehive (a client create, then a
 * pass that settles it) vs the minimum statements for the same two writes
 * (insert the row and its log entry; record the observed generation and its
 * log entry; two transactions per object), with 1 and 32 concurrent callers;
 * the cross-replica wake latency (a commit in one open to `watchCommits` in
 * another); with real replica processes (`tests/multiprocess/_replica.ts` on
 * PostgreSQL), the cross-process watch latency (a paced writer process's
 * create to a `watchList` delivery here) and the failover time (SIGKILL of the
 * leader replica to the standby's first reconcile of a write made just after
 * the kill). Needs `BEEHIVE_TEST_POSTGRES_URL` (`bash scripts/postgres up`).
 *
 *   BEEHIVE_TEST_POSTGRES_URL=... deno run -A bench/postgres_bench.ts
 *
 * `BENCH_ONLY=replicas` runs only the replica-process measurements, `BENCH_ONLY=settled` only
 * create→settled.
 *
 * @module
 */
import process from "node:process";
import pg from "pg";
import { Beehive, settled } from "../mod.ts";
import { openPostgresStore } from "../store/postgres/mod.ts";
import { schemaForPath } from "../tests/_postgres.ts";
import { Job, Replica } from "../tests/multiprocess/_processes.ts";

const url = process.env.BEEHIVE_TEST_POSTGRES_URL;
if (!url) throw new Error("BEEHIVE_TEST_POSTGRES_URL is not set");
const N = Number(process.env.BENCH_N ?? 2000);
const Thing = { group: "bench.beehive.dev", kind: "Thing" };

function schema(): string {
  return `bench_${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
}

async function callers(n: number, total: number, fn: (i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < total) await fn(next++);
    }),
  );
}

async function engine(concurrency: number): Promise<number> {
  const store = await openPostgresStore(url!, { schema: schema(), max: 16 });
  const bh = new Beehive(store);
  let done = 0;
  const all = Promise.withResolvers<void>();
  bh.register(Thing, () => {
    if (++done === N) all.resolve();
    return settled();
  }, { concurrency: 8 });
  const stop = await bh.start();
  const things = bh.client(Thing);
  const t0 = performance.now();
  await callers(concurrency, N, async (i) => {
    await things.create(`t${i}`, { i });
  });
  await all.promise;
  // Settled means recorded: wait until no object is behind.
  while ((await store.objects.listUnsettledIds(Thing)).length > 0) {
    await new Promise((r) => setTimeout(r, 5));
  }
  const ms = performance.now() - t0;
  await stop();
  await store.close();
  return ms;
}

async function floor(concurrency: number): Promise<number> {
  const name = schema();
  // The schema, made by the store so the tables are the same.
  await (await openPostgresStore(url!, { schema: name })).close();
  const pool = new pg.Pool({ connectionString: url, max: 16, options: `-c search_path=${name}` });
  const t0 = performance.now();
  await callers(concurrency, N, async (i) => {
    const c = await pool.connect();
    try {
      const now = Date.now();
      await c.query("BEGIN");
      const r = await c.query(
        `INSERT INTO objects ("group", kind, name, spec, resource_version, created_at, updated_at)
         VALUES ($1, $2, $3, $4, 0, $5, $5) RETURNING id`,
        [Thing.group, Thing.kind, `t${i}`, JSON.stringify({ i }), now],
      );
      const id = r.rows[0].id;
      await c.query(
        `INSERT INTO object_writes (resource_version, object_id, "group", kind, op, written_at)
         VALUES ($1, $2, $3, $4, 1, $5)`,
        [2 * i + 1, id, Thing.group, Thing.kind, now],
      );
      await c.query("COMMIT");
      await c.query("BEGIN");
      await c.query("UPDATE objects SET observed_generation = 1, observed_at = $1 WHERE id = $2", [
        now,
        id,
      ]);
      await c.query(
        `INSERT INTO object_writes (resource_version, object_id, "group", kind, op, written_at)
         VALUES ($1, $2, $3, $4, 2, $5)`,
        [2 * i + 2, id, Thing.group, Thing.kind, now],
      );
      await c.query("COMMIT");
    } finally {
      c.release();
    }
  });
  const ms = performance.now() - t0;
  await pool.end();
  return ms;
}

async function wakeLatency(samples: number): Promise<number[]> {
  const name = schema();
  const a = await openPostgresStore(url!, { schema: name });
  const b = await openPostgresStore(url!, { schema: name });
  const out: number[] = [];
  let resolve: () => void = () => {};
  const off = b.watchCommits(() => resolve());
  for (let i = 0; i < samples; i++) {
    const heard = new Promise<void>((r) => resolve = r);
    const t0 = performance.now();
    await a.objects.create(Thing, { name: `w${i}`, spec: "{}" });
    await heard;
    out.push(performance.now() - t0);
  }
  off();
  await a.close();
  await b.close();
  return out.sort((x, y) => x - y);
}

/** A shared "file" for replica processes: on PostgreSQL (tests/_sqlite_driver.ts) a schema. */
function replicaDb(): string {
  return `/postgres-bench/${crypto.randomUUID()}`;
}

function openReplicaStore(db: string) {
  return openPostgresStore(url!, { schema: schemaForPath(db) });
}

const WRITES = Number(process.env.BENCH_WRITES ?? 500);
const FAILOVERS = Number(process.env.BENCH_FAILOVERS ?? 5);
const LEASE = { leaseDuration: 3_000, renewInterval: 1_000 };

async function watchLatency(): Promise<number[]> {
  const db = replicaDb();
  const store = await openReplicaStore(db);
  const writer = new Replica({ db, role: "pacer", name: "pacer", count: WRITES, paceMs: 10 });
  try {
    const jobs = new Beehive(store).client<{ t: number }>(Job);
    const watch = await jobs.watchList();
    await writer.waitForEvent("ready");
    writer.send("write");
    const latencies: number[] = [];
    for await (const change of watch) {
      if (change.object !== undefined) latencies.push(Date.now() - change.object.spec.t);
      if (latencies.length >= WRITES) break;
    }
    return latencies.sort((a, b) => a - b);
  } finally {
    await writer.close();
    await store.close();
  }
}

/** SIGKILL of the leader → the standby leads, and → it reconciles a Job created right after. */
async function failover(): Promise<{ leading: number[]; reconciled: number[] }> {
  const leading: number[] = [];
  const reconciled: number[] = [];
  for (let i = 0; i < FAILOVERS; i++) {
    const db = replicaDb();
    const store = await openReplicaStore(db);
    const a = new Replica({ db, role: "candidate", name: "a", ...LEASE });
    let b: Replica | undefined;
    try {
      await a.waitForEvent("leading");
      b = new Replica({ db, role: "candidate", name: "b", ...LEASE });
      await b.waitForEvent("candidate");
      const jobs = new Beehive(store).client(Job);
      await jobs.create("before", {});
      await a.waitForEvent("reconciled");
      // A random phase against the renewal cadence, as a real failure has.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * LEASE.renewInterval));
      const t0 = Date.now();
      a.signal("SIGKILL");
      await jobs.create("after-kill", {});
      const led = await b.waitForEvent("leading", 30_000);
      const done = await b.waitFor(
        (e) => e.ev === "reconciled" && e.object === "after-kill",
        30_000,
      );
      leading.push(led.at - t0);
      reconciled.push(done.at - t0);
    } finally {
      await a.close();
      await b?.close();
      await store.close();
    }
  }
  return { leading: leading.sort((x, y) => x - y), reconciled: reconciled.sort((x, y) => x - y) };
}

const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor(xs.length * p))];

// The replica processes open their stores through tests/_sqlite_driver.ts: on this database.
process.env.BEEHIVE_TEST_STORE = "postgres";
process.env.BEEHIVE_TEST_POSTGRES_URL = url;
const only = process.env.BENCH_ONLY;

for (const c of only === "replicas" ? [] : [1, 32]) {
  const f = await floor(c);
  const e = await engine(c);
  console.log(
    `create→settled, ${c} caller(s), ${N} objects: engine ${(N / e * 1000).toFixed(0)}/s ` +
      `(${(e / N).toFixed(3)} ms each), raw floor ${(N / f * 1000).toFixed(0)}/s ` +
      `(${(f / N).toFixed(3)} ms each), ratio ${(e / f).toFixed(2)}×`,
  );
}
if (only === "settled") process.exit(0);
const lat = only === "replicas" ? [] : await wakeLatency(300);
if (lat.length > 0) {
  console.log(
    `cross-replica wake (commit in one open → watchCommits in another, commit included): ` +
      `p50 ${pct(lat, 0.5).toFixed(2)} ms, p99 ${pct(lat, 0.99).toFixed(2)} ms, max ${
        lat[lat.length - 1].toFixed(2)
      } ms`,
  );
}
const wl = await watchLatency();
console.log(
  `cross-process change → watch delivery (a writer process, ${WRITES} creates paced 10 ms apart): ` +
    `p50 ${pct(wl, 0.5)} ms, p99 ${pct(wl, 0.99)} ms, max ${wl[wl.length - 1]} ms`,
);
const fo = await failover();
console.log(
  `failover after SIGKILL of the leader, leaseDuration ${LEASE.leaseDuration} ms, renewInterval ` +
    `${LEASE.renewInterval} ms, ${FAILOVERS} runs: standby leads min ${fo.leading[0]} / median ${
      pct(fo.leading, 0.5)
    } / max ${fo.leading[fo.leading.length - 1]} ms; first reconcile (of a write made just after ` +
    `the kill) min ${fo.reconciled[0]} / median ${pct(fo.reconciled, 0.5)} / max ${
      fo.reconciled[fo.reconciled.length - 1]
    } ms`,
);
