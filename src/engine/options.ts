/**
 * Options for {@linkcode Beehive} and `register`, their defaults, and their
 * validation. Durations are milliseconds.
 *
 * @module
 */
import { InvalidOptionError } from "../model/errors.ts";
import { MAX_NESTING_DEPTH } from "../model/_codec.ts";
import { describe } from "../model/_values.ts";
import type { Logger } from "../telemetry/logger.ts";
import { isLogLevel, type LogLevel } from "../telemetry/logger_levels.ts";
import type { Migrator } from "../model/migrator.ts";
import type { FencedRepository } from "./fencing.ts";
import { isStorableText } from "../model/_text.ts";
import type { GroupKind, ObjectId } from "../store.ts";
import {
  checkMeter,
  checkTracer,
  type TelemetryMeter,
  type TelemetryTracer,
} from "../telemetry/telemetry.ts";

/** Event-log retention: each bound 0 = unbounded. */
export interface EventRetention {
  /** Keep each (object, category) timeline's newest N runs. @default {0} */
  perTimeline?: number;
  /** Drop runs whose last observation is older than this (ms). @default {0} */
  maxAge?: number;
}

/** Write-log retention: each bound 0 = unbounded. */
export interface WriteLogRetention {
  /** Keep each kind's newest N entries. @default {0} */
  perKind?: number;
  /** Drop entries older than this (ms): the resume window of a watch. @default {86_400_000} (24 h) */
  maxAge?: number;
}

/**
 * Limits on what a write may carry: every user-supplied string and collection
 * is bounded, each checked before anything is written. Sizes are in UTF-8 bytes.
 */
export interface Limits {
  /** The longest object name a create accepts (`InvalidNameError`). An integer ≥ 1. @default {1_024} */
  nameBytes?: number;
  /**
   * The largest spec, status or event detail, as JSON (`TooLargeError`). An
   * integer ≥ 1. @default {1_572_864} (1.5 MiB)
   */
  objectBytes?: number;
  /**
   * The longest condition or event message (`InvalidConditionError` /
   * `InvalidEventError`). An integer ≥ 1. @default {32_768}
   */
  messageBytes?: number;
  /**
   * The longest short identifier: a kind's group and kind
   * (`InvalidOptionError`), a condition's type and reason
   * (`InvalidConditionError`), an event's reason and category
   * (`InvalidEventError`), a finalizer (`InvalidOptionError`). An integer ≥ 1.
   * @default {1_024}
   */
  fieldBytes?: number;
  /** The most conditions one object holds (`InvalidConditionError`). An integer ≥ 1. @default {128} */
  conditionsPerObject?: number;
  /** The most finalizers one object holds (`InvalidOptionError`). An integer ≥ 1. @default {64} */
  finalizersPerObject?: number;
  /**
   * The deepest a spec, status or event detail nests objects and arrays (`{}`
   * is 1; `TooLargeError` with `field: "nestingDepth"`). An integer from 1 to
   * 1 000. @default {64}
   */
  nestingDepth?: number;
}

/** The per-controller options, settable on the Beehive (defaults for every kind) or per kind. */
export interface ControllerOptions {
  /**
   * How often the owed pass drains work the store records as owed (unsettled
   * generations, owed dependency wakes); also when a bare `unsettled()` comes back. Must be > 0.
   * @default {30_000}
   */
  owedPassInterval?: number;
  /** How often every object of the kind is re-dispatched; 0 = off. @default {0} */
  fullPassInterval?: number;
  /** Each object's cadence, measured from the end of its own pass; 0 = off. @default {0} */
  individualPassInterval?: number;
  /** Re-dispatch every object once at start, settled or not. @default {false} */
  startupFullPass?: boolean;
  /** The cap of the retry ladder (1 s doubling). Must be > 0. @default {30_000} */
  maxRetryInterval?: number;
  /** Passes of one kind that may run at once (never two for one object). An integer ≥ 1. @default {4} */
  concurrency?: number;
}

/** Leader election: several Beehives on one store, one leading at a time. */
export interface LeaderElectionOptions {
  /** The timed lease the candidates contend for. @default {the Beehive's leaseName} */
  leaseName?: string;
  /** This candidate's identity, as the lease names its holder. @default {a generated unique string} */
  identity?: string;
  /** How long a won or renewed lease lasts, in ms. Must be > 0. @default {15_000} */
  leaseDuration?: number;
  /**
   * How often the leader renews and a candidate retries, in ms; must be below
   * leaseDuration. @default {leaseDuration / 3}
   */
  renewInterval?: number;
}

