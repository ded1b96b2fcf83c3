/**
 * The crash campaign's child process: a live workload on a file database that
 * runs until it is killed (`SIGKILL`, by `crash_campaign.ts`).
 *
 *     crash_worker.ts <database> <side-file dir> <seed> <incarnation>
 *
 * It opens the database, starts a Beehive with the campaign's controllers,
 * resumes a watch on each watched kind from the position saved by the last
 * incarnation, and then writes through the clients forever: creates (with
 * owners and finalizers), updates, createOrUpdate, deletes by id and by name,
 * drawn from a PRNG seeded by (seed, incarnation). Every client write is
 * bracketed in the acknowledgement file: an `intent` line before the call, an
 * `ack` line (with the resource version) once it resolved, each fsync'd, so
 * the parent knows exactly what was acknowledged and what was in flight. A
 * watch appends each change to the watch log and only then saves its
 * position (fsync'd, renamed into place).
 *
 * The worker keeps every App's targets alive: it deletes a Config or a Cluster
 * only when no App it knows of names it (an App the Cluster owns aside: the
 * cascade takes it), so a converged graph has every App's targets live.
 *
 * @module
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import process from "node:process";
import {
  Beehive,
  type Client,
  DeletionPendingError,
  NotFoundError,
  type ObjectListStream,
  WatchTooOldError,
} from "../../mod.ts";
import { openSqliteStore } from "../_sqlite_driver.ts";
import {
  type AckLine,
  type AnySpec,
  APP_FINALIZER,
  type AppSpec,
  beehiveOptions,
  CACHE_FINALIZER,
  type CacheSpec,
  CLUSTER_FINALIZER,
  type ClusterSpec,
  type ConfigSpec,
  deriveSeed,
  type KindName,
  KINDS,
  type Positions,
  prng,
  registerControllers,
  sideFiles,
  specHash,
  WATCHED,
  type WatchLine,
} from "./crash_workload.ts";

const [dbPath, dir, seedArg, incarnationArg] = process.argv.slice(2);
const seed = Number(seedArg);
const incarnation = Number(incarnationArg);
if (!dbPath || !dir || !Number.isSafeInteger(seed) || !Number.isSafeInteger(incarnation)) {
  console.error("usage: crash_worker.ts <database> <side-file dir> <seed> <incarnation>");
  process.exit(2);
}
const files = sideFiles(dir, incarnation);
const ackFd = openSync(files.acks, "a");
const watchFd = openSync(files.watch, "a");

/** Appends one line and waits for the disk. */
function append(fd: number, line: AckLine | WatchLine): void {
  writeSync(fd, JSON.stringify(line) + "\n");
  fsyncSync(fd);
}

const positions: Positions = (() => {
  try {
    return JSON.parse(readFileSync(files.positions, "utf8")) as Positions;
  } catch {
    return {};
  }
})();

/** Saves every watch position: a temp file fsync'd, then renamed over the last one. */
function savePositions(): void {
  const tmp = `${files.positions}.tmp`;
  const fd = openSync(tmp, "w");
  writeSync(fd, JSON.stringify(positions));
  fsyncSync(fd);
  closeSync(fd);
  renameSync(tmp, files.positions);
}

function fatal(error: unknown): never {
  const text = error instanceof Error
    ? `${error.name}: ${error.message}\n${error.stack}`
    : String(error);
  try {
    append(ackFd, { fatal: text });
  } finally {
    console.error(text);
    process.exit(1);
  }
}

// The parent holds our stdin: when it goes away, so do we (no orphan runs forever).
process.stdin.on("end", () => process.exit(3));
process.stdin.on("error", () => process.exit(3));
process.stdin.resume();

const store = await openSqliteStore(dbPath);
append(ackFd, { phase: "open", at: Date.now() });
const bh = new Beehive(
  store,
  beehiveOptions({
    debug() {},
    info() {},
    warn() {},
    // An error is something nothing retries: the parent fails the campaign on it.
    error(message, attributes) {
      fatal(new Error(`${message} ${String(attributes?.error ?? "")}`));
    },
  }),
);
registerControllers(bh);
await bh.start();
append(ackFd, { phase: "started", at: Date.now() });

// ---------------------------------------------------------------------------
// Watches resumed from their saved positions

