/**
 * The single-consumer stream machinery every watch shares, and how a feed treats a
 * failing read: retried with backoff, logged once per failure class, or terminal.
 *
 * @module
 */
import type { Engine } from "../engine/_engine.ts";
import {
  BeehiveError,
  StoppedError,
  StoreClosedError,
  WatchTooNewError,
  WatchTooOldError,
} from "../model/errors.ts";
/** Whether a store failure ends a stream rather than being retried. */
export function isTerminal(error: unknown): boolean {
  return error instanceof WatchTooOldError || error instanceof WatchTooNewError ||
    error instanceof StoppedError || error instanceof StoreClosedError;
}

export function asError(error: unknown): Error {
  return error instanceof Error ? error : new BeehiveError(String(error));
}

/** Logs a transient failure once per failure class until a read succeeds. */
export class FailureLog {
  #last: string | undefined;
  readonly #engine: Engine;
  readonly #what: string;
  readonly #attrs: Record<string, unknown>;

  constructor(engine: Engine, what: string, attrs: Record<string, unknown>) {
    this.#engine = engine;
    this.#what = what;
    this.#attrs = attrs;
  }

  failed(error: unknown, retryIn: number): void {
    const cls = error instanceof Error ? error.name : typeof error;
    if (cls === this.#last) return;
    this.#last = cls;
    this.#engine.log.warn(`beehive: ${this.#what} failed; retrying`, {
      ...this.#attrs,
      retryIn,
      error,
    });
  }

  succeeded(): void {
    this.#last = undefined;
  }
}

// ---------------------------------------------------------------------------
// The single-consumer stream machinery

/**
 * What the feeds that adopt one array share of its hand-out: the settled
 * `next()` answer for each item, made by the first feed to hand it out.
 */
export class SharedAnswers<T> {
  readonly steps: (Promise<IteratorResult<T>> | undefined)[] = [];
}

/** What a `next()` (one item) or a `nextBatch()` (a batch) resolves to. */
type Answer<T> = IteratorResult<T> | IteratorResult<T[]>;

/** A `next()` (`batch` false) or `nextBatch()` parked on an idle feed, and how to answer it. */
interface Parked<T> {
  readonly batch: boolean;
  readonly resolve: (answer: Answer<T> | Promise<Answer<T>>) => void;
}

/**
 * The state behind one stream: a buffer of ready items, a terminal error, the
 * caller's close, and one consumer's `next()` calls serialized. Subclasses
 * produce items in {@linkcode Feed.fill}.
 */
export abstract class Feed<T> {
  /** The terminal error, once the stream knows it will end with one. */
  error: Error | undefined;
  #buffer: readonly T[] = [];
  /** The next item to hand out of `#buffer`. */
  #head = 0;
  /**
   * Set while `#buffer` is an adopted array other feeds share (copied before
   * a push): the settled `next()` answers for its items, shared the same way.
   */
  #answers: SharedAnswers<T> | undefined;
  #terminal: Error | undefined;
  #ended = false;
  #wake: (() => void) | undefined;
  /** Set by notify(): a wake that lands while fill() runs must not be lost. */
  #signalled = false;
  #chain: Promise<unknown> = Promise.resolve();
  /** `next()` calls not yet settled. */
  #inflight = 0;
  /** The answer to a `next()` parked on an idle feed. */
  #parked: Parked<T> | undefined;
  readonly #cleanups: (() => void)[] = [];
  readonly #sleepers = new Set<() => void>();

  /** Whether the stream has ended (closed by the caller, or its terminal error thrown). */
  get ended(): boolean {
    return this.#ended;
  }

  /** The terminal error not yet thrown. */
  protected get terminal(): Error | undefined {
    return this.#terminal;
  }

  /**
   * Produces into the buffer with {@linkcode Feed.push}. Resolves `true` when
   * it may have more to do at once, `false` to wait for {@linkcode Feed.notify}.
   * A terminal error it throws ends the stream.
   */
  protected abstract fill(): Promise<boolean>;

