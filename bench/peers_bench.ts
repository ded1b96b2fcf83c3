/**
 * The peers benchmark: one workload on beehive, plainjob (a SQLite job queue,
 * npm `plainjobs` over better-sqlite3) and a Deno KV queue, with 1 caller and
 * with 32 concurrent callers, beside beehive's raw two-commit floor and a
 * minimal two-commit floor (a table with only its primary key and name key)
 * measured in the same run.
 *
 * The workload: each unit is durably recorded in its own commit, then processed
 * once by a handler that makes one durable result write (`bench/peers/case.ts`
 * has each system's version). Every case runs in a fresh process; rounds
 * alternate the order, and each ratio is taken within one round, then the
 * median over rounds is reported.
 *
 * Run: `deno task bench:peers` (installs `bench/peers/node_modules` first if it
 * is missing; `--quick` for a smoke run, `--rounds=N`, `--units=N[,M…]` (10,000 and 20,000 by
 * default, a table each), `--no-denokv`). plainjob runs over better-sqlite3 on Node and over
 * `node:sqlite` on both runtimes, so beehive meets it on the same runtime and driver. Figures go
 * in docs/performance.md ("Peers").
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
/**
 * Units a case, one table each: 10,000 and 20,000 by default. Every system's
 * first few thousand units run while the JIT is still compiling it (beehive's,
 * the largest code, for about 3,000), so 5,000 (`--units=5000`) mostly
 * measures start-up.
 */
const UNIT_COUNTS = option("units", QUICK ? "1000" : "10000,20000").split(",").map(Number);
/** `--no-denokv`: leaves Deno KV out (its cases take most of a round's time). */
const DENOKV = !ARGS.includes("--no-denokv");
const CALLERS = [1, 32];
/** Beehive's controller concurrency and plainjob's worker count, per caller count. */
const WORKERS: Record<number, number> = { 1: 1, 32: 8 };

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const DENO = `${ROOT}node_modules/.bin/deno`;
const NODE = `${ROOT}node_modules/.bin/node`;
const CASE = `${ROOT}bench/peers/case.ts`;

type System = "floor" | "minimal" | "beehive" | "plainjob" | "plainjob-sqlite" | "denokv";
type Runtime = "deno" | "node";
interface Case {
  readonly system: System;
  readonly runtime: Runtime;
  readonly callers: number;
}

function setUp(): void {
  const built = `${ROOT}bench/peers/node_modules/better-sqlite3/build/Release/better_sqlite3.node`;
  if (existsSync(built) && existsSync(`${ROOT}bench/peers/node_modules/plainjobs`)) return;
  console.log("installing bench/peers/node_modules (builds better-sqlite3 from source) …");
  const { success } = new Deno.Command("bash", {
    args: [`${ROOT}bench/peers/setup`],
    stdout: "inherit",
    stderr: "inherit",
  }).outputSync();
  if (!success) throw new Error("bench/peers/setup failed");
}

