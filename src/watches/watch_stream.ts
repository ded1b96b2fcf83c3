/**
 * The shape every watch stream shares.
 *
 * @module
 */

/** What feeds a stream: its values, its terminal error, and a way to end it. */
export interface StreamSource<T> {
  /** The terminal error, once the stream could not go on. */
  readonly error: Error | undefined;
  /** Ends the stream quietly. */
  close(): void;
  /** The single iterator over the values. */
  iterator(): AsyncIterator<T>;
  /** The same values, every one ready at once in one array of the consumer's own. */
  batchIterator(): AsyncIterator<T[]>;
}

/**
 * A live stream of `T`, iterated once by one consumer with `for await`.
 * `break`, `close()` and an aborted signal end it quietly; a stream that
 * cannot go on truthfully throws its terminal error from the iterator and
 * keeps it in `error`.
 */
export class WatchStream<T> implements AsyncIterable<T> {
  readonly #source: StreamSource<unknown>;

  /** @internal Streams come from the clients' watch methods. */
  constructor(source: StreamSource<unknown>) {
    this.#source = source;
  }

  /**
   * Why the stream ended (`WatchTooOldError`, `WatchTooNewError`,
   * `StoppedError`, and for an event stream `NotFoundError`); `undefined`
   * while it runs and after the caller's own `close()` or abort.
   */
  get error(): Error | undefined {
    return this.#source.error;
  }

  /** Ends the stream quietly; a pending `next()` resolves as done. */
  close(): void {
    this.#source.close();
  }

  /** Closes the stream. */
  [Symbol.asyncDispose](): Promise<void> {
    this.#source.close();
    return Promise.resolve();
  }

  /** Iterates the stream's values in delivery order; `break` closes the stream. */
  [Symbol.asyncIterator](): AsyncIterator<T> {
    return this.#source.iterator() as AsyncIterator<T>;
  }

  /**
   * The same values in the same order, in batches: each step yields every
   * value ready at that moment (never none), so a consumer of a busy stream
   * takes a whole drain's changes in one `await` instead of one per change.
   * Iterate either the stream or its batches, once; `break` closes the
   * stream, and a terminal error is thrown as from the stream itself.
   *
   * ```ts ignore
   * for await (const changes of stream.batches()) {
   *   for (const change of changes) apply(change);
   * }
   * ```
   */
  batches(): AsyncIterable<T[]> {
    const source = this.#source;
    return { [Symbol.asyncIterator]: () => source.batchIterator() as AsyncIterator<T[]> };
  }
}