/** Options for `new Beehive(store, options)`. */
export interface BeehiveOptions extends ControllerOptions {
  /**
   * The lease a started Beehive holds for as long as its process lives; a
   * second Beehive on the same store fails `start()` with `StoreInUseError`.
   * Must be a non-empty string. @default {"beehive"}
   */
  leaseName?: string;
  /**
   * Makes a started Beehive a candidate for a timed lease instead: its
   * controllers, GC and backstop passes run only while it leads, and every
   * write they make is fenced on its leadership epoch.
   * @default {undefined} (no election: the plain lease)
   */
  leaderElection?: LeaderElectionOptions;
  /** How often the dependency-watermark backstop runs. Must be > 0. @default {60_000} */
  staleDependentsInterval?: number;
  /** How often a watch reads without a commit wake. Must be > 0. @default {30_000} */
  watchFloorInterval?: number;
  /** How often garbage collection and retention run. Must be > 0. @default {30_000} */
  gcInterval?: number;
  /** Event-log retention. @default {{ perTimeline: 0, maxAge: 0 }} (unbounded) */
  eventRetention?: EventRetention;
  /** Write-log retention. @default {{ perKind: 0, maxAge: 86_400_000 }} */
  writeLogRetention?: WriteLogRetention;
  /**
   * Limits on names, values, messages, identifiers, collections and nesting.
   * @default {{ nameBytes: 1_024, objectBytes: 1_572_864, messageBytes: 32_768, fieldBytes: 1_024, conditionsPerObject: 128, finalizersPerObject: 64, nestingDepth: 64 }}
   */
  limits?: Limits;
  /** Where beehive reports; `console` qualifies. @default {undefined} (silent) */
  logger?: Logger;
  /** The lowest level passed to the logger. @default {"info"} */
  logLevel?: LogLevel;
  /**
   * Kinds whose definitions `start()` stores besides the registered ones:
   * `defineKind` tokens (their names, columns and JSON Schemas), or plain
   * `{ group, kind }`s (stored with default names when not yet stored), so a
   * process that only writes a kind still teaches other writers its schema.
   * @default {[]}
   */
  kinds?: readonly GroupKind[];
  /**
   * An OpenTelemetry `Meter` (e.g. `metrics.getMeter("beehive")` from
   * `npm:@opentelemetry/api`, typed structurally): beehive records
   * `beehive.reconcile.passes`, `beehive.reconcile.duration`,
   * `beehive.reconcile.active`, `beehive.queue.depth` and `beehive.leader`.
   * @default {undefined} (no metrics; nothing recorded per pass)
   */
  meter?: TelemetryMeter;
  /**
   * An OpenTelemetry `Tracer` (e.g. `trace.getTracer("beehive")`): one span
   * `reconcile Kind.group` per pass, active while the controller runs.
   * @default {undefined} (no spans)
   */
  tracer?: TelemetryTracer;
}

/** Options for `bh.register(kind, controller, options)`. */
export interface RegisterOptions extends ControllerOptions {
  /** Converts stored spec and status written at older schema versions. @default {undefined} */
  migrator?: Migrator;
  /**
   * Ids to requeue within the kind: one feed or several. Each feed ends when
   * its iterable ends or the Beehive stops. A burst of pokes for one object
   * costs one lookup and one enqueue. @default {[]}
   */
  triggerById?: AsyncIterable<ObjectId> | readonly AsyncIterable<ObjectId>[];
  /**
   * Names to requeue within the kind, resolved when looked up: one feed or
   * several, as `triggerById`. @default {[]}
   */
  triggerByName?: AsyncIterable<string> | readonly AsyncIterable<string>[];
  /**
   * Where the controller's side effects are written, fenced on the term's
   * epoch: `cc.fencedWrite(entityId, mutation)` calls its `applyFenced`.
   * @default {undefined} (`cc.fencedWrite` rejects with `TypeError`)
   */
  fencedRepository?: FencedRepository;
  /**
   * Kinds whose objects this kind owns (controller-runtime's `Owns`): any
   * write to an object of one of them — spec, status, conditions, deletion —
   * requeues its owner of this kind, one pass per owner for a burst of
   * writes. @default {[]}
   */
  owns?: readonly GroupKind[];
}

/** Every controller option, resolved. */
export interface ResolvedControllerOptions {
  owedPassInterval: number;
  fullPassInterval: number;
  individualPassInterval: number;
  startupFullPass: boolean;
  maxRetryInterval: number;
  concurrency: number;
}

