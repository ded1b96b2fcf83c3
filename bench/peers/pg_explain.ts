/**
 * Where a unit's time goes on PostgreSQL, for the peers workload
 * (`bench/peers/pg_case.ts`'s beehive case): round trips, queries and
 * statements a unit (counted on the client; a query sent while another on its
 * connection is unanswered adds no round trip), the transactions and commits a unit, the
 * client's wait for the commit-ordered counter row (the `BEGIN; SELECT … FOR
 * UPDATE` round trip) against its other round trips, commit notifications
 * heard, and, where the server has `pg_stat_statements` loaded
 * (`shared_preload_libraries`; a throwaway cluster, `bash scripts/postgres
 * cluster-up`, can), each statement's calls, server time and rows a unit.
 *
 * Run: `BEEHIVE_TEST_POSTGRES_URL=… node --disable-warning=ExperimentalWarning
 * bench/peers/pg_explain.ts --callers=32 --workers=8` (`--units=N`, 2,000 by default).
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
const CALLERS = Number(arg("callers", "1"));
const WORKERS = Number(arg("workers", "1"));
const UNITS = Number(arg("units", "2000"));

/**
 * Queries by kind of statement text, with their client-side time: `behind`
 * counts those sent while an earlier query on the same connection was
 * unanswered (pipelined), which add no round trip of their own.
 */
const trips = new Map<
  string,
  { n: number; behind: number; ms: number; statements: number }
>();
/** Queries sent and not yet answered, by connection. */
const unanswered = new WeakMap<object, number>();
const proto = pg.Client.prototype as unknown as {
  query: (...args: unknown[]) => unknown;
};
const original = proto.query;
let counting = false;

/** A short label for a statement text: its first words, literals and numbers blanked. */
function label(text: string): string {
  return text.replace(/'[^']*'/g, "'…'").replace(/\b\d+\b/g, "N").replace(
    /\s+/g,
    " ",
  ).trim()
    .slice(0, 100);
}

proto.query = function (this: object, ...args: unknown[]) {
  const q = args[0] as string | { text?: string } | undefined;
  const text = typeof q === "string" ? q : q?.text;
  const result = original.apply(this, args);
  if (
    !counting || text === undefined ||
    typeof (result as Promise<unknown>)?.then !== "function"
  ) {
    return result;
  }
  const t0 = performance.now();
  const statements = typeof q === "string" ? text.split(";").filter((s) => s.trim()).length : 1;
  const key = label(text);
  const open = unanswered.get(this) ?? 0;
  unanswered.set(this, open + 1);
  const answered = () => void unanswered.set(this, unanswered.get(this)! - 1);
  return (result as Promise<unknown>).then((r) => {
    answered();
    const e = trips.get(key) ?? { n: 0, behind: 0, ms: 0, statements };
    e.n++;
    if (open > 0) e.behind++;
    e.ms += performance.now() - t0;
    trips.set(key, e);
    return r;
  }, (error) => {
    answered();
    throw error;
  });
};

const schema = `explain_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
const admin = new pg.Client({ connectionString: URL_ });
await admin.connect();
const statStatements = await admin.query(
  "SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'",
).then((r) => r.rowCount === 1).catch(() => false);

const store = await openPostgresStore(URL_, { schema });
let notified = 0;
const stopWatching = store.watchCommits(() => notified++);
const { client, stop, passes, reached } = await startPeersBeehive(store, WORKERS);
// Warm-up: the statements are named and planned before the count starts.
for (let i = 0; i < 50; i++) await client.create(`warm-${i}`, FLOOR_SPEC);
await reached(50);
const warm = passes();
if (statStatements) await admin.query("SELECT pg_stat_statements_reset()");
counting = true;
notified = 0;
const t0 = performance.now();
let next = 0;
await Promise.all(Array.from({ length: CALLERS }, async () => {
  while (next < UNITS) await client.create(`item-${next++}`, FLOOR_SPEC);
}));
await reached(warm + UNITS);
const ms = performance.now() - t0;
counting = false;
await stop();
stopWatching();

const per = (x: number) => (x / UNITS).toFixed(2);
let queries = 0;
let roundTrips = 0;
let statements = 0;
let commits = 0;
for (const [text, e] of trips) {
  queries += e.n;
  roundTrips += e.n - e.behind;
  statements += e.n * e.statements;
  if (/\bCOMMIT\s*$/i.test(text)) commits += e.n;
}
console.log(
  `${UNITS} units, ${CALLERS} caller(s), concurrency ${WORKERS}: ${
    (UNITS / (ms / 1000)).toFixed(0)
  } units/s; a unit: ${per(roundTrips)} round trips, ${per(queries)} queries, ${
    per(statements)
  } statements, ${per(commits)} commits; ${per(notified)} commit notifications heard`,
);
console.log("");
console.log(
  "| query | a unit | of them sent behind another | client ms each |",
);
console.log("| --- | ---: | ---: | ---: |");
for (const [text, e] of [...trips].sort((a, b) => b[1].n - a[1].n)) {
  console.log(
    `| \`${text}\` | ${per(e.n)} | ${per(e.behind)} | ${(e.ms / e.n).toFixed(2)} |`,
  );
}
if (statStatements) {
  const { rows } = await admin.query(
    `SELECT query, calls, total_exec_time AS ms, rows FROM pg_stat_statements
     WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND query NOT LIKE '%pg_stat_statements%'
     ORDER BY total_exec_time DESC LIMIT 25`,
  );
  let total = 0;
  for (const r of rows) total += Number(r.ms);
  console.log("");
  console.log(
    `server execution time a unit (pg_stat_statements): ${(total / UNITS).toFixed(3)} ms`,
  );
  console.log("");
  console.log(
    "| statement (server) | calls a unit | server µs a call | rows a call |",
  );
  console.log("| --- | ---: | ---: | ---: |");
  for (const r of rows) {
    console.log(
      `| \`${label(r.query)}\` | ${per(Number(r.calls))} | ${
        (Number(r.ms) * 1000 / Number(r.calls)).toFixed(0)
      } | ${(Number(r.rows) / Number(r.calls)).toFixed(2)} |`,
    );
  }
} else {
  console.log(
    "(no pg_stat_statements on this server: server time per statement not measured)",
  );
}
await store.close();
await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
await admin.end();