async function follow(kind: KindName): Promise<void> {
  const client = bh.client(KINDS[kind]);
  for (;;) {
    const from = positions[kind];
    let stream: ObjectListStream<unknown, unknown>;
    if (from === undefined) {
      stream = await client.watchList();
      append(watchFd, {
        start: kind,
        from: stream.resourceVersion,
        snapshot: stream.objects.length,
      });
      positions[kind] = stream.resourceVersion;
      savePositions();
    } else {
      stream = await client.watchList({ resumeFrom: from });
      append(watchFd, { start: kind, from });
    }
    try {
      for await (const change of stream) {
        // Processing: the change goes to the watch log, and only then is its position saved.
        append(watchFd, { kind, type: change.type, id: change.id, rv: change.resourceVersion });
        positions[kind] = change.resourceVersion;
        savePositions();
      }
      return;
    } catch (error) {
      if (!(error instanceof WatchTooOldError)) throw error;
      // Retention passed the saved position: say so, and start again from a snapshot.
      append(watchFd, { tooOld: kind, from: from! });
      delete positions[kind];
    }
  }
}
for (const kind of WATCHED) follow(kind).catch(fatal);

// ---------------------------------------------------------------------------
// The client workload

interface Known {
  id: number;
  name: string;
  spec: AnySpec;
  owner?: number;
  deleting: boolean;
}
const known: Record<KindName, Map<number, Known>> = {
  Cluster: new Map(),
  Cache: new Map(),
  Config: new Map(),
  App: new Map(),
};
for (const kind of Object.keys(known) as KindName[]) {
  const objects = await bh.client<AnySpec>(KINDS[kind]).list({ load: ["owner"] });
  for (const o of objects) {
    known[kind].set(o.id, {
      id: o.id,
      name: o.name,
      spec: o.spec,
      owner: o.owner()?.id,
      deleting: o.deletionRequestedAt !== undefined,
    });
  }
}
append(ackFd, { phase: "ready", at: Date.now() });

const rand = prng(deriveSeed(seed, incarnation));
const pick = <T>(xs: readonly T[]): T | undefined =>
  xs.length === 0 ? undefined : xs[Math.floor(rand() * xs.length)];
const live = (kind: KindName) => [...known[kind].values()].filter((k) => !k.deleting);
const clients = {
  Cluster: bh.client<ClusterSpec>(KINDS.Cluster),
  Cache: bh.client<CacheSpec>(KINDS.Cache),
  Config: bh.client<ConfigSpec>(KINDS.Config),
  App: bh.client<AppSpec>(KINDS.App),
} as const;
const anyClient = (kind: KindName) => clients[kind] as unknown as Client<AnySpec, unknown>;

let step = 0;
let seq = 0;
const nonce = () => `${incarnation}:${step}`;
const LEVELS = ["debug", "info", "warn", "error"];

function specFor(kind: KindName, previous?: AnySpec): AnySpec | undefined {
  switch (kind) {
    case "Cluster":
      return { replicas: 1 + Math.floor(rand() * 5), nonce: nonce() };
    case "Cache":
      return { size: Math.floor(rand() * 1000), flaky: rand() < 0.2, nonce: nonce() };
    case "Config":
      return { level: pick(LEVELS)!, nonce: nonce() };
    case "App": {
      const prev = previous as AppSpec | undefined;
      // Retarget now and then; only ever at live targets.
      const config = prev !== undefined && rand() < 0.7 ? prev.config : pick(live("Config"))?.name;
      const cluster = prev !== undefined && rand() < 0.7
        ? prev.cluster
        : pick(live("Cluster"))?.name;
      if (config === undefined || cluster === undefined) return undefined;
      return { config, cluster, nonce: nonce() };
    }
  }
}

/** Whether any App not bound to go with it names `name` as its `field` target. */
function named(field: "config" | "cluster", name: string, ownerId?: number): boolean {
  for (const app of known.App.values()) {
    if (app.deleting || (app.spec as AppSpec)[field] !== name) continue;
    if (ownerId !== undefined && app.owner === ownerId) continue;
    return true;
  }
  return false;
}

/** Runs one client write bracketed by its intent and its acknowledgement. */
async function write(
  intent: Omit<Extract<AckLine, { intent: number }>, "intent">,
  call: () => Promise<{ id: number; rv?: number; created?: boolean }>,
): Promise<{ id: number; rv?: number } | undefined> {
  const s = ++seq;
  append(ackFd, { intent: s, ...intent });
  try {
    const r = await call();
    append(ackFd, { ack: s, id: r.id, rv: r.rv, created: r.created });
    return r;
  } catch (error) {
    if (error instanceof NotFoundError || error instanceof DeletionPendingError) {
      append(ackFd, { refused: s, error: error.name });
      // The model is behind (a cascade, a collection): learn it.
      if (intent.id !== undefined) {
        const k = known[intent.kind].get(intent.id);
        if (k !== undefined) {
          if (error instanceof NotFoundError) known[intent.kind].delete(intent.id);
          else k.deleting = true;
        }
      }
      return undefined;
    }
    throw error;
  }
}

