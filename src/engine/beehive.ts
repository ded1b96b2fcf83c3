/**
 * The control plane: {@linkcode Beehive}.
 *
 * @module
 */
import { AdminClient } from "../clients/admin_client.ts";
import { checkClientOptions, Client, type ClientOptions } from "../clients/client.ts";
import { KindCodec } from "../model/_codec.ts";
import { collect } from "./_collect.ts";
import type { ControllerClient } from "../clients/controller_client.ts";
import { checkKind, Engine, engines, kindKey, kindName, type Term } from "./_engine.ts";
import {
  BeehiveError,
  InvalidOptionError,
  InvalidStoreIdentityError,
  NotFoundError,
  StoreInUseError,
} from "../model/errors.ts";
import type { BeehiveObject } from "../model/object.ts";
import {
  type BeehiveOptions,
  type RegisterOptions,
  resolveBeehiveOptions,
  type ResolvedLeaderElection,
  resolveRegisterOptions,
} from "./options.ts";
import { type ControllerFn, Reconciler } from "./_reconciler.ts";
import { DependencyWaker } from "./_dependency_waker.ts";
import { StaleDependents } from "./_stale_dependents.ts";
import { sleep } from "./_sleep.ts";
import type { ReconcileResult } from "../model/result.ts";
import type { GroupKind, HeldLease, KindsPutInput, Store } from "../store.ts";
import { LeaderElector } from "./_leader_elector.ts";
import { isKindToken, type Kind, kindDefinitionOf, schemasOf } from "../model/kind.ts";
import { checkKindBounds } from "../clients/_write_checks.ts";
import type { Fencing } from "./fencing.ts";

/** A reconcile function: drives one object toward its spec. */
export type ReconcileFn<Spec, Status> = (
  obj: BeehiveObject<Spec, Status>,
  cc: ControllerClient<Status>,
) => ReconcileResult | Promise<ReconcileResult>;

/**
 * A controller: an object with `reconcile`, or a bare reconcile function. A
 * thrown error is `fail(error)`; a return that is not a result fails the pass
 * with `InvalidResultError`.
 */
export type Controller<Spec, Status> = ReconcileFn<Spec, Status> | {
  reconcile: ReconcileFn<Spec, Status>;
};

/** Options of the function `start` resolves to. */
export interface StopOptions {
  /** Give up waiting when this aborts: `stop` then rejects with its reason. */
  readonly signal?: AbortSignal;
}

/** Options of {@linkcode Beehive.start}. */
export interface StartOptions {
  /**
   * Gives up starting when this aborts: `start` rejects with its reason, and
   * the Beehive is left as it was (startable again once the step in flight
   * has been undone). @default {undefined} (no bound)
   */
  readonly signal?: AbortSignal;
}

/** Who holds the lease a Beehive holds or contends for. */
export interface Leadership {
  /** The holder's identity, `undefined` when the lease is free. */
  readonly holder: string | undefined;
  /** The lease's fencing epoch (0 when it was never taken). */
  readonly epoch: number;
  /** When a timed lease lapses unless renewed; `undefined` for the plain store lease or a free one. */
  readonly expiresAt: Date | undefined;
  /** Whether this Beehive is the holder and leads now. */
  readonly self: boolean;
}

/** Stops a Beehive: resolves once every loop has drained and the store is released. */
export type StopFunction = (options?: StopOptions) => Promise<void>;

/** The GC interval the per-sweep budgets below are sized for. */
const GC_BUDGET_INTERVAL = 30_000;
/** Timelines the event cap trims per sweep, at {@linkcode GC_BUDGET_INTERVAL}. */
const GC_EVENT_CAP_BUDGET = 256;
/** Free pages returned to the OS per sweep, at {@linkcode GC_BUDGET_INTERVAL}. */
const GC_RECLAIM_PAGES = 1_000;
/** After the store lease's lock is lost, the first wait between attempts to take it again (ms). */
const RECLAIM_FIRST_WAIT = 100;
/** The longest wait between those attempts (ms). */
const RECLAIM_MAX_WAIT = 2_000;

/**
 * A per-sweep budget scaled to `gcInterval`: a longer interval does
 * proportionally more per sweep, so the rate of work is the same (at least 1).
 */
export function gcBudget(base: number, gcInterval: number): number {
  return Math.max(1, Math.round((base * gcInterval) / GC_BUDGET_INTERVAL));
}

