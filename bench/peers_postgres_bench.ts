/**
 * The PostgreSQL peers benchmark: `bench:peers`'s workload on one PostgreSQL
 * server, beehive against graphile-worker and pg-boss (the queues a user of
 * PostgreSQL would otherwise pick), with 1 caller and with 32 concurrent
 * callers. Every case runs in a fresh Node 22 process (`bench/peers/pg_case.ts`),
 * which first measures its own raw-`pg` floor (two commits a unit); rounds
 * alternate the order; each ratio is taken within one round, then the median
 * over rounds is reported, with client and server CPU a unit.
 *
 * Run: `BEEHIVE_TEST_POSTGRES_URL=… deno task bench:peers:postgres` (installs
 * `bench/peers/node_modules` first if the queues are missing; `--quick` for a
 * smoke run, `--rounds=N`, `--units=N`, 5,000 by default). The server must run
 * on this machine for server CPU (`/proc`). Figures go in docs/performance.md
 * ("Peers on PostgreSQL").
 *
 * @module
 */
import { existsSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";

const ARGS = Deno.args;
const QUICK = ARGS.includes("--quick");
const option = (name: string, fallback: string): string =>
  ARGS.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const ROUNDS = Number(option("rounds", QUICK ? "1" : "3"));
const UNITS = Number(option("units", QUICK ? "500" : "5000"));
const CALLERS = [1, 32];
/** Beehive's controller concurrency and the queues' worker concurrency, per caller count. */
const WORKERS: Record<number, number> = { 1: 1, 32: 8 };
const SYSTEMS = ["beehive", "graphile-worker", "pg-boss"] as const;
type System = typeof SYSTEMS[number];

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const NODE = `${ROOT}node_modules/.bin/node`;
const CASE = `${ROOT}bench/peers/pg_case.ts`;

if (!Deno.env.get("BEEHIVE_TEST_POSTGRES_URL")) {
  throw new Error("BEEHIVE_TEST_POSTGRES_URL is not set (bash scripts/postgres up)");
}

function setUp(): void {
  const peers = `${ROOT}bench/peers/node_modules`;
  if (existsSync(`${peers}/graphile-worker`) && existsSync(`${peers}/pg-boss`)) return;
  console.log("installing bench/peers/node_modules …");
  const { success } = new Deno.Command("bash", {
    args: [`${ROOT}bench/peers/setup`],
    stdout: "inherit",
    stderr: "inherit",
  }).outputSync();
  if (!success) throw new Error("bench/peers/setup failed");
}

interface Result {
  rate: number;
  floor: number;
  serverMsPerUnit: number;
  floorServerMsPerUnit: number;
  cpuUsPerUnit: number;
  floorCpuUsPerUnit: number;
  rssGrowthMb: number;
  /** beehive's passes (a unit's result is its status: a second pass writes no second result). */
  passes?: number;
}

async function run(system: System, callers: number): Promise<Result> {
  const args = [
    "--disable-warning=ExperimentalWarning",
    CASE,
    `--system=${system}`,
    `--callers=${callers}`,
    `--workers=${WORKERS[callers]}`,
    `--units=${UNITS}`,
  ];
  const out = await new Deno.Command(NODE, { args, cwd: ROOT }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  if (!out.success) {
    throw new Error(`${system} failed: ${new TextDecoder().decode(out.stderr)}${text}`);
  }
  return JSON.parse(text.split("\n").at(-1)!);
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

setUp();
const version = (command: string, args: string[]) =>
  new TextDecoder().decode(new Deno.Command(command, { args }).outputSync().stdout).trim();
console.log(
  `peers on PostgreSQL — ${new Date().toISOString()} — ${cpus().length} × ${
    cpus()[0]?.model ?? "unknown CPU"
  }; Node ${version(NODE, ["--version"])}; ${UNITS} units a case, ${ROUNDS} round(s), ` +
    `a fresh process a case; load average ${loadavg().map((x) => x.toFixed(1)).join(", ")}`,
);

const cases = CALLERS.flatMap((callers) => SYSTEMS.map((system) => ({ system, callers })));
const results = new Map<string, Result[]>();
const ratios = new Map<string, number[]>();
const push = <T>(m: Map<string, T[]>, k: string, v: T) => m.set(k, [...(m.get(k) ?? []), v]);
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? cases : [...cases].reverse();
  const got = new Map<string, Result>();
  for (const c of order) {
    const r = await run(c.system, c.callers);
    got.set(`${c.system}/${c.callers}`, r);
    push(results, `${c.system}/${c.callers}`, r);
  }
  for (const callers of CALLERS) {
    const b = got.get(`beehive/${callers}`)!;
    for (const peer of ["graphile-worker", "pg-boss"] as const) {
      const p = got.get(`${peer}/${callers}`)!;
      push(ratios, `${peer}/${callers}`, b.rate / p.rate);
      push(ratios, `${peer}/${callers}/floored`, (b.rate / b.floor) / (p.rate / p.floor));
    }
  }
  console.log(`(round ${round + 1} of ${ROUNDS} done)`);
}
console.log(`(load average at the end: ${loadavg().map((x) => x.toFixed(1)).join(", ")})`);
console.log("");
const fmt = (x: number) => Math.round(x).toLocaleString("en-US");
console.log(
  "Medians over rounds. Server and client CPU a unit in ms; the floor is raw pg, two commits a unit, in the same process:",
);
console.log("");
console.log(
  "| system | callers | units/s | ÷ own floor | server CPU a unit | floor's server CPU | client CPU a unit | client RSS growth |",
);
console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const c of cases) {
  const rs = results.get(`${c.system}/${c.callers}`)!;
  const m = (f: (r: Result) => number) => median(rs.map(f));
  console.log(
    `| ${c.system} | ${c.callers} | ${fmt(m((r) => r.rate))} | ${
      m((r) => r.rate / r.floor).toFixed(2)
    }× | ${m((r) => r.serverMsPerUnit).toFixed(2)} | ${
      m((r) => r.floorServerMsPerUnit).toFixed(2)
    } | ${(m((r) => r.cpuUsPerUnit) / 1000).toFixed(2)} | ${
      m((r) => r.rssGrowthMb).toFixed(0)
    } MB |`,
  );
}
console.log("");
console.log(
  "| callers | beehive ÷ graphile-worker | (÷ floors) | beehive ÷ pg-boss | (÷ floors) |",
);
console.log("| ---: | ---: | ---: | ---: | ---: |");
for (const callers of CALLERS) {
  const r = (k: string) => median(ratios.get(k)!).toFixed(2);
  console.log(
    `| ${callers} | ${r(`graphile-worker/${callers}`)}× | ${
      r(`graphile-worker/${callers}/floored`)
    }× | ${r(`pg-boss/${callers}`)}× | ${r(`pg-boss/${callers}/floored`)}× |`,
  );
}
const b1 = median(results.get("beehive/1")!.map((r) => r.rate));
const b32 = median(results.get("beehive/32")!.map((r) => r.rate));
console.log("");
console.log(`beehive's 32-caller rate ÷ its 1-caller rate: ${(b32 / b1).toFixed(2)}×`);
const passes = CALLERS.map((c) => results.get(`beehive/${c}`)!.map((r) => r.passes).join(", "));
console.log(
  `beehive's passes for ${UNITS} units (every unit's one result checked), by round: ` +
    CALLERS.map((c, i) => `${c} caller(s) ${passes[i]}`).join("; "),
);