async function run(c: Case, units: number): Promise<Record<string, unknown>> {
  const args = [
    CASE,
    `--system=${c.system}`,
    `--callers=${c.callers}`,
    `--workers=${WORKERS[c.callers]}`,
    `--units=${units}`,
  ];
  const [command, prefix] = c.runtime === "deno"
    ? [DENO, ["run", "-A", "--unstable-kv"]]
    : [NODE, ["--disable-warning=ExperimentalWarning"]];
  const out = await new Deno.Command(command, { args: [...prefix, ...args], cwd: ROOT }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  if (!out.success) {
    throw new Error(
      `${c.system} on ${c.runtime} failed: ${new TextDecoder().decode(out.stderr)}${text}`,
    );
  }
  return JSON.parse(text.split("\n").at(-1)!);
}

function version(command: string, args: string[]): string {
  const out = new Deno.Command(command, { args }).outputSync();
  return new TextDecoder().decode(out.stdout).trim().split("\n")[0];
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const key = (c: Case) => `${c.system}/${c.runtime}/${c.callers}`;

setUp();
const cases: Case[] = [
  { system: "floor", runtime: "deno", callers: 1 },
  { system: "floor", runtime: "node", callers: 1 },
  { system: "minimal", runtime: "deno", callers: 1 },
  { system: "minimal", runtime: "node", callers: 1 },
];
for (const callers of CALLERS) {
  cases.push(
    { system: "beehive", runtime: "deno", callers },
    { system: "beehive", runtime: "node", callers },
    { system: "plainjob", runtime: "node", callers },
    { system: "plainjob-sqlite", runtime: "deno", callers },
    { system: "plainjob-sqlite", runtime: "node", callers },
  );
  if (DENOKV) cases.push({ system: "denokv", runtime: "deno", callers });
}

console.log(
  `peers benchmark — ${new Date().toISOString()} — ${cpus().length} × ${
    cpus()[0]?.model ?? "unknown CPU"
  }`,
);
console.log(
  `${version(DENO, ["--version"])}; Node ${version(NODE, ["--version"])}; ${
    UNIT_COUNTS.join(" and ")
  } units a case, ${ROUNDS} round(s), a fresh process a case; load average ${
    loadavg().map((x) => x.toFixed(1)).join(", ")
  }`,
);

for (const units of UNIT_COUNTS) await measure(units);

async function measure(units: number): Promise<void> {
  const rates = new Map<string, number[]>();
  /** CPU µs a unit (every thread of the case's process): steadier than rates on a shared machine. */
  const cpu = new Map<string, number[]>();
  const ratios = new Map<string, number[]>();
  const notes = new Map<string, string>();
  const pushTo = (m: Map<string, number[]>, k: string, v: number) =>
    m.set(k, [...(m.get(k) ?? []), v]);
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? cases : [...cases].reverse();
    const got = new Map<string, number>();
    for (const c of order) {
      const result = await run(c, units);
      got.set(key(c), result.rate as number);
      pushTo(rates, key(c), result.rate as number);
      pushTo(cpu, key(c), result.cpuUsPerUnit as number);
      if (c.system === "plainjob" || c.system === "plainjob-sqlite") {
        notes.set(
          `${c.system}/${c.runtime}`,
          `${c.system} on ${c.runtime}: SQLite ${result.sqlite}, synchronous = ${result.synchronous}`,
        );
      }
      if (c.system === "denokv") {
        notes.set("denokv", `Deno KV file journal_mode = ${result.journalMode}`);
      }
    }
    for (const c of cases) {
      const floor = got.get(`floor/${c.runtime}/1`)!;
      pushTo(ratios, key(c), got.get(key(c))! / floor);
    }
    for (const callers of CALLERS) {
      const g = (s: System, r: Runtime) => got.get(`${s}/${r}/${callers}`)!;
      const beehive = (r: Runtime) => g("beehive", r);
      pushTo(ratios, `vs plainjob/node/${callers}`, beehive("node") / g("plainjob", "node"));
      pushTo(
        ratios,
        `vs plainjob-sqlite/node/${callers}`,
        beehive("node") / g("plainjob-sqlite", "node"),
      );
      pushTo(
        ratios,
        `vs plainjob-sqlite/deno/${callers}`,
        beehive("deno") / g("plainjob-sqlite", "deno"),
      );
      pushTo(ratios, `vs plainjob/deno/${callers}`, beehive("deno") / g("plainjob", "node"));
      for (const r of ["deno", "node"] as const) {
        pushTo(ratios, `vs minimal/${r}/${callers}`, beehive(r) / got.get(`minimal/${r}/1`)!);
      }
      if (DENOKV) {
        pushTo(ratios, `vs denokv/deno/${callers}`, beehive("deno") / g("denokv", "deno"));
      }
    }
    console.log(`(${units} units: round ${round + 1} of ${ROUNDS} done)`);
  }
  for (const note of notes.values()) console.log(`(${note})`);
  console.log(`(load average at the end: ${loadavg().map((x) => x.toFixed(1)).join(", ")})`);
  console.log("");

  const fmt = (x: number) => Math.round(x).toLocaleString("en-US");
  const pct = (x: number) => `${Math.round(x * 100)}%`;
  console.log(
    `${units} units a case. Median units/s, and the ratio to beehive's raw floor on the same runtime in the same round:`,
  );
  console.log("");
  console.log("| system | runtime | units/s, 1 caller | ÷ floor | units/s, 32 callers | ÷ floor |");
  console.log("| --- | --- | ---: | ---: | ---: | ---: |");
  const rows: [System, Runtime][] = [
    ["floor", "deno"],
    ["floor", "node"],
    ["minimal", "deno"],
    ["minimal", "node"],
    ["beehive", "deno"],
    ["beehive", "node"],
    ["plainjob", "node"],
    ["plainjob-sqlite", "deno"],
    ["plainjob-sqlite", "node"],
    ...(DENOKV ? [["denokv", "deno"] as [System, Runtime]] : []),
  ];
  for (const [system, runtime] of rows) {
    const cell = (callers: number) => {
      // The floors have one caller.
      if ((system === "floor" || system === "minimal") && callers !== 1) return "— | —";
      const k = `${system}/${runtime}/${callers}`;
      return `${fmt(median(rates.get(k)!))} | ${pct(median(ratios.get(k)!))}`;
    };
    const label = system === "plainjob"
      ? "plainjob (better-sqlite3)"
      : system === "plainjob-sqlite"
      ? "plainjob (node:sqlite)"
      : system === "minimal"
      ? "minimal floor"
      : system;
    console.log(`| ${label} | ${runtime} | ${cell(1)} | ${cell(32)} |`);
  }
  console.log("");
  console.log("Median CPU µs a unit (user + system, every thread of the case's process):");
  console.log("");
  console.log("| system | runtime | 1 caller | 32 callers |");
  console.log("| --- | --- | ---: | ---: |");
  for (const [system, runtime] of rows) {
    const cell = (callers: number) => {
      if ((system === "floor" || system === "minimal") && callers !== 1) return "—";
      return median(cpu.get(`${system}/${runtime}/${callers}`)!).toFixed(1);
    };
    console.log(`| ${system} | ${runtime} | ${cell(1)} | ${cell(32)} |`);
  }
  console.log("");
  console.log(
    "Targets (median of the per-round ratios; the range is the lowest and highest round):",
  );
  console.log("");
  console.log("| comparison | callers | ratio | range | target | verdict |");
  console.log("| --- | ---: | ---: | ---: | ---: | --- |");
  const target = (label: string, k: string, callers: number, bar?: number) => {
    const rs = ratios.get(`${k}/${callers}`)!;
    const r = median(rs);
    const verdict = bar === undefined ? "—" : r >= bar ? "MET" : "MISSED";
    console.log(
      `| ${label} | ${callers} | ${r.toFixed(2)}× | ${Math.min(...rs).toFixed(2)}–${
        Math.max(...rs).toFixed(2)
      }× | ${bar === undefined ? "—" : `≥ ${bar}×`} | ${verdict} |`,
    );
  };
  for (const callers of CALLERS) {
    const bar = callers === 1 ? 1 : 1.2;
    target(
      "beehive (Deno) ÷ plainjob over node:sqlite (Deno)",
      "vs plainjob-sqlite/deno",
      callers,
      bar,
    );
    target(
      "beehive (Node) ÷ plainjob over better-sqlite3 (Node)",
      "vs plainjob/node",
      callers,
      bar,
    );
    target("beehive (Node) ÷ plainjob over node:sqlite (Node)", "vs plainjob-sqlite/node", callers);
    target("beehive (Deno) ÷ plainjob over better-sqlite3 (Node)", "vs plainjob/deno", callers);
    target("beehive (Deno) ÷ minimal floor (Deno)", "vs minimal/deno", callers, 0.6);
    target("beehive (Node) ÷ minimal floor (Node)", "vs minimal/node", callers, 0.6);
  }
  if (DENOKV) {
    target("beehive ÷ Deno KV (both Deno)", "vs denokv/deno", 1);
    target("beehive ÷ Deno KV (both Deno)", "vs denokv/deno", 32, 10);
  }
  console.log("");
}
