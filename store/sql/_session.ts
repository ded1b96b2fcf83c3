/**
 * The session a shared family runs its bodies through: the dialect's, bound
 * to a root handle (reads on a pooled or idle connection, each write in the
 * write group) or to a transaction frame (everything on the transaction's
 * connection, each write unit in a savepoint).
 *
 * @module
 */
import type { Dialect } from "./_dialect.ts";
import type { Q } from "./_query.ts";

/** What a write unit may use besides its statements: one clock reading and version draws. */
export interface WriteScope {
  /** `Date.now()` read once for the whole unit. */
  readonly now: number;
  /** The next resource version. */
  draw(): number;
  /** `n` consecutive resource versions; returns the first. */
  drawMany(n: number): number;
  /** The version {@linkcode WriteScope.draw} returns next, without taking it. */
  peekVersion(): number;
}

/** How a shared family reaches the database. */
export interface SqlSession {
  readonly dialect: Dialect;
  /** This open's number: the liveness downgrade's epoch, and the write log's origin. */
  readonly epoch: number;
  /** Runs a body of reads. */
  read<T>(body: () => Q<T>): Promise<T>;
  /** Runs a body of reads that must see one snapshot. */
  readSnapshot<T>(body: () => Q<T>): Promise<T>;
  /** Runs a write unit atomically. */
  write<T>(body: (scope: WriteScope) => Q<T>): Promise<T>;
}
