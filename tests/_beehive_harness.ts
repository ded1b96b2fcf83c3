/**
 * Plumbing for the engine tests (Beehive, reconciler, ControllerClient,
 * AdminClient): a Beehive over a real SQLite store under fake time, a
 * controller that runs per-test jobs inside real passes, and a logger that
 * records what it is told.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  Beehive,
  type BeehiveObject,
  type BeehiveOptions,
  type Client,
  type ControllerClient,
  type GroupKind,
  type Logger,
  type ReconcileResult,
  type RegisterOptions,
  settled,
  type StopFunction,
} from "../mod.ts";
import type { Store } from "../store/mod.ts";
import { openTestStore, type TestStore } from "./_sqlite_driver.ts";
import { type FakeClock, installFakeTime } from "./_fake_time.ts";

/** The kind most engine tests reconcile. */
export const Thing: GroupKind = { group: "test.beehive.dev", kind: "Thing" };
/** A second kind, registered or client-only as a test needs. */
export const Other: GroupKind = { group: "test.beehive.dev", kind: "Other" };

// deno-lint-ignore no-explicit-any
export type AnyObject = BeehiveObject<any, any>;
// deno-lint-ignore no-explicit-any
export type AnyCC = ControllerClient<any>;
/** What a test runs inside a pass. */
export type Job = (obj: AnyObject, cc: AnyCC) => unknown;

/** One line the recording logger was told. */
export interface LogLine {
  readonly level: "debug" | "info" | "warn" | "error";
  readonly message: string;
  readonly attributes: Record<string, unknown> | undefined;
}

