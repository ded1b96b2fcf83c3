/**
 * The owed wake of one kind: when another process commits, list the kind's
 * owed objects and queue the ones not yet known owed, so a requeue stamped by
 * a process that does not lead (a standby, the CLI) reaches the leader within
 * the cross-process wake bound instead of at the next owed pass.
 *
 * @module
 */
import { type Engine, kindName } from "./_engine.ts";
import type { GroupKind, ObjectId } from "../store.ts";
import type { WorkQueue } from "./work_queue.ts";

/**
 * The least gap between two listings, in ms: a burst of commits costs one
 * listing. A listing that took longer widens the gap to twice its time, so
 * listings take at most half the time however many objects are owed.
 */
const FLOOR = 25;

/** What the wake asks of its kind's loop. */
export interface OwedWakeLoop {
  readonly gk: GroupKind;
  readonly queue: WorkQueue;
  /** Whether `id` waits on a retry (its wait is kept). */
  retrying(id: ObjectId): boolean;
  /** Tracks background work until the term drains. */
  track(p: Promise<unknown>): void;
}

/** One kind's owed wake, for one term at a time. */
export class OwedWake {
  readonly #engine: Engine;
  readonly #loop: OwedWakeLoop;
  #unsubscribe: (() => void) | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #listing: Promise<void> | undefined;
  #again = false;
  #listedAt = Number.NEGATIVE_INFINITY;
  /** How long the last listing took, in ms. */
  #took = 0;
  #failing = false;
  /** Owed ids this wake queued whose owed count no pass has consumed since. */
  readonly #known = new Set<ObjectId>();
  /** Owed ids found mid-pass: listed again once that pass ends. */
  readonly #midPass = new Set<ObjectId>();

  constructor(engine: Engine, loop: OwedWakeLoop) {
    this.#engine = engine;
    this.#loop = loop;
  }

  /** Listens to other processes' commits until `stop`. */
  start(): void {
    this.#known.clear();
    this.#midPass.clear();
    this.#unsubscribe = this.#engine.writes.onExternalCommit(() => this.#wake());
  }

  /** Stops listening; a listing in flight queues nothing once it ends. */
  stop(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** A pass over `id` ended; `consumed` when it concluded (its owed count is spent). */
  passEnded(id: ObjectId, consumed: boolean): void {
    if (consumed) this.#known.delete(id);
    if (this.#midPass.delete(id)) this.#wake();
  }

  #wake(): void {
    if (this.#unsubscribe === undefined) return;
    if (this.#listing !== undefined) {
      this.#again = true;
      return;
    }
    if (this.#timer !== undefined) return;
    const gap = Math.max(FLOOR, 2 * this.#took);
    const wait = Math.max(0, this.#listedAt + gap - Date.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      const listing = this.#list().finally(() => {
        this.#listing = undefined;
        if (this.#again) {
          this.#again = false;
          this.#wake();
        }
      });
      this.#listing = listing;
      this.#loop.track(listing);
    }, wait);
  }

  /**
   * Queues the owed objects not yet known owed: now, unless a retry is
   * pending (that wait is kept). One mid-pass is listed again after it.
   */
  async #list(): Promise<void> {
    const { gk, queue } = this.#loop;
    const started = this.#listedAt = Date.now();
    let ids: ObjectId[];
    try {
      ids = await this.#engine.store.reconcileOwed.listIds(gk);
      this.#took = Date.now() - started;
      this.#failing = false;
    } catch (error) {
      if (this.#unsubscribe !== undefined && !this.#failing) {
        this.#failing = true;
        this.#engine.log.warn("beehive: owed listing failed", { kind: kindName(gk), error });
      }
      return;
    }
    if (this.#unsubscribe === undefined) return;
    for (const id of ids) {
      if (queue.processing(id)) this.#midPass.add(id);
      else if (!this.#known.has(id)) {
        this.#known.add(id);
        if (this.#loop.retrying(id)) queue.add(id);
        else queue.requeueNow(id);
      }
    }
  }
}
