/**
 * The crash campaign: a child process (`crash_worker.ts`) runs a live
 * workload on a file database; this parent kills it with `SIGKILL` at seeded
 * moments, over and over, and after every kill checks what the database holds
 * against what the worker was told:
 *
 * 1. **Nothing acknowledged is lost.** Every object a write was acknowledged
 *    for is there with the acknowledged spec (or one a later call in flight at
 *    a kill wrote); an acknowledged delete is deletion-pending or collected,
 *    and nothing disappears that no delete (or an owner's) could explain;
 *    nothing appears that no call wrote; resource versions never go back.
 * 2. **Watches skip nothing.** The worker's watches appended every change they
 *    processed before saving their positions: every write-log entry between
 *    where a watch started and the position it saved was delivered. A watch
 *    resumed here from the saved position (and from an older one) delivers
 *    every entry above it — or ends with `WatchTooOldError`, exactly when
 *    retention passed the position.
 * 3. **The graph converges.** A Beehive with the same controllers started on
 *    the killed database settles every live object, drains every owed count,
 *    collects every deletion (children before owners), and reconciles every
 *    dependent against its targets' latest versions, within a bound.
 *
 * Checks 2–3 run on a copy of the database files taken after the kill, so the
 * next worker starts from the crashed state itself. Run it with
 * `deno task reliability:crash` (`BEEHIVE_CRASH_SEED`, `BEEHIVE_CRASH_KILLS`);
 * `crash_test.ts` runs a short form in `npm test`.
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { copyFileSync, existsSync, readFileSync, rmSync } from "node:fs";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { Beehive, type GroupKind, type Logger, WatchTooOldError } from "../../mod.ts";
import type { Store } from "../../store/mod.ts";
import type { ObjectWrite, RawObject } from "../../store/mod.ts";
import { openSqliteStore } from "../_sqlite_driver.ts";
import { scratchDir } from "./_scratch.ts";
import {
  type AckLine,
  type AppStatus,
  beehiveOptions,
  type KindName,
  KINDS,
  type Op,
  parseLines,
  type Positions,
  prng,
  registerControllers,
  REGISTERED,
  sideFiles,
  specHash,
  WATCHED,
  type WatchLine,
} from "./crash_workload.ts";

const isDeno = "Deno" in globalThis;
const WORKER = fileURLToPath(new URL("./crash_worker.ts", import.meta.url));

/** How a campaign runs. */
export interface CrashOptions {
  /** Seeds the kill schedule and every worker's workload. */
  readonly seed: number;
  /** How many times the worker is killed. */
  readonly kills: number;
  /** The longest a converging Beehive may take, in ms. @default {30_000} */
  readonly convergeBound?: number;
  /** How long a worker may take to reach its kill point, in ms. @default {30_000} */
  readonly progressBound?: number;
  /** Where progress lines go. */
  readonly progress?: (line: string) => void;
  /** Keep the scratch directory (it is always kept when something failed). */
  readonly keep?: boolean;
}

/** What a campaign found. */
export interface CrashReport {
  seed: number;
  kills: number;
  /** Kills landed while the worker was still opening the store or starting its Beehive. */
  startupKills: number;
  /** Client writes acknowledged, refused (an expected class), and in flight at a kill. */
  writesAcknowledged: number;
  writesRefused: number;
  writesInFlight: number;
  /** Of those, the ones the database shows committed (never acknowledged, yet there). */
  inFlightCommitted: number;
  /** Per-kill checks of an object the worker wrote (acknowledged or found committed). */
  objectChecks: number;
  /** Distinct objects the worker created over the campaign. */
  distinctObjects: number;
  /** Acknowledged writes whose effect was missing (must stay 0). */
  lost: number;
  /** Write-log entries the worker's own watches were checked to have delivered before their saved positions. */
  workerWatchEntries: number;
  /** Worker watches that resumed and hit `WatchTooOldError`, then took a snapshot. */
  workerWatchTooOld: number;
  /** Watches resumed here from a saved position: delivered everything / ended `WatchTooOldError`. */
  resumesComplete: number;
  resumesTooOld: number;
  /** Write-log entries those resumed watches were checked to have delivered. */
  resumeEntries: number;
  /** Convergence after each kill, in ms. */
  convergeWorstMs: number;
  convergeMedianMs: number;
  /** Checks of an object (live or collected) against the model once the graph converged. */
  convergedChecks: number;
  /** Warnings the converging Beehives logged (retried failures), by message. */
  warnings: Record<string, number>;
  elapsedMs: number;
  /** Everything that went wrong; empty on a clean run. */
  violations: string[];
}

// ---------------------------------------------------------------------------
// The model: what the worker was told, and what may legitimately be there

