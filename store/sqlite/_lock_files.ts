/**
 * Lease locks as SQLite file locks: a held lease keeps a write transaction
 * open on a small file beside the database, so the operating system drops it
 * the moment the holding process dies. Holding one writes nothing.
 *
 * @module
 */
import { existsSync } from "node:fs";
import type { Connection, Driver } from "./_driver.ts";
import type { LeaseLocks } from "../sql/_leases.ts";
import { done, type Q } from "../sql/_query.ts";

/** One lock file's connection, opened on first use and kept until close. */
class LockFile {
  readonly #conn: Connection;
  #held = false;

  constructor(conn: Connection) {
    this.#conn = conn;
  }

  get held(): boolean {
    return this.#held;
  }

  /** Takes the lock if no other connection or process has it; never waits. */
  tryLock(): boolean {
    if (this.#held) return false;
    try {
      this.#conn.exec("BEGIN IMMEDIATE");
    } catch {
      // SQLITE_BUSY: another connection holds it.
      return false;
    }
    this.#held = true;
    return true;
  }

  unlock(): void {
    if (!this.#held) return;
    this.#held = false;
    this.#conn.exec("ROLLBACK");
  }

  close(): void {
    this.#held = false;
    this.#conn.close();
  }
}

/** The lock file of lease `name` beside the database file `base`. */
export function lockFilePath(base: string, name: string): string {
  return `${base}-lease-${encodeURIComponent(name)}`;
}

/** The lock files of one open store, one per lease name: the held leases' locks. */
export class LockFiles implements LeaseLocks {
  readonly #driver: Driver;
  readonly #base: string;
  readonly #files = new Map<string, LockFile>();
  /** A read-only open's refusal to take a lock; it never creates a lock file either. */
  readonly #readOnly: (() => Error) | undefined;

  /**
   * `base` is the database file's path; lock files sit beside it. A
   * read-only open passes `readOnly`, the error a lock it is asked to take
   * rejects with.
   */
  constructor(driver: Driver, base: string, readOnly?: () => Error) {
    this.#driver = driver;
    this.#base = base;
    this.#readOnly = readOnly;
  }

  /** The lock file of lease `name`. */
  #file(name: string): LockFile {
    let file = this.#files.get(name);
    if (file === undefined) {
      // Never removed: unlinking a lock file another process is waiting on would split the lock.
      const conn = this.#driver.open(lockFilePath(this.#base, name));
      try {
        conn.exec("PRAGMA busy_timeout = 0");
      } catch (error) {
        conn.close();
        throw error;
      }
      this.#files.set(name, file = new LockFile(conn));
    }
    return file;
  }

  /** Takes lease `name`'s lock for this store; false when anyone else (or this store) has it. */
  tryLock(name: string): boolean {
    if (this.#readOnly !== undefined) throw this.#readOnly();
    return this.#file(name).tryLock();
  }

  /** Frees lease `name`'s lock if this store holds it. */
  unlock(name: string): void {
    this.#files.get(name)?.unlock();
  }

  /** Whether this store holds lease `name`'s lock. */
  holds(name: string): boolean {
    return this.#files.get(name)?.held ?? false;
  }

  /** Whether some live holder, here or in another process, has lease `name`'s lock: no statement. */
  isLocked(name: string): Q<boolean> {
    if (this.#readOnly !== undefined && !this.#files.has(name)) {
      // A read-only open creates no lock file: a missing one is held by nobody. An
      // existing one is probed (a file lock writes nothing); one it cannot open (read-only
      // media) leaves the recorded holder standing.
      if (!existsSync(lockFilePath(this.#base, name))) return done(false);
      try {
        this.#file(name);
      } catch {
        return done(true);
      }
    }
    const file = this.#file(name);
    if (file.held || !file.tryLock()) return done(true);
    file.unlock();
    return done(false);
  }

  /** Frees every lock and closes the files. */
  close(): void {
    for (const file of this.#files.values()) {
      try {
        file.close();
      } catch {
        // Closing frees the lock whatever the driver reports.
      }
    }
    this.#files.clear();
  }
}
