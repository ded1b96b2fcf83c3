/**
 * A live view of one object's schedule, as an async iterable gauge.
 *
 * @module
 */
import type { Schedule, WorkQueue } from "./work_queue.ts";
import type { ObjectId } from "../store.ts";

/**
 * The current {@linkcode Schedule} of one object, then every change to it.
 * A gauge: a slow consumer gets the latest value, not every value in between.
 * Iterated once, by one consumer; ends quietly on `close()` and on its
 * signal (at once, dropping an unread value), and when the Beehive stops
 * (after the final value).
 */
export class ScheduleStream implements AsyncIterable<Schedule> {
  #pending: Schedule | undefined;
  #wake: (() => void) | undefined;
  #ending = false;
  #closed = false;
  readonly #unsubscribe: () => void;
  readonly #detach: () => void;

  /** @internal Use `client.watchSchedule(id)`. */
  constructor(queue: WorkQueue, id: ObjectId, signals: readonly AbortSignal[]) {
    this.#pending = queue.schedule(id);
    this.#unsubscribe = queue.watch(id, (s) => {
      this.#pending = s;
      this.#notify();
    });
    // A stop ends the stream after the final value it publishes (checked a
    // microtask later, so that value is in); the caller's own abort ends it
    // at once, like close().
    const end = () => queueMicrotask(() => queue.stopped ? this.#end() : this.close());
    for (const s of signals) s.addEventListener("abort", end, { once: true });
    this.#detach = () => signals.forEach((s) => s.removeEventListener("abort", end));
    if (queue.stopped) this.#end();
    else if (signals.some((s) => s.aborted)) this.close();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #end(): void {
    if (this.#ending) return;
    this.#ending = true;
    this.#unsubscribe();
    this.#detach();
    this.#notify();
  }

  /** Ends the stream; a pending `next()` resolves as done. */
  close(): void {
    this.#closed = true;
    this.#pending = undefined;
    this.#end();
  }

  /** Closes the stream. */
  [Symbol.asyncDispose](): Promise<void> {
    this.close();
    return Promise.resolve();
  }

  /** Iterates the schedule values; `break` closes the stream. */
  [Symbol.asyncIterator](): AsyncIterator<Schedule> {
    return {
      next: async (): Promise<IteratorResult<Schedule>> => {
        for (;;) {
          if (this.#pending !== undefined && !this.#closed) {
            const value = this.#pending;
            this.#pending = undefined;
            return { done: false, value };
          }
          if (this.#ending) return { done: true, value: undefined };
          await new Promise<void>((resolve) => (this.#wake = resolve));
        }
      },
      return: (): Promise<IteratorResult<Schedule>> => {
        this.close();
        return Promise.resolve({ done: true, value: undefined });
      },
    };
  }
}