interface Entry {
  readonly kind: KindName;
  readonly name: string;
  readonly id: number;
  owner: number | undefined;
  /** The spec hashes the row may hold: the last acknowledged one, then any written by a call in flight at a kill. */
  allowed: Set<string>;
  /** A spec write to it was acknowledged. */
  specAcked: boolean;
  /** The resource version and hash of the last acknowledged spec write. */
  ackedRv: number;
  ackedHash: string | undefined;
  /** A write to it was acknowledged, or a check saw it. */
  durable: boolean;
  deleteAcked: boolean;
  /** A delete of it was in flight at a kill. */
  deleteMaybe: boolean;
  /** A check saw it deletion-pending: that is never undone. */
  seenDeleting: boolean;
  /** A check found it collected: it never comes back. */
  gone: boolean;
}

type Intent = Extract<AckLine, { intent: number }>;

class Model {
  readonly byId = new Map<number, Entry>();
  /** Hashes written by creates in flight at a kill, by `kind/name`. */
  readonly pendingNames = new Map<string, Set<string>>();
  maxAckedRv = 0;
  acknowledged = 0;
  refused = 0;
  inFlight = 0;

  entry(kind: KindName, name: string, id: number): Entry {
    let e = this.byId.get(id);
    if (e === undefined) {
      e = {
        kind,
        name,
        id,
        owner: undefined,
        allowed: new Set(),
        specAcked: false,
        ackedRv: 0,
        ackedHash: undefined,
        durable: false,
        deleteAcked: false,
        deleteMaybe: false,
        seenDeleting: false,
        gone: false,
      };
      this.byId.set(id, e);
    }
    return e;
  }

  /** Folds one incarnation's acknowledgement file in; returns what broke an invariant. */
  apply(lines: readonly AckLine[], incarnation: number): string[] {
    const problems: string[] = [];
    const open = new Map<number, Intent>();
    for (const line of lines) {
      if ("fatal" in line) {
        problems.push(`worker ${incarnation} failed: ${line.fatal}`);
      } else if ("intent" in line) {
        open.set(line.intent, line);
      } else if ("refused" in line) {
        open.delete(line.refused);
        this.refused++;
      } else if ("ack" in line) {
        const intent = open.get(line.ack);
        open.delete(line.ack);
        if (intent === undefined) {
          problems.push(`worker ${incarnation}: ack ${line.ack} without its intent`);
          continue;
        }
        this.acknowledged++;
        this.#acked(intent, line, problems);
      }
    }
    if (open.size > 1) problems.push(`worker ${incarnation}: ${open.size} calls in flight at once`);
    for (const intent of open.values()) {
      this.inFlight++;
      this.#inFlight(intent);
    }
    return problems;
  }

  #acked(intent: Intent, ack: Extract<AckLine, { ack: number }>, problems: string[]): void {
    const op: Op = intent.op;
    const e = this.entry(intent.kind, intent.name, ack.id);
    e.durable = true;
    if (op === "delete" || op === "deleteByName") {
      e.deleteAcked = true;
      return;
    }
    if (op === "create" || (op === "createOrUpdate" && ack.created)) e.owner = intent.owner;
    e.allowed = new Set([intent.hash!]);
    e.specAcked = true;
    e.ackedRv = ack.rv!;
    e.ackedHash = intent.hash!;
    if (ack.rv! <= this.maxAckedRv) {
      problems.push(
        `ack of ${op} ${intent.kind} ${ack.id} at resource version ${ack.rv}, not above ${this.maxAckedRv} acknowledged before`,
      );
    }
    this.maxAckedRv = Math.max(this.maxAckedRv, ack.rv!);
  }

  #inFlight(intent: Intent): void {
    const op: Op = intent.op;
    if (op === "delete" || op === "deleteByName") {
      this.entry(intent.kind, intent.name, intent.id!).deleteMaybe = true;
      return;
    }
    if (op === "create" || op === "createOrUpdate") {
      const key = `${intent.kind}/${intent.name}`;
      const set = this.pendingNames.get(key) ?? new Set();
      set.add(intent.hash!);
      this.pendingNames.set(key, set);
    }
    if (intent.id !== undefined) {
      this.entry(intent.kind, intent.name, intent.id).allowed.add(intent.hash!);
    }
  }

  /** Whether a missing row is explained: a delete of it, or of an owner up its chain. */
  mayBeGone(e: Entry): boolean {
    for (let cur: Entry | undefined = e, hops = 0; cur !== undefined && hops < 8; hops++) {
      if (cur.deleteAcked || cur.deleteMaybe || cur.seenDeleting) return true;
      cur = cur.owner === undefined ? undefined : this.byId.get(cur.owner);
    }
    return false;
  }
}

// ---------------------------------------------------------------------------
// Reading the store

async function rowsOf(store: Store): Promise<Map<number, RawObject>> {
  const rows = new Map<number, RawObject>();
  for (const kind of Object.keys(KINDS) as KindName[]) {
    for (const row of await store.objects.list(KINDS[kind])) rows.set(row.id, row);
  }
  return rows;
}

