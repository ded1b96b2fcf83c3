/**
 * A Beehive over a fresh in-memory store, not started: for tests of client
 * surfaces that need no running controller.
 *
 * @module
 */
import { Beehive, type BeehiveOptions } from "../mod.ts";
import { openTestStore, type TestStore } from "./_sqlite_driver.ts";

/** Opens a store and a Beehive over it, runs `fn`, and closes the store whatever happens. */
export async function withBeehive(
  options: BeehiveOptions | undefined,
  fn: (bh: Beehive, store: TestStore) => Promise<void>,
): Promise<void> {
  const store = await openTestStore(":memory:");
  try {
    await fn(new Beehive(store, options), store);
  } finally {
    await store.close();
  }
}
