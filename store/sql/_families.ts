/**
 * The store families bound to one session: what a root handle and each
 * transaction handle of either SQL store expose, each family made on first use.
 *
 * @module
 */
import type {
  Conditions,
  DeletionRequests,
  Dependencies,
  DriverCursors,
  Edges,
  Events,
  Kinds,
  Leases,
  Objects,
  ObjectWrites,
  ReconcileOwed,
} from "../../src/store.ts";
import { SqlConditions } from "./_conditions.ts";
import { SqlDeletionRequests } from "./_deletion_requests.ts";
import { SqlDependencies } from "./_dependencies.ts";
import { SqlDriverCursors } from "./_driver_cursors.ts";
import { SqlEdges } from "./_edges.ts";
import { SqlEvents } from "./_events.ts";
import { SqlKinds } from "./_kinds.ts";
import { type LeaseLocks, SqlLeases } from "./_leases.ts";
import { SqlObjectWrites } from "./_object_writes.ts";
import { SqlObjects } from "./_objects.ts";
import { SqlReconcileOwed } from "./_reconcile_owed.ts";
import type { SqlSession } from "./_session.ts";

/** Families bound to one session; shared by the root handle and transaction handles. */
export class Families {
  readonly #sql: SqlSession;
  readonly #locks: LeaseLocks;
  #objects?: Objects;
  #conditions?: Conditions;
  #edges?: Edges;
  #deletionRequests?: DeletionRequests;
  #dependencies?: Dependencies;
  #driverCursors?: DriverCursors;
  #events?: Events;
  #objectWrites?: ObjectWrites;
  #reconcileOwed?: ReconcileOwed;
  #leases?: Leases;
  #kinds?: Kinds;

  constructor(sql: SqlSession, locks: LeaseLocks) {
    this.#sql = sql;
    this.#locks = locks;
  }

  get objects(): Objects {
    return this.#objects ??= new SqlObjects(this.#sql);
  }
  get conditions(): Conditions {
    return this.#conditions ??= new SqlConditions(this.#sql);
  }
  get edges(): Edges {
    return this.#edges ??= new SqlEdges(this.#sql);
  }
  get deletionRequests(): DeletionRequests {
    return this.#deletionRequests ??= new SqlDeletionRequests(this.#sql);
  }
  get dependencies(): Dependencies {
    return this.#dependencies ??= new SqlDependencies(this.#sql);
  }
  get driverCursors(): DriverCursors {
    return this.#driverCursors ??= new SqlDriverCursors(this.#sql);
  }
  get events(): Events {
    return this.#events ??= new SqlEvents(this.#sql);
  }
  get objectWrites(): ObjectWrites {
    return this.#objectWrites ??= new SqlObjectWrites(this.#sql);
  }
  get reconcileOwed(): ReconcileOwed {
    return this.#reconcileOwed ??= new SqlReconcileOwed(this.#sql);
  }
  get leases(): Leases {
    return this.#leases ??= new SqlLeases(this.#sql, this.#locks);
  }
  get kinds(): Kinds {
    return this.#kinds ??= new SqlKinds(this.#sql);
  }
}
