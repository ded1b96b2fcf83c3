/**
 * The watches' cadences: page sizes, drain pacing and the retry ladder.
 *
 * @module
 */

/** Write-log entries read per page by the tailer and by a resume replay. */
export const TAIL_PAGE = 512;
/** Pages one tailer drain reads before yielding. */
export const TAIL_PAGES_PER_DRAIN = 4;
/**
 * The least time between two tailer drain starts while commits keep coming,
 * in ms: a quiet kind is read at once, and every commit inside the gap after
 * a drain start is read by the one drain at its end.
 */
export const WATCH_DRAIN_GAP = 4;
/**
 * The share of the thread a busy kind's drains may take: the gap between
 * drain starts is at least a drain's own cost (its store calls and its
 * fan-out to the streams, a running mean) divided by this, up to
 * {@linkcode WATCH_DRAIN_GAP_MAX}.
 */
export const WATCH_DRAIN_SHARE = 0.1;
/** The longest the drain gap grows to as drains cost more, in ms. */
export const WATCH_DRAIN_GAP_MAX = 100;
/**
 * The longest a drain waits, in ms from the last drain start, for the streams
 * handed the last drain's changes to take them: consumers that keep up pace
 * the tailer, and one that does not holds it back at most this long, then
 * collapses what follows in its own held map until it catches up.
 */
export const WATCH_TAKE_WAIT = 20;

/** The first rung of the watch retry ladder, in ms. */
export const WATCH_RETRY_MIN = 100;
/** The top of the watch retry ladder, in ms. */
export const WATCH_RETRY_MAX = 30_000;

/** The next rung of the watch retry ladder. */
export function nextRetry(previous: number): number {
  return previous === 0 ? WATCH_RETRY_MIN : Math.min(previous * 2, WATCH_RETRY_MAX);
}
