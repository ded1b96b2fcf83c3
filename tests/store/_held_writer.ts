/**
 * A transaction that holds a store's writer open until told to finish: the
 * group-commit tests queue writes behind it. Shared by the SQLite and the
 * PostgreSQL group-commit tests.
 *
 * @module
 */
import type { Store } from "../../src/store.ts";

/** An open transaction: `release()` lets it commit, `done` settles with it. */
export interface HeldWriter {
  release(): void;
  readonly done: Promise<void>;
}

/**
 * Opens a transaction on `store`, runs `inside` in it, and resolves once it
 * is open and waiting; it commits after `release()`.
 */
export async function holdWriter(
  store: Store,
  inside: (tx: Store) => Promise<unknown> = () => Promise.resolve(),
): Promise<HeldWriter> {
  const { promise: released, resolve: release } = Promise.withResolvers<void>();
  const opened = Promise.withResolvers<void>();
  const done = store.within(async (tx) => {
    await inside(tx);
    opened.resolve();
    await released;
  });
  // A transaction that fails before it is open must not leave the caller waiting.
  done.catch((error) => opened.reject(error));
  await opened.promise;
  return { release, done };
}