/** Every write-log entry of `gk` above `after`, and the kind's trim horizon. */
async function logAbove(
  store: Store,
  gk: GroupKind,
  after: number,
): Promise<{ writes: ObjectWrite[]; trimmedThrough: number }> {
  const writes: ObjectWrite[] = [];
  let trimmedThrough = 0;
  for (let cursor = after;;) {
    const page = await store.objectWrites.listSince(gk, { after: cursor, limit: 1000 });
    trimmedThrough = Math.max(trimmedThrough, page.trimmedThrough);
    writes.push(...page.writes);
    if (page.writes.length < 1000) break;
    cursor = page.writes[page.writes.length - 1].resourceVersion;
  }
  return { writes, trimmedThrough };
}

interface Delivered {
  readonly type: string;
  readonly id: number;
  readonly rv: number;
}

/**
 * Checks that `changes` delivered every entry of `writes` at or below `through`:
 * a change for the same id at or above the entry and at or below `through`,
 * `Deleted` for a collection; that every change is an entry of the log (unless
 * trimmed); and that the changes rise. Returns the entries checked.
 */
function covers(
  what: string,
  changes: readonly Delivered[],
  writes: readonly ObjectWrite[],
  from: number,
  through: number,
  trimmedThrough: number,
  problems: string[],
): number {
  const byId = new Map<number, Delivered[]>();
  let last = from;
  for (const c of changes) {
    if (c.rv <= last) {
      problems.push(`${what}: change of ${c.id} at ${c.rv} not above ${last}`);
    }
    last = c.rv;
    const list = byId.get(c.id) ?? [];
    list.push(c);
    byId.set(c.id, list);
  }
  // A watch reports an object once per drain, at its newest entry: an entry at or below
  // `through` may arrive folded into the object's next entry above it, which the watch
  // resumed from `through` is checked to deliver. (A saved position is where delivery
  // got to, not a cut: each object's earlier entries below it are not owed separately.)
  const writtenAfter = new Set(
    writes.filter((w) => w.resourceVersion > through).map((w) => w.id),
  );
  const entries = new Set<string>();
  let checked = 0;
  for (const w of writes) {
    if (w.resourceVersion > through) break;
    entries.add(`${w.id}@${w.resourceVersion}`);
    checked++;
    const ok = (byId.get(w.id) ?? []).some((c) =>
      c.rv >= w.resourceVersion && c.rv <= through && (w.op !== "delete" || c.type === "Deleted")
    ) ||
      // Folded into a later entry above `through` (a collection before the tailer read
      // the row is reported only by its Deleted): the resumed watch delivers that one.
      (w.op !== "delete" && writtenAfter.has(w.id));
    if (!ok) {
      problems.push(
        `${what}: the ${w.op} of ${w.id} at ${w.resourceVersion} was never delivered (watched from ${from} through ${through})`,
      );
    }
  }
  for (const c of changes) {
    if (c.rv > through || c.rv <= trimmedThrough) continue;
    if (!entries.has(`${c.id}@${c.rv}`)) {
      problems.push(`${what}: change of ${c.id} at ${c.rv} matches no write-log entry`);
    }
  }
  return checked;
}

/** Rejects with a labelled error if `p` takes longer than `ms`. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A logger that counts warnings by message and keeps every error. */
function countingLogger(): Logger & { warnings: Map<string, number>; errors: string[] } {
  const warnings = new Map<string, number>();
  const errors: string[] = [];
  return {
    warnings,
    errors,
    debug() {},
    info() {},
    warn(message) {
      warnings.set(message, (warnings.get(message) ?? 0) + 1);
    },
    error(message, attributes) {
      errors.push(`${message} ${String(attributes?.error ?? "")}`);
    },
  };
}

// ---------------------------------------------------------------------------
// The checks after a kill

interface CheckResult {
  objectChecks: number;
  lost: number;
  inFlightCommitted: number;
  workerWatchEntries: number;
  resumesComplete: number;
  resumesTooOld: number;
  resumeEntries: number;
  convergeMs: number;
  convergedChecks: number;
}

