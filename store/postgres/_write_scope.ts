/**
 * What a write unit may use: its connection, one clock reading, and version
 * draws above the committed counter of the transaction it runs in.
 *
 * @module
 */
import type { Db } from "./_core.ts";
import type { CommitJournal } from "../sql/_journal.ts";
import type { WriteScope as SqlWriteScope } from "../sql/_session.ts";

/** What a PostgreSQL write unit may use: the shared scope and its connection. */
export interface WriteScope extends SqlWriteScope {
  readonly db: Db;
}

/** Version draws above the committed counter, within one write transaction. */
export class Draws {
  next: number;
  drawn = 0;

  constructor(committed: number) {
    this.next = committed + 1;
  }

  /** Where the draws stand, to return a unit's draws if it unwinds. */
  mark(): { readonly next: number; readonly drawn: number } {
    return { next: this.next, drawn: this.drawn };
  }

  /** Returns the draws made since `mark`: none of them was seen outside. */
  restore(mark: { readonly next: number; readonly drawn: number }): void {
    this.next = mark.next;
    this.drawn = mark.drawn;
  }
}

/** A write scope drawing from one transaction's counter. */
export class Scope implements WriteScope {
  readonly db: Db;
  readonly now: number;
  readonly origin: number;
  readonly journal: CommitJournal;
  readonly #draws: Draws;
  /**
   * Whether the version a statement is made at is drawn as it is peeked: a
   * member run at once with others, whose draws interleave with theirs.
   */
  readonly #reserving: boolean;
  /** The version peeked and drawn, not yet taken by a draw (reserving only). */
  #reserved: number | undefined;

  constructor(db: Db, draws: Draws, journal: CommitJournal, reserving = false) {
    this.db = db;
    this.journal = journal;
    this.#draws = draws;
    this.#reserving = reserving;
    this.now = Date.now();
    this.origin = db.origin;
  }

  /** Ids come from the tables' sequences, on insert. */
  peekId(): undefined {
    return undefined;
  }

  takeId(): void {}

  // Arrow properties: families destructure the scope.
  draw = (): number => {
    const reserved = this.#reserved;
    if (reserved !== undefined) {
      this.#reserved = undefined;
      return reserved;
    }
    const v = this.#draws.next++;
    this.#draws.drawn = v;
    return v;
  };

  drawMany = (n: number): number => {
    const first = this.#draws.next;
    this.#draws.next += n;
    this.#draws.drawn = first + n - 1;
    return first;
  };

  /**
   * The version the next draw returns. Reserving, it is drawn now (another
   * member's draw may come before this one's): a write that made no row at
   * it leaves a gap, and such a member sends a second statement, which
   * sends its group back to run one member at a time.
   */
  peekVersion(): number {
    if (!this.#reserving) return this.#draws.next;
    return this.#reserved ??= this.draw();
  }
}
