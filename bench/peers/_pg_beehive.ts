/**
 * The peers workload's Beehive on a PostgreSQL store, for the tools that look
 * inside it (`pg_explain.ts`, `pg_memory.ts`): a controller at `concurrency`
 * writing `status { done: true }` once a pass and settling, started, with a
 * count of its passes.
 *
 * @module
 */
import { Beehive, type Client, settled, type StopFunction } from "../../mod.ts";
import type { PostgresStore } from "../../store/postgres/mod.ts";
import { FLOOR_KIND, type FLOOR_SPEC } from "../_floor.ts";

/** The started Beehive's client, its stop, and its passes. */
export interface PeersBeehive {
  readonly client: Client<typeof FLOOR_SPEC, { done: boolean }>;
  readonly stop: StopFunction;
  /** The passes made so far. */
  passes(): number;
  /** Resolves once `n` passes have been made in all. */
  reached(n: number): Promise<void>;
}

/** Starts the peers workload's Beehive on `store`. */
export async function startPeersBeehive(
  store: PostgresStore,
  concurrency: number,
): Promise<PeersBeehive> {
  const bh = new Beehive(store, { concurrency });
  let passes = 0;
  const waits: { n: number; resolve: () => void }[] = [];
  bh.register<typeof FLOOR_SPEC, { done: boolean }>(FLOOR_KIND, {
    async reconcile(_obj, cc) {
      await cc.updateStatus({ done: true });
      passes++;
      for (let i = waits.length - 1; i >= 0; i--) {
        if (passes >= waits[i].n) waits.splice(i, 1)[0].resolve();
      }
      return settled();
    },
  });
  const stop = await bh.start();
  return {
    client: bh.client<typeof FLOOR_SPEC, { done: boolean }>(FLOOR_KIND),
    stop,
    passes: () => passes,
    reached(n) {
      if (passes >= n) return Promise.resolve();
      const { promise, resolve } = Promise.withResolvers<void>();
      waits.push({ n, resolve });
      return promise;
    },
  };
}