/** Check 1: what the worker was told against the rows. */
function checkAcknowledged(
  model: Model,
  rows: Map<number, RawObject>,
  edgesOwner: Map<number, number>,
  label: string,
  problems: string[],
): { checked: number; lost: number; committed: number } {
  let checked = 0;
  let lost = 0;
  let committed = 0;
  for (const row of rows.values()) {
    const kind = row.kind as KindName;
    const hash = specHash(row.spec);
    const pending = model.pendingNames.get(`${kind}/${row.name}`);
    const known = model.byId.get(row.id);
    const e = model.entry(kind, row.name, row.id);
    if (e.owner === undefined) e.owner = edgesOwner.get(row.id);
    if (e.gone) problems.push(`${label}: ${kind} ${row.id} came back after it was collected`);
    if (e.kind !== kind || e.name !== row.name) {
      problems.push(
        `${label}: row ${row.id} is ${kind}/${row.name}, written as ${e.kind}/${e.name}`,
      );
    }
    const specOk = e.allowed.has(hash) || (!e.specAcked && pending?.has(hash) === true);
    if (!specOk) {
      lost++;
      problems.push(
        known === undefined
          ? `${label}: ${kind} ${row.id} "${row.name}" was written by no call`
          : `${label}: ${kind} ${row.id} holds spec ${hash}, acknowledged ${
            [...e.allowed].join(" or ")
          }`,
      );
    }
    if (e.specAcked && row.resourceVersion < e.ackedRv) {
      problems.push(
        `${label}: ${kind} ${row.id} is at resource version ${row.resourceVersion}, below the acknowledged ${e.ackedRv}`,
      );
    }
    if ((e.deleteAcked || e.seenDeleting) && row.deletionRequestedAt === undefined) {
      lost++;
      problems.push(`${label}: ${kind} ${row.id}'s acknowledged deletion was undone`);
    }
    // A call in flight at a kill that committed all the same: allowed, and worth counting.
    const inFlightSpec = e.allowed.size > 1 && e.allowed.has(hash) && hash !== e.ackedHash;
    const inFlightCreate = !e.durable && pending?.has(hash) === true;
    const inFlightDelete = row.deletionRequestedAt !== undefined && e.deleteMaybe &&
      !e.deleteAcked && !e.seenDeleting;
    if (inFlightSpec || inFlightCreate || inFlightDelete) committed++;
    if (row.deletionRequestedAt !== undefined) e.seenDeleting = true;
    else e.deleteMaybe = false; // a delete in flight at an earlier kill never committed
    // Committed, so from now on it must be accounted for like an acknowledged write.
    e.allowed = new Set([hash]);
    e.durable = true;
    checked++;
  }
  for (const e of model.byId.values()) {
    if (rows.has(e.id) || e.gone) continue;
    if (!e.durable) continue; // only ever in flight, never seen: nothing was promised
    checked++;
    if (!model.mayBeGone(e)) {
      lost++;
      problems.push(
        `${label}: ${e.kind} ${e.id} "${e.name}" is gone; nothing deleted it or its owner`,
      );
    }
    e.gone = true;
  }
  // Every create in flight at a kill has committed by now or never will.
  model.pendingNames.clear();
  // No child outlives its owner: an owner is collected only after its children.
  for (const row of rows.values()) {
    const owner = model.byId.get(row.id)?.owner;
    if (owner !== undefined && !rows.has(owner)) {
      problems.push(`${label}: ${row.kind} ${row.id} outlived its owner ${owner}`);
    }
  }
  return { checked, lost, committed };
}

async function ownersByEdge(
  store: Store,
  rows: Map<number, RawObject>,
): Promise<Map<number, number>> {
  const ids = [...rows.keys()];
  const grouped = ids.length === 0
    ? new Map()
    : await store.edges.groupOutgoingByIds(ids, "owned_by");
  const out = new Map<number, number>();
  for (const [id, refs] of grouped) if (refs.length > 0) out.set(id, refs[0].id);
  return out;
}

/** Check 2a: the worker's own watches delivered every entry below the positions they saved. */
async function checkWorkerWatches(
  store: Store,
  lines: readonly WatchLine[],
  positions: Positions,
  label: string,
  problems: string[],
): Promise<{ entries: number; tooOld: number }> {
  let entries = 0;
  let tooOld = 0;
  for (const kind of WATCHED) {
    let from: number | undefined;
    let changes: Delivered[] = [];
    for (const line of lines) {
      if ("start" in line && line.start === kind) {
        from = line.from;
        changes = [];
      } else if ("tooOld" in line && line.tooOld === kind) {
        tooOld++;
      } else if ("kind" in line && line.kind === kind) {
        changes.push(line);
      }
    }
    const through = positions[kind];
    if (from === undefined || through === undefined || through <= from) continue;
    const log = await logAbove(store, KINDS[kind], from);
    const writes = log.writes.filter((w) => w.resourceVersion > log.trimmedThrough);
    entries += covers(
      `${label} worker watch ${kind}`,
      changes.filter((c) => c.rv <= through),
      writes,
      from,
      through,
      log.trimmedThrough,
      problems,
    );
  }
  return { entries, tooOld };
}

