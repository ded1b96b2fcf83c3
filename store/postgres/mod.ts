/**
 * The PostgreSQL store for beehive: one schema of a PostgreSQL (13+) database
 * as a beehive `Store`, shared by every replica that opens it, through the
 * `pg` client (node-postgres) on Deno and Node alike. This entry point is the
 * only one with a dependency; the core and the SQLite store keep none.
 *
 * @example
 * ```ts ignore
 * import { openPostgresStore } from "@beehive/beehive/postgres";
 *
 * const store = await openPostgresStore("postgres://beehive@localhost/app", { schema: "beehive" });
 * console.assert(store.identity.endsWith("?schema=beehive"));
 * await store.close();
 * ```
 *
 * @module
 */
export { openPostgresStore, PostgresStore } from "./postgres_store.ts";
export { SqlStore } from "../sql/sql_store.ts";
export type { IntegrityFinding, IntegrityReport } from "../sql/_integrity.ts";
export type { PostgresStoreOptions } from "./postgres_store.ts";
