/**
 * The dependency waker: after a commit, reads the store-wide write log above
 * its cursor and enqueues the registered dependents of every object written,
 * the owner of every written object of a kind its owner's kind `owns`, and
 * every object another process wrote (its push, which that process could not
 * make here).
 * An optimisation with no tick of its own; the stale-dependents pass is the
 * guarantee behind it.
 *
 * @module
 */
import { type Engine, kindKey, type Term } from "./_engine.ts";
import type { ObjectId, ObjectRef, ObjectWrite } from "../store.ts";

/** The driver-cursor row the waker persists its position under. */
export const WAKER_CURSOR = "dependency_waker";

const PAGE = 256;
const PAGES_PER_PASS = 4;
/** The minimum gap between two scans: a burst of commits costs one scan. */
const SCAN_FLOOR = 10;
/** The minimum gap between two cursor writes. */
const PERSIST_FLOOR = 1_000;
const RETRY_BASE = 100;
const RETRY_MAX = 30_000;

/** Wakes the dependents of whatever a commit wrote. */
export class DependencyWaker {
  readonly #engine: Engine;
  readonly #term: Term;
  #watermark: number | undefined;
  /** The log's head when the term began: other processes' writes above it are pushes. */
  #termStart = Number.POSITIVE_INFINITY;
  #persisted = -1;
  #lastPersist = Number.NEGATIVE_INFINITY;
  #lastScan = Number.NEGATIVE_INFINITY;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timerAt = 0;
  #again = false;
  #retry = 0;
  #persistRetry = 0;
  #draining: number | undefined;
  #running = false;
  #passing: Promise<void> | undefined;
  #unsubscribe: (() => void) | undefined;
  #failures = new Set<string>();
  /** Per owned kind, the kinds that `owns` it. */
  readonly #ownedBy = new Map<string, Set<string>>();

  constructor(engine: Engine, term: Term) {
    this.#engine = engine;
    this.#term = term;
    for (const reg of engine.registrations()) {
      for (const child of reg.owns) {
        const key = kindKey(child);
        let parents = this.#ownedBy.get(key);
        if (parents === undefined) this.#ownedBy.set(key, parents = new Set());
        parents.add(kindKey(reg.gk));
      }
    }
  }

  /** Subscribes to commits, then seeds the cursor; a seed failure is retried by the loop. */
  async prime(): Promise<void> {
    this.#running = true;
    this.#unsubscribe = this.#engine.writes.onAnyKind(() => this.#wake());
    try {
      await this.#seed();
    } catch (error) {
      this.#fail("seed", error);
    }
    this.#arm(0);
  }