/** A logger that keeps every line. */
export function recordingLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at = (level: LogLine["level"]) => (message: string, attributes?: Record<string, unknown>) =>
    void lines.push({ level, message, attributes });
  return { lines, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/** A store wrapped so that its identity reads `identity` (every other member is the store's). */
export function withIdentity(store: Store, identity: string): Store {
  return new Proxy(store, {
    get(target, prop) {
      if (prop === "identity") return identity;
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * Counts calls to `objects.<method>` by method name, on the root store and
 * every transaction handle, and transactions opened on the root as `within`.
 */
export function countingObjectCalls(counts: Map<string, number>): (store: TestStore) => Store {
  const wrap = (store: Store): Store => {
    const objects = new Proxy(store.objects, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          counts.set(String(prop), (counts.get(String(prop)) ?? 0) + 1);
          return value.apply(target, args);
        };
      },
    });
    return new Proxy(store, {
      get(target, prop) {
        if (prop === "objects") return objects;
        if (prop === "within") {
          return <T>(fn: (tx: Store) => Promise<T>) => {
            counts.set("within", (counts.get("within") ?? 0) + 1);
            return target.within((tx) => fn(wrap(tx)));
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  };
  return wrap;
}

/** A temporary directory, removed by `remove()`. */
export function tempDir(): { path: string; file(name: string): string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), "beehive-engine-test-"));
  return {
    path,
    file: (name) => join(path, name),
    remove: () => rmSync(path, { recursive: true, force: true }),
  };
}

/** Options of {@linkcode Harness.open}. */
export interface HarnessOptions {
  readonly beehive?: BeehiveOptions;
  readonly register?: RegisterOptions;
  /** Register the harness controller for {@linkcode Thing}. @default {true} */
  readonly registerThing?: boolean;
  /** A database file; `":memory:"` when omitted. */
  readonly path?: string;
  /** An already-open store to use (the harness does not close it). */
  readonly store?: TestStore;
  /** An already-installed clock to use (the harness does not uninstall it). */
  readonly clock?: FakeClock;
  /** Hands the Beehive a decorated store instead of the SQLite store itself. */
  readonly wrap?: (store: TestStore) => Store;
}

/** A pass record. */
export interface PassRecord {
  readonly id: number;
  readonly generation: number;
  readonly at: number;
  readonly deleting: boolean;
}

/**
 * A Beehive with the harness controller registered for {@linkcode Thing}.
 * Each pass runs the next job queued for its object, else `fallback`.
 */
export class Harness {
  readonly clock: FakeClock;
  readonly store: TestStore;
  readonly bh: Beehive;
  readonly logger: Logger & { lines: LogLine[] };
  readonly passes: PassRecord[] = [];
  /** What a pass with no queued job does. */
  fallback: Job = () => settled();
  readonly #jobs = new Map<number, Job[]>();
  readonly #ownsStore: boolean;
  readonly #ownsClock: boolean;
  #stop: StopFunction | undefined;

  private constructor(
    clock: FakeClock,
    store: TestStore,
    options: HarnessOptions,
  ) {
    this.clock = clock;
    this.store = store;
    this.#ownsStore = options.store === undefined;
    this.#ownsClock = options.clock === undefined;
    this.logger = recordingLogger();
    this.bh = new Beehive(options.wrap?.(store) ?? store, {
      logger: this.logger,
      logLevel: "debug",
      ...options.beehive,
    });
    if (options.registerThing ?? true) {
      this.bh.register(
        Thing,
        (obj, cc) => this.#reconcile(obj, cc) as ReconcileResult,
        options.register,
      );
    }
  }

  /** Installs fake time (unless given a clock), opens the store and builds the Beehive. */
  static async open(options: HarnessOptions = {}): Promise<Harness> {
    const clock = options.clock ?? installFakeTime();
    try {
      const store = options.store ?? await openTestStore(options.path ?? ":memory:");
      try {
        return new Harness(clock, store, options);
      } catch (error) {
        if (options.store === undefined) await store.close();
        throw error;
      }
    } catch (error) {
      if (options.clock === undefined) clock.uninstall();
      throw error;
    }
  }

  // deno-lint-ignore no-explicit-any
  #reconcile(obj: any, cc: any): unknown {
    this.passes.push({
      id: obj.id,
      generation: obj.generation,
      at: Date.now(),
      deleting: obj.deletionRequestedAt !== undefined,
    });
    const queue = this.#jobs.get(obj.id);
    const job = queue?.shift() ?? this.fallback;
    if (queue !== undefined && queue.length === 0) this.#jobs.delete(obj.id);
    return job(obj, cc);
  }

  /** The Thing client. */
  // deno-lint-ignore no-explicit-any
  get things(): Client<any, any> {
    return this.bh.client(Thing);
  }

  /** Starts the Beehive and lets the startup work run; resolves to its stop function. */
  async start(): Promise<StopFunction> {
    const stop = await this.bh.start();
    this.#stop = stop;
    await this.flush();
    return stop;
  }

  /** Stops the Beehive if it runs. */
  async stop(): Promise<void> {
    const stop = this.#stop;
    this.#stop = undefined;
    if (stop !== undefined) await stop();
  }

  /** Runs every promise chain and timer due now. */
  async flush(): Promise<void> {
    await this.clock.tickAsync(0);
  }

  /** Advances fake time by `ms`, running what comes due. */
  async tick(ms: number): Promise<void> {
    await this.clock.tickAsync(ms);
  }

  /** Creates a Thing and lets its first pass run. */
  async create(name: string, spec: unknown = {}, options?: { finalizers?: string[] }) {
    const obj = await this.bh.client(Thing).create(name, spec, options);
    await this.flush();
    return obj;
  }

  /** Queues `job` for the next pass over `id` (no requeue). */
  queue(id: number, job: Job): void {
    const q = this.#jobs.get(id) ?? [];
    q.push(job);
    this.#jobs.set(id, q);
  }

  /**
   * Runs `body` inside a real pass over `id` (requeued now), then lets the
   * pass conclude. The pass returns `result()`; an assertion failing inside
   * `body` is rethrown here. Resolves to the pass's object and client.
   */
  async pass(
    id: number,
    body: (obj: AnyObject, cc: AnyCC) => Promise<void> | void,
    result: () => ReconcileResult = settled,
  ): Promise<{ obj: AnyObject; cc: AnyCC }> {
    let ran: { obj: AnyObject; cc: AnyCC } | undefined;
    let failure: { error: unknown } | undefined;
    this.queue(id, async (obj, cc) => {
      ran = { obj, cc };
      try {
        await body(obj, cc);
      } catch (error) {
        failure = { error };
      }
      return result();
    });
    await this.bh.client(Thing).requeue(id);
    await this.flush();
    if (failure !== undefined) throw failure.error;
    if (ran === undefined) throw new Error(`no pass ran over ${id}`);
    return ran;
  }

  /** Stops the Beehive, closes the store, uninstalls the clock (each if owned). */
  async close(): Promise<void> {
    try {
      await this.stop();
    } finally {
      try {
        if (this.#ownsStore) await this.store.close();
      } finally {
        if (this.#ownsClock) this.clock.uninstall();
      }
    }
  }
}

/** Opens a harness, runs `fn`, and closes it whatever happens. */
export async function withHarness(
  options: HarnessOptions,
  fn: (h: Harness) => Promise<void>,
): Promise<void> {
  const h = await Harness.open(options);
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}
