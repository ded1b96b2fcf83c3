/**
 * The devices' own table, outside beehive's store: what a controller changes
 * in the world, with the fencing epoch of the last write kept on each row.
 * Several processes share it (one SQLite file in WAL mode).
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import type { ApplyFencedOptions, FencedRepository } from "@beehive/beehive";

/** What a controller writes to a device. */
export interface DeviceWrite {
  readonly power: "on" | "off";
  /** Which replica wrote it (shown by the example). */
  readonly writtenBy: string;
}

/** A device row as stored. */
export interface DeviceRow {
  readonly id: string;
  readonly power: string;
  readonly writtenBy: string;
  readonly lastEpoch: number;
}

function isDeviceWrite(value: unknown): value is DeviceWrite {
  const w = value as DeviceWrite;
  return typeof w === "object" && w !== null && (w.power === "on" || w.power === "off") &&
    typeof w.writtenBy === "string" && w.writtenBy.length <= 200;
}

/**
 * The device table as a {@linkcode FencedRepository}: a write lands only
 * when its epoch is at least the row's `last_epoch`, in one statement, so a
 * term that is over cannot overwrite a later term's write.
 */
export class DeviceTable implements FencedRepository {
  readonly #db: DatabaseSync;

  constructor(path: string) {
    this.#db = new DatabaseSync(path);
    this.#db.exec(`PRAGMA busy_timeout = 10000; PRAGMA journal_mode = WAL;
      CREATE TABLE IF NOT EXISTS devices (
        id         TEXT PRIMARY KEY,
        power      TEXT NOT NULL,
        written_by TEXT NOT NULL,
        last_epoch INTEGER NOT NULL
      )`);
  }

  applyFenced(
    entityId: string,
    epoch: number,
    mutation: unknown,
    _options: ApplyFencedOptions,
  ): Promise<boolean> {
    if (!isDeviceWrite(mutation)) {
      return Promise.reject(
        new TypeError("Cannot write the device: expected { power, writtenBy }"),
      );
    }
    // The compare-and-set: insert, or update only a row no later term has written.
    const { changes } = this.#db.prepare(
      `INSERT INTO devices (id, power, written_by, last_epoch) VALUES (?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET
         power = excluded.power, written_by = excluded.written_by, last_epoch = excluded.last_epoch
       WHERE excluded.last_epoch >= devices.last_epoch`,
    ).run(entityId, mutation.power, mutation.writtenBy, epoch);
    return Promise.resolve(Number(changes) === 1);
  }

  /** Every device row, by id. */
  list(): DeviceRow[] {
    return this.#db.prepare(
      "SELECT id, power, written_by, last_epoch FROM devices ORDER BY id",
    ).all().map((r) => ({
      id: String(r.id),
      power: String(r.power),
      writtenBy: String(r.written_by),
      lastEpoch: Number(r.last_epoch),
    }));
  }

  close(): void {
    this.#db.close();
  }
}
