/**
 * Fake time for engine tests: `Date`, `performance.now`, `setTimeout` and `setInterval` are
 * controlled by the returned clock, starting at the real current time.
 * Always `uninstall()` in a `finally`.
 *
 * @module
 */
import process from "node:process";
import FakeTimers from "@sinonjs/fake-timers";
import { pendingStoreCalls, storeProgress, useRealClearTimeout } from "./_store_activity.ts";

/** The installed clock. */
export type FakeClock = ReturnType<typeof FakeTimers.install>;

const realSetTimeout = globalThis.setTimeout;
const realNow = performance.now.bind(performance);
useRealClearTimeout(globalThis.clearTimeout);

/** Whether fake-time steps wait for store calls (a networked store under test). */
const networked = process.env.BEEHIVE_TEST_STORE === "postgres";

/** How long a step waits, in real ms, for store calls that never settle (a test's held gate). */
const QUIET_LIMIT = 3000;

/** Runs zero-delay work until no store call is in flight (or none settles for a while). */
async function quiesce(tickAsync: (ms: number) => Promise<unknown>): Promise<void> {
  const started = realNow();
  let quiet = 0;
  while (quiet < 3 && realNow() - started < QUIET_LIMIT) {
    await tickAsync(0);
    if (pendingStoreCalls() === 0) {
      quiet++;
      // A real macrotask: socket reads resolve here.
      await new Promise((resolve) => realSetTimeout(resolve, 0));
    } else {
      quiet = 0;
      await storeProgress(20, realSetTimeout);
    }
  }
}

/**
 * Makes `tickAsync` step timer by timer, letting store calls settle between
 * steps: the engine sees time move as it would with a store whose calls
 * resolve in promise callbacks.
 */
function waitForStore(clock: FakeClock): FakeClock {
  const tickAsync = clock.tickAsync.bind(clock);
  clock.tickAsync = (async (ms: number) => {
    const target = clock.now + Number(ms);
    await quiesce(tickAsync);
    for (;;) {
      const timers = [
        ...((clock as unknown as { timers?: Map<number, { callAt: number }> }).timers?.values() ??
          []),
      ];
      const next = Math.min(...timers.map((t) => t.callAt));
      if (!Number.isFinite(next) || next > target) break;
      await tickAsync(Math.max(0, next - clock.now));
      await quiesce(tickAsync);
    }
    await tickAsync(Math.max(0, target - clock.now));
    await quiesce(tickAsync);
    return clock.now;
  }) as FakeClock["tickAsync"];
  return clock;
}

/** Installs fake time over `Date`, `performance.now`, timeouts and intervals. */
export function installFakeTime(): FakeClock {
  const clock = FakeTimers.install({
    now: Date.now(),
    // performance.now too: a timed lease lapses by the time an open has seen it unchanged.
    toFake: ["Date", "performance", "setTimeout", "clearTimeout", "setInterval", "clearInterval"],
  });
  return networked ? waitForStore(clock) : clock;
}
