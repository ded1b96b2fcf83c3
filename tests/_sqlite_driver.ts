/**
 * The stores as the tests open them.
 *
 * {@linkcode openSqliteStore} is the SQLite store on the driver
 * `BEEHIVE_TEST_DRIVER` names (`node`, the default, or `ffi`), so the SQLite
 * store's own tests run a second time on the Deno FFI driver (`scripts/test`).
 * A caller's explicit `driver` option wins. It is always a SQLite store.
 *
 * {@linkcode openTestStore} is the store under test for the suites that see
 * only the {@linkcode Store} port (the engine, graph, watch, leadership,
 * multi-process and reliability suites): that SQLite store, or with
 * `BEEHIVE_TEST_STORE=postgres` the PostgreSQL store on the test database
 * (`tests/_postgres.ts`): `":memory:"` is a fresh schema and a file path
 * names one schema, so restart tests reopen what they wrote. `scripts/test`
 * says which suites run on PostgreSQL.
 *
 * @module
 */
import process from "node:process";
import type { Store } from "../src/store.ts";
import type { Logger } from "../src/telemetry/logger.ts";
import {
  openSqliteStore as openOnDriver,
  type SqliteStore,
  type SqliteStoreOptions,
} from "../store/sqlite/mod.ts";

import { openPostgresStore, schemaForPath } from "./_postgres.ts";
import { track } from "../testing/_store_activity.ts";

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
  return openOnDriver(path, testDriver === "node" ? options : { driver: testDriver, ...options });
}

/** The store under test, as the engine sees it: only the {@linkcode Store} port. */
export type TestStore = Store;

/**
 * What a suite may ask of the store under test: options both stores honour. On SQLite,
 * `busyTimeout` is how long a write waits for another process's lock; PostgreSQL queues
 * writers on the server and has no such option.
 */
export interface TestStoreOptions {
  /** Where the store logs. */
  readonly logger?: Logger;
  /** SQLite only: see {@linkcode SqliteStoreOptions.busyTimeout}. */
  readonly busyTimeout?: number;
}

/** Opens the store under test ({@linkcode testStore}) at `path` (a SQLite path or `":memory:"`). */
export function openTestStore(path: string, options: TestStoreOptions = {}): Promise<TestStore> {
  if (testStore === "postgres") {
    const schema = path === ":memory:" ? {} : { schema: schemaForPath(path) };
    const logger = options.logger === undefined ? {} : { logger: options.logger };
    // Calls are counted, so fake-time steps wait for their network round trips.
    return openPostgresStore({ ...schema, ...logger }).then(track);
  }
  return openSqliteStore(path, options);
}
