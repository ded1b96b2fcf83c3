/**
 * The commit journal: while anyone tails a kind from memory, every write-log
 * entry the open write transaction appends is kept in order, cut back with
 * each savepoint the transaction rolls back, and handed to the readers once
 * the commit is durable, as one batch saying which versions the commit
 * covers. Both SQL stores draw versions above the committed counter while
 * holding what serializes their writers (SQLite's write lock, PostgreSQL's
 * counter row lock, taken at `BEGIN`), so a commit's entries are the whole
 * log between the counter it began at and the one it published; a batch that
 * does not begin where the previous one ended tells a reader another
 * connection committed in between. What each dialect adds is a stamp that
 * moves when a commit this journal did not see may have landed
 * ({@linkcode CommitBatch.stamp}).
 *
 * @module
 */
import type { TailWrite } from "../../src/watches/kind_tail.ts";
import type { GroupKind } from "../../src/store.ts";

/** What one commit appended to the log. */
export interface CommitBatch {
  /** The committed counter the transaction began at. */
  readonly from: number;
  /** The counter it published: every entry in (`from`, `through`] is in `writes`. */
  readonly through: number;
  /**
   * The dialect's commit stamp when the transaction began
   * ({@linkcode JournalSource.commitStamp}): while it reads the same, the
   * store's newest commit is one the source knows the counter of.
   */
  readonly stamp: number;
  /** The entries, ascending. */
  readonly writes: readonly TailWrite[];
}

/** A reader of one kind's batches. */
export interface JournalReader {
  readonly gk: GroupKind;
  /** Takes a commit's batch (its writes of every kind). */
  receive(batch: CommitBatch): void;
}

/**
 * What a store open tells its kind tails besides its batches: the newest
 * commit it knows of, and a stamp saying whether that knowledge may be stale.
 */
export interface JournalSource {
  readonly journal: CommitJournal;
  /**
   * The highest committed counter this open knows: its own last commit, or a
   * later one it learned of (SQLite: re-read when another connection
   * committed; PostgreSQL: announced in a commit's notification).
   */
  readonly committedVersion: number;
  /**
   * A number that moves whenever a commit may have landed that
   * {@linkcode JournalSource.committedVersion} does not account for — SQLite:
   * the writer's `PRAGMA data_version` (it moves on every other connection's
   * commit); PostgreSQL: the commit listener's connection count (a reconnect
   * may have missed notifications), `NaN` while it is not listening.
   */
  commitStamp(): number;
  /** Refuses reads once the store is closing. */
  assertOpen(): void;
  translate(error: unknown): Error;
}

/** The open write transaction's log entries, for the kinds tailed from memory. */
export class CommitJournal {
  readonly #readers = new Set<JournalReader>();
  /** The readers, as an array shared by the transactions that begin while it stands. */
  #all: JournalReader[] | undefined;
  /** How many readers read each kind, by group then kind. */
  readonly #kinds = new Map<string, Map<string, number>>();
  /** The readers of the open transaction: those there when it began; none while not journaling. */
  #recipients: JournalReader[] | undefined;
  #writes: TailWrite[] = [];
  #from = 0;
  #stamp = 0;

  /** Adds a reader; it receives the batches of transactions that begin from now on. */
  subscribe(reader: JournalReader): () => void {
    if (this.#readers.has(reader)) return () => {};
    this.#readers.add(reader);
    this.#all = undefined;
    const { group, kind } = reader.gk;
    let kinds = this.#kinds.get(group);
    if (kinds === undefined) this.#kinds.set(group, kinds = new Map());
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    return () => {
      if (!this.#readers.delete(reader)) return;
      this.#all = undefined;
      const n = kinds.get(kind)! - 1;
      if (n > 0) kinds.set(kind, n);
      else {
        kinds.delete(kind);
        if (kinds.size === 0 && this.#kinds.get(group) === kinds) this.#kinds.delete(group);
      }
    };
  }

  /**
   * Whether a reader reads kind `group`/`kind`: the open transaction's
   * entries of other kinds need not be journaled (a reader sees every
   * commit's batch, whatever it holds).
   */
  wants(group: string, kind: string): boolean {
    return this.#kinds.get(group)?.has(kind) === true;
  }

  /**
   * A write transaction began at committed counter `from`, with the source's
   * commit stamp `stamp`; journals it when anyone reads.
   */
  begin(from: number, stamp: number): void {
    if (this.#readers.size === 0) {
      this.#recipients = undefined;
      return;
    }
    this.#writes = [];
    this.#recipients = this.#all ??= [...this.#readers];
    this.#from = from;
    this.#stamp = stamp;
  }

  /** Whether the open transaction is journaled. */
  get active(): boolean {
    return this.#recipients !== undefined;
  }

  /** Records an entry the open transaction appended. */
  logged(write: TailWrite): void {
    if (this.#recipients !== undefined) this.#writes.push(write);
  }

  /** The position a savepoint opened at. */
  mark(): number {
    return this.#writes.length;
  }

  /** A savepoint opened at `mark` rolled back: its entries never happened. */
  rollbackTo(mark: number): void {
    if (this.#writes.length > mark) this.#writes.length = mark;
  }

  /**
   * Rolls back, with `rollback`, a savepoint opened at `mark`: its entries are
   * cut first. A rollback that fails leaves the transaction's content
   * unknown, so no batch of it is handed out, and its error is rethrown.
   */
  undo<R extends void | Promise<void>>(mark: number, rollback: () => R): R {
    this.rollbackTo(mark);
    const failed = (error: unknown): never => {
      this.aborted();
      throw error;
    };
    try {
      const done = rollback();
      return (done instanceof Promise ? done.catch(failed) : done) as R;
    } catch (error) {
      return failed(error);
    }
  }

  /** The transaction rolled back. */
  aborted(): void {
    this.#recipients = undefined;
    this.#writes = [];
  }

  /** The transaction committed, publishing counter `through`: hands its batch out. */
  committed(through: number): void {
    const recipients = this.#recipients;
    if (recipients === undefined) return;
    const writes = this.#writes;
    // Members run at once may have logged out of draw order; each batch is handed out ascending.
    for (let i = 1; i < writes.length; i++) {
      if (writes[i].resourceVersion < writes[i - 1].resourceVersion) {
        writes.sort((a, b) => a.resourceVersion - b.resourceVersion);
        break;
      }
    }
    const batch: CommitBatch = {
      from: this.#from,
      through,
      stamp: this.#stamp,
      writes,
    };
    this.#recipients = undefined;
    this.#writes = [];
    for (const r of recipients) r.receive(batch);
  }
}
