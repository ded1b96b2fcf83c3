/**
 * beehive: an embedded, durable, self-healing control plane. Desired state is
 * declared as objects; controllers reconcile actual state toward it,
 * coordinating only through a SQLite store inside the process.
 *
 * This entry point exports the error classes and the `Store` port that store
 * adapters implement. The SQLite store lives at `@beehive/beehive/sqlite`.
 *
 * @example
 * ```ts
 * import { NotFoundError } from "@beehive/beehive";
 * import { openSqliteStore } from "@beehive/beehive/sqlite";
 *
 * const store = await openSqliteStore(":memory:");
 * try {
 *   await store.objects.get(42);
 * } catch (error) {
 *   console.assert(error instanceof NotFoundError);
 * }
 * await store.close();
 * ```
 *
 * @module
 */
export * from "./src/errors.ts";
export type * from "./src/store.ts";
export type * from "./src/logger.ts";
