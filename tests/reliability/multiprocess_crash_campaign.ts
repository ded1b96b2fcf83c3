/**
 * The multi-process crash campaign: three replica processes share one SQLite
 * file — two leader-election candidates that also write, and a client-only
 * writer — each creating Jobs without pause and watching them all. The
 * campaign kills the leader, the standby and the writer in turn with SIGKILL
 * at seeded moments and restarts each, then checks:
 *
 * 1. **Nothing acknowledged is lost**: every create a replica logged as
 *    acknowledged is in the database under its name.
 * 2. **No watch skips**: each replica's watch, resumed across its restarts
 *    from the position it saved, delivered every write-log entry of the kind
 *    in its windows, in increasing order (an entry may arrive folded into the
 *    object's next entry, as the watches guide says).
 * 3. **One leader at a time**: every term won has its own epoch, and epochs
 *    grow in the order the terms began.
 * 4. **Converges**: once the kills stop, the leader settles every Job.
 *
 * Run the full form with `deno task reliability:multiprocess`
 * (`BEEHIVE_MP_SEED`, `BEEHIVE_MP_KILLS`); `multiprocess_crash_test.ts` runs a
 * short form in `npm test`.
 *
 * @module
 */
import { existsSync, readFileSync } from "node:fs";
import process from "node:process";
import { Beehive } from "../../mod.ts";
import type { ObjectWrite } from "../../store/mod.ts";
import { openTestStore } from "../_sqlite_driver.ts";
import { Job, Replica } from "../multiprocess/_processes.ts";
import { scratchDir } from "./_scratch.ts";
import { prng } from "./crash_workload.ts";

/** How a campaign runs. */
export interface MultiprocessCrashOptions {
  readonly seed: number;
  readonly kills: number;
  /** How long the last leader may take to settle everything, in ms. @default {30_000} */
  readonly convergeBound?: number;
}

/** What a campaign found. */
export interface MultiprocessCrashReport {
  seed: number;
  kills: { leader: number; standby: number; writer: number };
  acknowledged: number;
  lost: number;
  watchedEntries: number;
  resumes: number;
  terms: number;
  convergeMs: number;
  violations: string[];
}

const LEASE = { leaseDuration: 1_000, renewInterval: 250 };

type Role = "leader" | "standby" | "writer";

interface Slot {
  readonly name: string;
  readonly candidate: boolean;
  incarnation: number;
  replica: Replica;
}

function lines<T>(path: string): T[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) =>
    JSON.parse(l) as T
  );
}

interface WatchLine {
  readonly start?: boolean;
  readonly resumed?: boolean;
  readonly rv: number;
  readonly id?: number;
  readonly type?: string;
}

/** Splits a watch log into windows: each start line and the changes after it. */
function windows(log: readonly WatchLine[]): { from: number; changes: WatchLine[] }[] {
  const out: { from: number; changes: WatchLine[] }[] = [];
  for (const l of log) {
    if (l.start) out.push({ from: l.rv, changes: [] });
    else out.at(-1)?.changes.push(l);
  }
  return out;
}

/** Check 2 for one replica's watch log against the kind's write log. */
function checkWatch(
  name: string,
  log: readonly WatchLine[],
  writes: readonly ObjectWrite[],
  problems: string[],
): number {
  let checked = 0;
  const ws = windows(log);
  for (let k = 0; k < ws.length; k++) {
    const { from, changes } = ws[k];
    if (k > 0) {
      const prev = ws[k - 1];
      const saved = prev.changes.at(-1)?.rv ?? prev.from;
      if (from !== saved) problems.push(`${name}: window ${k} resumed at ${from}, not at ${saved}`);
    }
    let last = from;
    for (const c of changes) {
      if (c.rv <= last) problems.push(`${name}: change of ${c.id} at ${c.rv} not above ${last}`);
      last = c.rv;
    }
    const through = last;
    const byId = new Map<number, number[]>();
    for (const c of changes) byId.set(c.id!, [...(byId.get(c.id!) ?? []), c.rv]);
    const laterIds = new Set(writes.filter((w) => w.resourceVersion > through).map((w) => w.id));
    for (const w of writes) {
      if (w.resourceVersion <= from) continue;
      if (w.resourceVersion > through) break;
      checked++;
      const delivered = (byId.get(w.id) ?? []).some((rv) => rv >= w.resourceVersion);
      if (!delivered && !laterIds.has(w.id)) {
        problems.push(
          `${name}: the ${w.op} of ${w.id} at ${w.resourceVersion} was never delivered (window ${k}, ${from}..${through})`,
        );
      }
    }
  }
  return checked;
}

