/**
 * The multi-process benchmark, on real processes sharing one SQLite file:
 *
 * 1. Cross-process watch latency: a writer process creates objects at a
 *    steady pace, each stamped with `Date.now()` just before its create; a
 *    `watchList` in this process records when each arrives. p50 / p99 / max.
 * 2. Failover after SIGKILL: a candidate leads; a standby runs; the leader is
 *    killed; the time until the standby says it leads (bounded by
 *    leaseDuration + renewInterval).
 * 3. Failover after `stop()`: the leader stops (releasing its lease); the time
 *    until the standby leads (bounded by one renewInterval).
 * 4. Requeue → the leader's pass: a standby process calls `client.requeue`
 *    (a durable owed stamp); the time until the leader's pass over the object
 *    has run, each requeue at a random phase. p50 / p99 / max. The owed pass
 *    is an hour apart, so only the cross-process wake delivers them.
 *
 * Run: `deno task bench:multiprocess` (`--quick` for a smoke run,
 * `--requeue` for section 4 alone). Section 4 runs on PostgreSQL with
 * `BEEHIVE_TEST_STORE=postgres BEEHIVE_TEST_POSTGRES_URL=<url>` (the
 * replicas open the store as the tests do). Figures go in docs/performance.md.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { Beehive } from "../mod.ts";
import { openSqliteStore } from "../store/sqlite/mod.ts";
import { Job, Replica } from "../tests/multiprocess/_processes.ts";
import { openSqliteStore as openTestStore, testStore } from "../tests/_sqlite_driver.ts";

const QUICK = process.argv.includes("--quick");
const REQUEUE_ONLY = process.argv.includes("--requeue") || testStore === "postgres";
const REQUEUES = QUICK ? 30 : 300;
const WRITES = QUICK ? 100 : 500;
const FAILOVERS = QUICK ? 2 : 5;
const LEASE = { leaseDuration: 3_000, renewInterval: 1_000 };

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

async function withDb<T>(fn: (db: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "beehive-mpbench-"));
  try {
    const db = join(dir, "bench.db");
    await (await openSqliteStore(db)).close();
    return await fn(db);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function watchLatency(): Promise<number[]> {
  return await withDb(async (db) => {
    const store = await openSqliteStore(db);
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
  });
}

async function failover(how: "SIGKILL" | "stop"): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < FAILOVERS; i++) {
    times.push(
      await withDb(async (db) => {
        const a = new Replica({ db, role: "candidate", name: "a", ...LEASE });
        let b: Replica | undefined;
        try {
          await a.waitForEvent("leading");
          b = new Replica({ db, role: "candidate", name: "b", ...LEASE });
          await b.waitForEvent("candidate");
          // A random phase against the renewal cadence, as a real failure has.
          await new Promise((resolve) => setTimeout(resolve, Math.random() * LEASE.renewInterval));
          const t0 = Date.now();
          if (how === "SIGKILL") a.signal("SIGKILL");
          else a.send("stop");
          const led = await b.waitForEvent("leading", 30_000);
          return led.at - t0;
        } finally {
          await a.close();
          await b?.close();
        }
      }),
    );
  }
  return times.sort((x, y) => x - y);
}

/** Requeue latencies from a standby's `client.requeue` to the start of the leader's pass. */
async function requeueLatency(): Promise<number[]> {
  const dir = mkdtempSync(join(tmpdir(), "beehive-mpbench-"));
  const db = join(dir, "requeue.db");
  const slow = { ...LEASE, owedPassInterval: 3_600_000 };
  let a: Replica | undefined;
  let b: Replica | undefined;
  try {
    const store = await openTestStore(db);
    await store.close();
    a = new Replica({ db, role: "candidate", name: "a", ...slow });
    await a.waitForEvent("leading");
    b = new Replica({ db, role: "candidate", name: "b", ...slow });
    await b.waitForEvent("candidate");
    const creator = await openTestStore(db);
    try {
      await new Beehive(creator).client(Job).create("job", {});
    } finally {
      await creator.close();
    }
    await a.waitFor((e) => e.ev === "reconciled" && e.object === "job");
    const latencies: number[] = [];
    for (let i = 0; i < REQUEUES; i++) {
      // A random phase against the commit probe's cadence, and past the pass's conclusion.
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 60));
      const fromA = a.events.length;
      const fromB = b.events.length;
      b.send("requeue job");
      const sent = await b.waitForEvent("requeueing", 10_000, fromB);
      const ran = await a.waitFor(
        (e) => e.ev === "reconciled" && e.object === "job",
        10_000,
        fromA,
      );
      latencies.push(ran.at - sent.at);
    }
    return latencies.sort((x, y) => x - y);
  } finally {
    await a?.close();
    await b?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const cpu = cpus()[0]?.model ?? "unknown CPU";
console.log(`multi-process benchmark — ${new Date().toISOString()} — ${cpus().length} × ${cpu}`);
console.log("");
const rq = await requeueLatency();
console.log(
  `requeue from a standby process → the leader's pass (${testStore}), ${REQUEUES} requeues: p50 ${
    percentile(rq, 0.5)
  } ms, p99 ${percentile(rq, 0.99)} ms, max ${
    rq[rq.length - 1]
  } ms (target p99 ≤ 250 ms on SQLite)`,
);
if (REQUEUE_ONLY) process.exit(0);
const lat = await watchLatency();
console.log(
  `cross-process change → watch delivery, ${WRITES} creates paced 10 ms apart: p50 ${
    percentile(lat, 0.5)
  } ms, p99 ${percentile(lat, 0.99)} ms, max ${lat[lat.length - 1]} ms (target p99 ≤ 250 ms)`,
);
const { leaseDuration, renewInterval } = LEASE;
for (const how of ["SIGKILL", "stop"] as const) {
  const t = await failover(how);
  console.log(
    `failover after ${
      how === "stop" ? "stop() (lease released)" : "SIGKILL"
    }, leaseDuration ${leaseDuration} ms, renewInterval ${renewInterval} ms, ${FAILOVERS} runs: min ${
      t[0]
    } ms, median ${percentile(t, 0.5)} ms, max ${t[t.length - 1]} ms (bound ${
      how === "stop" ? renewInterval : leaseDuration + renewInterval
    } ms)`,
  );
}
