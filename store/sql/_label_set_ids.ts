/**
 * The ids of label sets a store open's writer has found or made, so a create
 * whose labels its kind already carries skips the lookup statement. Kept
 * only where the open's own transactions are the only writes between two of
 * its checks: SQLite's writer clears it whenever another connection
 * committed since its last transaction began, and on every rollback (a set
 * made or dropped inside it may be undone). A dropped set leaves it at once.
 *
 * @module
 */
import type { GroupKind } from "../../src/store.ts";
import { kindKey } from "../../src/model/_kind_keys.ts";

/** How many sets the map holds before it starts over. */
export const MAX_KNOWN_SETS = 4_096;

/** Label-set ids by kind and canonical labels text. */
export class LabelSetIds {
  #byKind = new Map<string, Map<string, number>>();
  #size = 0;

  /** The id of the set `text` in `gk`, if known. */
  get(gk: GroupKind, text: string): number | undefined {
    return this.#byKind.get(kindKey(gk))?.get(text);
  }

  /** Records that set `text` of `gk` exists with `id`. */
  set(gk: GroupKind, text: string, id: number): void {
    if (this.#size >= MAX_KNOWN_SETS) this.clear();
    const key = kindKey(gk);
    let sets = this.#byKind.get(key);
    if (sets === undefined) this.#byKind.set(key, sets = new Map());
    if (!sets.has(text)) this.#size++;
    sets.set(text, id);
  }

  /** Forgets set `text` of `gk`: it was dropped. */
  delete(gk: GroupKind, text: string): void {
    if (this.#byKind.get(kindKey(gk))?.delete(text)) this.#size--;
  }

  /** Forgets every set. */
  clear(): void {
    if (this.#size === 0) return;
    this.#byKind = new Map();
    this.#size = 0;
  }
}
