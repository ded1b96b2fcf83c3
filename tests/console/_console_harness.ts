/**
 * Plumbing for the console tests: a fresh in-memory store with a Beehive.
 *
 * @module
 */
import { Beehive } from "../../mod.ts";
import { openSqliteStore, type SqliteStore } from "../../store/sqlite/mod.ts";

/** Opens an in-memory store and a Beehive over it, runs `fn`, and closes the store. */
export async function withStore(
  fn: (store: SqliteStore, bh: Beehive) => Promise<void>,
): Promise<void> {
  const store = await openSqliteStore(":memory:");
  try {
    await fn(store, new Beehive(store));
  } finally {
    await store.close();
  }
}
