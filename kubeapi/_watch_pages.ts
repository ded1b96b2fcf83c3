/**
 * The initial-state pages watches share: a watch without a `resourceVersion`
 * sends a kind's objects as of its starting position a page at a time, and
 * watches of one kind that start at one position (no write in between) with
 * the same selection and representation send the same pages. Each page is
 * read and encoded once and kept, within a byte budget, for the others.
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

/** The most bytes of pages kept. */
export const PAGE_CACHE_BYTES = 32 * 1024 * 1024;
/** A page larger than this is sent but not kept. */
const MAX_KEPT_PAGE = 4 * 1024 * 1024;

/** Pages by what determines them: kind, position, selection, representation, and the id they follow. */
export class InitialPages {
  readonly #pages = new Map<string, Promise<InitialPage>>();
  readonly #sizes = new Map<string, number>();
  #bytes = 0;

  /**
   * The page `key` names: kept, being read by another watch, or read now
   * with `read` (a failed read is not kept).
   */
  get(key: string, read: () => Promise<InitialPage>): Promise<InitialPage> {
    const kept = this.#pages.get(key);
    if (kept !== undefined) {
      // Most recently used last: eviction takes the oldest first.
      this.#pages.delete(key);
      this.#pages.set(key, kept);
      return kept;
    }
    const reading = read();
    this.#pages.set(key, reading);
    reading.then((page) => {
      if (this.#pages.get(key) !== reading) return;
      if (page.bytes.byteLength > MAX_KEPT_PAGE) {
        this.#pages.delete(key);
        return;
      }
      this.#sizes.set(key, page.bytes.byteLength);
      this.#bytes += page.bytes.byteLength;
      for (const [oldest] of this.#pages) {
        if (this.#bytes <= PAGE_CACHE_BYTES) break;
        this.#drop(oldest);
      }
    }, () => {
      if (this.#pages.get(key) === reading) this.#pages.delete(key);
    });
    return reading;
  }

  /** Pages kept, and their bytes. */
  get size(): { readonly pages: number; readonly bytes: number } {
    return { pages: this.#sizes.size, bytes: this.#bytes };
  }

  #drop(key: string): void {
    this.#pages.delete(key);
    this.#bytes -= this.#sizes.get(key) ?? 0;
    this.#sizes.delete(key);
  }
}
