/**
 * One kind's write-log tail, as a watch's tailer reads it. A store may serve
 * it from memory — the entries this process's own commits appended, with the
 * rows they left where the writer had them at hand — and read the log only
 * where those do not cover the range; any other store is read page by page.
 * The capability sits under a symbol, off the public `Store` interface.
 *
 * @module
 */
import type { GroupKind, ObjectWrite, RawObject, Store } from "../store.ts";

/** A write-log entry, with the object's row as the write left it when known. */
export interface TailWrite extends ObjectWrite {
  /** The live row right after this write (absent: read it); never set on a delete. */
  readonly row?: RawObject;
}

/** One page of a kind's tail. */
export interface TailPage {
  /** Entries above the position asked for, ascending. */
  readonly writes: readonly TailWrite[];
  /** The highest version retention removed (0 when the page came from memory). */
  readonly trimmedThrough: number;
}

/** A kind's tail, read by one consumer whose position only rises. */
export interface KindTail {
  /**
   * The kind's entries above `after` (the last entry this consumer was given,
   * or its starting position), ascending, at most `limit`.
   */
  read(after: number, limit: number): Promise<TailPage>;
  /** Stops collecting. */
  close(): void;
}

/** The symbol a store that serves tails from memory implements. */
export const openKindTailSymbol: unique symbol = Symbol("beehive.openKindTail");

/** A store that serves kind tails from memory. */
export interface KindTailSource {
  /** Opens kind `gk`'s tail; called before the watch reads its starting position. */
  [openKindTailSymbol](gk: GroupKind): KindTail;
}

/**
 * Opens kind `gk`'s tail on `store`: from memory where the store can, else
 * from the log. Open it before reading the starting position, so a commit in
 * between is covered.
 */
export function openKindTail(store: Store, gk: GroupKind): KindTail {
  const open = (store as Partial<KindTailSource>)[openKindTailSymbol];
  if (typeof open === "function") return open.call(store, gk);
  return {
    async read(after, limit) {
      // The position first: a quiet kind costs one small read, not a page.
      if (await store.objectWrites.maxVersion(gk) <= after) {
        return { writes: [], trimmedThrough: 0 };
      }
      return store.objectWrites.listSince(gk, { after, limit });
    },
    close() {},
  };
}
