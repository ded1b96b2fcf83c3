/**
 * Plumbing shared by the watch tests (`watch*` and `watchEvents`): a store
 * whose calls can be counted and failed on demand, and a Beehive over it
 * under fake time that is never started unless the test starts it.
 *
 * @module
 */
import { Beehive, type BeehiveOptions, type GroupKind, StoreError } from "../mod.ts";
import type { Store } from "../store/mod.ts";
import { type KindTail, openKindTail, openKindTailSymbol } from "../src/watches/kind_tail.ts";
import { openTestStore, type TestStore } from "./_sqlite_driver.ts";
import { type FakeClock, installFakeTime } from "./_fake_time.ts";
import { type LogLine, recordingLogger } from "./_beehive_harness.ts";

/** A store member family {@linkcode Instrumented} can count and fail. */
export type Family = "objectWrites" | "objects" | "edges" | "events";

/**
 * Counts (and can fail) calls to `<family>.*` made through the root store, and
 * the reads of the kind tails watches open on it (`tail.read`), which every
 * store serves (from memory where it can).
 */
export class Instrumented {
  readonly calls = new Map<string, number>();
  /** `family.method` → how many upcoming calls reject with a StoreError. */
  readonly failures = new Map<string, number>();
  /** Runs at the start of every counted call, inside it (e.g. to spend fake time there). */
  during: ((key: string) => void) | undefined;
  readonly store: Store;

  constructor(inner: TestStore, names: readonly Family[]) {
    const family = (name: Family) =>
      new Proxy(inner[name], {
        get: (target, prop) => {
          const value = Reflect.get(target, prop, target);
          if (typeof value !== "function") return value;
          const key = `${name}.${String(prop)}`;
          return (...args: unknown[]) => this.#call(key, () => value.apply(target, args));
        },
      });
    const families = new Map<PropertyKey, unknown>(names.map((name) => [name, family(name)]));
    // A watch's kind tail: its reads are counted (and failed) as `tail.read`.
    const openTail = (gk: GroupKind): KindTail => {
      const tail = openKindTail(inner, gk);
      return {
        read: (after, limit) => this.#call("tail.read", () => tail.read(after, limit)),
        close: () => tail.close(),
      };
    };
    this.store = new Proxy(inner, {
      get(target, prop) {
        if (families.has(prop)) return families.get(prop);
        if (prop === openKindTailSymbol) return openTail;
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }

  /** Counts a call to `key`, failing it instead when a failure is queued. */
  #call<T>(key: string, run: () => Promise<T>): Promise<T> {
    this.calls.set(key, (this.calls.get(key) ?? 0) + 1);
    this.during?.(key);
    const left = this.failures.get(key) ?? 0;
    if (left > 0) {
      this.failures.set(key, left - 1);
      return Promise.reject(new StoreError(`injected failure of ${key}`));
    }
    return run();
  }

  count(key: string): number {
    return this.calls.get(key) ?? 0;
  }

  reset(): void {
    this.calls.clear();
  }
}

/** What {@linkcode withWatchHive} hands the test. */
export interface WatchHive {
  store: TestStore;
  inst: Instrumented;
  bh: Beehive;
  lines: LogLine[];
  clock: FakeClock;
  /** Starts the Beehive; stopped at the end unless stopped already. */
  start(): Promise<() => Promise<void>>;
}

/** Options of {@linkcode withWatchHive}. */
export interface WatchHiveSetup {
  /** The store families the Beehive's calls go through {@linkcode Instrumented} for. */
  readonly families: readonly Family[];
  /** The Beehive's options (its logger is the recording one). */
  readonly beehive: BeehiveOptions;
  /** Registers controllers before the test runs. */
  readonly register?: (bh: Beehive) => void;
  /** A database file; `":memory:"` when omitted. */
  readonly path?: string;
}

/**
 * Installs fake time, opens a fresh store, builds a Beehive over it with a
 * recording logger and runs `fn`; then stops the Beehive (if started and not
 * stopped), closes the store and uninstalls the clock, whatever happens.
 */
export async function withWatchHive(
  setup: WatchHiveSetup,
  fn: (h: WatchHive) => Promise<void>,
): Promise<void> {
  const clock = installFakeTime();
  try {
    const store = await openTestStore(setup.path ?? ":memory:");
    let stop: (() => Promise<void>) | undefined;
    try {
      const inst = new Instrumented(store, setup.families);
      const logger = recordingLogger();
      const bh = new Beehive(inst.store, { logger, ...setup.beehive });
      setup.register?.(bh);
      await fn({
        store,
        inst,
        bh,
        lines: logger.lines,
        clock,
        start: async () => {
          const s = await bh.start();
          stop = async () => {
            stop = undefined;
            await s();
          };
          return stop;
        },
      });
    } finally {
      try {
        if (stop !== undefined) await stop();
      } finally {
        await store.close();
      }
    }
  } finally {
    clock.uninstall();
  }
}

/** Lets promise chains and zero-delay timers run, without moving time. */
export async function settle(clock: FakeClock): Promise<void> {
  for (let i = 0; i < 20; i++) await clock.tickAsync(0);
}