  /** Stops the waker; resolves once a pass in flight has ended. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#unsubscribe?.();
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#passing;
  }

  async #seed(): Promise<void> {
    const store = this.#engine.store;
    const { at } = await store.objectWrites.maxVersionAll();
    this.#termStart = at;
    const stored = await store.driverCursors.get(WAKER_CURSOR);
    // Retention can lower the bare maximum below a cursor that really was processed.
    this.#watermark = stored === undefined ? at : Math.min(stored, at);
    this.#persisted = stored ?? -1;
  }

  #wake(): void {
    // While backing off a wake is dropped: it carries nothing the retry will not read.
    if (!this.#running || this.#retry > 0) return;
    if (this.#passing !== undefined) {
      this.#again = true;
      return;
    }
    const due = Math.max(0, this.#lastScan + SCAN_FLOOR - Date.now());
    if (this.#timer !== undefined && this.#timerAt <= Date.now() + due) return;
    this.#arm(due);
  }

  #arm(ms: number): void {
    if (!this.#running) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timerAt = Date.now() + ms;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#again = false;
      this.#passing = this.#pass().finally(() => {
        this.#passing = undefined;
        if (this.#again) {
          this.#again = false;
          this.#wake();
        }
      });
    }, ms);
  }

  async #pass(): Promise<void> {
    if (!this.#running) return;
    this.#lastScan = Date.now();
    let more = false;
    let step = "scan";
    try {
      if (this.#watermark === undefined) {
        step = "seed";
        await this.#seed();
        step = "scan";
      }
      more = await this.#scan();
      this.#retry = 0;
      this.#failures.delete("seed");
      this.#failures.delete("scan");
    } catch (error) {
      this.#fail(step, error);
      this.#retry = this.#retry === 0 ? RETRY_BASE : Math.min(this.#retry * 2, RETRY_MAX);
      // Pages read before the failing one count: a restart need not re-read them.
      if (this.#running) await this.#persist();
      this.#arm(this.#retry);
      return;
    }
    const persistIn = await this.#persist();
    if (more) this.#arm(SCAN_FLOOR);
    else if (persistIn !== undefined) this.#arm(persistIn);
  }

  /** Reads up to a budget of log pages; resolves to whether more is waiting. */
  async #scan(): Promise<boolean> {
    const store = this.#engine.store;
    for (let i = 0; i < PAGES_PER_PASS; i++) {
      const { writes } = await store.objectWrites.listSinceAll({
        after: this.#watermark!,
        limit: PAGE,
      });
      if (writes.length === 0) {
        this.#draining = undefined;
        return false;
      }
      // Another process's write since the term began is a push, as the same write here
      // would have been; what came before, the term's startup passes already cover.
      const pushed = new Set<ObjectId>();
      for (const w of writes) {
        if (
          w.origin !== undefined && w.origin !== store.origin && w.op !== "delete" &&
          w.resourceVersion > this.#termStart && !pushed.has(w.id)
        ) {
          pushed.add(w.id);
          this.#engine.pushNow(w);
        }
      }
      const ids: ObjectId[] = [...new Set(writes.map((w) => w.id))];
      const dependents = await store.edges.groupIncomingByIds(ids, "depends_on");
      for (const [target, refs] of dependents) {
        for (const ref of refs) {
          if (ref.id !== target) this.#engine.pushThrottled(ref);
        }
      }
      if (this.#ownedBy.size > 0) await this.#wakeOwners(writes);
      this.#watermark = writes[writes.length - 1].resourceVersion;
      if (writes.length < PAGE) {
        this.#draining = undefined;
        return false;
      }
    }
    // A drain that never catches up is abandoned once the stale pass has swept its range.
    this.#draining ??= Date.now();
    if (Date.now() - this.#draining >= this.#engine.options.staleDependentsInterval) {
      const { at } = await store.objectWrites.maxVersionAll();
      this.#watermark = Math.max(this.#watermark!, at);
      this.#draining = undefined;
      this.#engine.log.warn("beehive: the dependency waker fell behind and skipped ahead", {
        cursor: this.#watermark,
      });
      return false;
    }
    return true;
  }

  /**
   * Queues the owner of each written object whose kind the owner's kind
   * `owns`, once per owner however many of its children the page wrote. A
   * deleted child's owner is read from its delete entry's row image (its
   * `owned_by` edge is gone by then).
   */
  async #wakeOwners(writes: readonly ObjectWrite[]): Promise<void> {
    const store = this.#engine.store;
    const owners = new Map<ObjectId, ObjectRef>();
    const take = (child: ObjectWrite, owner: ObjectRef | undefined) => {
      if (owner !== undefined && this.#ownedBy.get(kindKey(child))!.has(kindKey(owner))) {
        owners.set(owner.id, owner);
      }
    };
    const live: ObjectWrite[] = [];
    const deletes = new Map<string, ObjectWrite[]>();
    for (const w of writes) {
      const key = kindKey(w);
      if (!this.#ownedBy.has(key)) continue;
      if (w.op !== "delete") live.push(w);
      else deletes.set(key, [...deletes.get(key) ?? [], w]);
    }
    if (live.length > 0) {
      const edges = await store.edges.groupOutgoingByIds(
        [...new Set(live.map((w) => w.id))],
        "owned_by",
      );
      for (const w of live) take(w, edges.get(w.id)?.[0]);
    }
    for (const entries of deletes.values()) {
      // The store-wide page carries no row images: read this kind's, from its first delete on.
      const versions = new Set(entries.map((w) => w.resourceVersion));
      const { writes: imaged } = await store.objectWrites.listSince(entries[0], {
        after: entries[0].resourceVersion - 1,
        limit: PAGE,
      });
      for (const w of imaged) {
        if (w.op === "delete" && versions.has(w.resourceVersion)) take(w, w.final?.owner);
      }
    }
    for (const owner of owners.values()) this.#engine.pushThrottled(owner);
  }

  /** Persists the cursor (floored); resolves to when to try again, or undefined when done. */
  async #persist(): Promise<number | undefined> {
    const w = this.#watermark;
    if (w === undefined || w <= this.#persisted) return undefined;
    const wait = this.#lastPersist + PERSIST_FLOOR - Date.now();
    if (wait > 0) return wait;
    this.#lastPersist = Date.now();
    try {
      await this.#term.store.driverCursors.set(WAKER_CURSOR, w);
      this.#persisted = w;
      this.#persistRetry = 0;
      this.#failures.delete("persist");
      return undefined;
    } catch (error) {
      this.#fail("persist", error);
      // A failing cursor write backs off: 1 s doubling to a minute.
      this.#persistRetry = Math.min(Math.max(PERSIST_FLOOR, this.#persistRetry * 2), 60_000);
      this.#lastPersist = Date.now() + this.#persistRetry - PERSIST_FLOOR;
      return this.#persistRetry;
    }
  }

  #fail(step: string, error: unknown): void {
    if (!this.#running) return;
    if (this.#engine.termOver(this.#term, error, { driver: "dependency waker" })) return;
    // One warning per failure streak and step.
    if (this.#failures.has(step)) return;
    this.#failures.add(step);
    this.#engine.log.warn(`beehive: the dependency waker failed to ${step}; retrying`, { error });
  }
}