/** Every Beehive option, resolved. */
export interface ResolvedBeehiveOptions extends ResolvedControllerOptions {
  staleDependentsInterval: number;
  watchFloorInterval: number;
  gcInterval: number;
  eventRetention: { perTimeline: number; maxAge: number };
  writeLogRetention: { perKind: number; maxAge: number };
  limits: {
    nameBytes: number;
    objectBytes: number;
    messageBytes: number;
    fieldBytes: number;
    conditionsPerObject: number;
    finalizersPerObject: number;
    nestingDepth: number;
  };
  logger: Logger | undefined;
  logLevel: LogLevel;
  leaseName: string;
  leaderElection: ResolvedLeaderElection | undefined;
  meter: TelemetryMeter | undefined;
  tracer: TelemetryTracer | undefined;
  kinds: readonly GroupKind[];
}

/** Leader election, resolved. */
export interface ResolvedLeaderElection {
  leaseName: string;
  identity: string;
  leaseDuration: number;
  renewInterval: number;
}

/** The defaults of every option. */
export const DEFAULTS: ResolvedBeehiveOptions = {
  owedPassInterval: 30_000,
  fullPassInterval: 0,
  individualPassInterval: 0,
  startupFullPass: false,
  maxRetryInterval: 30_000,
  concurrency: 4,
  staleDependentsInterval: 60_000,
  watchFloorInterval: 30_000,
  gcInterval: 30_000,
  eventRetention: { perTimeline: 0, maxAge: 0 },
  writeLogRetention: { perKind: 0, maxAge: 86_400_000 },
  limits: {
    nameBytes: 1_024,
    objectBytes: 1_572_864,
    messageBytes: 32_768,
    fieldBytes: 1_024,
    conditionsPerObject: 128,
    finalizersPerObject: 64,
    nestingDepth: 64,
  },
  logger: undefined,
  logLevel: "info",
  leaseName: "beehive",
  leaderElection: undefined,
  meter: undefined,
  tracer: undefined,
  kinds: [],
};

/** The default lease duration of leader election, in ms. */
export const DEFAULT_LEASE_DURATION = 15_000;

function invalid(name: string, value: unknown, expected: string): InvalidOptionError {
  return new InvalidOptionError(
    `Cannot use option ${name}: current value is ${describe(value)}, expected ${expected}`,
  );
}

type Rule = "positive" | "nonNegative" | "count";

/** The longest interval a timer can wait, in ms (2^31 − 1). */
export const MAX_INTERVAL = 2_147_483_647;

/** The options that arm timers. */
const TIMER_OPTIONS = new Set([
  "owedPassInterval",
  "fullPassInterval",
  "individualPassInterval",
  "maxRetryInterval",
  "staleDependentsInterval",
  "watchFloorInterval",
  "gcInterval",
  "leaderElection.leaseDuration",
  "leaderElection.renewInterval",
]);

function number(name: string, value: unknown, rule: Rule): number {
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw invalid(name, value, "a finite number");
  }
  if (rule === "positive" && value <= 0) throw invalid(name, value, "a number > 0 (ms)");
  if (rule === "nonNegative" && value < 0) {
    throw invalid(name, value, "a number >= 0 (ms; 0 = off)");
  }
  if (rule === "count" && (!Number.isInteger(value) || value < 1)) {
    throw invalid(name, value, "an integer >= 1");
  }
  // A timer cannot wait longer: a larger delay would fire at once, over and over.
  if (TIMER_OPTIONS.has(name) && value > MAX_INTERVAL) {
    throw invalid(name, value, `at most ${MAX_INTERVAL} ms (about 24.8 days)`);
  }
  return value;
}

function checkObject(name: string, value: unknown): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalid(name, value, "an options object");
  }
  return value as Record<string, unknown>;
}

/** Resolves the controller options present in `o` over `base`. */
function resolveController(
  o: Record<string, unknown>,
  base: ResolvedControllerOptions,
): ResolvedControllerOptions {
  const out = { ...base };
  if (o.owedPassInterval !== undefined) {
    out.owedPassInterval = number("owedPassInterval", o.owedPassInterval, "positive");
  }
  if (o.fullPassInterval !== undefined) {
    out.fullPassInterval = number("fullPassInterval", o.fullPassInterval, "nonNegative");
  }
  if (o.individualPassInterval !== undefined) {
    out.individualPassInterval = number(
      "individualPassInterval",
      o.individualPassInterval,
      "nonNegative",
    );
  }
  if (o.maxRetryInterval !== undefined) {
    out.maxRetryInterval = number("maxRetryInterval", o.maxRetryInterval, "positive");
  }
  if (o.concurrency !== undefined) out.concurrency = number("concurrency", o.concurrency, "count");
  if (o.startupFullPass !== undefined) {
    if (typeof o.startupFullPass !== "boolean") {
      throw invalid("startupFullPass", o.startupFullPass, "a boolean");
    }
    out.startupFullPass = o.startupFullPass;
  }
  return out;
}

