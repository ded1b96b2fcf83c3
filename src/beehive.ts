/**
 * The control plane: {@linkcode Beehive}.
 *
 * @module
 */
import { AdminClient } from "./admin_client.ts";
import { Client } from "./client.ts";
import { KindCodec } from "./codec.ts";
import { collect } from "./collect.ts";
import type { ControllerClient } from "./controller_client.ts";
import { checkKind, Engine, kindName } from "./_engine.ts";
import {
  BeehiveError,
  InvalidOptionError,
  InvalidStoreIdentityError,
  NotFoundError,
  StoreInUseError,
} from "./errors.ts";
import type { BeehiveObject } from "./object.ts";
import {
  type BeehiveOptions,
  type RegisterOptions,
  resolveBeehiveOptions,
  resolveRegisterOptions,
} from "./options.ts";
import { type ControllerFn, Reconciler } from "./reconciler.ts";
import { DependencyWaker } from "./dependency_waker.ts";
import { StaleDependents } from "./stale_dependents.ts";
import { sleep } from "./_sleep.ts";
import type { ReconcileResult } from "./result.ts";
import type { GroupKind, Store } from "./store.ts";

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

/** Stops a Beehive: resolves once every loop has drained and the store is released. */
export type StopFunction = (options?: StopOptions) => Promise<void>;

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
  readonly #running: Promise<void>[] = [];
  #stopping: Promise<void> | undefined;

  /**
   * Creates a control plane over `store`.
   * @throws {InvalidOptionError} an option is out of range.
   */
  constructor(store: Store, options?: BeehiveOptions) {
    if (typeof store !== "object" || store === null || typeof store.within !== "function") {
      throw new TypeError("Cannot create a Beehive: store is not a Store");
    }
    this.#engine = new Engine(store, resolveBeehiveOptions(options));
  }

  /**
   * Registers the controller of `kind`, before start and once per kind.
   * @throws {InvalidOptionError} an option is out of range, or `kind` is malformed.
   * @throws {BeehiveError} after start, or for a kind already registered.
   */
  register<Spec = unknown, Status = unknown>(
    kind: GroupKind,
    controller: Controller<Spec, Status>,
    options?: RegisterOptions,
  ): void {
    const gk = checkKind(kind);
    const engine = this.#engine;
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
    engine.register({ gk, codec, reconciler: new Reconciler(engine, gk, fn, opts, codec) });
  }

  /** A client of `kind`. Works before start and after stop, while the store is open. */
  client<Spec = unknown, Status = unknown>(kind: GroupKind): Client<Spec, Status> {
    return new Client<Spec, Status>(this.#engine, this.#engine.store, kind);
  }

  /** An admin client of `kind`: the controller's writes, from outside a pass. */
  adminClient<Status = unknown>(kind: GroupKind): AdminClient<Status> {
    return new AdminClient<Status>(this.#engine, kind);
  }

  /**
   * Starts the reconcile loops, the owed pass of every kind, and the GC sweep;
   * resolves to the function that stops them. One-shot.
   * @throws {StoreInUseError} another running Beehive in this process uses the same database.
   * @throws {InvalidStoreIdentityError} the store reports no identity.
   * @throws {BeehiveError} started twice, or after stop.
   */
  start(): Promise<StopFunction> {
    try {
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
      if (claims.has(identity)) {
        throw new StoreInUseError(
          `Cannot start the Beehive: another running Beehive in this process uses ${identity}`,
        );
      }
      const token = {};
      claims.set(identity, token);
      engine.state = "running";
      return this.#launch(identity, token);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async #launch(identity: string, token: object): Promise<StopFunction> {
    const engine = this.#engine;
    const registered = engine.registrations();
    // Subscribed and seeded before any loop runs: the waker has no tick to catch up with.
    const waker = registered.length > 0 ? new DependencyWaker(engine) : undefined;
    await waker?.prime();
    for (const reg of registered) this.#running.push(reg.reconciler.run());
    this.#running.push(this.#every(engine.options.gcInterval, () => this.#gcSweep()));
    if (registered.length > 0) {
      const stale = new StaleDependents(engine);
      this.#running.push(this.#every(engine.options.staleDependentsInterval, () => stale.sweep()));
    }
    if (waker !== undefined) {
      const { promise, resolve } = Promise.withResolvers<void>();
      engine.shutdown.signal.addEventListener("abort", () => void waker.stop().then(resolve), {
        once: true,
      });
      this.#running.push(promise);
    }
    const drained = Promise.allSettled(this.#running).then(() => {
      if (claims.get(identity) === token) claims.delete(identity);
    });
    return (options) => this.#stop(drained, options);
  }

  #stop(drained: Promise<void>, options: StopOptions | undefined): Promise<void> {
    const engine = this.#engine;
    if (this.#stopping === undefined) {
      engine.state = "stopped";
      engine.shutdown.abort(new BeehiveError("The Beehive is stopping"));
      for (const reg of engine.registrations()) reg.reconciler.stop();
      // Streams end with StoppedError once the loops have drained.
      this.#stopping = drained.then(() => engine.writes.close());
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

  /** Runs `fn` now and then every `interval` ms until the Beehive stops. */
  async #every(interval: number, fn: () => Promise<unknown>): Promise<void> {
    const signal = this.#engine.shutdown.signal;
    while (!signal.aborted) {
      await fn();
      await sleep(interval, signal);
    }
  }

  /** One GC sweep: collection, retention, owed counts of client-only kinds, free pages. */
  async #gcSweep(): Promise<void> {
    const engine = this.#engine;
    const store = engine.store;
    const log = engine.log;
    const stopped = engine.shutdown.signal;
    // A stopping Beehive waits for the sweep in flight: each step and each row checks first.
    const step = async (name: string, fn: () => Promise<unknown>) => {
      if (stopped.aborted) return;
      try {
        await fn();
      } catch (error) {
        if (!stopped.aborted) log.warn(`beehive: GC ${name} failed`, { error });
      }
    };
    await step("deletion sweep", async () => {
      for (const ref of await store.deletionRequests.list()) {
        if (stopped.aborted) return;
        if (engine.registration(ref) !== undefined) {
          engine.pushThrottled(ref);
          continue;
        }
        try {
          await collect(engine, ref.id);
        } catch (error) {
          if (!(error instanceof NotFoundError) && !stopped.aborted) {
            log.warn("beehive: collecting an object failed", { ...ref, error });
          }
        }
      }
    });
    const { perTimeline, maxAge } = engine.options.eventRetention;
    if (perTimeline > 0 || maxAge > 0) {
      await step("event retention", () => store.events.sweep({ perTimeline, maxAge }));
    }
    const wl = engine.options.writeLogRetention;
    if (wl.perKind > 0 || wl.maxAge > 0) {
      await step("write-log retention", () => store.objectWrites.sweep(wl));
    }
    await step(
      "owed sweep",
      () => store.reconcileOwed.sweep(engine.registrations().map((r) => r.gk)),
    );
    await step("free pages", () => store.reclaimSpace(1000));
  }
}
