/**
 * The console's live feeds: a cap on how many are open, and one shared
 * watch per kind that every feed of that kind listens to. A kind's watch
 * starts at the store's current version (no snapshot of the kind is read) on
 * its first listener and stops with its last.
 *
 * @module
 */
import type { Beehive, GroupKind, ObjectChange } from "@beehive/beehive";
import type { Store } from "@beehive/beehive/store";
import { kindLabel } from "../cli/_inspect.ts";

/** One listener of a kind's shared watch. */
export interface KindListener {
  /** A change to one of the kind's objects. */
  change(change: ObjectChange<unknown, unknown>): void;
  /** The shared watch failed; `end` follows. */
  failed(error: unknown): void;
  /** The shared watch ended. */
  end(): void;
}

interface SharedKind {
  readonly listeners: Set<KindListener>;
  readonly abort: AbortController;
  ready: Promise<void>;
}

/** Live feeds over one store: the open count against a cap, and the per-kind watches. */
export class LiveFeeds {
  readonly #bh: Beehive;
  readonly #store: Store;
  readonly #max: number;
  #open = 0;
  readonly #kinds = new Map<string, SharedKind>();

  constructor(bh: Beehive, store: Store, max: number) {
    this.#bh = bh;
    this.#store = store;
    this.#max = max;
  }

  /** The cap on open feeds. */
  get max(): number {
    return this.#max;
  }

  /** Feeds open now. */
  get open(): number {
    return this.#open;
  }

  /** Kinds with a shared watch running now. */
  get watchedKinds(): number {
    return this.#kinds.size;
  }

  /** Takes a feed slot: its release (idempotent), or `undefined` when the cap is reached. */
  reserve(): (() => void) | undefined {
    if (this.#open >= this.#max) return undefined;
    this.#open++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#open--;
    };
  }

  /**
   * Listens to `gk`'s shared watch, starting it if none runs; resolves once
   * the watch is open, to the unsubscribe (idempotent), which stops the watch
   * with its last listener. Rejects with the store's error when the watch cannot open.
   */
  async listenKind(gk: GroupKind, listener: KindListener): Promise<() => void> {
    const key = kindLabel(gk);
    let shared = this.#kinds.get(key);
    if (shared === undefined) {
      shared = this.#start(gk, key);
      this.#kinds.set(key, shared);
    }
    const s = shared;
    s.listeners.add(listener);
    const unsubscribe = () => {
      if (!s.listeners.delete(listener)) return;
      if (s.listeners.size === 0) this.#stop(key, s);
    };
    try {
      await s.ready;
    } catch (error) {
      unsubscribe();
      throw error;
    }
    return unsubscribe;
  }

  #stop(key: string, s: SharedKind): void {
    if (this.#kinds.get(key) === s) this.#kinds.delete(key);
    s.abort.abort();
  }

  #start(gk: GroupKind, key: string): SharedKind {
    const abort = new AbortController();
    const listeners = new Set<KindListener>();
    const shared: SharedKind = { listeners, abort, ready: Promise.resolve() };
    shared.ready = (async () => {
      const from = await this.#store.getLatestResourceVersion();
      const stream = await this.#bh.client(gk).watchList({
        resumeFrom: from,
        signal: abort.signal,
      });
      void (async () => {
        let failure: { error: unknown } | undefined;
        try {
          for await (const change of stream) {
            for (const l of [...listeners]) l.change(change);
          }
        } catch (error) {
          failure = { error };
        }
        const ended = [...listeners];
        listeners.clear();
        this.#stop(key, shared);
        for (const l of ended) {
          if (failure !== undefined) l.failed(failure.error);
          l.end();
        }
      })();
    })();
    // A failed open is reported to each listener's await; this keeps it from being unhandled.
    shared.ready.catch(() => this.#stop(key, shared));
    return shared;
  }
}
