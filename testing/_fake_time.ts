/**
 * Fake time for the engine: `Date`, `setTimeout` and `setInterval` on a
 * `@sinonjs/fake-timers` clock, and the two steps a test takes on it —
 * running what is due now until the engine is quiet, and moving time timer by
 * timer with the engine quiet between timers. Quiet is judged by the store
 * calls `_store_activity.ts` counts: every pass, wake and sweep calls the store.
 *
 * @module
 */
import { setImmediate } from "node:timers";
import FakeTimers from "@sinonjs/fake-timers";
import {
  pendingStoreCalls,
  storeCallsStarted,
  storeProgress,
  useRealClearTimeout,
} from "./_store_activity.ts";

/** An installed clock. */
export type FakeClock = ReturnType<typeof FakeTimers.install>;

/**
 * How a clock is stepped: `fire(until)` fires timers due at or before
 * `until` (moving the clock to them), `turn()` yields one real event-loop
 * turn (promise chains, I/O callbacks and `setImmediate`s run).
 */
export interface Stepper {
  fire(until: number): Promise<unknown> | unknown;
  turn(): Promise<void>;
}

const realSetTimeout = globalThis.setTimeout;
const realNow = performance.now.bind(performance);
useRealClearTimeout(globalThis.clearTimeout);

/**
 * Installs fake time over `Date`, `performance.now`, timeouts and intervals, starting at the real
 * current instant. Always `uninstall()` it.
 * @throws {Error} fake time is already installed.
 */
export function installFakeClock(): FakeClock {
  return FakeTimers.install({
    now: Date.now(),
    // performance.now too: a timed lease lapses once a contender has seen it unchanged that long.
    toFake: ["Date", "performance", "setTimeout", "clearTimeout", "setInterval", "clearInterval"],
  });
}

/** When the clock's next timer is due; `Infinity` with none. */
export function nextTimerAt(clock: FakeClock): number {
  const timers = (clock as unknown as { timers?: Map<number, { callAt: number }> }).timers;
  let next = Infinity;
  for (const t of timers?.values() ?? []) next = Math.min(next, t.callAt);
  return next;
}

/**
 * Steps `clock` through `tickAsync`: every timer due by `until` fires, a real
 * timeout's turn between timers; a turn is a real zero timeout.
 */
export function tickingStepper(clock: FakeClock): Stepper {
  const tickAsync = clock.tickAsync.bind(clock);
  return {
    fire: (until) => tickAsync(Math.max(0, until - clock.now)),
    turn: () => new Promise((resolve) => realSetTimeout(resolve, 0)),
  };
}

/**
 * Steps `clock` one timer at a time: `fire(until)` fires the next timer if it
 * is due by `until`; a turn is a `setImmediate`, so a step costs no real time.
 */
export function nextStepper(clock: FakeClock): Stepper {
  return {
    fire(until) {
      if (nextTimerAt(clock) <= until) clock.next();
    },
    turn: () => new Promise((resolve) => setImmediate(resolve)),
  };
}

/** How {@linkcode quiesce} judges quiet. */
export interface QuiesceOptions {
  /** Consecutive quiet rounds that end it. */
  readonly rounds: number;
  /**
   * Whether a quiet round also starts no store call and leaves no timer due
   * now (else: no store call is in flight after the round).
   */
  readonly strict: boolean;
  /** Real ms with store calls in flight and none settling, after which it gives up. */
  readonly stuckAfter: number;
  /** Whether giving up throws (else it returns). */
  readonly throwWhenStuck: boolean;
  /** The most rounds before it throws: work kept coming due at one instant. */
  readonly maxRounds: number;
}

/**
 * Runs zero-delay work (timers due now and the promise chains they start)
 * until the engine is quiet: no store call in flight, `rounds` times in a row.
 * Waits only on store calls settling, never for a length of time.
 * @throws {Error} when `throwWhenStuck` and store calls stayed in flight for
 * `stuckAfter` real ms with none settling, or after `maxRounds` busy rounds.
 */
export async function quiesce(
  clock: FakeClock,
  step: Stepper,
  options: QuiesceOptions,
): Promise<void> {
  let quiet = 0;
  let progressAt = realNow();
  for (let round = 0; quiet < options.rounds; round++) {
    if (round >= options.maxRounds) {
      throw new Error(
        `Cannot settle: work kept coming due at one instant for ${options.maxRounds} rounds ` +
          `(a controller that requeues itself with no delay?)`,
      );
    }
    const started = storeCallsStarted();
    await step.fire(clock.now);
    if (pendingStoreCalls() > 0) {
      quiet = 0;
      const before = pendingStoreCalls() + storeCallsStarted();
      await storeProgress(20, realSetTimeout);
      if (pendingStoreCalls() + storeCallsStarted() !== before) progressAt = realNow();
      else if (realNow() - progressAt >= options.stuckAfter) {
        if (!options.throwWhenStuck) return;
        throw new Error(
          `Cannot settle: ${pendingStoreCalls()} store calls stayed in flight for ` +
            `${options.stuckAfter} ms of real time (a pass awaits something that never comes?)`,
        );
      }
      continue;
    }
    // A real turn: socket reads and setImmediate callbacks resolve here.
    await step.turn();
    const busy = options.strict &&
      (storeCallsStarted() !== started || pendingStoreCalls() > 0 ||
        nextTimerAt(clock) <= clock.now);
    quiet = busy ? 0 : quiet + 1;
    if (busy) progressAt = realNow();
  }
}

/**
 * Moves the clock to `target`, firing each timer at its own instant and
 * running `settle` after each, so the engine sees time move as it would in
 * real life: a pass a timer starts concludes before the next timer fires.
 */
export async function stepTo(
  clock: FakeClock,
  step: Stepper,
  target: number,
  settle: () => Promise<void>,
): Promise<void> {
  await settle();
  for (;;) {
    const next = nextTimerAt(clock);
    if (!Number.isFinite(next) || next > target) break;
    await step.fire(next);
    await settle();
  }
  // No timer is due by `target`: this only moves the clock.
  clock.tick(Math.max(0, target - clock.now));
  await settle();
}
