/**
 * The stale-dependents pass: the guarantee behind the dependency waker. It
 * finds every dependent whose `depends_on` target moved past the write cursor
 * the dependent's last successful pass recorded, stamps it owed, and
 * enqueues it. Its cursor lives in memory and starts at 0 in every term, so
 * a wake lost by any means — a crash, a dropped signal — is found again.
 *
 * @module
 */
import type { Engine, Term } from "./_engine.ts";
import type { StalePos } from "../store.ts";

const PAGE = 256;

/** One term's stale-dependents pass. */
export class StaleDependents {
  readonly #engine: Engine;
  readonly #term: Term;
  /** The last resource version fully swept. */
  #cursor = 0;

  constructor(engine: Engine, term: Term) {
    this.#engine = engine;
    this.#term = term;
  }

  /** Runs one sweep; resolves to whether it completed. Failures abandon the sweep and keep the cursor. */
  async sweep(): Promise<boolean> {
    const engine = this.#engine;
    const kinds = engine.registrations().map((r) => r.gk);
    if (kinds.length === 0) return true;
    const store = engine.store;
    const term = this.#term;
    try {
      // Read before scanning: a target written during the sweep belongs to the next one.
      const mark = await store.getLatestResourceVersion();
      if (mark === this.#cursor) return true;
      let after: StalePos = { targetVersion: this.#cursor + 1, targetId: 0, dependentId: 0 };
      for (;;) {
        // A stopping Beehive waits for the sweep in flight: give up between pages.
        if (term.signal.aborted) return false;
        const page = await store.dependencies.listStaleSince(kinds, {
          after,
          through: mark,
          limit: PAGE,
        });
        if (page.dependents.length > 0) {
          // Stamp first: a crash then costs a spare pass, never a lost one.
          await term.store.reconcileOwed.stamp(page.dependents);
          for (const ref of page.dependents) engine.sweepWake(ref);
        }
        after = page.position;
        if (page.dependents.length < PAGE) break;
      }
      this.#cursor = mark;
      return true;
    } catch (error) {
      if (!engine.termOver(term, error, { driver: "stale-dependents pass" })) {
        engine.log.warn("beehive: the stale-dependents pass failed; it retries next interval", {
          error,
        });
      }
      return false;
    }
  }
}
