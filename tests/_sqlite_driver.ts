/**
 * The SQLite store as the tests open it: `openSqliteStore` on the driver
 * `BEEHIVE_TEST_DRIVER` names (`node`, the default, or `ffi`), so the same
 * test files run a second time on the Deno FFI driver (`scripts/test`). A
 * caller's explicit `driver` option wins.
 *
 * With `BEEHIVE_TEST_STORE=postgres`, the same call opens the PostgreSQL
 * store on the test database instead (`tests/_postgres.ts`): `":memory:"` is
 * a fresh schema and a file path names one schema, so restart tests reopen
 * what they wrote. The engine, graph, watch and reliability suites run on
 * PostgreSQL this way (`scripts/test`).
 *
 * @module
 */
import process from "node:process";
import {
  openSqliteStore as openOnDriver,
  type SqliteStore,
  type SqliteStoreOptions,
} from "../store/sqlite/mod.ts";

import { openPostgresStore, schemaForPath } from "./_postgres.ts";
import { track } from "./_store_activity.ts";

export type { SqliteStore, SqliteStoreOptions };

/** The store under test: `sqlite` (the default) or `postgres`. */
export const testStore: "sqlite" | "postgres" = process.env.BEEHIVE_TEST_STORE === "postgres"
  ? "postgres"
  : "sqlite";

/** The driver under test. */
export const testDriver: "node" | "ffi" = process.env.BEEHIVE_TEST_DRIVER === "ffi"
  ? "ffi"
  : "node";

/** `openSqliteStore` on {@linkcode testDriver}. */
export function openSqliteStore(
  path: string,
  options: SqliteStoreOptions = {},
): Promise<SqliteStore> {
  if (testStore === "postgres") {
    const schema = path === ":memory:" ? {} : { schema: schemaForPath(path) };
    const logger = options.logger === undefined ? {} : { logger: options.logger };
    // The engine suites use only the Store port: a PostgresStore stands in for the SQLite one.
    // Calls are counted, so fake-time steps wait for their network round trips.
    return openPostgresStore({ ...schema, ...logger }).then(track) as unknown as Promise<
      SqliteStore
    >;
  }
  return openOnDriver(path, testDriver === "node" ? options : { driver: testDriver, ...options });
}