function retention(name: string, value: unknown, keys: readonly string[]) {
  const o = checkObject(name, value);
  const out: Record<string, number> = {};
  for (const k of keys) {
    if (o[k] !== undefined) {
      const v = number(`${name}.${k}`, o[k], "nonNegative");
      if (k.startsWith("per") && !Number.isInteger(v)) {
        throw invalid(`${name}.${k}`, v, "an integer >= 0");
      }
      out[k] = v;
    }
  }
  return out;
}

/**
 * Validates and resolves Beehive options.
 * @throws {InvalidOptionError} a value is out of range.
 */
export function resolveBeehiveOptions(options: unknown): ResolvedBeehiveOptions {
  if (options === undefined) return { ...DEFAULTS };
  const o = checkObject("options", options);
  const out: ResolvedBeehiveOptions = { ...DEFAULTS, ...resolveController(o, DEFAULTS) };
  if (o.staleDependentsInterval !== undefined) {
    out.staleDependentsInterval = number(
      "staleDependentsInterval",
      o.staleDependentsInterval,
      "positive",
    );
  }
  if (o.watchFloorInterval !== undefined) {
    out.watchFloorInterval = number("watchFloorInterval", o.watchFloorInterval, "positive");
  }
  if (o.gcInterval !== undefined) out.gcInterval = number("gcInterval", o.gcInterval, "positive");
  if (o.eventRetention !== undefined) {
    out.eventRetention = {
      ...DEFAULTS.eventRetention,
      ...retention("eventRetention", o.eventRetention, ["perTimeline", "maxAge"]),
    };
  }
  if (o.writeLogRetention !== undefined) {
    out.writeLogRetention = {
      ...DEFAULTS.writeLogRetention,
      ...retention("writeLogRetention", o.writeLogRetention, ["perKind", "maxAge"]),
    };
  }
  if (o.limits !== undefined) {
    const l = checkObject("limits", o.limits);
    const limits = { ...DEFAULTS.limits };
    for (const k of Object.keys(limits) as (keyof typeof limits)[]) {
      if (l[k] !== undefined) {
        const v = l[k];
        const max = k === "nestingDepth" ? MAX_NESTING_DEPTH : Number.MAX_SAFE_INTEGER;
        if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1 || v > max) {
          throw invalid(
            `limits.${k}`,
            v,
            k === "nestingDepth"
              ? `an integer from 1 to ${max}`
              : k.endsWith("Bytes")
              ? "an integer >= 1 (bytes)"
              : "an integer >= 1",
          );
        }
        limits[k] = v;
      }
    }
    out.limits = limits;
  }
  if (o.logger !== undefined) {
    const l = o.logger as Record<string, unknown>;
    if (
      typeof l !== "object" || l === null ||
      !["debug", "info", "warn", "error"].every((m) => typeof l[m] === "function")
    ) {
      throw invalid("logger", o.logger, "an object with debug, info, warn and error methods");
    }
    out.logger = o.logger as Logger;
  }
  if (o.logLevel !== undefined) {
    if (!isLogLevel(o.logLevel)) {
      throw invalid("logLevel", o.logLevel, `"debug", "info", "warn" or "error"`);
    }
    out.logLevel = o.logLevel;
  }
  if (o.leaseName !== undefined) out.leaseName = text("leaseName", o.leaseName);
  if (o.leaderElection !== undefined) {
    out.leaderElection = resolveLeaderElection(o.leaderElection, out.leaseName);
  }
  if (o.meter !== undefined) out.meter = checkMeter(o.meter);
  if (o.tracer !== undefined) out.tracer = checkTracer(o.tracer);
  if (o.kinds !== undefined) out.kinds = kindList("kinds", o.kinds);
  return out;
}

/** The most kinds a `kinds` or `owns` option lists. */
const MAX_KINDS = 1_024;

