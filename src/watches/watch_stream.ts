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
}
