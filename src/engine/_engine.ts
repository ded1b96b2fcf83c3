/**
 * The engine state a Beehive shares with its clients, controllers and
 * drivers: the store, the resolved options, the registered kinds, and the
 * push paths from committed writes to work queues.
 *
 * @module
 */
import { KindCodec } from "../model/_codec.ts";
import { FencedError, InvalidOptionError } from "../model/errors.ts";
import type { Logger } from "../telemetry/logger.ts";
import { filterLogger } from "../telemetry/logger_levels.ts";
import type { ResolvedBeehiveOptions } from "./options.ts";
import type { GroupKind, KindsPutInput, ObjectId, ObjectRef, Store } from "../store.ts";
import type { WorkQueue } from "./work_queue.ts";
import type { Fencing } from "./fencing.ts";

import { kindKey } from "../model/_kind_keys.ts";
import { isStorableText } from "../model/_text.ts";
import { describe } from "../model/_values.ts";
import { WriteSignals } from "./_write_signals.ts";
import type { KindSchemas } from "../clients/_write_checks.ts";
import { StoredSchemas } from "./_stored_schemas.ts";
import { Telemetry } from "../telemetry/telemetry.ts";

export { kindKey, kindName } from "../model/_kind_keys.ts";

/** Checks a kind argument. @throws {InvalidOptionError} */
export function checkKind(kind: unknown): GroupKind {
  const k = kind as GroupKind;
  if (
    typeof k !== "object" || k === null || typeof k.group !== "string" ||
    typeof k.kind !== "string" || k.kind === "" || !isStorableText(k.group) ||
    !isStorableText(k.kind)
  ) {
    const shown = typeof k === "object" && k !== null
      ? `{ group: ${describe(k.group)}, kind: ${describe(k.kind)} }`
      : describe(kind);
    throw new InvalidOptionError(
      `Cannot use kind ${shown}: expected { group, kind } strings, well-formed UTF-16 without NUL, with a non-empty kind`,
    );
  }
  return { group: k.group, kind: k.kind };
}

/** Checks an id argument. @throws {TypeError} */
export function checkId(id: unknown, what = "id"): asserts id is number {
  if (typeof id !== "number" || !Number.isSafeInteger(id) || id < 1) {
    throw new TypeError(
      `Cannot use ${what}: current value is ${
        typeof id === "string" ? JSON.stringify(id) : String(id)
      }, expected a positive safe integer`,
    );
  }
}

/**
 * What the engine, clients and the Beehive use of a kind's reconcile loop
 * (`Reconciler` implements it; typed here so that the engine state does not
 * import the loop that imports it).
 */
export interface KindLoop {
  /** The kind's work queue. */
  readonly queue: WorkQueue;
  /** Clears `id`'s retry ladder. */
  resetBackoff(id: ObjectId): void;
  /** Runs the loop for one term; resolves once it has drained after `stop`. */
  run(term: Term): Promise<void>;
  /** Stops finding and dispatching work. */
  stop(): void;
  /** Pulls the trigger feeds for the Beehive's life; resolves once they end. */
  runTriggers(): Promise<void>;
  /** Ends the trigger feeds. */
  closeTriggers(): void;
}

/** A registered kind. */
export interface Registration {
  readonly gk: GroupKind;
  readonly codec: KindCodec;
  readonly reconciler: KindLoop;
  /** The validators of the token it was registered with; `undefined` for a plain kind. */
  readonly schemas: KindSchemas | undefined;
  /** The definition `start()` stores; `replace` false for a plain kind's defaults. */
  readonly definition: KindsPutInput;
  /** The kinds whose objects' writes wake their owner of this kind. */
  readonly owns: readonly GroupKind[];
}

/**
 * One stretch of leadership: the controller side (passes, GC, the waker, the
 * stale-dependents pass) runs only inside a term. A Beehive without leader
 * election has one term from start to stop; a candidate has one per lease it wins.
 */
export interface Term {
  /** The store controller-side writes go through: fenced on the term's epoch under leader election. */
  readonly store: Store;
  /** Aborts when the term ends (stop, or a lost lease): in-flight passes see it as `cc.signal`. */
  readonly signal: AbortSignal;
  /** The term's lease and epoch (epoch 0 without leader election): passes see it as `cc.fencing`. */
  readonly fencing: Fencing;
  /** Whether the term is one of several under leader election (its writes are fenced). */
  readonly elected: boolean;
}

/** Lifecycle state of a Beehive. */
export type EngineState = "new" | "running" | "stopped";

const plainCodec = new KindCodec(undefined);

/** Each Beehive's engine, for the testing kit's hooks (the Beehive keeps it private). */
export const engines: WeakMap<object, Engine> = new WeakMap();

