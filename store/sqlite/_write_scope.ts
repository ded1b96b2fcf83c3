/**
 * The scope a synchronous write unit runs in: the writer connection, one
 * clock reading, and resource-version draws.
 *
 * @module
 */
import type { Core, Db } from "./_core.ts";

/** What a write unit may use: the writer, one clock reading, and version draws. */
export interface WriteScope {
  readonly db: Db;
  /** `Date.now()` read once for the whole unit. */
  readonly now: number;
  /** The next resource version. */
  draw(): number;
  /** `n` consecutive resource versions; resolves to the first. */
  drawMany(n: number): number;
}

/** A write scope that remembers the highest version it drew. */
export class Scope implements WriteScope {
  readonly db: Db;
  readonly now: number;
  drawn = 0;
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
    this.db = core.writer;
    this.now = Date.now();
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
}