/** Check 2b: a watch resumed from `from` delivers every entry above it, or ends `WatchTooOldError`. */
async function checkResume(
  bh: Beehive,
  store: Store,
  kind: KindName,
  from: number,
  label: string,
  problems: string[],
): Promise<{ complete: number; tooOld: number; entries: number }> {
  const what = `${label} watch ${kind} resumed from ${from}`;
  const log = await logAbove(store, KINDS[kind], from);
  const expectTooOld = from < log.trimmedThrough;
  const lastRv = log.writes.at(-1)?.resourceVersion ?? from;
  const stream = await bh.client(KINDS[kind]).watchList({ resumeFrom: from });
  const changes: Delivered[] = [];
  let error: unknown;
  const timer = setTimeout(() => stream.close(), 10_000);
  try {
    if (expectTooOld || lastRv > from) {
      for await (const c of stream) {
        changes.push({ type: c.type, id: c.id, rv: c.resourceVersion });
        if (!expectTooOld && c.resourceVersion >= lastRv) break;
      }
    }
  } catch (e) {
    error = e;
  } finally {
    clearTimeout(timer);
    stream.close();
  }
  if (expectTooOld) {
    if (!(error instanceof WatchTooOldError)) {
      problems.push(
        `${what}: retention trimmed through ${log.trimmedThrough}, yet it ended with ${
          error === undefined ? "no error" : String(error)
        } after ${changes.length} changes`,
      );
      return { complete: 0, tooOld: 0, entries: 0 };
    }
    return { complete: 0, tooOld: 1, entries: 0 };
  }
  if (error !== undefined) {
    problems.push(`${what}: ended with ${String(error)}`);
    return { complete: 0, tooOld: 0, entries: 0 };
  }
  const before = problems.length;
  const entries = covers(what, changes, log.writes, from, lastRv, log.trimmedThrough, problems);
  return { complete: problems.length === before ? 1 : 0, tooOld: 0, entries };
}

/** Why the graph has not converged yet, or `undefined`. */
async function lagging(store: Store, rows: Map<number, RawObject>): Promise<string | undefined> {
  // Judged from `rows` first: the listing below is a later read, so a deletion collected
  // between the two would look done while `rows` still holds the object.
  for (const row of rows.values()) {
    if (row.deletionRequestedAt !== undefined) {
      return `${row.kind} ${row.id}'s deletion is uncollected`;
    }
  }
  const pending = await store.deletionRequests.list();
  if (pending.length > 0) {
    return `${pending.length} deletions uncollected (${pending[0].kind} ${pending[0].id} first)`;
  }
  const byName = new Map<string, RawObject>();
  for (const row of rows.values()) byName.set(`${row.kind}/${row.name}`, row);
  for (const row of rows.values()) {
    const kind = row.kind as KindName;
    if (row.reconcileOwed !== 0) return `${kind} ${row.id} is owed ${row.reconcileOwed} passes`;
    if (!REGISTERED.includes(kind)) continue;
    if (row.observedGeneration !== row.generation) {
      return `${kind} ${row.id} unsettled (observed ${row.observedGeneration} of ${row.generation})`;
    }
    const status = row.status === undefined ? undefined : JSON.parse(row.status);
    if (status?.generation !== row.generation) return `${kind} ${row.id}'s status is behind`;
    const ready = row.conditions.find((c) => c.type === "Ready");
    if (ready?.message !== `generation ${row.generation}`) {
      return `${kind} ${row.id}'s Ready condition is behind`;
    }
    if (kind !== "App") continue;
    const spec = JSON.parse(row.spec) as { config: string; cluster: string };
    const config = byName.get(`Config/${spec.config}`);
    const cluster = byName.get(`Cluster/${spec.cluster}`);
    if (config === undefined || cluster === undefined) {
      return `App ${row.id} names a target that is gone (${spec.config}, ${spec.cluster})`;
    }
    const seen = (status as AppStatus).seen;
    if (seen.config?.id !== config.id || seen.config.rv !== config.resourceVersion) {
      return `App ${row.id} saw Config ${config.id} at ${seen.config?.rv}, now ${config.resourceVersion}`;
    }
    if (seen.cluster?.id !== cluster.id || seen.cluster.rv !== cluster.resourceVersion) {
      return `App ${row.id} saw Cluster ${cluster.id} at ${seen.cluster?.rv}, now ${cluster.resourceVersion}`;
    }
    const deps = (await store.edges.listOutgoing(row.id, "depends_on")).map((r) => r.id);
    const want = [config.id, cluster.id];
    if (deps.length !== 2 || !want.every((id) => deps.includes(id))) {
      return `App ${row.id} depends on [${deps}], not [${want}]`;
    }
  }
  for (const row of rows.values()) {
    if (!REGISTERED.includes(row.kind as KindName)) continue;
    const event = await store.events.getLatest(row.id, "");
    if (event?.reason !== "Reconciled" || event.message !== `generation ${row.generation}`) {
      return `${row.kind} ${row.id}'s latest event is behind`;
    }
  }
  return undefined;
}

