/**
 * The Store port: the interface every beehive store implements, and what an
 * adapter author needs to write one. Applications do not need this entry: they
 * open a store (`@beehive/beehive/sqlite`, `@beehive/beehive/postgres`) and
 * hand it to a `Beehive`.
 *
 * A store keeps the port's promises for every family (objects, conditions,
 * edges, deletion requests, dependencies, events, the write log, leases,
 * driver cursors) and translates its driver's failures into the error classes
 * the main entry exports (`StoreError`, `ConflictError`, `NotFoundError`, …).
 * A store may also serve a kind's write-log tail from memory to the watches
 * (`openKindTailSymbol`); one that does not is read page by page.
 *
 * @module
 */
export type * from "../src/store.ts";
export { openKindTailSymbol } from "../src/watches/kind_tail.ts";
export type { KindTail, KindTailSource, TailPage, TailWrite } from "../src/watches/kind_tail.ts";
