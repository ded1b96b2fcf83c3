/**
 * Liveness conditions judged by whether the open that wrote them is alive
 * (docs/adr/2026-12-03-liveness-follows-the-writing-open.md). Each writable
 * open of a store has its number (`store_epoch`), written on every condition
 * row it writes, and holds a lock of the dialect's own for as long as it is
 * open — the operating system or the server drops it the moment its process
 * dies. A liveness row reads `Unknown` (`unconfirmed`) exactly when its
 * writer's lock is free: the same from every process, whatever else opens
 * the store.
 *
 * @module
 */
import type { Q } from "./_query.ts";
import type { RowArray } from "./_rows.ts";

/** Which opens of the store are alive: the dialect's own proof. */
export interface LiveOpens {
  /**
   * Of the opens `epochs` (never the reading open's own), those whose lock is
   * still held: a step of a read body, on the read's connection.
   */
  alive(epochs: readonly number[]): Q<ReadonlySet<number>>;
}

/** How a read judges the liveness rows it meets. */
export interface Viewer {
  /** The reading open's own number (its rows are alive); 0 for a read-only open, which has none. */
  readonly epoch: number;
  /** Where the other opens' aliveness is probed. */
  readonly opens: LiveOpens;
}

const NONE: ReadonlySet<number> = new Set();

/** Where a conditions row (`CONDITION_COLUMNS` order) keeps its liveness flag and its writer. */
const LIVENESS = 5;
const OPEN_EPOCH = 6;

/**
 * The writers of the liveness conditions among `rowSets` that are gone, as
 * `viewer` sees them now: no probe when every liveness row is the viewer's
 * own, else one probe per distinct writer for the whole read (the read's
 * snapshot is the only staleness).
 */
export function* goneWriters(
  rowSets: readonly (readonly RowArray[])[],
  viewer: Viewer,
): Q<ReadonlySet<number>> {
  let others: Set<number> | undefined;
  for (const rows of rowSets) {
    for (const row of rows) {
      if (row[LIVENESS] !== 1) continue;
      const epoch = Number(row[OPEN_EPOCH]);
      if (epoch !== viewer.epoch) (others ??= new Set()).add(epoch);
    }
  }
  if (others === undefined) return NONE;
  const alive = yield* viewer.opens.alive([...others]);
  for (const epoch of alive) others.delete(epoch);
  return others;
}
