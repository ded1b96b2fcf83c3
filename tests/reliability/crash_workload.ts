/**
 * What the crash campaign's worker and its parent share: the kinds, their
 * controllers, the Beehive options, the seeded PRNG, the spec hash, and the
 * line formats of the side files the worker leaves for the parent.
 *
 * The graph: a `Cluster` (finalizer, owner) owns `Cache`s (finalizer, some
 * fail their first pass of each generation) and some `App`s; an `App`
 * depends on one `Config` (a client-only kind) and one `Cluster`, both named
 * in its spec, and records in its status the id and resource version of each
 * target its pass saw. Every pass of a registered kind writes its status, a
 * `Ready` condition and a `Reconciled` event naming the generation.
 *
 * @module
 */
import { createHash } from "node:crypto";
import {
  type Beehive,
  type BeehiveObject,
  type BeehiveOptions,
  type ControllerClient,
  type Logger,
  NotFoundError,
  settled,
} from "../../mod.ts";

export const GROUP = "crash.beehive.dev";
export const Cluster = { group: GROUP, kind: "Cluster" } as const;
export const Cache = { group: GROUP, kind: "Cache" } as const;
export const Config = { group: GROUP, kind: "Config" } as const;
export const App = { group: GROUP, kind: "App" } as const;

/** The kind names, as the side files spell them. */
export type KindName = "Cluster" | "Cache" | "Config" | "App";
export const KINDS: Readonly<Record<KindName, { group: string; kind: KindName }>> = {
  Cluster,
  Cache,
  Config,
  App,
};
/** Kinds with a controller. `Config` is client-only: the GC collects it inline. */
export const REGISTERED: readonly KindName[] = ["Cluster", "Cache", "App"];
/** Kinds the worker watches, saving each watch's position. */
export const WATCHED: readonly KindName[] = ["Cluster", "App"];

export const CLUSTER_FINALIZER = "crash.beehive.dev/connection";
export const CACHE_FINALIZER = "crash.beehive.dev/flush";
export const APP_FINALIZER = "crash.beehive.dev/drain";

export interface ClusterSpec {
  replicas: number;
  nonce: string;
}
export interface CacheSpec {
  size: number;
  /** Fails the first pass of each generation (the retry ladder, across crashes). */
  flaky: boolean;
  nonce: string;
}
export interface ConfigSpec {
  level: string;
  nonce: string;
}
export interface AppSpec {
  /** The Config it depends on, by name. */
  config: string;
  /** The Cluster it depends on, by name. */
  cluster: string;
  nonce: string;
}
export type AnySpec = ClusterSpec | CacheSpec | ConfigSpec | AppSpec;

/** A target as a dependent's pass saw it; `null` when it was missing or deletion-pending. */
export type Seen = { id: number; rv: number } | null;

export interface ClusterStatus {
  generation: number;
  replicas: number;
}
export interface CacheStatus {
  generation: number;
  size?: number;
  /** Set by a flaky pass that failed on purpose at this generation. */
  attempted?: number;
}
export interface AppStatus {
  generation: number;
  seen: { config: Seen; cluster: Seen };
}

/**
 * The options of the worker's Beehive and of the parent's converging one:
 * every periodic driver at a second or less, two passes per kind at once, and
 * a write log trimmed per kind so old watch positions do fall off.
 */
export function beehiveOptions(logger: Logger | undefined): BeehiveOptions {
  return {
    owedPassInterval: 1_000,
    gcInterval: 250,
    staleDependentsInterval: 1_000,
    watchFloorInterval: 500,
    maxRetryInterval: 1_000,
    concurrency: 2,
    eventRetention: { perTimeline: 4 },
    writeLogRetention: { perKind: 1_500 },
    logger,
    logLevel: "warn",
  };
}

/** The status, condition and event every live pass writes. */
async function report<S>(cc: ControllerClient<S>, status: S, generation: number, ok = true) {
  await cc.updateStatus(status);
  await cc.setCondition({
    type: "Ready",
    status: ok ? "True" : "False",
    reason: ok ? "Reconciled" : "TargetMissing",
    message: `generation ${generation}`,
  });
  await cc.addEvent({ type: "Normal", reason: "Reconciled", message: `generation ${generation}` });
}

/** Releases `finalizer` if the object still carries it. */
async function release<S>(obj: BeehiveObject<unknown, S>, cc: ControllerClient<S>, f: string) {
  if (obj.finalizers.includes(f)) await cc.deleteFinalizer(f);
}

