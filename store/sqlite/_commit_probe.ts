/**
 * Cross-process commit wakes: while anyone listens, the writer connection's
 * `PRAGMA data_version` is probed every {@linkcode PROBE_INTERVAL} ms. The
 * value moves only when another connection or process commits, so the probe
 * costs no write and fires nothing for this store's own commits.
 *
 * @module
 */
import type { Core } from "./_core.ts";

/** How often the probe looks, in ms: well inside the 250 ms p99 wake budget. */
export const PROBE_INTERVAL = 50;

export class CommitProbe {
  readonly #core: Core;
  readonly #listeners = new Set<() => void>();
  #stop: (() => void) | undefined;

  constructor(core: Core) {
    this.#core = core;
  }

  /** Calls `listener` after each probe that saw another connection's commit. */
  subscribe(listener: () => void): () => void {
    if (typeof listener !== "function") return () => {};
    const entry = () => listener();
    this.#listeners.add(entry);
    if (this.#stop === undefined) this.#start();
    return () => {
      this.#listeners.delete(entry);
      if (this.#listeners.size === 0) this.close();
    };
  }

  #start(): void {
    if (this.#core.closing) return;
    try {
      this.#core.externalCommitSeen(); // the baseline
    } catch {
      return;
    }
    // Cleared with the matching function: fake timers may be installed or removed meanwhile.
    const clear = globalThis.clearInterval;
    const timer = setInterval(() => this.#tick(), PROBE_INTERVAL);
    this.#stop = () => clear(timer);
  }

  #tick(): void {
    let moved: boolean;
    try {
      if (this.#core.closing) return this.close();
      moved = this.#core.externalCommitSeen();
    } catch (error) {
      this.#core.report("beehive store: the commit probe failed", error);
      return;
    }
    if (!moved) return;
    for (const fn of [...this.#listeners]) {
      try {
        fn();
      } catch (error) {
        this.#core.report("beehive store: a commit listener threw", error);
      }
    }
  }

  /** Stops probing; listeners stay registered but hear nothing more. */
  close(): void {
    this.#stop?.();
    this.#stop = undefined;
  }
}
