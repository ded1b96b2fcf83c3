/**
 * Lease locks as SQLite file locks: a held lease keeps a write transaction
 * open on a small file beside the database, so the operating system drops it
 * the moment the holding process dies. Holding one writes nothing.
 *
 * A lock lives on the file, not on its name: a lock file deleted (or replaced)
 * while held leaves its holder locking a file nobody else can find, and the
 * next process to open the name takes the lease too. So a holder checks every
 * {@linkcode LOCK_CHECK_INTERVAL} ms that the name still leads to the file it
 * locked, and signals the loss when it does not.
 *
 * @module
 */
import { existsSync, statSync } from "node:fs";
import { StoreError } from "../../src/model/errors.ts";
import { quote } from "../../src/model/_values.ts";
import type { Connection, Driver } from "./_driver.ts";
import type { LeaseLocks } from "../sql/_leases.ts";
import { done, type Q } from "../sql/_query.ts";

/** How often, in ms, a holder checks that its lock files are still the files at their names. */
export const LOCK_CHECK_INTERVAL = 1000;

/** A file's identity: its device and inode; `undefined` when nothing is at the path. */
function identityOf(path: string): string | undefined {
  try {
    const stat = statSync(path);
    return `${stat.dev}:${stat.ino}`;
  } catch {
    return undefined;
  }
}

/** One lock file's connection, opened on first use and kept until close. */
class LockFile {
  readonly #conn: Connection;
  readonly #path: string;
  /** The identity of the file the connection opened (read just after opening it). */
  readonly #identity: string | undefined;
  #held = false;

  constructor(conn: Connection, path: string) {
    this.#conn = conn;
    this.#path = path;
    this.#identity = identityOf(path);
  }

  /** Whether the path still leads to the file this connection opened. */
  current(): boolean {
    return this.#identity !== undefined && identityOf(this.#path) === this.#identity;
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

/** Where a {@linkcode LockFiles} keeps its files, and whether a holder watches them. */
export interface LockFileKind {
  /** The lock file of `name` beside the database file `base`. */
  path(base: string, name: string): string;
  /**
   * Whether a holder checks every {@linkcode LOCK_CHECK_INTERVAL} ms that its
   * files are still at their names, signalling a loss (a timer while any is held).
   */
  readonly watched: boolean;
}

/** Held leases' lock files: `<db>-lease-<name>`, watched. */
export const LEASE_LOCKS: LockFileKind = { path: lockFilePath, watched: true };

/** The lock files of one open store, one per lease name: the held leases' locks. */
export class LockFiles implements LeaseLocks {
  readonly #driver: Driver;
  readonly #base: string;
  readonly #kind: LockFileKind;
  readonly #files = new Map<string, LockFile>();
  /** The locks this store holds, each with the signal of its loss. */
  readonly #watched = new Map<string, AbortController>();
  #timer: ReturnType<typeof setInterval> | undefined;
  /** A read-only open's refusal to take a lock; it never creates a lock file either. */
  readonly #readOnly: (() => Error) | undefined;

  /**
   * `base` is the database file's path; lock files sit beside it. A
   * read-only open passes `readOnly`, the error a lock it is asked to take
   * rejects with.
   */
  constructor(
    driver: Driver,
    base: string,
    readOnly?: () => Error,
    kind: LockFileKind = LEASE_LOCKS,
  ) {
    this.#driver = driver;
    this.#base = base;
    this.#readOnly = readOnly;
    this.#kind = kind;
  }

  /** The lock file of lease `name`. */
  #file(name: string): LockFile {
    let file = this.#files.get(name);
    if (file === undefined) {
      // Never removed: unlinking a lock file another process is waiting on would split the lock.
      const path = this.#kind.path(this.#base, name);
      const conn = this.#driver.open(path);
      try {
        conn.exec("PRAGMA busy_timeout = 0");
      } catch (error) {
        conn.close();
        throw error;
      }
      this.#files.set(name, file = new LockFile(conn, path));
    }
    return file;
  }

  /**
   * Takes lease `name`'s lock for this store; false when anyone else (or this
   * store) has it. The lock is taken on the file the name leads to: a
   * connection left on a deleted or replaced file is reopened first.
   */
  tryLock(name: string): boolean {
    if (this.#readOnly !== undefined) throw this.#readOnly();
    for (let attempt = 0; attempt < 3; attempt++) {
      const file = this.#file(name);
      if (file.current()) {
        if (!file.tryLock()) return false;
        if (file.current()) {
          this.#watch(name);
          return true;
        }
        file.unlock();
      }
      this.#drop(name, file);
    }
    return false;
  }

  /** Closes lease `name`'s connection, left on a file no longer at its name. */
  #drop(name: string, file: LockFile): void {
    this.#files.delete(name);
    try {
      file.close();
    } catch {
      // Closing frees the lock whatever the driver reports.
    }
  }

  /** Frees lease `name`'s lock if this store holds it. */
  unlock(name: string): void {
    this.#unwatch(name);
    this.#files.get(name)?.unlock();
  }

  /**
   * The signal of lease `name`'s lock being lost while this store holds it:
   * its lock file was deleted or replaced, so another process may take it.
   */
  lost(name: string): AbortSignal | undefined {
    return this.#watched.get(name)?.signal;
  }

  #watch(name: string): void {
    if (!this.#kind.watched) return;
    this.#watched.set(name, new AbortController());
    this.#timer ??= setInterval(() => this.#check(), LOCK_CHECK_INTERVAL);
  }

  #unwatch(name: string): void {
    this.#watched.delete(name);
    if (this.#watched.size === 0 && this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  /** Signals the loss of every held lock whose file is no longer at its name. */
  #check(): void {
    for (const [name, lost] of [...this.#watched]) {
      if (this.#files.get(name)?.current() !== false) continue;
      this.#unwatch(name);
      lost.abort(
        new StoreError(
          `Lost lease ${quote(name)}: its lock file ${
            // A path, bounded by the file system, is quoted whole: the operator needs all of it.
            JSON.stringify(
              this.#kind.path(this.#base, name),
            )} was deleted or replaced while held, so another process can take the lease; never delete the files beside the database while a process has it open`,
        ),
      );
    }
  }

  /** Whether this store holds lease `name`'s lock. */
  holds(name: string): boolean {
    return this.#files.get(name)?.held ?? false;
  }

  /** Whether some live holder, here or in another process, has lease `name`'s lock: no statement. */
  isLocked(name: string): Q<boolean> {
    const kept = this.#files.get(name);
    // A probe connection left on a deleted or replaced file would probe nobody's lock.
    if (kept !== undefined && !kept.held && !kept.current()) this.#drop(name, kept);
    if (this.#readOnly !== undefined && !this.#files.has(name)) {
      // A read-only open creates no lock file: a missing one is held by nobody. An
      // existing one is probed (a file lock writes nothing); one it cannot open (read-only
      // media) leaves the recorded holder standing.
      if (!existsSync(this.#kind.path(this.#base, name))) return done(false);
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
    for (const name of [...this.#watched.keys()]) this.#unwatch(name);
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