/** Registers the three controllers on `bh` (the App controller reads targets through `bh`). */
export function registerControllers(bh: Beehive): void {
  bh.register<ClusterSpec, ClusterStatus>(Cluster, async (obj, cc) => {
    if (obj.deletionRequestedAt !== undefined) {
      // Held open while anything still points at it: owned children, live dependents.
      if (await cc.hasIncomingEdges()) return settled();
      await release(obj, cc, CLUSTER_FINALIZER);
      return settled();
    }
    await report(cc, { generation: obj.generation, replicas: obj.spec.replicas }, obj.generation);
    return settled();
  });

  bh.register<CacheSpec, CacheStatus>(Cache, async (obj, cc) => {
    if (obj.deletionRequestedAt !== undefined) {
      await release(obj, cc, CACHE_FINALIZER);
      return settled();
    }
    if (obj.spec.flaky && obj.status?.attempted !== obj.generation) {
      await cc.updateStatus({
        ...obj.status,
        generation: obj.status?.generation ?? 0,
        attempted: obj.generation,
      });
      throw new Error(`cache ${obj.id} fails its first pass at generation ${obj.generation}`);
    }
    await report(cc, {
      generation: obj.generation,
      size: obj.spec.size,
      attempted: obj.status?.attempted,
    }, obj.generation);
    return settled();
  });

  const configs = bh.client<ConfigSpec>(Config);
  const clusters = bh.client<ClusterSpec>(Cluster);
  const lookup = async (read: () => Promise<BeehiveObject<unknown, unknown>>) => {
    try {
      const target = await read();
      return target.deletionRequestedAt === undefined ? target : undefined;
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  };
  bh.register<AppSpec, AppStatus>(App, async (obj, cc) => {
    if (obj.deletionRequestedAt !== undefined) {
      await release(obj, cc, APP_FINALIZER);
      return settled();
    }
    const config = await lookup(() => configs.getByName(obj.spec.config));
    const cluster = await lookup(() => clusters.getByName(obj.spec.cluster));
    const want = new Set<number>();
    for (const target of [config, cluster]) {
      if (target === undefined) continue;
      await cc.addDependency(target.id);
      want.add(target.id);
    }
    // A target gone or going is let go of: the edge would hold a deleting target.
    for (const dep of await cc.listDependencies()) {
      if (!want.has(dep.id)) await cc.deleteDependency(dep.id);
    }
    const seen = (t: BeehiveObject<unknown, unknown> | undefined): Seen =>
      t === undefined ? null : { id: t.id, rv: t.resourceVersion };
    await report(
      cc,
      { generation: obj.generation, seen: { config: seen(config), cluster: seen(cluster) } },
      obj.generation,
      config !== undefined && cluster !== undefined,
    );
    return settled();
  });
}

// ---------------------------------------------------------------------------
// Seeds, hashes and side files

/** A seeded PRNG in [0, 1): 32-bit state, a Weyl step then an avalanche. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    z ^= z >>> 16;
    return (z >>> 0) / 4294967296;
  };
}

/** Derives a 32-bit seed from a seed and a step offset. */
export function deriveSeed(seed: number, offset: number): number {
  const r = prng((seed ^ Math.imul(offset + 1, 0x27d4eb2d)) >>> 0);
  return Math.floor(r() * 4294967296) >>> 0;
}

/** The hash of a spec's JSON text, as acknowledged and as stored. */
export function specHash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 16);
}

/** The client writes the worker makes. */
export type Op = "create" | "createOrUpdate" | "update" | "delete" | "deleteByName";

/**
 * One line of the acknowledgement file, one file per incarnation. Written with
 * an fsync: an `intent` before the call, then its `ack` (it resolved) or its
 * `refused` (it rejected with an expected class) — at most one call in flight.
 */
export type AckLine =
  | { phase: "open" | "started" | "ready"; at: number }
  | {
    intent: number;
    op: Op;
    kind: KindName;
    name: string;
    /** The id the call names (update, delete) or the worker believes holds the name. */
    id?: number;
    /** The spec written (not on deletes). */
    hash?: string;
    /** The owner given at create. */
    owner?: number;
  }
  | { ack: number; id: number; rv?: number; created?: boolean }
  | { refused: number; error: string }
  | { fatal: string };

/** One line of the worker's watch log: where each watch started, then every change it processed. */
export type WatchLine =
  | { start: KindName; from: number; snapshot?: number }
  | { tooOld: KindName; from: number }
  | { kind: KindName; type: "Added" | "Modified" | "Deleted"; id: number; rv: number };

/** The worker's saved watch positions: written after processing, fsync'd, renamed into place. */
export type Positions = Partial<Record<KindName, number>>;

/** The side files of one campaign directory. */
export function sideFiles(dir: string, incarnation: number) {
  return {
    acks: `${dir}/acks-${incarnation}.jsonl`,
    watch: `${dir}/watch-${incarnation}.jsonl`,
    positions: `${dir}/positions.json`,
  };
}

/** Parses the complete lines of a side file (a torn last line is ignored). */
export function parseLines<T>(text: string): T[] {
  const out: T[] = [];
  const lines = text.split("\n");
  lines.pop(); // after the last newline: empty, or a line the kill cut short
  for (const line of lines) {
    if (line !== "") out.push(JSON.parse(line) as T);
  }
  return out;
}
