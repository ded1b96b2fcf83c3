/**
 * The labels benchmark.
 *
 * 1. Selector list: 100,000 objects of one kind, 1% labelled `app=web` (the
 *    rest `app=other` and spread over `tier`), listed with
 *    `client.list({ labelSelector: "app=web" })`, beside a read of the whole
 *    kind filtered in memory (what a selector would cost without the index).
 *    Rows read come from the query plan: SQLite's `EXPLAIN QUERY PLAN`, and on
 *    PostgreSQL (`BEEHIVE_BENCH_POSTGRES_URL` set) `EXPLAIN ANALYZE`'s actual rows.
 * 2. Create→settled: n objects created through a Client and settled by a no-op
 *    controller, with three labels each against none, alternating A, B, A, B
 *    so load from other processes hits both alike; one caller (a commit per
 *    object) and sixteen (creates share group commits).
 *
 * Run: `deno run -A bench/labels_bench.ts` (`--quick` for a smoke run).
 * Figures go in docs/performance.md.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { DatabaseSync } from "node:sqlite";
import { Beehive, type GroupKind, settled } from "../mod.ts";
import { openSqliteStore } from "../store/sqlite/mod.ts";
import { openPostgresStore } from "../store/postgres/mod.ts";
import type { Store } from "../src/store.ts";
import { matchesLabels, parseLabelSelector } from "../src/model/label_selector.ts";

const QUICK = process.argv.includes("--quick");
const OBJECTS = QUICK ? 10_000 : 100_000;
const LIST_REPEATS = QUICK ? 5 : 15;
const SETTLE_OBJECTS = QUICK ? 500 : 2_000;
const SETTLE_ROUNDS = QUICK ? 2 : 4;
const Kind: GroupKind = { group: "bench.beehive.dev", kind: "Labelled" };
const SPEC = JSON.stringify({ image: "example.com/app:1.0", replicas: 3 });
const LABELS = { app: "web", tier: "front", "example.com/team": "shop" };
const SELECTOR = "app=web";

function tempFile(): { path: string; done: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "beehive-labels-bench-"));
  return { path: join(dir, "bench.db"), done: () => rmSync(dir, { recursive: true, force: true }) };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Fills the kind: every 100th object `app=web`, the rest `app=other` over ten tiers. */
async function fill(store: Store): Promise<void> {
  const BATCH = 1_000;
  for (let i = 0; i < OBJECTS; i += BATCH) {
    await store.within(async (tx) => {
      for (let j = i; j < Math.min(i + BATCH, OBJECTS); j++) {
        const labels = j % 100 === 0
          ? { app: "web", tier: `t${j % 10}` }
          : { app: "other", tier: `t${j % 10}` };
        await tx.objects.create(Kind, { name: `o-${j}`, spec: SPEC, labels });
      }
    });
  }
}

async function timeList(store: Store): Promise<{ indexed: number; scanned: number; n: number }> {
  const client = new Beehive(store).client(Kind);
  const reqs = parseLabelSelector(SELECTOR)!;
  const indexed: number[] = [];
  const scanned: number[] = [];
  let n = 0;
  for (let i = 0; i < LIST_REPEATS; i++) {
    let t0 = performance.now();
    n = (await client.list({ labelSelector: SELECTOR })).length;
    indexed.push(performance.now() - t0);
    t0 = performance.now();
    const all = await client.list();
    const kept = all.filter((o) => matchesLabels(reqs, o.labels)).length;
    scanned.push(performance.now() - t0);
    if (kept !== n) throw new Error(`the index found ${n}, the scan ${kept}`);
  }
  return { indexed: median(indexed), scanned: median(scanned), n };
}

const SELECT_SQL = (p: (i: number) => string) =>
  `SELECT * FROM objects WHERE label_set IN (SELECT set_id FROM label_set_entries
     WHERE "group" = ${p(1)} AND kind = ${p(2)} AND key = ${p(3)} AND value = ${p(4)})
   AND id > 0 ORDER BY id`;

