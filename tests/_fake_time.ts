/**
 * Fake time for engine tests: `Date`, `setTimeout` and `setInterval` are
 * controlled by the returned clock, starting at the real current time.
 * Always `uninstall()` in a `finally`.
 *
 * @module
 */
import FakeTimers from "@sinonjs/fake-timers";

/** The installed clock. */
export type FakeClock = ReturnType<typeof FakeTimers.install>;

/** Installs fake time over `Date`, timeouts and intervals. */
export function installFakeTime(): FakeClock {
  return FakeTimers.install({
    now: Date.now(),
    toFake: ["Date", "setTimeout", "clearTimeout", "setInterval", "clearInterval"],
  });
}