/** Check 3: a Beehive on the crashed database converges; returns how long it took. */
async function converge(
  store: Store,
  model: Model,
  bound: number,
  logger: ReturnType<typeof countingLogger>,
  label: string,
  problems: string[],
): Promise<{ ms: number; objects: number }> {
  const bh = new Beehive(store, beehiveOptions(logger));
  registerControllers(bh);
  const t0 = performance.now();
  const stop = await bh.start();
  let ms = 0;
  let rows = new Map<number, RawObject>();
  try {
    for (;;) {
      rows = await rowsOf(store);
      const why = await lagging(store, rows);
      ms = performance.now() - t0;
      if (why === undefined) break;
      if (ms > bound) {
        problems.push(`${label}: no convergence within ${bound} ms: ${why}`);
        break;
      }
      await sleep(20);
    }
  } finally {
    await within(stop(), 30_000, "stopping the converging Beehive");
  }
  for (const e of logger.errors.splice(0)) {
    problems.push(`${label}: the converging Beehive logged an error: ${e}`);
  }
  // Converged: every acknowledged delete collected, everything else still there as acknowledged.
  const owners = await ownersByEdge(store, rows);
  const { checked } = checkAcknowledged(model, rows, owners, `${label} (converged)`, problems);
  for (const e of model.byId.values()) {
    if ((e.deleteAcked || e.seenDeleting) && rows.has(e.id)) {
      problems.push(`${label} (converged): ${e.kind} ${e.id}'s deletion was never collected`);
    }
  }
  return { ms, objects: checked };
}

/**
 * Every check on one database file (a copy of the killed worker's, or the
 * original at the end). The model is that of the original: the copy's
 * convergence is thrown away with the copy.
 */
async function checkFile(
  path: string,
  model: Model,
  watchLines: readonly WatchLine[],
  positions: Positions,
  olderPositions: Positions,
  bound: number,
  logger: ReturnType<typeof countingLogger>,
  label: string,
  problems: string[],
): Promise<CheckResult> {
  const store = await openSqliteStore(path);
  try {
    const rows = await rowsOf(store);
    const owners = await ownersByEdge(store, rows);
    const acked = checkAcknowledged(model, rows, owners, label, problems);
    const latest = await store.getLatestResourceVersion();
    if (latest < model.maxAckedRv) {
      problems.push(
        `${label}: the store's latest resource version ${latest} is below the acknowledged ${model.maxAckedRv}`,
      );
    }
    const worker = await checkWorkerWatches(store, watchLines, positions, label, problems);
    // Watches opened on a Beehive that never starts: nothing writes while they replay.
    const watcher = new Beehive(store, beehiveOptions(logger));
    let complete = 0;
    let tooOld = 0;
    let resumeEntries = 0;
    for (const kind of WATCHED) {
      for (const from of new Set([positions[kind], olderPositions[kind]])) {
        if (from === undefined) continue;
        const r = await checkResume(watcher, store, kind, from, label, problems);
        complete += r.complete;
        tooOld += r.tooOld;
        resumeEntries += r.entries;
      }
    }
    // The converged copy is the model's future only in part: work on a snapshot of it.
    const shadow = cloneModel(model);
    const c = await converge(store, shadow, bound, logger, label, problems);
    return {
      objectChecks: acked.checked,
      inFlightCommitted: acked.committed,
      lost: acked.lost,
      workerWatchEntries: worker.entries,
      resumesComplete: complete,
      resumesTooOld: tooOld,
      resumeEntries,
      convergeMs: c.ms,
      convergedChecks: c.objects,
    };
  } finally {
    await store.close();
  }
}

function cloneModel(model: Model): Model {
  const copy = new Model();
  for (const [id, e] of model.byId) copy.byId.set(id, { ...e, allowed: new Set(e.allowed) });
  for (const [k, v] of model.pendingNames) copy.pendingNames.set(k, new Set(v));
  copy.maxAckedRv = model.maxAckedRv;
  return copy;
}

// ---------------------------------------------------------------------------
// The worker

interface Worker {
  readonly child: ChildProcess;
  readonly closed: Promise<{ code: number | null; signal: string | null }>;
  stderr: string;
}

function startWorker(db: string, dir: string, seed: number, incarnation: number): Worker {
  const args = isDeno
    ? ["run", "-A", WORKER, db, dir, String(seed), String(incarnation)]
    : ["--disable-warning=ExperimentalWarning", WORKER, db, dir, String(seed), String(incarnation)];
  const child = spawn(process.execPath, args, { stdio: ["pipe", "ignore", "pipe"] });
  const worker: Worker = {
    child,
    stderr: "",
    closed: new Promise((resolve) => {
      child.on("close", (code, signal) => resolve({ code, signal }));
    }),
  };
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => {
    if (worker.stderr.length < 20_000) worker.stderr += chunk;
  });
  return worker;
}

async function killWorker(w: Worker): Promise<{ code: number | null; signal: string | null }> {
  if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill("SIGKILL");
  const how = await w.closed;
  w.child.stdin?.destroy();
  return how;
}

