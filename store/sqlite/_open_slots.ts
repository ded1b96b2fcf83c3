/**
 * The SQLite store's live opens (see `../sql/_live_opens.ts`): each writable
 * open holds a slot, a lock file beside the database (`<db>-open-<slot>`),
 * from open to close — the operating system drops the lock the moment the
 * process dies — and records in `open_slots` which open holds which slot. An
 * open takes the lowest free slot, so there are never more slot files than
 * opens that were ever alive at once.
 *
 * @module
 */
import { StoreError } from "../../src/model/errors.ts";
import type { LiveOpens } from "../sql/_live_opens.ts";
import { type Q, q } from "../sql/_query.ts";
import type { Driver } from "./_driver.ts";
import { type LockFileKind, LockFiles } from "./_lock_files.ts";

/** The lock file of open slot `slot` beside the database file `base`. */
export function openSlotPath(base: string, slot: string): string {
  return `${base}-open-${slot}`;
}

/** Slot files: held for an open's life, with no timer (a holder that loses one only reads Unknown elsewhere). */
const SLOTS: LockFileKind = { path: openSlotPath, watched: false };

/** More opens than this alive at once is refused: a runaway, not a deployment. */
export const MAX_OPEN_SLOTS = 4096;

const RECORD = `INSERT INTO open_slots (slot, open_epoch) VALUES (?, ?)
  ON CONFLICT (slot) DO UPDATE SET open_epoch = excluded.open_epoch`;
const SLOTS_OF = "SELECT slot FROM open_slots WHERE open_epoch = ?";

export class OpenSlots implements LiveOpens {
  readonly #files: LockFiles;

  /** `base` is the database file's path; a read-only open passes `readOnly` and only probes. */
  constructor(driver: Driver, base: string, readOnly?: () => Error) {
    this.#files = new LockFiles(driver, base, readOnly, SLOTS);
  }

  /**
   * Takes the lowest free slot for the open `epoch` and records it through
   * `writer`, inside the open's write transaction (so no reader sees the
   * slot's previous holder alive once this commits).
   * @throws {StoreError} every slot is held.
   */
  claim(writer: { run(sql: string, ...params: number[]): number }, epoch: number): void {
    for (let slot = 0; slot < MAX_OPEN_SLOTS; slot++) {
      if (!this.#files.tryLock(String(slot))) continue;
      writer.run(RECORD, slot, epoch);
      return;
    }
    throw new StoreError(
      `Cannot open the store: ${MAX_OPEN_SLOTS} opens hold it already (every open-slot lock file is held)`,
    );
  }

  *alive(epochs: readonly number[]): Q<ReadonlySet<number>> {
    const alive = new Set<number>();
    for (const epoch of epochs) {
      for (const row of yield* q.all(SLOTS_OF, epoch)) {
        if (yield* this.#files.isLocked(String(row.slot))) {
          alive.add(epoch);
          break;
        }
      }
    }
    return alive;
  }

  /** Frees this open's slot and closes the probed files. */
  close(): void {
    this.#files.close();
  }
}
