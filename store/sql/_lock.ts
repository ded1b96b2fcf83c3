/**
 * A FIFO async mutex: the owner of a store's writer (one write group or lone
 * transaction at a time), and of a transaction's connection between its units.
 *
 * @module
 */

/** A FIFO async mutex. */
export class AsyncLock {
  #held = false;
  readonly #waiters: (() => void)[] = [];

  /** Whether nobody holds the lock. */
  get free(): boolean {
    return !this.#held;
  }

  /** Takes the lock now if it is free; reports whether it did. */
  tryAcquire(): boolean {
    if (this.#held) return false;
    this.#held = true;
    return true;
  }

  /** Resolves once the caller holds the lock. */
  acquire(): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#waiters.push(resolve);
    return promise;
  }

  /** Hands the lock to the next waiter, or frees it. */
  release(): void {
    const next = this.#waiters.shift();
    if (next === undefined) this.#held = false;
    else next();
  }
}