/** `p`, or a rejection with `signal`'s reason as soon as it aborts. */
function bounded<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return p;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** Databases with a running Beehive in this process, keyed by store identity. */
const claims = new Map<string, object>();

/**
 * The control plane over one store: register controllers, start it, and use
 * clients. One running Beehive per database in a process.
 *
 * @example
 * ```ts
 * import { Beehive, settled } from "@beehive/beehive";
 * import { openSqliteStore } from "@beehive/beehive/sqlite";
 *
 * const store = await openSqliteStore(":memory:");
 * const bh = new Beehive(store);
 * const Greeting = { group: "example.com", kind: "Greeting" };
 * bh.register<{ to: string }, { message: string }>(Greeting, async (obj, cc) => {
 *   await cc.updateStatus({ message: `Hello, ${obj.spec.to}!` });
 *   return settled();
 * });
 * const stop = await bh.start();
 * await bh.client(Greeting).create("hello", { to: "world" });
 * await stop();
 * await store.close();
 * ```
 */
export class Beehive {
  readonly #engine: Engine;
  /** The holder name of this Beehive's lease. */
  readonly #identity: string;
  /** What stop waits for besides the term: trigger feeds, the elector. */
  readonly #running: Promise<void>[] = [];
  #stopping: Promise<void> | undefined;
  #starting = false;
  /** An aborted start still being undone: the next start waits for it. */
  #undoing: Promise<void> | undefined;
  #elector: LeaderElector | undefined;
  #termControl: AbortController | undefined;
  /** The open term's drain. */
  #termDrained: Promise<void> | undefined;

