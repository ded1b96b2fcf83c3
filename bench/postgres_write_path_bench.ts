/**
 * Where a PostgreSQL create→settled spends its time: the workload of
 * `postgres_bench.ts` (N objects created by concurrent callers through a
 * `Client`, each settled by a controller pass), with every statement the
 * `pg` client sends timed from send to reply and sorted by what it does —
 * the counter lock (`BEGIN` and `SELECT … FOR UPDATE`), the commit (publish,
 * `NOTIFY`, `COMMIT`), savepoints, writes, and reads. Write transactions of
 * one open run one at a time on one connection, so the sum of their
 * statements' times against the wall time says how much of the run is that
 * one connection's round trips. With `BENCH_OPENS=2` the callers are split
 * over two opens of one schema (two replicas in one process; the second
 * only creates, the first runs the controller): their write transactions
 * then also wait on each other for the counter row, and the lock
 * statement's time is that wait.
 *
 *   BEEHIVE_TEST_POSTGRES_URL=... BENCH_N=1000 BENCH_C=32 [BENCH_OPENS=2] \
 *     deno run -A bench/postgres_write_path_bench.ts
 *
 * @module
 */
import process from "node:process";
import pg from "pg";
import { Beehive, settled } from "../mod.ts";
import { openPostgresStore } from "../store/postgres/mod.ts";

const url = process.env.BEEHIVE_TEST_POSTGRES_URL;
if (!url) throw new Error("BEEHIVE_TEST_POSTGRES_URL is not set");
const N = Number(process.env.BENCH_N ?? 1000);
const C = Number(process.env.BENCH_C ?? 32);
const OPENS = Number(process.env.BENCH_OPENS ?? 1);
const Thing = { group: "bench.beehive.dev", kind: "Thing" };

type Class = "counter lock" | "commit" | "savepoint" | "write" | "read";

function classify(text: string): Class {
  if (text.includes("FOR UPDATE") && text.startsWith("BEGIN")) return "counter lock";
  if (text.includes("pg_notify")) return "commit";
  if (/^(SAVEPOINT|RELEASE|ROLLBACK TO)/.test(text)) return "savepoint";
  if (/^(INSERT|UPDATE|DELETE|WITH)/.test(text)) return "write";
  return "read";
}

const spent = new Map<Class, { n: number; ms: number }>();
let counting = false;
const query = pg.Client.prototype.query;
// deno-lint-ignore no-explicit-any
(pg.Client.prototype as any).query = function (this: unknown, ...args: any[]) {
  // deno-lint-ignore no-explicit-any
  const result = (query as any).apply(this, args);
  if (!counting || !(result instanceof Promise)) return result;
  const a = args[0];
  const text: string = typeof a === "string" ? a : a?.text ?? "";
  const t0 = performance.now();
  const tally = () => {
    const c = classify(text.trimStart());
    const s = spent.get(c) ?? { n: 0, ms: 0 };
    s.n++;
    s.ms += performance.now() - t0;
    spent.set(c, s);
  };
  result.then(tally, tally);
  return result;
};

const schema = `bench_${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;
const stores = [];
for (let i = 0; i < OPENS; i++) stores.push(await openPostgresStore(url, { schema, max: 16 }));
let done = 0;
const all = Promise.withResolvers<void>();
const hives = stores.map((store) => {
  const bh = new Beehive(store);
  bh.register(Thing, () => {
    if (++done === N) all.resolve();
    return settled();
  }, { concurrency: 8 });
  return bh;
});
// One running Beehive per store in a process: the first open's runs the controller.
const stops = [await hives[0].start()];
const clients = hives.map((bh) => bh.client(Thing));
counting = true;
const t0 = performance.now();
let next = 0;
await Promise.all(Array.from({ length: C }, async (_, c) => {
  const client = clients[c % clients.length];
  while (next < N) {
    const i = next++;
    await client.create(`t${i}`, { i });
  }
}));
await all.promise;
while ((await stores[0].objects.listUnsettledIds(Thing)).length > 0) {
  await new Promise((r) => setTimeout(r, 5));
}
const wall = performance.now() - t0;
counting = false;
for (const stop of stops) await stop();
for (const store of stores) await store.close();

console.log(
  `${N} objects, ${C} callers, ${OPENS} open(s): ${(N / wall * 1000).toFixed(0)}/s, ` +
    `${(wall / N).toFixed(3)} ms each`,
);
console.log("| statements   | per object | ms per object | mean ms each | share of wall |");
console.log("| ------------ | ---------: | ------------: | -----------: | ------------: |");
let writer = 0;
for (const c of ["counter lock", "savepoint", "write", "commit", "read"] as Class[]) {
  const s = spent.get(c) ?? { n: 0, ms: 0 };
  if (c !== "read") writer += s.ms;
  console.log(
    `| ${c.padEnd(12)} | ${(s.n / N).toFixed(2)} | ${(s.ms / N).toFixed(3)} | ${
      (s.ms / Math.max(1, s.n)).toFixed(3)
    } | ${(s.ms / wall * 100).toFixed(0)}% |`,
  );
}
console.log(
  `write transactions' statements: ${(writer / N).toFixed(3)} ms per object, ` +
    `${(writer / wall / OPENS * 100).toFixed(0)}% of each open's wall time`,
);
