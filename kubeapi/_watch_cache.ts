/**
 * What the watches of a kind encode once and share, within a byte budget:
 * the pages of an initial state (watches that start at one position with
 * the same selection send the same pages) and the JSON lines of changes
 * (every watcher of a kind sends the same line for the same change). The
 * least recently used entries go first.
 *
 * @module
 */

/** One encoded page of a watch's initial state. */
export interface InitialPage {
  /** The page's ADDED lines, encoded; empty when the selection took none of its objects. */
  readonly bytes: Uint8Array;
  /** The last id the page read: the next page starts above it. */
  readonly after: number;
  /** Whether this was the last page. */
  readonly last: boolean;
}

/** Encoded values by key, at most `budget` bytes of them; a value over `budget / 8` is not kept. */
export class EncodedCache<V extends { readonly bytes: Uint8Array }> {
  readonly #entries = new Map<string, Promise<V> | V>();
  readonly #sizes = new Map<string, number>();
  readonly #budget: number;
  #bytes = 0;

  constructor(budget: number) {
    this.#budget = budget;
  }

  /** Whether a value is kept or being read under `key`. */
  has(key: string): boolean {
    return this.#entries.has(key);
  }

  /** The value kept under `key`, if one is (marked used). */
  peek(key: string): V | undefined {
    const kept = this.#entries.get(key);
    if (kept === undefined || kept instanceof Promise) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, kept);
    return kept;
  }

  /** Keeps `value` under `key`. */
  put(key: string, value: V): void {
    const size = value.bytes.byteLength;
    if (size > this.#budget / 8) return;
    this.#drop(key);
    this.#entries.set(key, value);
    this.#sizes.set(key, size);
    this.#bytes += size;
    for (const [oldest] of this.#entries) {
      if (this.#bytes <= this.#budget) break;
      this.#drop(oldest);
    }
  }

  /**
   * The value under `key`: kept, being read by another caller, or read now
   * with `read` and kept (a failed read is not).
   */
  get(key: string, read: () => Promise<V>): Promise<V> {
    const kept = this.#entries.get(key);
    if (kept instanceof Promise) return kept;
    if (kept !== undefined) return Promise.resolve(this.peek(key)!);
    const reading = read();
    this.#entries.set(key, reading);
    reading.then((value) => {
      if (this.#entries.get(key) !== reading) return;
      this.#entries.delete(key);
      this.put(key, value);
    }, () => {
      if (this.#entries.get(key) === reading) this.#entries.delete(key);
    });
    return reading;
  }

  #drop(key: string): void {
    this.#entries.delete(key);
    this.#bytes -= this.#sizes.get(key) ?? 0;
    this.#sizes.delete(key);
  }
}

/** The watches' shared encodings: initial-state pages (32 MiB) and change lines (8 MiB). */
export interface WatchEncodings {
  readonly pages: EncodedCache<InitialPage>;
  readonly lines: EncodedCache<{ readonly bytes: Uint8Array }>;
}

/** Fresh, empty shared encodings. */
export function watchEncodings(): WatchEncodings {
  return {
    pages: new EncodedCache<InitialPage>(32 * 1024 * 1024),
    lines: new EncodedCache<{ readonly bytes: Uint8Array }>(8 * 1024 * 1024),
  };
}