/** What clients, controllers and drivers share. */
export class Engine {
  readonly store: Store;
  readonly options: ResolvedBeehiveOptions;
  readonly log: Logger;
  readonly #registrations = new Map<string, Registration>();
  state: EngineState = "new";
  /** Commit signals for watches and the dependency waker. */
  readonly writes: WriteSignals;
  /** Aborted when the Beehive stops. */
  readonly shutdown: AbortController = new AbortController();
  /** The leadership term running now, if any: pushes reach the queues only inside one. */
  term: Term | undefined;
  /** Metrics and traces; `undefined` when neither a meter nor a tracer was given. */
  readonly telemetry: Telemetry | undefined;
  /** The kinds' stored JSON Schemas, compiled. */
  readonly storedSchemas: StoredSchemas = new StoredSchemas();
  /** Ends `term` at once: set by a Beehive under leader election. */
  depose: ((term: Term, reason: string) => void) | undefined;
  /** Terms whose loss a pass has reported. */
  readonly #lost = new WeakSet<Term>();

  constructor(store: Store, options: ResolvedBeehiveOptions) {
    this.store = store;
    this.options = options;
    this.log = filterLogger(options.logger, options.logLevel);
    // Another Beehive's write on this handle wakes this one's controller at once: the log cannot
    // tell it from this Beehive's own (one handle, one origin).
    this.writes = new WriteSignals((fn) => store.watchCommits(fn), store, (ref) => {
      if (ref.id !== undefined) this.pushNow(ref as ObjectRef);
    });
    this.telemetry = options.meter === undefined && options.tracer === undefined
      ? undefined
      : new Telemetry(options.meter, options.tracer, this.log);
  }

  /**
   * Whether `error`, met by work of `term` (a pass, a driver), means the
   * term is over: it has ended (a stop, or a lost lease) or, under leader
   * election, a write was fenced. The first such error of a lost term logs
   * one `info` line and, when the term still runs, ends it; the work is
   * left to the next leader, neither failed nor retried here.
   */
  termOver(term: Term, error: unknown, detail: Record<string, unknown>): boolean {
    if (!term.signal.aborted && !(term.elected && error instanceof FencedError)) return false;
    if (this.#lost.has(term)) return true;
    this.#lost.add(term);
    if (this.state === "stopped") return true;
    this.log.info("beehive: lost leadership; the work in flight is left to the next leader", {
      lease: term.fencing.lease,
      epoch: term.fencing.epoch,
      ...detail,
      error,
    });
    if (!term.signal.aborted) this.depose?.(term, "a write was fenced: a later term leads");
    return true;
  }

  register(reg: Registration): void {
    this.#registrations.set(kindKey(reg.gk), reg);
  }

  registration(gk: GroupKind): Registration | undefined {
    return this.#registrations.get(kindKey(gk));
  }

  registrations(): Registration[] {
    return [...this.#registrations.values()];
  }

  /** The kind's codec: its migrator's, or pass-through for a kind with none. */
  codec(gk: GroupKind): KindCodec {
    return this.registration(gk)?.codec ?? plainCodec;
  }

  /**
   * The validators for writes of `gk` through a surface made from `kind`: the
   * `defineKind` token's own when it is one, else the registered token's,
   * else those of the kind's JSON Schemas as `store` holds them.
   * @throws {StoreError} a stored schema is not valid JSON Schema.
   */
  schemas(
    gk: GroupKind,
    own: KindSchemas | undefined,
    store: Store,
  ): KindSchemas | Promise<KindSchemas> {
    return own ?? this.registration(gk)?.schemas ?? this.storedSchemas.of(store, gk);
  }

  /**
   * Whether objects of `gk` live in namespaces, for a surface made from
   * `kind`: a `defineKind` token's own scope, else the registered token's,
   * else the kind's stored definition (cluster-scoped when none is stored),
   * read now with `fresh`, else trusted for {@linkcode STORED_SCHEMA_TTL}.
   */
  namespaced(
    gk: GroupKind,
    own: boolean | undefined,
    store: Store,
    fresh = false,
  ): boolean | Promise<boolean> {
    if (own !== undefined) return own;
    const reg = this.registration(gk);
    // A plain kind's registration carries default names, not a scope: the store says.
    if (reg?.schemas !== undefined) return reg.definition.namespaced;
    return this.storedSchemas.namespaced(store, gk, fresh);
  }

  /**
   * New information about `ref`: queue it now, bypassing the floor. A
   * client-only kind, or a Beehive not running or not leading, waits for a
   * pull: every push has a durable trace behind it, so nothing piles up in
   * memory meanwhile.
   */
  pushNow(ref: ObjectRef): void {
    if (this.state !== "running" || this.term === undefined) return;
    this.registration(ref)?.reconciler.queue.requeueNow(ref.id);
  }

  /**
   * A wake that respects backoff, and the floor once the object's push budget
   * is spent: a quiet object runs at once, a push loop is paced by the floor.
   */
  pushThrottled(ref: ObjectRef): void {
    if (this.state !== "running" || this.term === undefined) return;
    this.registration(ref)?.reconciler.queue.push(ref.id);
  }

  /** A periodic sweep's wake: a backstop, not news, so backoff and the floor hold it. */
  sweepWake(ref: ObjectRef): void {
    if (this.state !== "running" || this.term === undefined) return;
    this.registration(ref)?.reconciler.queue.add(ref.id);
  }
}
