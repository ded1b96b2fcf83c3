/**
 * The SQLite store for beehive, over the `node:sqlite` module built into Deno
 * 2.2+ and Node 22.13+ (22.5+ with `--experimental-sqlite`): one adapter, both
 * runtimes, nothing to download. On Deno, `driver: "ffi"` runs the same store
 * over a SQLite shared library (3.38.0+) through `Deno.dlopen`.
 *
 * @example
 * ```ts
 * import { openSqliteStore } from "@beehive/beehive/sqlite";
 *
 * const store = await openSqliteStore(":memory:");
 * console.assert(store.identity.startsWith("memory:"));
 * await store.close();
 * ```
 *
 * @module
 */
export { openSqliteStore, SqliteStore } from "./sqlite_store.ts";
export { SqlStore } from "../sql/sql_store.ts";
export type { IntegrityFinding, IntegrityReport } from "../sql/_integrity.ts";
export type { SqliteStoreOptions } from "./sqlite_store.ts";
