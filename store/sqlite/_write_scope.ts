/**
 * The scope a synchronous write unit runs in: the writer connection, one
 * clock reading, resource-version draws and row ids.
 *
 * @module
 */
import type { Core, Db, IdTable } from "./_core.ts";
import type { CommitJournal } from "../sql/_journal.ts";
import type { DeferredLog } from "./_deferred_log.ts";
import type { WriteScope as SqlWriteScope } from "../sql/_session.ts";

/** What a SQLite write unit may use: the shared scope, the writer, and id and version helpers. */
export interface WriteScope extends SqlWriteScope {
  readonly db: Db;
  /** Runs `write` with the next version, drawn only if `write` returns true; returns it or `undefined`. */
  drawIf(write: (rv: number) => boolean): number | undefined;
  /** Runs `insert` with the next id of `table`, taken only if `insert` returns; returns the id. */
  insertWithId(table: IdTable, insert: (id: number) => void): number;
}

/** A write scope that remembers the highest version it drew. */
export class Scope implements WriteScope {
  readonly db: Db;
  readonly now: number;
  readonly origin: number;
  readonly journal: CommitJournal;
  readonly log: DeferredLog;
  drawn = 0;
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
    this.db = core.writer;
    this.now = Date.now();
    this.origin = core.epoch;
    this.journal = core.journal;
    this.log = core.log;
  }

  // Arrow properties: families destructure the scope.
  draw = (): number => {
    const v = this.#core.takeVersion();
    if (v > this.drawn) this.drawn = v;
    return v;
  };

  drawMany = (n: number): number => {
    const first = this.#core.takeVersions(n);
    if (first + n - 1 > this.drawn) this.drawn = first + n - 1;
    return first;
  };

  peekVersion(): number {
    return this.#core.peekVersion();
  }

  peekId(table: IdTable): number {
    return this.#core.peekId(table);
  }

  takeId(table: IdTable): void {
    this.#core.takeId(table);
  }

  drawIf = (write: (rv: number) => boolean): number | undefined => {
    if (!write(this.#core.peekVersion())) return undefined;
    return this.draw();
  };

  insertWithId = (table: IdTable, insert: (id: number) => void): number =>
    this.#core.insertWithId(table, insert);
}