function readAcks(path: string): AckLine[] {
  return existsSync(path) ? parseLines<AckLine>(readFileSync(path, "utf8")) : [];
}

/** Waits until the worker's acknowledgement file satisfies `done`, polling its growth. */
async function waitForAcks(
  w: Worker,
  path: string,
  done: (lines: AckLine[]) => boolean,
  bound: number,
): Promise<string | undefined> {
  const t0 = performance.now();
  for (;;) {
    const lines = readAcks(path);
    const fatal = lines.find((l) => "fatal" in l);
    if (fatal !== undefined) return `the worker failed: ${(fatal as { fatal: string }).fatal}`;
    if (done(lines)) return undefined;
    if (w.child.exitCode !== null || w.child.signalCode !== null) {
      return `the worker exited on its own (${
        w.child.exitCode ?? w.child.signalCode
      }): ${w.stderr}`;
    }
    if (performance.now() - t0 > bound) {
      return `the worker made no progress in ${bound} ms: ${w.stderr}`;
    }
    await sleep(1);
  }
}

// ---------------------------------------------------------------------------
// The campaign

export async function runCrashCampaign(options: CrashOptions): Promise<CrashReport> {
  const { seed, kills } = options;
  const bound = options.convergeBound ?? 30_000;
  const progressBound = options.progressBound ?? 30_000;
  const say = options.progress ?? (() => {});
  const rand = prng(seed);
  const scratch = scratchDir();
  const db = scratch.file("beehive.db");
  const copy = scratch.file("copy.db");
  const model = new Model();
  const logger = countingLogger();
  const problems: string[] = [];
  const report: CrashReport = {
    seed,
    kills: 0,
    startupKills: 0,
    writesAcknowledged: 0,
    writesRefused: 0,
    writesInFlight: 0,
    inFlightCommitted: 0,
    objectChecks: 0,
    distinctObjects: 0,
    lost: 0,
    workerWatchEntries: 0,
    workerWatchTooOld: 0,
    resumesComplete: 0,
    resumesTooOld: 0,
    resumeEntries: 0,
    convergeWorstMs: 0,
    convergeMedianMs: 0,
    convergedChecks: 0,
    warnings: {},
    elapsedMs: 0,
    violations: problems,
  };
  const times: number[] = [];
  const history: Positions[] = [];
  const t0 = performance.now();
  const add = (r: CheckResult) => {
    report.objectChecks += r.objectChecks;
    report.lost += r.lost;
    report.inFlightCommitted += r.inFlightCommitted;
    report.workerWatchEntries += r.workerWatchEntries;
    report.resumesComplete += r.resumesComplete;
    report.resumesTooOld += r.resumesTooOld;
    report.resumeEntries += r.resumeEntries;
    report.convergedChecks += r.convergedChecks;
    times.push(r.convergeMs);
  };
  const olderPositions = (): Positions => {
    const out: Positions = {};
    for (const kind of WATCHED) {
      // Anything from the start of the log to a position saved kills ago.
      const pool = [0, ...history.map((p) => p[kind]).filter((p) => p !== undefined)];
      out[kind] = pool[Math.floor(rand() * pool.length)];
    }
    return out;
  };
  let failed = false;
  try {
    for (let i = 0; i < kills && problems.length < 20; i++) {
      const files = sideFiles(scratch.path, i);
      const w = startWorker(db, scratch.path, seed, i);
      let stalled: string | undefined;
      try {
        // The kill point: mostly some acknowledged writes in, now and then during startup.
        const r = rand();
        if (r < 0.1) {
          const phase = rand() < 0.5 ? "open" : "started";
          stalled = await waitForAcks(
            w,
            files.acks,
            (ls) => ls.some((l) => "phase" in l && l.phase === phase),
            progressBound,
          );
          await sleep(rand() * 5);
          const ready = readAcks(files.acks).some((l) => "phase" in l && l.phase === "ready");
          if (!ready) report.startupKills++;
        } else {
          // Some writes in; then either a moment after an acknowledgement, or as soon as
          // the next call's intent is down (its commit may be under way).
          const target = 1 + Math.floor(rand() * 60);
          const atIntent = rand() < 0.4;
          stalled = await waitForAcks(
            w,
            files.acks,
            (ls) =>
              ls.filter((l) => "ack" in l).length >= target &&
              (!atIntent || "intent" in ls[ls.length - 1]),
            progressBound,
          );
          if (!atIntent) await sleep(rand() * 8);
        }
      } finally {
        const how = await killWorker(w);
        if (stalled === undefined && how.signal !== "SIGKILL") {
          stalled = `the worker ended with ${how.code ?? how.signal} before the kill: ${w.stderr}`;
        }
      }
      report.kills++;
      if (stalled !== undefined) {
        problems.push(`kill ${i}: ${stalled}`);
        continue;
      }
      problems.push(...model.apply(readAcks(files.acks), i));
      const watchLines = existsSync(files.watch)
        ? parseLines<WatchLine>(readFileSync(files.watch, "utf8"))
        : [];
      const positions: Positions = existsSync(files.positions)
        ? JSON.parse(readFileSync(files.positions, "utf8"))
        : {};
      for (const suffix of ["", "-wal", "-shm"]) rmSync(copy + suffix, { force: true });
      copyFileSync(db, copy);
      if (existsSync(`${db}-wal`)) copyFileSync(`${db}-wal`, `${copy}-wal`);
      const r = await checkFile(
        copy,
        model,
        watchLines,
        positions,
        olderPositions(),
        bound,
        logger,
        `kill ${i}`,
        problems,
      );
      add(r);
      history.push(positions);
      if ((i + 1) % 10 === 0 || i === kills - 1) {
        say(
          `kill ${
            i + 1
          }/${kills}: ${model.acknowledged} writes acknowledged, ${report.objectChecks} object checks, ` +
            `worst convergence ${Math.round(Math.max(...times))} ms, ${problems.length} problems`,
        );
      }
    }
    // Last, the original itself: reopened after its final kill, checked, converged.
    if (problems.length === 0) {
      const last = Math.max(0, report.kills - 1);
      const files = sideFiles(scratch.path, last);
      const positions: Positions = existsSync(files.positions)
        ? JSON.parse(readFileSync(files.positions, "utf8"))
        : {};
      // The worker's watch log was checked at its kill; the resumes are checked again here.
      add(
        await checkFile(
          db,
          model,
          [],
          positions,
          olderPositions(),
          bound,
          logger,
          "final reopen",
          problems,
        ),
      );
    }
  } catch (error) {
    problems.push(`the campaign failed: ${error instanceof Error ? error.stack : String(error)}`);
  } finally {
    failed = problems.length > 0;
    if (failed || options.keep) say(`scratch directory kept: ${scratch.path}`);
    else scratch.remove();
  }
  report.writesAcknowledged = model.acknowledged;
  report.writesRefused = model.refused;
  report.writesInFlight = model.inFlight;
  report.distinctObjects = model.byId.size;
  const sorted = [...times].sort((a, b) => a - b);
  report.convergeWorstMs = Math.round(sorted.at(-1) ?? 0);
  report.convergeMedianMs = Math.round(sorted[Math.floor(sorted.length / 2)] ?? 0);
  report.warnings = Object.fromEntries(logger.warnings);
  report.elapsedMs = Math.round(performance.now() - t0);
  return report;
}

