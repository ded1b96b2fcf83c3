/**
 * `createTestEnv`: a Beehive on an in-memory store and fake time, for testing
 * controllers without waiting.
 *
 * @module
 */
import { Beehive, type Controller, type StopFunction } from "../src/engine/beehive.ts";
import { type Engine, engines } from "../src/engine/_engine.ts";
import { drainOwedWatches } from "../src/watches/_tailer.ts";
import type { BeehiveOptions, RegisterOptions } from "../src/engine/options.ts";
import type { Kind } from "../src/model/kind.ts";
import { StoppedError } from "../src/model/errors.ts";
import { describe } from "../src/model/_values.ts";
import type { Logger } from "../src/telemetry/logger.ts";
import type { GroupKind, Store } from "../src/store.ts";
import { openSqliteStore } from "../store/sqlite/mod.ts";
import {
  type FakeClock,
  installFakeClock,
  nextStepper,
  nextTimerAt,
  quiesce,
  type Stepper,
  stepTo,
} from "./_fake_time.ts";
import { track } from "./_store_activity.ts";

/** Options of {@linkcode createTestEnv}. */
export interface TestEnvOptions {
  /**
   * The Beehive's options. A `logger` still hears everything; the env also
   * listens for what the engine logs at level `error`.
   * @default {{}}
   */
  options?: BeehiveOptions;
}

/**
 * A Beehive on an in-memory SQLite store and fake time. Until {@linkcode
 * TestEnv.close}, `Date`, `setTimeout` and `setInterval` are fake for the
 * whole process: time moves only through {@linkcode TestEnv.advance}.
 *
 * **Errors.** An error a controller throws in a pass, and an error the engine
 * logs at level `error` (a controller returning something that is not a
 * result, a failing driver), is recorded; the next `start()`, `settle()`,
 * `advance()` or `close()` finishes its work and then rejects with it (with an
 * `AggregateError` of them all when there are several), and forgets it. So a
 * test cannot miss one, and a test of a failure asserts the rejection and
 * goes on. A failure a controller returns (`fail(err)`) is its result, not an
 * error: it is not reported.
 */
export interface TestEnv {
  /**
   * The Beehive, not yet started: register controllers, then `start()`. Use
   * `bh.client(kind)` to write objects and read them back.
   */
  readonly bh: Beehive;
  /** The store the Beehive runs on: in memory, gone at `close()`. */
  readonly store: Store;
  /**
   * Starts the Beehive and settles: the startup passes have run when it resolves.
   * @throws {unknown} what a pass threw (see {@linkcode TestEnv}); what `bh.start()` throws.
   * @throws {StoppedError} the env is closed.
   * @throws {Error} another step (`start`, `settle`, `advance`) is still running: await each.
   */
  start(): Promise<void>;
  /**
   * Runs everything due now — passes, their writes, the wakes and timers
   * they set for the current instant — until nothing is, without moving time
   * or waiting in real time. Watches receive every change written so far: a
   * `watchList` (or `watch`) opened in the test yields it once this resolves.
   * A `requeueAfter`, a retry or an interval comes
   * due only by {@linkcode TestEnv.advance} — and so do the wakes the engine
   * paces: a dependency's wake (within 10 ms of the previous scan), the sixth
   * push to one object at one instant (then one a second).
   * @throws {unknown} what a pass threw (see {@linkcode TestEnv}).
   * @throws {StoppedError} the env is closed.
   * @throws {Error} work kept coming due at one instant without end, or another step is still
   * running.
   */
  settle(): Promise<void>;
  /**
   * Moves fake time forward by `ms`, firing each timer at its own instant and
   * settling after each, then settles at the new instant. `advance(0)` is
   * `settle()`.
   * @throws {RangeError} `ms` is negative, not finite or not a number.
   * @throws {unknown} what a pass threw (see {@linkcode TestEnv}).
   * @throws {StoppedError} the env is closed.
   * @throws {Error} another step is still running.
   */
  advance(ms: number): Promise<void>;
  /**
   * Stops the Beehive (letting passes in flight finish, moving fake time on
   * for one that waits on a timer of its own), closes the store and gives
   * the real `Date` and timers back. Idempotent.
   * @throws {unknown} what a pass threw since the last report (see {@linkcode TestEnv}),
   * once everything is closed.
   */
  close(): Promise<void>;
}

/** The env whose fake time is installed: there is one clock per process. */
let current: Env | undefined;

/**
 * Quiet for a test env: two rounds that start no store call and leave no
 * timer due now. Store calls in flight for 5 s of real time with none
 * settling fail the step.
 */
const QUIET = {
  rounds: 2,
  strict: true,
  stuckAfter: 5_000,
  throwWhenStuck: true,
  maxRounds: 100_000,
} as const;

