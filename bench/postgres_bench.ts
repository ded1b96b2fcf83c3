/**
 * The PostgreSQL store against a raw floor on the same server, written with
 * the same client: create→settled through a Beehive (a client create, then a
 * pass that settles it) vs the minimum statements for the same two writes
 * (insert the row and its log entry; record the observed generation and its
 * log entry; two transactions per object), with 1 and 32 concurrent callers;
 * and the cross-replica wake latency (a commit in one open to `watchCommits`
 * in another). Needs `BEEHIVE_TEST_POSTGRES_URL` (`bash scripts/postgres up`).
 *
 *   BEEHIVE_TEST_POSTGRES_URL=... deno run -A bench/postgres_bench.ts
 *
 * @module
 */
import process from "node:process";
import pg from "pg";
import { Beehive, settled } from "../mod.ts";
import { openPostgresStore } from "../store/postgres/mod.ts";

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

const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor(xs.length * p))];

for (const c of [1, 32]) {
  const f = await floor(c);
  const e = await engine(c);
  console.log(
    `create→settled, ${c} caller(s), ${N} objects: engine ${(N / e * 1000).toFixed(0)}/s ` +
      `(${(e / N).toFixed(3)} ms each), raw floor ${(N / f * 1000).toFixed(0)}/s ` +
      `(${(f / N).toFixed(3)} ms each), ratio ${(e / f).toFixed(2)}×`,
  );
}
const lat = await wakeLatency(300);
console.log(
  `cross-replica wake (commit in one open → watchCommits in another, commit included): ` +
    `p50 ${pct(lat, 0.5).toFixed(2)} ms, p99 ${pct(lat, 0.99).toFixed(2)} ms, max ${
      lat[lat.length - 1].toFixed(2)
    } ms`,
);
