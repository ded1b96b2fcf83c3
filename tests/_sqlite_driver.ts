/**
 * The SQLite store as the tests open it: `openSqliteStore` on the driver
 * `BEEHIVE_TEST_DRIVER` names (`node`, the default, or `ffi`), so the same
 * test files run a second time on the Deno FFI driver (`scripts/test`). A
 * caller's explicit `driver` option wins.
 *
 * @module
 */
import process from "node:process";
import {
  openSqliteStore as openOnDriver,
  type SqliteStore,
  type SqliteStoreOptions,
} from "../store/sqlite/mod.ts";

export type { SqliteStore, SqliteStoreOptions };

/** The driver under test. */
export const testDriver: "node" | "ffi" = process.env.BEEHIVE_TEST_DRIVER === "ffi"
  ? "ffi"
  : "node";

/** `openSqliteStore` on {@linkcode testDriver}. */
export function openSqliteStore(
  path: string,
  options: SqliteStoreOptions = {},
): Promise<SqliteStore> {
  return openOnDriver(path, testDriver === "node" ? options : { driver: testDriver, ...options });
}
