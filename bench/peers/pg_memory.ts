/**
 * The PostgreSQL store's client memory over a long run: the peers workload
 * (`bench/peers/pg_case.ts`'s beehive case) for `--units` units in steps of
 * `--step`, printing the process's RSS and V8 heap after each step (after a
 * full collection, `--expose-gc`), so growth that is held (a leak) shows apart
 * from growth the collector takes back.
 *
 * Run: `BEEHIVE_TEST_POSTGRES_URL=… node --expose-gc --disable-warning=ExperimentalWarning
 * bench/peers/pg_memory.ts --units=50000 --callers=32 --workers=8`.
 *
 * @module
 */
import process from "node:process";
import pg from "../_pg.ts";
import { openPostgresStore } from "../../store/postgres/mod.ts";
import { FLOOR_SPEC } from "../_floor.ts";
import { startPeersBeehive } from "./_pg_beehive.ts";

const arg = (name: string, fallback: string): string =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(
    name.length + 3,
  ) ?? fallback;
const URL_ = process.env.BEEHIVE_TEST_POSTGRES_URL ?? "";
if (URL_ === "") throw new Error("BEEHIVE_TEST_POSTGRES_URL is not set");
const UNITS = Number(arg("units", "50000"));
const STEP = Number(arg("step", "5000"));
const CALLERS = Number(arg("callers", "32"));
const WORKERS = Number(arg("workers", "8"));
const gc = (globalThis as { gc?: () => void }).gc;

const schema = `memory_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
const store = await openPostgresStore(URL_, { schema });
const { client, stop, reached } = await startPeersBeehive(store, WORKERS);
const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
console.log(
  "| units | units/s in the step | RSS MB | heap used MB | external MB |",
);
console.log("| ---: | ---: | ---: | ---: | ---: |");
let next = 0;
for (let done = 0; done < UNITS; done += STEP) {
  const target = done + STEP;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CALLERS }, async () => {
    while (next < target) await client.create(`item-${next++}`, FLOOR_SPEC);
  }));
  await reached(target);
  const rate = STEP / ((performance.now() - t0) / 1000);
  gc?.();
  const m = process.memoryUsage();
  console.log(
    `| ${target} | ${rate.toFixed(0)} | ${mb(m.rss)} | ${mb(m.heapUsed)} | ${mb(m.external)} |`,
  );
}
await stop();
await store.close();
const admin = new pg.Client({ connectionString: URL_ });
await admin.connect();
await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
await admin.end();