/** Runs the campaign. */
export async function runMultiprocessCrashCampaign(
  options: MultiprocessCrashOptions,
): Promise<MultiprocessCrashReport> {
  const scratch = scratchDir();
  const db = scratch.file("shared.db");
  const random = prng(options.seed);
  const report: MultiprocessCrashReport = {
    seed: options.seed,
    kills: { leader: 0, standby: 0, writer: 0 },
    acknowledged: 0,
    lost: 0,
    watchedEntries: 0,
    resumes: 0,
    terms: 0,
    convergeMs: 0,
    violations: [],
  };
  const files = (name: string) => ({
    acks: scratch.file(`${name}.acks`),
    watched: scratch.file(`${name}.watch`),
    leadership: scratch.file("leadership"),
  });
  const launch = (slot: Omit<Slot, "replica">): Replica =>
    new Replica({
      db,
      role: "crash",
      name: slot.name,
      candidate: slot.candidate,
      incarnation: slot.incarnation,
      ...files(slot.name),
      ...LEASE,
    });
  await (await openTestStore(db)).close();
  const slots: Slot[] = [];
  try {
    for (const [name, candidate] of [["a", true], ["b", true], ["w", false]] as const) {
      const slot = { name, candidate, incarnation: 0 };
      const replica = launch(slot);
      slots.push({ ...slot, replica });
      await replica.waitForEvent("running");
    }
    const roles: Role[] = ["leader", "standby", "writer"];
    for (let k = 0; k < options.kills; k++) {
      await new Promise((resolve) => setTimeout(resolve, 200 + random() * 600));
      const role = roles[k % roles.length];
      const terms = lines<{ name: string }>(files("a").leadership);
      const leaderName = terms.at(-1)?.name ?? "a";
      const victim = role === "writer"
        ? slots[2]
        : slots.find((s) => s.candidate && (role === "leader") === (s.name === leaderName))!;
      report.kills[role]++;
      victim.replica.signal("SIGKILL");
      await victim.replica.close(false);
      victim.incarnation++;
      victim.replica = launch(victim);
      await victim.replica.waitForEvent("running");
    }
    // The kills are over: the writes stop, and the leader settles everything.
    for (const s of slots) s.replica.send("quiet");
    for (const s of slots) await s.replica.waitForEvent("quiet");
    const store = await openTestStore(db);
    try {
      const jobs = new Beehive(store).client(Job);
      const t0 = Date.now();
      const bound = options.convergeBound ?? 30_000;
      for (;;) {
        const unsettled = await store.objects.listUnsettledIds(Job);
        if (unsettled.length === 0) break;
        if (Date.now() - t0 > bound) {
          report.violations.push(`${unsettled.length} Jobs still unsettled after ${bound} ms`);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      report.convergeMs = Date.now() - t0;

      // 1. Nothing acknowledged is lost.
      const all = await jobs.list();
      const byId = new Map(all.map((o) => [o.id, o.name]));
      for (const s of slots) {
        for (const ack of lines<{ id: number; name: string }>(files(s.name).acks)) {
          report.acknowledged++;
          if (byId.get(ack.id) !== ack.name) {
            report.lost++;
            report.violations.push(
              `${s.name}: acknowledged create of ${ack.name} (${ack.id}) lost`,
            );
          }
        }
      }
      // 2. No watch skips.
      const writes: ObjectWrite[] = [];
      for (let after = 0;;) {
        const page = await store.objectWrites.listSince(Job, { after, limit: 10_000 });
        writes.push(...page.writes);
        if (page.writes.length < 10_000) break;
        after = page.writes.at(-1)!.resourceVersion;
      }
      for (const s of slots) {
        const log = lines<WatchLine>(files(s.name).watched);
        report.resumes += log.filter((l) => l.start && l.resumed).length;
        report.watchedEntries += checkWatch(s.name, log, writes, report.violations);
      }
      // 3. One leader at a time.
      const terms = lines<{ name: string; epoch: number; at: number }>(files("a").leadership);
      report.terms = terms.length;
      const epochs = new Set<number>();
      for (let i = 0; i < terms.length; i++) {
        if (epochs.has(terms[i].epoch)) {
          report.violations.push(`epoch ${terms[i].epoch} was won twice`);
        }
        epochs.add(terms[i].epoch);
        if (i > 0 && terms[i].epoch <= terms[i - 1].epoch) {
          report.violations.push(
            `term ${i} (${terms[i].name}) began at epoch ${terms[i].epoch} after epoch ${
              terms[i - 1].epoch
            }`,
          );
        }
      }
    } finally {
      await store.close();
    }
  } finally {
    await Promise.all(slots.map((s) => s.replica.close()));
    if (report.violations.length === 0) scratch.remove();
  }
  return report;
}

/** A campaign report as lines. */
export function formatReport(r: MultiprocessCrashReport): string[] {
  return [
    `multi-process crash campaign, seed ${r.seed}: SIGKILLs of the leader ${r.kills.leader}, the standby ${r.kills.standby}, the client-only writer ${r.kills.writer}`,
    `acknowledged creates: ${r.acknowledged}, lost: ${r.lost}`,
    `watch entries checked: ${r.watchedEntries} across ${r.resumes} resumes`,
    `leadership terms: ${r.terms}, each with its own, growing epoch`,
    `converged ${r.convergeMs} ms after the last kill`,
    ...(r.violations.length === 0 ? ["no violations"] : r.violations.map((v) => `VIOLATION ${v}`)),
  ];
}

if (import.meta.main) {
  const seed = Number(process.env.BEEHIVE_MP_SEED ?? 20261201);
  const kills = Number(process.env.BEEHIVE_MP_KILLS ?? 60);
  const report = await runMultiprocessCrashCampaign({ seed, kills });
  console.log(formatReport(report).join("\n"));
  process.exit(report.violations.length === 0 ? 0 : 1);
}