const CAP = 24; // live objects per kind the workload hovers around

async function create(kind: KindName): Promise<void> {
  const spec = specFor(kind);
  if (spec === undefined) return;
  const name = `${kind.toLowerCase()}-${incarnation}-${step}`;
  let owner: number | undefined;
  let finalizers: string[] | undefined;
  if (kind === "Cluster" && rand() < 0.8) finalizers = [CLUSTER_FINALIZER];
  if (kind === "Cache") {
    owner = pick(live("Cluster"))?.id;
    if (owner === undefined) return;
    if (rand() < 0.7) finalizers = [CACHE_FINALIZER];
  }
  if (kind === "App") {
    if (rand() < 0.3) {
      owner = live("Cluster").find((c) => c.name === (spec as AppSpec).cluster)?.id;
    }
    if (rand() < 0.4) finalizers = [APP_FINALIZER];
  }
  const text = JSON.stringify(spec);
  const upsert = kind === "Config" && rand() < 0.5;
  const r = await write(
    { op: upsert ? "createOrUpdate" : "create", kind, name, hash: specHash(text), owner },
    async () => {
      const options = { owner, finalizers };
      if (upsert) {
        const res = await anyClient(kind).createOrUpdate(name, spec, options);
        return { id: res.object.id, rv: res.object.resourceVersion, created: res.created };
      }
      const o = await anyClient(kind).create(name, spec, options);
      return { id: o.id, rv: o.resourceVersion, created: true };
    },
  );
  if (r !== undefined) known[kind].set(r.id, { id: r.id, name, spec, owner, deleting: false });
}

async function update(kind: KindName): Promise<void> {
  const target = pick(live(kind));
  if (target === undefined) return;
  const spec = specFor(kind, target.spec);
  if (spec === undefined) return;
  const hash = specHash(JSON.stringify(spec));
  const byName = kind === "Config" && rand() < 0.5;
  const r = await write(
    { op: byName ? "createOrUpdate" : "update", kind, name: target.name, id: target.id, hash },
    async () => {
      if (byName) {
        const res = await anyClient(kind).createOrUpdate(target.name, spec);
        return { id: res.object.id, rv: res.object.resourceVersion, created: res.created };
      }
      const o = await anyClient(kind).update(target.id, spec);
      return { id: o.id, rv: o.resourceVersion };
    },
  );
  if (r !== undefined) {
    if (r.id !== target.id) {
      // The row was collected and the name taken again by this call.
      known[kind].delete(target.id);
      known[kind].set(r.id, { id: r.id, name: target.name, spec, deleting: false });
    } else target.spec = spec;
  }
}

async function remove(kind: KindName): Promise<void> {
  const candidates = live(kind).filter((k) =>
    kind === "Config"
      ? !named("config", k.name)
      : kind === "Cluster"
      ? !named("cluster", k.name, k.id)
      : true
  );
  const target = pick(candidates);
  if (target === undefined) return;
  const byName = kind === "Config" && rand() < 0.4;
  const r = await write(
    { op: byName ? "deleteByName" : "delete", kind, name: target.name, id: target.id },
    async () => {
      if (byName) await anyClient(kind).deleteByName(target.name);
      else await anyClient(kind).delete(target.id);
      return { id: target.id };
    },
  );
  if (r !== undefined) target.deleting = true;
  if (kind === "Cluster" && r !== undefined) {
    // The cascade will take what it owns: stop writing to it.
    for (const m of [known.Cache, known.App]) {
      for (const k of m.values()) if (k.owner === target.id) k.deleting = true;
    }
  }
}

const WEIGHTS: readonly [KindName, number][] = [
  ["Cluster", 2],
  ["Cache", 3],
  ["Config", 2],
  ["App", 3],
];

try {
  for (;;) {
    step++;
    let r = rand() * WEIGHTS.reduce((n, [, w]) => n + w, 0);
    let kind: KindName = "App";
    for (const [k, w] of WEIGHTS) {
      if ((r -= w) < 0) {
        kind = k;
        break;
      }
    }
    const n = live(kind).length;
    const op = rand();
    // Creates thin out and deletes pick up as a kind nears its cap.
    const pCreate = Math.max(0.05, 0.45 * (1 - n / CAP));
    const pDelete = 0.1 + 0.25 * (n / CAP);
    if (op < pCreate) await create(kind);
    else if (op < pCreate + pDelete) await remove(kind);
    else await update(kind);
    // Let the controllers in between writes, a few ms at most.
    const pause = rand() < 0.5 ? 0 : rand() * 4;
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
} catch (error) {
  fatal(error);
}
