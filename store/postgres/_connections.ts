/**
 * Pooled connections: releasing one (destroying it when it failed), rolling
 * back quietly, and telling a statement's error from a connection's.
 *
 * @module
 */
import type { Db, PgClient } from "./_core.ts";

/** Connections that reported an error: released to be destroyed, never reused. */
export const brokenClients = new WeakSet<PgClient>();

/** Returns `client` to the pool, destroying it when it failed. */
export function releaseClient(client: PgClient, failed = false): void {
  client.release(failed || brokenClients.has(client) ? true : undefined);
}

/** Rolls back; resolves to false when the connection is gone (the server rolled back with it). */
export async function rollbackQuietly(db: Db): Promise<boolean> {
  try {
    await db.exec("ROLLBACK");
    return true;
  } catch {
    return false;
  }
}

/** Whether `error` came from the server about one statement (the connection is still good). */
export function isServerError(error: unknown): boolean {
  return typeof (error as { code?: unknown } | null)?.code === "string" &&
    (error as { severity?: unknown }).severity !== undefined;
}

/**
 * The savepoint the members of a group each run in, kept between members so
 * that moving to the next costs one round trip (`RELEASE` and a new
 * `SAVEPOINT` together), and none after the last: the commit takes it along.
 */
export class MemberSavepoint {
  readonly #db: Db;
  /** The savepoint's name. */
  readonly name: string;
  /** none: not yet set; used: holds a member's writes; empty: just rolled back to. */
  #state: "none" | "used" | "empty" = "none";

  constructor(db: Db, name: string) {
    this.#db = db;
    this.name = name;
  }

  /** Sets a fresh savepoint for the next member. */
  async open(): Promise<void> {
    const name = this.name;
    if (this.#state === "none") await this.#db.exec(`SAVEPOINT ${name}`);
    else if (this.#state === "used") await this.#db.exec(`RELEASE ${name}; SAVEPOINT ${name}`);
    // "empty": rolled back to, the savepoint is still set and holds nothing.
    this.#state = "used";
  }

  /** Undoes the member's writes; the savepoint stays set for the next member. */
  async rollback(): Promise<void> {
    await this.#db.exec(`ROLLBACK TO ${this.name}`);
    this.#state = "empty";
  }
}
