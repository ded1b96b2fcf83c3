/**
 * The commit journal: while anyone tails a kind from memory, every write-log
 * entry the open write transaction appends is kept in order, cut back with
 * each savepoint the transaction rolls back, and handed to the readers once
 * the commit is durable, as one batch saying which versions the commit
 * covers. Versions are drawn above the committed counter under SQLite's write
 * lock, so a commit's entries are the whole log between the counter it began
 * at and the one it published; a batch that does not begin where the previous
 * one ended tells a reader another connection committed in between.
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
   * The writer's `PRAGMA data_version` when the transaction began; it moves
   * only when another connection commits, so while it reads the same, no
   * commit but this connection's own has landed since.
   */
  readonly dataVersion: number;
  /** The entries, ascending. */
  readonly writes: readonly TailWrite[];
}

/** A reader of one kind's batches. */
export interface JournalReader {
  readonly gk: GroupKind;
  /** Takes a commit's batch (its writes of every kind). */
  receive(batch: CommitBatch): void;
}

export class CommitJournal {
  readonly #readers = new Set<JournalReader>();
  /** The readers of the open transaction: those there when it began; none while not journaling. */
  #recipients: JournalReader[] | undefined;
  #writes: TailWrite[] = [];
  #from = 0;
  #dataVersion = 0;

  /** Adds a reader; it receives the batches of transactions that begin from now on. */
  subscribe(reader: JournalReader): () => void {
    this.#readers.add(reader);
    return () => this.#readers.delete(reader);
  }

  /** A write transaction began at counter `from`; journals it when anyone reads. */
  begin(from: number, dataVersion: number): void {
    if (this.#readers.size === 0) {
      this.#recipients = undefined;
      return;
    }
    this.#writes = [];
    this.#recipients = [...this.#readers];
    this.#from = from;
    this.#dataVersion = dataVersion;
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

  /** The transaction rolled back. */
  aborted(): void {
    this.#recipients = undefined;
    this.#writes = [];
  }

  /** The transaction committed, publishing counter `through`: hands its batch out. */
  committed(through: number): void {
    const recipients = this.#recipients;
    if (recipients === undefined) return;
    const batch: CommitBatch = {
      from: this.#from,
      through,
      dataVersion: this.#dataVersion,
      writes: this.#writes,
    };
    this.#recipients = undefined;
    this.#writes = [];
    for (const r of recipients) r.receive(batch);
  }
}
