/**
 * The `node:sqlite` shim: `DatabaseSync` is built into Deno 2.2+ and Node
 * 22.13+ (22.5+ with `--experimental-sqlite`), so one adapter runs on both
 * with nothing to download.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import type { Connection, Driver, DriverFailure, OpenOptions } from "./_driver.ts";

const SQLITE_BUSY = 5;

/** The default driver. */
export const nodeSqliteDriver: Driver = {
  open(path: string, options?: OpenOptions): Connection {
    // Connection is structurally what DatabaseSync offers.
    if (options?.readOnly) {
      return new DatabaseSync(path, { readOnly: true }) as unknown as Connection;
    }
    return new DatabaseSync(path) as unknown as Connection;
  },
  // node:sqlite attaches SQLite's extended result code as `errcode`; Deno's omits it on some
  // errors (`exec`), where SQLITE_BUSY is known by SQLite's own text for it.
  describeFailure(error: unknown): DriverFailure {
    const e = error as { errcode?: unknown; message?: unknown };
    const message = typeof e?.message === "string" ? e.message : String(error);
    const code = typeof e?.errcode === "number"
      ? e.errcode
      : message === "database is locked"
      ? SQLITE_BUSY
      : undefined;
    return { code, message };
  },
};