/**
 * `store` without cross-process commit wakes: no other connection can commit
 * to a private in-memory store, so its probe (a 50 ms interval) would find
 * nothing, and would make an hour of fake time 72 000 steps.
 */
function alone(store: Store): Store {
  const none = () => () => {};
  return new Proxy(store, {
    get(target, prop) {
      if (prop === "watchCommits") return none;
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** The most watch drains one settle starts before it judges the work endless. */
const MAX_WATCH_DRAINS = 10_000;

/** The most timers `close()` fires while a pass in flight waits on fake time. */
const MAX_CLOSE_STEPS = 10_000;

/** A Beehive whose controllers report what they throw. */
class ReportingBeehive extends Beehive {
  readonly #thrown: (error: unknown) => void;

  constructor(store: Store, options: BeehiveOptions, thrown: (error: unknown) => void) {
    super(store, options);
    this.#thrown = thrown;
  }

  override register<Spec, Status>(
    kind: Kind<Spec, Status>,
    controller: Controller<Spec, Status>,
    options?: RegisterOptions,
  ): void;
  override register<Spec = unknown, Status = unknown>(
    kind: GroupKind,
    controller: Controller<Spec, Status>,
    options?: RegisterOptions,
  ): void;
  override register<Spec = unknown, Status = unknown>(
    kind: GroupKind,
    controller: Controller<Spec, Status>,
    options?: RegisterOptions,
  ): void {
    super.register(kind, reporting(controller, this.#thrown), options);
  }
}

/** `controller`, reporting what its reconcile throws (then throwing it on, unchanged). */
function reporting<Spec, Status>(
  controller: Controller<Spec, Status>,
  thrown: (error: unknown) => void,
): Controller<Spec, Status> {
  const reconcile = typeof controller === "function"
    ? controller
    : typeof controller === "object" && controller !== null &&
        typeof controller.reconcile === "function"
    ? controller.reconcile.bind(controller)
    : undefined;
  // Not a controller: the Beehive refuses it with its own error.
  if (reconcile === undefined) return controller;
  return async (obj, cc) => {
    try {
      return await reconcile(obj, cc);
    } catch (error) {
      thrown(error);
      throw error;
    }
  };
}

/** `logger` (if any), with what the engine logs at level `error` recorded too. */
function listening(logger: Logger | undefined, record: (error: unknown) => void): Logger {
  return {
    debug: (message, attributes) => logger?.debug(message, attributes),
    info: (message, attributes) => logger?.info(message, attributes),
    warn: (message, attributes) => logger?.warn(message, attributes),
    error(message, attributes) {
      const error = attributes?.error;
      record(error instanceof Error ? error : new Error(message, { cause: error }));
      logger?.error(message, attributes);
    },
  };
}

class Env implements TestEnv {
  readonly bh: Beehive;
  readonly store: Store;
  readonly #clock: FakeClock;
  readonly #step: Stepper;
  readonly #engine: Engine;
  readonly #errors: unknown[] = [];
  #stop: StopFunction | undefined;
  #closing: Promise<void> | undefined;
  /** The step running (`start`, `settle` or `advance`), if any. */
  #stepping: string | undefined;

  constructor(clock: FakeClock, store: Store, options: BeehiveOptions) {
    this.#clock = clock;
    this.#step = nextStepper(clock);
    this.store = store;
    const record = (error: unknown) => void this.#errors.push(error);
    this.bh = new ReportingBeehive(
      store,
      { ...options, logger: listening(options.logger, record) },
      record,
    );
    this.#engine = engines.get(this.bh)!;
  }

  start(): Promise<void> {
    return this.#exclusive("start", async () => {
      this.#stop = await this.bh.start();
      await this.#settle();
    });
  }

  settle(): Promise<void> {
    return this.#exclusive("settle", () => this.#settle());
  }

  async advance(ms: number): Promise<void> {
    if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0) {
      throw new RangeError(
        `Cannot advance the test env: current value is ${
          describe(ms)
        }, expected a finite number of ms ≥ 0`,
      );
    }
    await this.#exclusive("advance", async () => {
      await stepTo(this.#clock, this.#step, this.#clock.now + ms, () => this.#quiet());
      this.#report();
    });
  }

  close(): Promise<void> {
    this.#closing ??= this.#shutDown();
    return this.#closing;
  }

  async #settle(): Promise<void> {
    await this.#quiet();
    this.#report();
  }

  /**
   * Runs what is due now until the engine is quiet and no watch owes a
   * change: a drain the watches' pacing puts off to a later instant runs
   * now, as fake time stands still until `advance()`.
   * @throws {Error} watches kept owing changes at one instant without end.
   */
  async #quiet(): Promise<void> {
    for (let drains = 0;; drains++) {
      await quiesce(this.#clock, this.#step, QUIET);
      if (!drainOwedWatches(this.#engine)) return;
      if (drains >= MAX_WATCH_DRAINS) {
        throw new Error(
          `Cannot settle: watches kept owing changes at one instant for ${MAX_WATCH_DRAINS} ` +
            `drains (a watch consumer that writes the kind it watches on every change?)`,
        );
      }
    }
  }

  async #shutDown(): Promise<void> {
    try {
      const stop = this.#stop;
      this.#stop = undefined;
      if (stop !== undefined) await this.#stopOnFakeTime(stop);
    } finally {
      try {
        await this.store.close();
      } finally {
        this.#clock.uninstall();
        current = undefined;
      }
    }
    this.#report();
  }

  /**
   * Stops the Beehive, moving the clock on while a pass in flight waits on
   * fake time (a controller's own timer), which would otherwise never come.
   */
  async #stopOnFakeTime(stop: StopFunction): Promise<void> {
    let stopped = false;
    const stopping = stop().finally(() => void (stopped = true));
    stopping.catch(() => {}); // awaited below; not unhandled meanwhile
    for (let i = 0; !stopped && i < MAX_CLOSE_STEPS; i++) {
      await quiesce(this.#clock, this.#step, QUIET);
      const next = nextTimerAt(this.#clock);
      if (stopped || !Number.isFinite(next)) break;
      await this.#step.fire(next);
    }
    await stopping;
  }

  /**
   * Runs step `verb`, one at a time.
   * @throws {StoppedError} the env is closed.
   * @throws {Error} another step is running (a step not awaited).
   */
  async #exclusive(verb: string, fn: () => Promise<void>): Promise<void> {
    if (this.#closing !== undefined) {
      throw new StoppedError(`Cannot ${verb} the test env: it is closed`);
    }
    if (this.#stepping !== undefined) {
      throw new Error(
        `Cannot ${verb} the test env: ${this.#stepping}() is still running; await each step`,
      );
    }
    this.#stepping = verb;
    try {
      await fn();
    } finally {
      this.#stepping = undefined;
    }
  }

  /** Throws what was recorded since the last report, and forgets it. */
  #report(): void {
    const errors = this.#errors.splice(0);
    if (errors.length === 1) throw errors[0];
    if (errors.length > 1) {
      const first = errors[0] instanceof Error ? errors[0].message : String(errors[0]);
      throw new AggregateError(
        errors,
        `${errors.length} errors in reconcile passes; the first: ${first}`,
      );
    }
  }
}

/**
 * Creates a {@linkcode TestEnv}: installs fake time (starting at the real
 * current instant), opens an in-memory SQLite store, and builds a Beehive on
 * it — not yet started. One env at a time per process (fake time is global):
 * `close()` it in a `finally`. Works under `deno test` with its leak
 * sanitizers on and under `node --test`.
 *
 * @example A controller tested across an hour in no time
 * ```ts
 * import { settled } from "@beehive/beehive";
 * import { createTestEnv } from "@beehive/beehive/testing";
 *
 * const Backup = { group: "example.com", kind: "Backup" };
 * const env = await createTestEnv();
 * try {
 *   let runs = 0;
 *   env.bh.register(Backup, () => {
 *     runs++;
 *     return settled().requeueAfter(3_600_000);
 *   });
 *   await env.start();
 *   await env.bh.client(Backup).create("nightly", {});
 *   await env.settle();
 *   console.assert(runs === 1);
 *   await env.advance(3_600_000);
 *   console.assert(runs === 2);
 * } finally {
 *   await env.close();
 * }
 * ```
 *
 * @throws {TypeError} `init` or `init.options` is not an object.
 * @throws {InvalidOptionError} a Beehive option is out of range.
 * @throws {Error} another test env is open, or fake time is already installed.
 */
export async function createTestEnv(init: TestEnvOptions = {}): Promise<TestEnv> {
  if (typeof init !== "object" || init === null) {
    throw new TypeError(
      `Cannot create a test env: current value is ${describe(init)}, expected { options? }`,
    );
  }
  const options = init.options ?? {};
  if (typeof options !== "object" || options === null) {
    throw new TypeError(
      `Cannot create a test env with options: current value is ${
        describe(options)
      }, expected Beehive options`,
    );
  }
  if (current !== undefined) {
    throw new Error("Cannot create a test env: another is open in this process; close it first");
  }
  let clock: FakeClock;
  try {
    clock = installFakeClock();
  } catch (error) {
    throw new Error("Cannot create a test env: fake time is already installed in this process", {
      cause: error,
    });
  }
  try {
    const store = track(alone(await openSqliteStore(":memory:")));
    try {
      return current = new Env(clock, store, options);
    } catch (error) {
      await store.close();
      throw error;
    }
  } catch (error) {
    clock.uninstall();
    throw error;
  }
}