async function sqliteList(): Promise<void> {
  const { path, done } = tempFile();
  try {
    const store = await openSqliteStore(path);
    const t0 = performance.now();
    await fill(store);
    const fillMs = performance.now() - t0;
    const r = await timeList(store);
    await store.close();
    const db = new DatabaseSync(path);
    const plan = db.prepare(`EXPLAIN QUERY PLAN ${SELECT_SQL(() => "?")}`)
      .all(Kind.group, Kind.kind, "app", "web").map((row) => String(row.detail));
    const entries = Number(
      db.prepare(
        `SELECT COUNT(*) AS n FROM label_set_entries WHERE "group" = ? AND kind = ? AND key = ? AND value = ?`,
      ).get(Kind.group, Kind.kind, "app", "web")!.n,
    );
    db.close();
    console.log(
      `SQLite: ${OBJECTS} objects (filled in ${(fillMs / 1000).toFixed(1)} s), ` +
        `list ${SELECTOR} → ${r.n}: ${r.indexed.toFixed(1)} ms (median of ${LIST_REPEATS}); ` +
        `whole kind filtered in memory: ${r.scanned.toFixed(1)} ms`,
    );
    console.log(
      `  rows read: ${entries} label set(s), then ${r.n} index entries and rows by id; plan: ${
        plan.join(" | ")
      }`,
    );
  } finally {
    done();
  }
}

const PG_SCHEMA = `labels_bench_${process.pid}`;

async function postgresList(url: string): Promise<void> {
  const store = await openPostgresStore(url, { schema: PG_SCHEMA });
  try {
    const t0 = performance.now();
    await fill(store);
    const fillMs = performance.now() - t0;
    const r = await timeList(store);
    console.log(
      `PostgreSQL: ${OBJECTS} objects (filled in ${(fillMs / 1000).toFixed(1)} s), ` +
        `list ${SELECTOR} → ${r.n}: ${r.indexed.toFixed(1)} ms (median of ${LIST_REPEATS}); ` +
        `whole kind filtered in memory: ${r.scanned.toFixed(1)} ms`,
    );
  } finally {
    await store.close();
  }
  // The plan, read through pg directly: actual rows per node.
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`SET search_path TO "${PG_SCHEMA}"`);
    const plan = await client.query(
      `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ${SELECT_SQL((i) => `$${i}`)}`,
      [Kind.group, Kind.kind, "app", "web"],
    );
    console.log(`  plan:\n    ${plan.rows.map((row) => row["QUERY PLAN"]).join("\n    ")}`);
  } finally {
    await client.query(`DROP SCHEMA "${PG_SCHEMA}" CASCADE`);
    await client.end();
  }
}

/** Creates n objects (with `labels`) and resolves to objects/s until a no-op controller settled them. */
async function settleRate(
  labels: Record<string, string> | undefined,
  callers: number,
): Promise<number> {
  const { path, done } = tempFile();
  const store = await openSqliteStore(path);
  try {
    const bh = new Beehive(store);
    let passes = 0;
    const all = Promise.withResolvers<void>();
    bh.register(Kind, () => {
      if (++passes === SETTLE_OBJECTS) all.resolve();
      return settled();
    });
    const stop = await bh.start();
    const client = bh.client(Kind);
    const t0 = performance.now();
    let next = 0;
    await Promise.all(Array.from({ length: callers }, async () => {
      while (next < SETTLE_OBJECTS) {
        await client.create(`item-${next++}`, SPEC, labels === undefined ? undefined : { labels });
      }
    }));
    await all.promise;
    await stop();
    return SETTLE_OBJECTS / ((performance.now() - t0) / 1000);
  } finally {
    await store.close();
    done();
  }
}

async function createSettled(callers: number): Promise<void> {
  const bare: number[] = [];
  const labelled: number[] = [];
  for (let i = 0; i < SETTLE_ROUNDS; i++) {
    bare.push(await settleRate(undefined, callers));
    labelled.push(await settleRate(LABELS, callers));
  }
  const a = median(bare);
  const b = median(labelled);
  console.log(
    `create→settled, ${SETTLE_OBJECTS} objects, ${callers} caller(s), median of ${SETTLE_ROUNDS} alternating rounds: ` +
      `no labels ${a.toFixed(0)}/s, three labels ${b.toFixed(0)}/s (${
        ((b / a - 1) * 100).toFixed(1)
      }%)`,
  );
  console.log(
    `  rounds: none ${bare.map((x) => x.toFixed(0)).join(", ")}; three ${
      labelled.map((x) => x.toFixed(0)).join(", ")
    }`,
  );
}

await sqliteList();
const pgUrl = process.env.BEEHIVE_BENCH_POSTGRES_URL;
if (pgUrl !== undefined) await postgresList(pgUrl);
await createSettled(1);
await createSettled(16);
