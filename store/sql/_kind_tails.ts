/**
 * Kind tails served from the commit journal (`_journal.ts`), on either SQL
 * store: a watch's reader is handed the entries this store open's own commits
 * appended (with the rows the writes left, where the writer had them), and
 * reads the log only when something it did not see may have committed —
 * another connection or process, a transaction that began before the tail
 * opened, or more entries than it holds. What it reads from the log is what
 * `listSince` reads, with the store's counter from the same snapshot, so it
 * knows where its memory may take over again.
 *
 * @module
 */
import type { KindTail, TailPage, TailWrite } from "../../src/watches/kind_tail.ts";
import type { GroupKind } from "../../src/store.ts";
import type { CommitBatch, JournalReader, JournalSource } from "./_journal.ts";
import { readKindPage } from "./_object_writes.ts";
import { q } from "./_query.ts";
import type { SqlSession } from "./_session.ts";

const COUNTER_SQL = "SELECT value FROM resource_version_seq WHERE id = 1";

/** The most entries a tail holds for a reader that falls behind; past that it reads the log. */
export const MAX_HELD = 8192;

/** Held entries already handed out are dropped once this many pile up at the front. */
const COMPACT_AT = 1024;

/** One reader's tail of one kind. */
export class MemoryTail implements KindTail, JournalReader {
  readonly gk: GroupKind;
  readonly #source: JournalSource;
  readonly #session: SqlSession;
  readonly #unsubscribe: () => void;
  /**
   * Every entry of the kind in (`#from`, `#through`] is in `#held` from
   * `#head` on, ascending; `undefined` while nothing is covered.
   */
  #from: number | undefined;
  #through = 0;
  /** The source's commit stamp while `#through` was the store's newest commit. */
  #stamp = 0;
  #held: TailWrite[] = [];
  #head = 0;
  /** The reader has been handed every entry of the kind at or below this. */
  #known = -1;
  #closed = false;

  constructor(source: JournalSource, session: SqlSession, gk: GroupKind) {
    this.#source = source;
    this.#session = session;
    this.gk = { group: gk.group, kind: gk.kind };
    this.#unsubscribe = source.journal.subscribe(this);
  }

  receive(batch: CommitBatch): void {
    if (this.#closed) return;
    if (this.#from === undefined || batch.from !== this.#through) {
      // The first batch, or a commit this tail did not see came between: cover from here.
      this.#coverFrom(batch.from);
    }
    this.#through = batch.through;
    this.#stamp = batch.stamp;
    const { group, kind } = this.gk;
    for (const w of batch.writes) {
      if (w.kind === kind && w.group === group) this.#held.push(w);
    }
    // A reader this far behind reads the log; holding more would only grow.
    if (this.#held.length - this.#head > MAX_HELD) this.#coverFrom(undefined);
  }

  /** Drops what is held and covers from `from` (`undefined`: nothing). */
  #coverFrom(from: number | undefined): void {
    this.#from = from;
    this.#held = [];
    this.#head = 0;
  }

  read(after: number, limit: number): Promise<TailPage> {
    // The check and the hand-out in one synchronous step: a batch landing between them could
    // start the coverage over above a gap.
    try {
      this.#source.assertOpen();
      const position = Math.max(after, this.#known);
      if (this.#covers(position)) return Promise.resolve(this.#fromMemory(position, limit));
    } catch (error) {
      return Promise.reject(this.#source.translate(error));
    }
    return this.#fromLog(after, limit);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe();
    this.#coverFrom(undefined);
  }

  /**
   * Whether memory holds everything above `position`: coverage reaches down
   * to it and up to the store's newest commit, as the source knows it (the
   * counter it knows is the coverage's end) with nothing it may have missed
   * since (its commit stamp has not moved).
   */
  #covers(position: number): boolean {
    return this.#from !== undefined && this.#from <= position &&
      this.#source.committedVersion === this.#through &&
      this.#source.commitStamp() === this.#stamp;
  }

  #fromMemory(position: number, limit: number): TailPage {
    if (limit <= 0) return { writes: [], trimmedThrough: 0 };
    const held = this.#held;
    let i = this.#head;
    while (i < held.length && held[i].resourceVersion <= position) i++;
    const end = Math.min(held.length, i + limit);
    const writes = held.slice(i, end);
    this.#known = end < held.length ? held[end - 1].resourceVersion : this.#through;
    this.#head = end;
    if (end >= COMPACT_AT && end * 2 >= held.length) {
      this.#held = held.slice(end);
      this.#head = 0;
    }
    return { writes, trimmedThrough: 0 };
  }

  /** Reads the log in one snapshot; a page that reached the end moves the coverage there. */
  async #fromLog(after: number, limit: number): Promise<TailPage> {
    // Read before the page: a commit between the two only makes memory look stale.
    const stamp = this.#source.commitStamp();
    const gk = this.gk;
    const dialect = this.#session.dialect;
    const { page, at } = await this.#session.readSnapshot(function* () {
      const page = yield* readKindPage(dialect, gk, after, limit);
      const counter = yield* q.get(COUNTER_SQL);
      return { page, at: Number(counter!.value) };
    });
    if (this.#closed) return page;
    if (limit > 0 && page.writes.length < limit) {
      // Every batch handed out so far is at or below this snapshot's counter.
      this.#known = at;
      // Batches that arrived while the read was out (an asynchronous store) and already cover
      // `at` are kept; else coverage starts over at the snapshot.
      if (this.#from === undefined || this.#from > at || this.#through < at) {
        this.#coverFrom(at);
        this.#through = at;
        this.#stamp = stamp;
      }
    } else if (page.writes.length > 0) {
      this.#known = page.writes[page.writes.length - 1].resourceVersion;
    }
    return page;
  }
}
