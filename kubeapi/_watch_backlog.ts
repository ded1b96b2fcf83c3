/**
 * A watch's backlog: the changes read for one watcher that its client has not
 * taken yet, at most a limit ({@linkcode WATCH_BACKLOG} for the served
 * watches). A watcher whose backlog would pass it overflows and is ended (the
 * client resumes from the last version it saw, as informers do); the object
 * watches (`_watch.ts`) and the events watches (`_event_reader.ts`) share it.
 *
 * @module
 */

/**
 * The most changes a watcher may have waiting, read from the kind's shared
 * reader but not yet taken by its client; past it the watch is ended (the
 * client resumes from the last version it saw, as informers do).
 */
export const WATCH_BACKLOG = 1000;

/** One watcher's waiting changes, taken a batch at a time. */
export class WatchBacklog<T> {
  readonly #limit: number;
  #items: T[] = [];
  #ended = false;
  #overflowed = false;
  #error: unknown;
  #wake: (() => void) | undefined;

  /** A backlog of at most `limit` changes (one batch may pass it when none wait). */
  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Whether it was ended because it filled. */
  get overflowed(): boolean {
    return this.#overflowed;
  }

  /** Why it ended, when its reader failed. */
  get error(): unknown {
    return this.#error;
  }

  /**
   * Adds `items` for the watcher to take.
   * @returns false when it has ended, or when they would take it past its
   * limit while some wait (it overflows and ends).
   */
  push(items: readonly T[]): boolean {
    if (this.#ended) return false;
    if (this.#items.length > 0 && this.#items.length + items.length > this.#limit) {
      this.#overflowed = true;
      this.end();
      return false;
    }
    this.#items = this.#items.length === 0 ? [...items] : this.#items.concat(items);
    this.#wake?.();
    return true;
  }

  /** Ends it (with the reader's `error`, when it failed); the first end counts. */
  end(error?: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#error = error;
    this.#wake?.();
  }

  /**
   * The changes waiting, taken: waits while there are none; `undefined` once
   * it ended with none left, or overflowed.
   */
  async take(): Promise<T[] | undefined> {
    while (this.#items.length === 0 && !this.#ended) {
      await new Promise<void>((resolve) => this.#wake = resolve);
      this.#wake = undefined;
    }
    if (this.#overflowed) return undefined;
    if (this.#items.length === 0) return undefined;
    const out = this.#items;
    this.#items = [];
    return out;
  }
}