  /** Appends items for the consumer. */
  protected push(items: readonly T[]): void {
    if (items.length === 0) return;
    const own = this.#answers !== undefined ? this.#buffer.slice(this.#head) : this.#buffer as T[];
    if (this.#answers !== undefined) {
      this.#head = 0;
      this.#answers = undefined;
    }
    for (const item of items) own.push(item);
    this.#buffer = own;
  }

  /**
   * Hands out `items` from index `from` on, without copying them: the feed
   * never writes to an adopted array, so many feeds may share one, and the
   * settled answer to a `next()` for `items[i]`, made by the first feed to
   * hand it out, is kept in `answers` for the others. Only while nothing is
   * ready.
   */
  protected adopt(
    items: readonly T[],
    from: number,
    answers: SharedAnswers<T>,
  ): void {
    if (from >= items.length) return;
    this.#buffer = items;
    this.#head = from;
    this.#answers = answers;
  }

  /** Whether items are ready for the consumer. */
  protected get buffered(): boolean {
    return this.#ready();
  }

  /** Called when the consumer has taken the last ready item. */
  protected taken(): void {}

  #ready(): boolean {
    return this.#head < this.#buffer.length;
  }

  #take(): IteratorResult<T> {
    const value = this.#buffer[this.#head++];
    if (this.#head === this.#buffer.length) this.#emptied();
    return { done: false, value };
  }

  /** The shared settled answer for the next item of an adopted buffer. */
  #takeShared(answers: SharedAnswers<T>): Promise<IteratorResult<T>> {
    const i = this.#head++;
    const answer = answers.steps[i] ??= Promise.resolve(
      Object.freeze({ done: false, value: this.#buffer[i] }),
    );
    if (this.#head === this.#buffer.length) this.#emptied();
    return answer;
  }

  #emptied(): void {
    this.#buffer = [];
    this.#head = 0;
    this.#answers = undefined;
    this.taken();
  }

  /** Runs `fn` once when the stream ends. */
  onEnd(fn: () => void): void {
    if (this.#ended) fn();
    else this.#cleanups.push(fn);
  }

  /** Listens to `signal` until the stream ends: aborting closes it quietly. */
  follow(signal: AbortSignal | undefined): void {
    if (signal === undefined) return;
    if (signal.aborted) return this.close();
    const abort = () => this.close();
    signal.addEventListener("abort", abort, { once: true });
    this.onEnd(() => signal.removeEventListener("abort", abort));
  }

  /**
   * Whether nothing is left to produce and producing needs no await: a
   * `next()` then parks, and the next {@linkcode Feed.notify} calls
   * {@linkcode Feed.produce} and answers it at once.
   */
  protected idle(): boolean {
    return false;
  }

  /** Produces into the buffer what needs no await (for a feed that can be idle). */
  protected produce(): void {}

  /** Wakes a waiting consumer (and any backoff sleep). */
  notify(): void {
    this.#signalled = true;
    const parked = this.#parked;
    if (parked !== undefined) {
      this.#parked = undefined;
      if (!this.#ended && this.#terminal === undefined) this.produce();
      if (this.#ready() && !this.#ended) {
        this.#inflight--;
        parked.resolve(parked.batch ? { done: false, value: this.#takeAll([]) } : this.#take());
        return;
      }
      const result: Promise<Answer<T>> = parked.batch
        ? this.#next().then((r) => this.#batchOf(r))
        : this.#next();
      const settled = () => this.#inflight--;
      result.then(settled, settled);
      parked.resolve(result);
      return;
    }
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** Ends the stream with `error` once what is already ready has been delivered. */
  fail(error: Error): void {
    if (this.#ended || this.#terminal !== undefined) return;
    this.#terminal = error;
    this.error = error;
    for (const wake of [...this.#sleepers]) wake();
    this.notify();
  }

  /** Ends the stream quietly; a waiting `next()` resolves as done. Idempotent. */
  close(): void {
    this.#buffer = [];
    this.#head = 0;
    this.#answers = undefined;
    this.#end();
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    const fns = this.#cleanups.splice(0);
    for (const fn of fns) fn();
    for (const wake of [...this.#sleepers]) wake();
    this.notify();
  }

  /** Waits `ms`, or less when the stream ends or fails. */
  protected sleep(ms: number): Promise<void> {
    if (this.#ended || this.#terminal !== undefined) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#sleepers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#sleepers.add(done);
    });
  }

  /** The next item; serialized, so a second caller waits its turn. */
  next(): Promise<IteratorResult<T>> {
    if (this.#inflight === 0 && !this.#ended) {
      // The common case, an item ready and no call in flight, costs one promise.
      if (this.#ready()) {
        const answers = this.#answers;
        return answers === undefined ? Promise.resolve(this.#take()) : this.#takeShared(answers);
      }
      if (this.#terminal === undefined && this.idle()) return this.#park(false);
    }
    this.#inflight++;
    const result = this.#chain.then(() => this.#next()).finally(() => this.#inflight--);
    this.#chain = result.catch(() => undefined);
    return result;
  }

  async #next(): Promise<IteratorResult<T>> {
    for (;;) {
      if (this.#ended) return { done: true, value: undefined };
      if (this.#ready()) return this.#take();
      let more: boolean;
      this.#signalled = false;
      try {
        more = await this.fill();
      } catch (error) {
        // Whatever escapes fill() ends the stream: a retry loop would spin on it.
        this.fail(asError(error));
        more = false;
      }
      if (this.#ended || this.#ready() || more) continue;
      if (this.#terminal !== undefined) {
        const error = this.#terminal;
        this.#end();
        throw error;
      }
      if (this.#signalled) continue;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  /**
   * The next batch: every item ready now, in order, or else the next item to
   * come with whatever is ready beside it once it does. Never empty; an
   * array of the caller's own.
   */
  nextBatch(): Promise<IteratorResult<T[]>> {
    if (this.#inflight === 0 && !this.#ended) {
      if (this.#ready()) return Promise.resolve({ done: false, value: this.#takeAll([]) });
      if (this.#terminal === undefined && this.idle()) return this.#park(true);
    }
    return this.next().then((r) => this.#batchOf(r));
  }

  /** Parks a `next()` (or, with `batch`, a `nextBatch()`) on an idle feed until notify(). */
  #park(batch: false): Promise<IteratorResult<T>>;
  #park(batch: true): Promise<IteratorResult<T[]>>;
  #park(batch: boolean): Promise<Answer<T>> {
    this.#inflight++;
    const { promise, resolve } = Promise.withResolvers<Answer<T>>();
    this.#parked = { batch, resolve };
    this.#chain = promise.catch(() => undefined);
    return promise;
  }

  /** The batch that starts with the item `result` carries, or the end it reports. */
  #batchOf(result: IteratorResult<T>): IteratorResult<T[]> {
    return result.done ? result : { done: false, value: this.#takeAll([result.value]) };
  }

  /**
   * Every ready item after those in `out`: the batch `nextBatch()` hands out,
   * an array of the consumer's own. Not frozen, and not shared with other
   * feeds: V8 keeps a frozen array's elements in a form its optimized code
   * reads several times slower (a `for...of` over one allocates a step
   * object per item), and a consumer walks its batch once per change, where
   * a copy costs the feed a move of pointers.
   */
  #takeAll(out: T[]): T[] {
    if (!this.#ready()) return out;
    const buffer = this.#buffer;
    const head = this.#head;
    if (out.length > 0) {
      for (let i = head; i < buffer.length; i++) out.push(buffer[i]);
    } else if (this.#answers === undefined && head === 0) {
      // The feed's own buffer: emptying gives the feed a new one, so this one can be handed out.
      out = buffer as T[];
    } else {
      out = buffer.slice(head);
    }
    this.#emptied();
    return out;
  }

  /** An iterator over this feed's batches; `return()` (a `break`) closes it. */
  batchIterator(): AsyncIterator<T[]> {
    return {
      next: () => this.nextBatch(),
      return: () => {
        this.close();
        return Promise.resolve({ done: true, value: undefined });
      },
    };
  }

  /** An iterator over this feed; `return()` (a `break`) closes it. */
  iterator(): AsyncIterator<T> {
    return {
      next: () => this.next(),
      return: () => {
        this.close();
        return Promise.resolve({ done: true, value: undefined });
      },
    };
  }
}