/** The report as lines for a terminal. */
export function formatReport(r: CrashReport): string[] {
  return [
    `seed ${r.seed}: ${r.kills} kills survived (${r.startupKills} during startup) in ${
      (r.elapsedMs / 1000).toFixed(1)
    } s`,
    `writes: ${r.writesAcknowledged} acknowledged, ${r.writesRefused} refused (expected classes), ${r.writesInFlight} in flight at a kill (${r.inFlightCommitted} of them committed)`,
    `objects: ${r.distinctObjects} distinct, ${r.objectChecks} checks after a kill, ${r.convergedChecks} after convergence; lost: ${r.lost}`,
    `worker watches: ${r.workerWatchEntries} write-log entries delivered before their saved positions; ${r.workerWatchTooOld} resumes too old, re-snapshotted`,
    `resumed watches: ${r.resumesComplete} delivered everything (${r.resumeEntries} entries), ${r.resumesTooOld} ended WatchTooOldError as retention said`,
    `convergence: worst ${r.convergeWorstMs} ms, median ${r.convergeMedianMs} ms`,
    `warnings while converging: ${JSON.stringify(r.warnings)}`,
    r.violations.length === 0 ? "violations: none" : `violations (${r.violations.length}):`,
    ...r.violations.map((v) => `  - ${v}`),
  ];
}

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  const n = raw === undefined || raw === "" ? Number.NaN : Number(raw);
  return Number.isSafeInteger(n) && n >= 0 ? n : fallback;
}

/** The default full run's seed and kill count. */
export const DEFAULT_SEED = 20261201;
export const DEFAULT_KILLS = 200;

const main = (import.meta as { main?: boolean }).main ??
  (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]);
if (main) {
  const seed = envNumber("BEEHIVE_CRASH_SEED", DEFAULT_SEED);
  const kills = envNumber("BEEHIVE_CRASH_KILLS", DEFAULT_KILLS);
  console.log(
    `crash campaign: seed ${seed}, ${kills} kills (BEEHIVE_CRASH_SEED=${seed} to reproduce)`,
  );
  const report = await runCrashCampaign({
    seed,
    kills,
    progress: (line) => console.log(line),
    keep: process.env.BEEHIVE_CRASH_KEEP === "1",
  });
  for (const line of formatReport(report)) console.log(line);
  process.exitCode = report.violations.length === 0 ? 0 : 1;
}
