/**
 * Kind tails served from the commit journal: a watch's reader is handed the
 * entries this store's own commits appended (with the rows the writes left,
 * where the writer had them), and reads the log only when something it did
 * not see may have committed — another connection or process, a transaction
 * that began before the tail opened, or more entries than it holds. What it
 * reads from the log is what `listSince` reads, with the store's counter from
 * the same snapshot, so it knows where its memory may take over again.
 *
 * @module
 */
import type { KindTail, TailPage, TailWrite } from "../../src/watches/kind_tail.ts";
import type { GroupKind } from "../../src/store.ts";
import type { Core, Db } from "./_core.ts";
import type { CommitBatch, JournalReader } from "./_journal.ts";
import { readKindPage } from "../sql/_object_writes.ts";
import { driveSync, runOn } from "../sql/_query.ts";
import { sqliteDialect } from "./_dialect.ts";
import type { Session } from "./_session.ts";

/** The most entries a tail holds for a reader that falls behind; past that it reads the log. */
export const MAX_HELD = 8192;

/** Held entries already handed out are dropped once this many pile up at the front. */
const COMPACT_AT = 1024;

/** One reader's tail of one kind. */
export class MemoryTail implements KindTail, JournalReader {
  readonly gk: GroupKind;
  readonly #core: Core;
  readonly #session: Session;
  readonly #unsubscribe: () => void;
  /**
   * Every entry of the kind in (`#from`, `#through`] is in `#held` from
   * `#head` on, ascending; `undefined` while nothing is covered.
   */
  #from: number | undefined;
  #through = 0;
  /** The writer's `data_version` while `#through` was the store's newest commit. */
  #dataVersion = 0;
  #held: TailWrite[] = [];
  #head = 0;
  /** The reader has been handed every entry of the kind at or below this. */
  #known = -1;
  #closed = false;

  constructor(core: Core, session: Session, gk: GroupKind) {
    this.#core = core;
    this.#session = session;
    this.gk = { group: gk.group, kind: gk.kind };
    this.#unsubscribe = core.journal.subscribe(this);
  }

  receive(batch: CommitBatch): void {
    if (this.#closed) return;
    if (this.#from === undefined || batch.from !== this.#through) {
      // The first batch, or a commit this tail did not see came between: cover from here.
      this.#coverFrom(batch.from);
    }
    this.#through = batch.through;
    this.#dataVersion = batch.dataVersion;
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
    return this.#session.read(() => {
      const position = Math.max(after, this.#known);
      return this.#covers(position) ? this.#fromMemory(position, limit) : undefined;
    }).then((page) => page ?? this.#session.readSnapshot((db) => this.#fromLog(db, after, limit)));
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe();
    this.#coverFrom(undefined);
  }

  /**
   * Whether memory holds everything above `position`: coverage reaches down
   * to it and up to the store's newest commit, which is this connection's
   * (the counter it knows is the coverage's end) with no other connection's
   * since (the writer's `data_version` has not moved).
   */
  #covers(position: number): boolean {
    return this.#from !== undefined && this.#from <= position &&
      this.#core.committedVersion === this.#through &&
      this.#core.dataVersion() === this.#dataVersion;
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
  #fromLog(db: Db, after: number, limit: number): TailPage {
    // Read before the page: a commit between the two only makes memory look stale.
    const dataVersion = this.#core.dataVersion();
    const page = driveSync(
      readKindPage(sqliteDialect(this.#core), this.gk, after, limit),
      db,
      runOn,
    );
    if (limit > 0 && page.writes.length < limit) {
      // Every batch handed out so far is at or below this snapshot's counter.
      const at = this.#core.latestVersion(db);
      this.#known = at;
      this.#coverFrom(at);
      this.#through = at;
      this.#dataVersion = dataVersion;
    } else if (page.writes.length > 0) {
      this.#known = page.writes[page.writes.length - 1].resourceVersion;
    }
    return page;
  }
}