/** A list of kinds, each `{ group, kind }` strings with a non-empty kind (the objects kept as given). */
function kindList(name: string, value: unknown): GroupKind[] {
  if (!Array.isArray(value) || value.length > MAX_KINDS) {
    throw invalid(name, value, `an array of at most ${MAX_KINDS} kinds`);
  }
  return value.map((k, i) => {
    const gk = k as GroupKind;
    if (
      typeof gk !== "object" || gk === null || typeof gk.group !== "string" ||
      typeof gk.kind !== "string" || gk.kind === "" || !isStorableText(gk.group) ||
      !isStorableText(gk.kind)
    ) {
      throw invalid(`${name}[${i}]`, k, "{ group, kind } strings with a non-empty kind");
    }
    return gk;
  });
}

function text(name: string, value: unknown): string {
  if (typeof value !== "string" || value === "" || !isStorableText(value)) {
    throw invalid(name, value, "a non-empty, well-formed string without NUL");
  }
  return value;
}

function resolveLeaderElection(value: unknown, leaseName: string): ResolvedLeaderElection {
  const o = checkObject("leaderElection", value);
  const leaseDuration = o.leaseDuration === undefined
    ? DEFAULT_LEASE_DURATION
    : number("leaderElection.leaseDuration", o.leaseDuration, "positive");
  const renewInterval = o.renewInterval === undefined
    ? leaseDuration / 3
    : number("leaderElection.renewInterval", o.renewInterval, "positive");
  if (renewInterval >= leaseDuration) {
    throw invalid(
      "leaderElection.renewInterval",
      renewInterval,
      `a number below leaderElection.leaseDuration (${leaseDuration} ms)`,
    );
  }
  return {
    leaseName: o.leaseName === undefined
      ? leaseName
      : text("leaderElection.leaseName", o.leaseName),
    identity: o.identity === undefined
      ? `beehive-${crypto.randomUUID()}`
      : text("leaderElection.identity", o.identity),
    leaseDuration,
    renewInterval,
  };
}

/** Register options, resolved over the Beehive's defaults. */
export interface ResolvedRegisterOptions extends ResolvedControllerOptions {
  migrator: Migrator | undefined;
  triggerById: AsyncIterable<ObjectId>[];
  triggerByName: AsyncIterable<string>[];
  fencedRepository: FencedRepository | undefined;
  owns: readonly GroupKind[];
}

function isAsyncIterable(value: unknown): boolean {
  return typeof value === "object" && value !== null &&
    typeof (value as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function";
}

/** One feed or an array of feeds, as an array. */
function checkFeeds<T>(name: string, value: unknown): AsyncIterable<T>[] {
  if (isAsyncIterable(value)) return [value as AsyncIterable<T>];
  if (Array.isArray(value) && value.every(isAsyncIterable)) return [...value];
  throw invalid(
    name,
    value,
    "an AsyncIterable (a ReadableStream qualifies) or an array of them",
  );
}

/**
 * Validates and resolves register options over the Beehive's defaults.
 * @throws {InvalidOptionError} a value is out of range.
 */
export function resolveRegisterOptions(
  options: unknown,
  base: ResolvedControllerOptions,
): ResolvedRegisterOptions {
  const o = options === undefined ? {} : checkObject("options", options);
  const out: ResolvedRegisterOptions = {
    ...resolveController(o, base),
    migrator: undefined,
    triggerById: [],
    triggerByName: [],
    fencedRepository: undefined,
    owns: [],
  };
  if (o.migrator !== undefined) {
    const m = o.migrator as Record<string, unknown>;
    const versionOk = (v: unknown) => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
    if (
      typeof m !== "object" || m === null || !versionOk(m.specVersion) ||
      !versionOk(m.statusVersion) || typeof m.convertSpec !== "function" ||
      typeof m.convertStatus !== "function"
    ) {
      throw invalid(
        "migrator",
        o.migrator,
        "{ specVersion, statusVersion (integers >= 0), convertSpec, convertStatus }",
      );
    }
    out.migrator = o.migrator as Migrator;
  }
  if (o.triggerById !== undefined) out.triggerById = checkFeeds("triggerById", o.triggerById);
  if (o.triggerByName !== undefined) {
    out.triggerByName = checkFeeds("triggerByName", o.triggerByName);
  }
  if (o.fencedRepository !== undefined) {
    const r = o.fencedRepository as Partial<FencedRepository> | null;
    if (typeof r !== "object" || r === null || typeof r.applyFenced !== "function") {
      throw invalid("fencedRepository", o.fencedRepository, "an object with an applyFenced method");
    }
    out.fencedRepository = r as FencedRepository;
  }
  if (o.owns !== undefined) out.owns = kindList("owns", o.owns);
  return out;
}
