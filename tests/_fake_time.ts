/**
 * Fake time for engine tests: `Date`, `performance.now`, `setTimeout` and `setInterval` are
 * controlled by the returned clock, starting at the real current time.
 * Always `uninstall()` in a `finally`. On a networked store (PostgreSQL) its
 * `tickAsync` steps timer by timer and waits out store calls between steps;
 * the mechanism is the `"./testing"` entry's (`testing/_fake_time.ts`).
 *
 * @module
 */
import process from "node:process";
import {
  type FakeClock,
  installFakeClock,
  quiesce,
  type QuiesceOptions,
  stepTo,
  tickingStepper,
} from "../testing/_fake_time.ts";

export type { FakeClock };

/** Whether fake-time steps wait for store calls (a networked store under test). */
const networked = process.env.BEEHIVE_TEST_STORE === "postgres";

/**
 * Quiet as these suites need it: three rounds with no store call in flight; a
 * step gives up after 3 s of real time on calls that never settle (a test's held gate).
 */
const QUIET: QuiesceOptions = {
  rounds: 3,
  strict: false,
  stuckAfter: 3000,
  throwWhenStuck: false,
  maxRounds: Infinity,
};

/**
 * Makes `tickAsync` step timer by timer, letting store calls settle between
 * steps: the engine sees time move as it would with a store whose calls
 * resolve in promise callbacks.
 */
function waitForStore(clock: FakeClock): FakeClock {
  const step = tickingStepper(clock);
  const settle = () => quiesce(clock, step, QUIET);
  clock.tickAsync = (async (ms: number) => {
    await stepTo(clock, step, clock.now + Number(ms), settle);
    return clock.now;
  }) as FakeClock["tickAsync"];
  return clock;
}

/** Installs fake time over `Date`, `performance.now`, timeouts and intervals. */
export function installFakeTime(): FakeClock {
  const clock = installFakeClock();
  return networked ? waitForStore(clock) : clock;
}
