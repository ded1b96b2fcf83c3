/**
 * What every route handler reads: the store, the Beehive its clients come
 * from (never started: the server only reads and marks), and the request.
 *
 * @module
 */
import type { Beehive, Store } from "@beehive/beehive";

/** The handler's shared state. */
export interface KubeContext {
  readonly store: Store;
  readonly bh: Beehive;
}