  /**
   * Creates a control plane over `store`.
   * @throws {InvalidOptionError} an option is out of range.
   */
  constructor(store: Store, options?: BeehiveOptions) {
    if (typeof store !== "object" || store === null || typeof store.within !== "function") {
      throw new TypeError("Cannot create a Beehive: store is not a Store");
    }
    this.#engine = new Engine(store, resolveBeehiveOptions(options));
    engines.set(this, this.#engine);
    for (const k of this.#engine.options.kinds) checkKindBounds(k, this.#engine.options.limits);
    this.#identity = this.#engine.options.leaderElection?.identity ??
      `beehive-${crypto.randomUUID()}`;
  }

  /**
   * Registers the controller of `kind`, before start and once per kind. A
   * `defineKind` token brings its types and validators: every client of the
   * kind then validates spec writes, and the controller's status writes.
   * @throws {InvalidOptionError} an option is out of range, or `kind` is malformed.
   * @throws {BeehiveError} after start, or for a kind already registered.
   */
  register<Spec, Status>(
    kind: Kind<Spec, Status>,
    controller: Controller<Spec, Status>,
    options?: RegisterOptions,
  ): void;
  /** Registers the controller of a plain `{ group, kind }`, with the types given explicitly. */
  register<Spec = unknown, Status = unknown>(
    kind: GroupKind,
    controller: Controller<Spec, Status>,
    options?: RegisterOptions,
  ): void;
  register<Spec = unknown, Status = unknown>(
    kind: GroupKind,
    controller: Controller<Spec, Status>,
    options?: RegisterOptions,
  ): void {
    const gk = checkKind(kind);
    const engine = this.#engine;
    checkKindBounds(gk, engine.options.limits);
    if (engine.state !== "new") {
      throw new BeehiveError(
        `Cannot register ${kindName(gk)}: the Beehive has already ${
          engine.state === "running" ? "started" : "stopped"
        }`,
      );
    }
    if (engine.registration(gk) !== undefined) {
      throw new BeehiveError(`Cannot register ${kindName(gk)}: it already has a controller`);
    }
    let fn: ControllerFn;
    if (typeof controller === "function") {
      fn = controller as ControllerFn;
    } else if (
      typeof controller === "object" && controller !== null &&
      typeof controller.reconcile === "function"
    ) {
      fn = (obj, cc) => (controller.reconcile as ControllerFn).call(controller, obj, cc);
    } else {
      throw new InvalidOptionError(
        `Cannot register ${
          kindName(gk)
        }: the controller must be a function or have a reconcile method`,
      );
    }
    const opts = resolveRegisterOptions(options, engine.options);
    const codec = new KindCodec(opts.migrator);
    engine.register({
      gk,
      codec,
      reconciler: new Reconciler(engine, gk, fn, opts, codec),
      schemas: schemasOf(kind),
      definition: kindDefinitionOf(kind),
      owns: opts.owns.map((k) => checkKind(k)),
    });
  }

  /**
   * A client of `kind`. Works before start and after stop, while the store is
   * open. Spec writes are validated by the token's `spec` schema (or, for a
   * plain kind, by the registered token's). For a kind defined
   * `namespaced: true`, `{ namespace }` scopes the client to one namespace
   * (see {@linkcode ClientOptions}); without it, its reads span every namespace
   * and its name-keyed calls reject with `InvalidOptionError`.
   * @throws {InvalidOptionError} `options` or its namespace is malformed, or a cluster-scoped token was given a namespace.
   */
  client<Spec, Status>(kind: Kind<Spec, Status>, options?: ClientOptions): Client<Spec, Status>;
  /** A client of a plain `{ group, kind }`, with the types given explicitly. */
  client<Spec = unknown, Status = unknown>(
    kind: GroupKind,
    options?: ClientOptions,
  ): Client<Spec, Status>;
  client<Spec = unknown, Status = unknown>(
    kind: GroupKind,
    options?: ClientOptions,
  ): Client<Spec, Status> {
    const namespace = checkClientOptions(kind, options);
    return new Client<Spec, Status>(this.#engine, this.#engine.store, kind, false, { namespace });
  }

  /** An admin client of `kind`: the controller's writes, from outside a pass. */
  adminClient<Spec, Status>(kind: Kind<Spec, Status>): AdminClient<Status>;
  /** An admin client of a plain `{ group, kind }`, with the status type given explicitly. */
  adminClient<Status = unknown>(kind: GroupKind): AdminClient<Status>;
  adminClient<Status = unknown>(kind: GroupKind): AdminClient<Status> {
    return new AdminClient<Status>(this.#engine, kind);
  }

  /**
   * Whether this Beehive leads now: without leader election, from start to
   * stop (it holds the store lease); with it, while it holds the timed lease.
   */
  get isLeader(): boolean {
    const engine = this.#engine;
    if (engine.state !== "running") return false;
    return this.#elector === undefined ? engine.term !== undefined : this.#elector.leading;
  }

  /**
   * The lease this Beehive holds or contends for, as the store has it now.
   * `self` is true while this Beehive leads.
   * @throws {StoreClosedError} the store is closed.
   */
  async leadership(): Promise<Leadership> {
    const o = this.#engine.options;
    const name = o.leaderElection?.leaseName ?? o.leaseName;
    const lease = await this.#engine.store.leases.get(name);
    return {
      holder: lease?.holder,
      epoch: lease?.epoch ?? 0,
      expiresAt: lease?.expiresAt === undefined ? undefined : new Date(lease.expiresAt),
      self: this.isLeader && lease?.holder === this.#identity,
    };
  }

  /**
   * Starts the Beehive and resolves to the function that stops it. One-shot.
   * It first stores the definition of every registered kind and of every kind
   * in the `kinds` option (names, columns and JSON Schemas: see `defineKind`),
   * so writers without their validators check against them.
   * Without leader election it then takes the store lease, then starts the
   * reconcile loops, the owed pass of every kind, and the GC sweep. With
   * leader election it resolves once the kinds are stored, and runs those
   * only while it leads.
   * `signal` bounds the startup; an aborted start undoes what it did (the
   * lease is released) and leaves the Beehive startable.
   * @throws {StoreInUseError} another started Beehive, in this process or another, holds the store lease.
   * @throws {InvalidStoreIdentityError} the store reports no identity.
   * @throws {BeehiveError} started twice, or after stop.
   * @throws {StoreError} (or another store failure) storing the kind definitions failed; nothing started.
   * @throws {unknown} the signal's `reason`, when it aborts before the start completes.
   */
  start(options?: StartOptions): Promise<StopFunction> {
    try {
      if (options !== undefined && (typeof options !== "object" || options === null)) {
        throw new TypeError("Cannot start the Beehive: options must be an object like { signal }");
      }
      const signal = options?.signal;
      if (signal !== undefined && !(signal instanceof AbortSignal)) {
        throw new TypeError("Cannot start the Beehive: signal must be an AbortSignal");
      }
      if (signal?.aborted) return Promise.reject(signal.reason);
      const undoing = this.#undoing;
      if (undoing !== undefined) return undoing.then(() => this.start(options));
      const engine = this.#engine;
      if (engine.state !== "new") {
        throw new BeehiveError(
          engine.state === "running"
            ? "Cannot start the Beehive: it is already running"
            : "Cannot start the Beehive: it has stopped; create a new one",
        );
      }
      const identity = engine.store.identity;
      if (typeof identity !== "string" || identity === "") {
        throw new InvalidStoreIdentityError(
          `Cannot start the Beehive: the store's identity is ${JSON.stringify(identity)}`,
        );
      }
      if (this.#starting) throw new BeehiveError("Cannot start the Beehive: it is starting");
      const le = engine.options.leaderElection;
      if (le !== undefined) {
        this.#starting = true;
        return bounded(this.#storeKinds(), signal).then(() => {
          engine.state = "running";
          this.#observeGauges();
          return this.#campaign(le);
        }).finally(() => (this.#starting = false));
      }
      // Candidates share a store by design; plain Beehives are refused early in-process.
      if (claims.has(identity)) {
        throw new StoreInUseError(
          `Cannot start the Beehive: another running Beehive in this process uses ${identity}`,
        );
      }
      const token = {};
      claims.set(identity, token);
      this.#starting = true;
      return this.#launch(identity, token, signal).finally(() => (this.#starting = false));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Takes the store lease and opens the one term of a Beehive without
   * election. When `signal` aborts first, rejects with its reason at once and
   * undoes the steps in the background (`#undoing`).
   */
  async #launch(
    identity: string,
    token: object,
    signal: AbortSignal | undefined,
  ): Promise<StopFunction> {
    const engine = this.#engine;
    const unclaim = () => {
      if (claims.get(identity) === token) claims.delete(identity);
    };
    try {
      await bounded(this.#storeKinds(), signal);
    } catch (error) {
      unclaim();
      throw error;
    }
    const holding = engine.store.leases.hold(engine.options.leaseName, this.#identity);
    let held: HeldLease;
    try {
      held = await bounded(holding, signal);
    } catch (error) {
      if (signal?.aborted && error === signal.reason) {
        this.#undo(holding.then((h) => h.release(), () => {}).finally(unclaim));
      } else unclaim();
      throw error;
    }
    // The lease held now: a lost lock is taken again on a new one (`#reclaim`).
    const slot = { held };
    const release = async () => {
      await this.#endTerm();
      await slot.held.release();
      unclaim();
    };
    engine.state = "running";
    try {
      const fencing = { lease: engine.options.leaseName, epoch: 0 };
      await bounded(this.#openTerm(engine.store, fencing, false), signal);
      signal?.throwIfAborted();
    } catch (error) {
      // Only an abort reaches here: opening a term does not reject.
      this.#undo(release().finally(() => (engine.state = "new")));
      throw error;
    }
    this.#observeGauges();
    this.#launchFeeds();
    this.#onLockLost(slot, engine.options.leaseName);
    return (options) => this.#stop(release, options);
  }

  /**
   * Stores the definition of every registered kind and of every kind in the
   * `kinds` option, in one transaction: a token's replaces the stored one, a
   * plain kind's default names are stored only where none is.
   */
  async #storeKinds(): Promise<void> {
    const engine = this.#engine;
    const defs = new Map<string, { def: KindsPutInput; replace: boolean }>();
    const add = (def: KindsPutInput, replace: boolean) => {
      const key = kindKey(def);
      if (!defs.get(key)?.replace) defs.set(key, { def, replace });
    };
    for (const k of engine.options.kinds) add(kindDefinitionOf(k), isKindToken(k));
    for (const reg of engine.registrations()) {
      add(reg.definition, reg.schemas !== undefined);
    }
    if (defs.size === 0) return;
    await engine.store.within(async (tx) => {
      for (const { def, replace } of defs.values()) await tx.kinds.put(def, { replace });
    });
    engine.storedSchemas.forget();
  }

  /**
   * Stops reconciling, loudly, when the store reports the held lease lost
   * (its SQLite lock file deleted or replaced, its PostgreSQL lock's
   * connection failed): another process can take it, and two holders must
   * never reconcile the same objects. Then contends for the lease again
   * (`#reclaim`): a server restart frees the lock, and this Beehive resumes
   * once it holds it; while another process holds it, this one waits.
   */
  #onLockLost(slot: { held: HeldLease }, lease: string): void {
    const lost = slot.held.lost;
    if (lost === undefined) return;
    const onLost = () => {
      const engine = this.#engine;
      if (engine.state !== "running" || engine.term === undefined) return;
      engine.log.error(
        "beehive: the store lease's lock was lost; this Beehive stops reconciling until it holds the lease again",
        { lease, error: lost.reason },
      );
      this.#running.push(this.#endTerm().then(() => this.#reclaim(slot, lease)));
    };
    if (lost.aborted) return onLost();
    lost.addEventListener("abort", onLost, { once: true });
    this.#engine.shutdown.signal.addEventListener(
      "abort",
      () => lost.removeEventListener("abort", onLost),
      { once: true },
    );
  }

  /**
   * Takes the store lease again after its lock was lost, retrying with backoff
   * until it holds it or the Beehive stops, then opens a new term.
   */
  async #reclaim(slot: { held: HeldLease }, lease: string): Promise<void> {
    const engine = this.#engine;
    const signal = engine.shutdown.signal;
    await slot.held.release().catch(() => {});
    for (
      let wait = RECLAIM_FIRST_WAIT;
      !signal.aborted;
      wait = Math.min(wait * 2, RECLAIM_MAX_WAIT)
    ) {
      let held: HeldLease | undefined;
      try {
        held = await engine.store.leases.hold(lease, this.#identity);
      } catch (error) {
        if (!(error instanceof StoreInUseError)) {
          engine.log.warn("beehive: taking the store lease again failed; retrying", {
            lease,
            error,
          });
        }
      }
      if (held !== undefined) {
        if (signal.aborted) {
          await held.release().catch(() => {});
          return;
        }
        slot.held = held;
        engine.log.info("beehive: holds the store lease again; reconciling resumes", { lease });
        await this.#openTerm(engine.store, { lease, epoch: 0 }, false);
        this.#onLockLost(slot, lease);
        return;
      }
      await sleep(wait, signal);
    }
  }

  /** Records an aborted start's undo; the next start waits for it. */
  #undo(work: Promise<unknown>): void {
    const done = work.then(() => {}, (error) => {
      this.#engine.log.warn("beehive: undoing an aborted start failed", { error });
    }).finally(() => {
      if (this.#undoing === done) this.#undoing = undefined;
    });
    this.#undoing = done;
  }

  /** Starts campaigning; terms open and close as the lease is won and lost. */
  #campaign(le: ResolvedLeaderElection): StopFunction {
    const engine = this.#engine;
    const elector = new LeaderElector(engine.store, le, engine.log, {
      elected: (epoch) => {
        const fencing = { lease: le.leaseName, epoch };
        void this.#openTerm(engine.store.fenced(fencing), fencing, true);
      },
      deposed: () => this.#endTerm(),
    });
    this.#elector = elector;
    engine.depose = (term, reason) => elector.depose(term.fencing.epoch, reason);
    this.#launchFeeds();
    this.#running.push(elector.run(engine.shutdown.signal));
    return (options) => this.#stop(() => Promise.resolve(), options);
  }

  /** Reports the queue-depth and leader gauges until stop. */
  #observeGauges(): void {
    const engine = this.#engine;
    const o = engine.options;
    engine.telemetry?.observe({
      lease: o.leaderElection?.leaseName ?? o.leaseName,
      leading: () => this.isLeader,
      depths: () =>
        engine.registrations().map((r) => [kindName(r.gk), r.reconciler.queue.size] as const),
    });
  }

  /** The trigger feeds are pulled for the Beehive's whole life, across terms. */
  #launchFeeds(): void {
    for (const reg of this.#engine.registrations()) {
      this.#running.push(reg.reconciler.runTriggers());
    }
  }

  /**
   * Opens a term over `store`: the waker, every kind's loop, GC and the
   * stale-dependents pass. Resolves once they are running; `#endTerm` waits
   * for their drain.
   */
  #openTerm(store: Store, fencing: Fencing, elected: boolean): Promise<void> {
    const opened = this.#startTerm({ store, fencing, elected });
    this.#termDrained = opened.then((t) => t.drained);
    return opened.then(() => {});
  }

  async #startTerm(
    opening: Omit<Term, "signal">,
  ): Promise<{ drained: Promise<void> }> {
    const engine = this.#engine;
    const control = new AbortController();
    const term: Term = { ...opening, signal: control.signal };
    this.#termControl = control;
    engine.term = term;
    const registered = engine.registrations();
    // Subscribed and seeded before any loop runs: the waker has no tick to catch up with.
    const waker = registered.length > 0 ? new DependencyWaker(engine, term) : undefined;
    await waker?.prime();
    const loops: Promise<void>[] = [];
    if (waker !== undefined) {
      const { promise, resolve } = Promise.withResolvers<void>();
      const stop = () => void waker.stop().then(resolve);
      if (term.signal.aborted) stop();
      else term.signal.addEventListener("abort", stop, { once: true });
      loops.push(promise);
    }
    // A term that ended during the waker's seed starts nothing.
    if (!term.signal.aborted) {
      for (const reg of registered) loops.push(reg.reconciler.run(term));
      loops.push(this.#every(engine.options.gcInterval, () => this.#gcSweep(term), term.signal));
      if (registered.length > 0) {
        const stale = new StaleDependents(engine, term);
        loops.push(
          this.#every(engine.options.staleDependentsInterval, () => stale.sweep(), term.signal),
        );
      }
    }
    return { drained: Promise.allSettled(loops).then(() => {}) };
  }

  /** Ends the running term, if any: aborts its passes, stops dispatch; resolves once drained. */
  async #endTerm(): Promise<void> {
    const engine = this.#engine;
    const control = this.#termControl;
    if (control !== undefined) {
      this.#termControl = undefined;
      engine.term = undefined;
      control.abort(
        new BeehiveError(
          engine.state === "stopped"
            ? "The Beehive is stopping"
            : "The Beehive lost its leader lease",
        ),
      );
      for (const reg of engine.registrations()) reg.reconciler.stop();
    }
    const drained = this.#termDrained;
    this.#termDrained = undefined;
    await drained;
  }

  #stop(release: () => Promise<void>, options: StopOptions | undefined): Promise<void> {
    const engine = this.#engine;
    if (this.#stopping === undefined) {
      engine.state = "stopped";
      engine.shutdown.abort(new BeehiveError("The Beehive is stopping"));
      for (const reg of engine.registrations()) reg.reconciler.closeTriggers();
      // Streams end with StoppedError once the loops have drained.
      this.#stopping = release()
        .then(() => Promise.allSettled(this.#running))
        .then(() => {
          engine.telemetry?.unobserve();
          engine.writes.close();
        });
    }
    const signal = options?.signal;
    if (signal === undefined) return this.#stopping;
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      this.#stopping!.then(() => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      });
    });
  }

  /** Runs `fn` now and then every `interval` ms until `signal` aborts. */
  async #every(interval: number, fn: () => Promise<unknown>, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await fn();
      await sleep(interval, signal);
    }
  }

  /** One GC sweep: collection, retention, owed counts of client-only kinds, free pages. */
  async #gcSweep(term: Term): Promise<void> {
    const engine = this.#engine;
    const store = term.store;
    const log = engine.log;
    const stopped = term.signal;
    // A stopping Beehive waits for the sweep in flight: each step and each row checks first.
    const step = async (name: string, fn: () => Promise<unknown>) => {
      if (stopped.aborted) return;
      try {
        await fn();
      } catch (error) {
        if (!engine.termOver(term, error, { driver: `GC ${name}` })) {
          log.warn(`beehive: GC ${name} failed`, { error });
        }
      }
    };
    await step("deletion sweep", async () => {
      // A stalled deleting object waits for a push like any stalled object.
      for (const ref of await store.deletionRequests.list({ excludeStalled: true })) {
        if (stopped.aborted) return;
        if (engine.registration(ref) !== undefined) {
          engine.sweepWake(ref);
          continue;
        }
        try {
          await collect(engine, store, ref.id);
        } catch (error) {
          if (
            !(error instanceof NotFoundError) &&
            !engine.termOver(term, error, { driver: "GC collection" })
          ) {
            log.warn("beehive: collecting an object failed", { ...ref, error });
          }
        }
      }
    });
    const { perTimeline, maxAge } = engine.options.eventRetention;
    if (perTimeline > 0 || maxAge > 0) {
      const capBudget = gcBudget(GC_EVENT_CAP_BUDGET, engine.options.gcInterval);
      await step("event retention", () => store.events.sweep({ perTimeline, maxAge, capBudget }));
    }
    const wl = engine.options.writeLogRetention;
    if (wl.perKind > 0 || wl.maxAge > 0) {
      await step("write-log retention", () => store.objectWrites.sweep(wl));
    }
    await step(
      "owed sweep",
      () => store.reconcileOwed.sweep(engine.registrations().map((r) => r.gk)),
    );
    await step(
      "free pages",
      () => store.reclaimSpace(gcBudget(GC_RECLAIM_PAGES, engine.options.gcInterval)),
    );
  }
}
