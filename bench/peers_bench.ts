/**
 * The peers benchmark: one workload on beehive, plainjob (a SQLite job queue,
 * npm `plainjobs` over better-sqlite3) and a Deno KV queue, with 1 caller and
 * with 32 concurrent callers, beside beehive's raw two-commit floor measured in
 * the same run.
 *
 * The workload: each unit is durably recorded in its own commit, then processed
 * once by a handler that makes one durable result write (`bench/peers/case.ts`
 * has each system's version). Every case runs in a fresh process; rounds
 * alternate the order, and each ratio is taken within one round, then the
 * median over rounds is reported.
 *
 * Run: `deno task bench:peers` (installs `bench/peers/node_modules` first if it
 * is missing; `--quick` for a smoke run, `--rounds=N`, `--units=N`, 20,000 by default). Figures go
 * in docs/performance.md ("Peers").
 *
 * @module
 */
import { existsSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";

const ARGS = Deno.args;
const QUICK = ARGS.includes("--quick");
const option = (name: string, fallback: number): number =>
  Number(ARGS.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const ROUNDS = option("rounds", QUICK ? 1 : 3);
/**
 * Units a case. 20,000 by default: every system's first few thousand units run
 * while the JIT is still compiling it (beehive's, the largest code, for about
 * 3,000), so 5,000 (`--units=5000`) mostly measures start-up.
 */
const UNITS = option("units", QUICK ? 1_000 : 20_000);
const CALLERS = [1, 32];
/** Beehive's controller concurrency and plainjob's worker count, per caller count. */
const WORKERS: Record<number, number> = { 1: 1, 32: 8 };

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const DENO = `${ROOT}node_modules/.bin/deno`;
const NODE = `${ROOT}node_modules/.bin/node`;
const CASE = `${ROOT}bench/peers/case.ts`;

type System = "floor" | "beehive" | "plainjob" | "denokv";
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

async function run(c: Case): Promise<Record<string, unknown>> {
  const args = [
    CASE,
    `--system=${c.system}`,
    `--callers=${c.callers}`,
    `--workers=${WORKERS[c.callers]}`,
    `--units=${UNITS}`,
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
];
for (const callers of CALLERS) {
  cases.push(
    { system: "beehive", runtime: "deno", callers },
    { system: "beehive", runtime: "node", callers },
    { system: "plainjob", runtime: "node", callers },
    { system: "denokv", runtime: "deno", callers },
  );
}

console.log(
  `peers benchmark — ${new Date().toISOString()} — ${cpus().length} × ${
    cpus()[0]?.model ?? "unknown CPU"
  }`,
);
console.log(
  `${version(DENO, ["--version"])}; Node ${
    version(NODE, ["--version"])
  }; ${UNITS} units a case, ${ROUNDS} round(s), a fresh process a case; load average ${
    loadavg().map((x) => x.toFixed(1)).join(", ")
  }`,
);

const rates = new Map<string, number[]>();
const ratios = new Map<string, number[]>();
const notes = new Map<string, string>();
const pushTo = (m: Map<string, number[]>, k: string, v: number) =>
  m.set(k, [...(m.get(k) ?? []), v]);
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? cases : [...cases].reverse();
  const got = new Map<string, number>();
  for (const c of order) {
    const result = await run(c);
    got.set(key(c), result.rate as number);
    pushTo(rates, key(c), result.rate as number);
    if (c.system === "plainjob") {
      notes.set(
        "plainjob",
        `better-sqlite3's SQLite ${result.sqlite}, synchronous = ${result.synchronous}`,
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
    pushTo(ratios, `vs plainjob/node/${callers}`, g("beehive", "node") / g("plainjob", "node"));
    pushTo(ratios, `vs plainjob/deno/${callers}`, g("beehive", "deno") / g("plainjob", "node"));
    pushTo(ratios, `vs denokv/deno/${callers}`, g("beehive", "deno") / g("denokv", "deno"));
  }
  console.log(`(round ${round + 1} of ${ROUNDS} done)`);
}
for (const note of notes.values()) console.log(`(${note})`);
console.log(`(load average at the end: ${loadavg().map((x) => x.toFixed(1)).join(", ")})`);
console.log("");

const fmt = (x: number) => Math.round(x).toLocaleString("en-US");
const pct = (x: number) => `${Math.round(x * 100)}%`;
console.log(
  "Median units/s, and the ratio to the raw floor on the same runtime in the same round:",
);
console.log("");
console.log("| system | runtime | units/s, 1 caller | ÷ floor | units/s, 32 callers | ÷ floor |");
console.log("| --- | --- | ---: | ---: | ---: | ---: |");
const rows: [System, Runtime][] = [
  ["floor", "deno"],
  ["floor", "node"],
  ["beehive", "deno"],
  ["beehive", "node"],
  ["plainjob", "node"],
  ["denokv", "deno"],
];
for (const [system, runtime] of rows) {
  const cell = (callers: number) => {
    if (system === "floor" && callers !== 1) return "— | —"; // the floor has one caller
    const k = `${system}/${runtime}/${callers}`;
    return `${fmt(median(rates.get(k)!))} | ${pct(median(ratios.get(k)!))}`;
  };
  console.log(`| ${system} | ${runtime} | ${cell(1)} | ${cell(32)} |`);
}
console.log("");
console.log("Targets (median of the per-round ratios; the range is the lowest and highest round):");
console.log("");
console.log("| comparison | callers | ratio | range | target | verdict |");
console.log("| --- | ---: | ---: | ---: | ---: | --- |");
const target = (label: string, k: string, callers: number, bar?: number) => {
  const rs = ratios.get(`${k}/${callers}`)!;
  const r = median(rs);
  const verdict = bar === undefined ? "—" : (bar === 1 ? r > bar : r >= bar) ? "MET" : "MISSED";
  console.log(
    `| ${label} | ${callers} | ${r.toFixed(2)}× | ${Math.min(...rs).toFixed(2)}–${
      Math.max(...rs).toFixed(2)
    }× | ${bar === undefined ? "—" : `${bar === 1 ? ">" : "≥"} ${bar}×`} | ${verdict} |`,
  );
};
for (const callers of CALLERS) {
  target("beehive (Node) ÷ plainjob (Node)", "vs plainjob/node", callers, 1);
  target("beehive (Deno) ÷ plainjob (Node)", "vs plainjob/deno", callers, 1);
}
target("beehive ÷ Deno KV (both Deno)", "vs denokv/deno", 1);
target("beehive ÷ Deno KV (both Deno)", "vs denokv/deno", 32, 10);
