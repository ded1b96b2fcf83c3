/**
 * The per-kind work queue: set semantics, one pass per object at a time, a
 * per-object re-enqueue floor with a push budget, and per-object alarms (retry
 * backoff, requeue delays, the floor, startup admission), with a schedule gauge.
 *
 * @module
 */
import type { ObjectId } from "../store.ts";
import { FifoMap } from "./_fifo_map.ts";

/** Why an alarm is set. */
export type AlarmKind = "requeueAfter" | "backoff" | "floor" | "admit";

interface Alarm {
  readonly kind: AlarmKind;
  readonly fireAt: number;
  timer: ReturnType<typeof setTimeout>;
}

/** When an object is next due, as the queue sees it. */
export interface Schedule {
  /** When the object is next due; `undefined` when nothing is scheduled. */
  readonly nextRequeueAt: Date | undefined;
}

/** The longest single timer wait, in ms. */
const MAX_TIMER = 2_147_483_647;

/** The default per-object re-enqueue floor, in ms. */
export const REQUEUE_FLOOR = 1_000;

/**
 * The per-object push budget: how many passes in a burst a push may start
 * inside the floor window. Every dispatch spends a token and the budget
 * refills by one per floor interval, so a quiet object runs at once on new
 * information, while a push loop (two objects waking each other) runs this
 * many passes and then one per floor interval, as the floor alone would.
 */
export const PUSH_BURST = 5;

/** A worker waiting for the next id; `ahead`: taken ahead of its pass (`getAhead`). */
interface Waiter {
  readonly resolve: (id: ObjectId | undefined) => void;
  readonly ahead: boolean;
}

/** An object's last dispatch, and the push tokens it left. */
interface Dispatch {
  readonly at: number;
  readonly tokens: number;
}

/**
 * A work queue. Throttled adds (`add`) are absorbed by a pending backoff or
 * floor alarm and held by the floor; pushes (`push`) are throttled adds that
 * may spend the object's push budget to pass the floor; immediate adds
 * (`requeueNow`, alarms firing) bypass both. An id is queued at most once and handed to one worker
 * at a time; an add while it is being processed marks it dirty, and `done`
 * queues it again.
 */
export class WorkQueue {
  /** Queued ids in FIFO order, each with the instant it became due. */
  readonly #queued = new FifoMap<ObjectId, number>();
  readonly #processing = new Set<ObjectId>();
  /** Ids added while processing, with the instant they became due. */
  readonly #dirty = new Map<ObjectId, number>();
  readonly #alarms = new Map<ObjectId, Alarm>();
  /**
   * Each recent dispatch, oldest first, with the push budget left after it:
   * the floor window and the budget both start at a dispatch (lazy eviction).
   */
  readonly #recent = new FifoMap<ObjectId, Dispatch>();
  readonly #waiters: Waiter[] = [];
  /** Ids taken ahead of their pass (see `getAhead`), each with the instant it became due. */
  readonly #ahead = new Map<ObjectId, number>();
  readonly #watchers = new Map<ObjectId, Set<(s: Schedule) => void>>();
  readonly #published = new Map<ObjectId, number | undefined>();
  readonly #floor: number;
  #stopped = false;

  constructor(floor = REQUEUE_FLOOR) {
    this.#floor = floor;
  }

  /** Whether `stop` was called. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** A throttled add: absorbed by a pending backoff or floor alarm, held by the floor. */
  add(id: ObjectId): void {
    this.#add(id, true);
    this.#publish(id);
  }

  /**
   * A push of new information (a dependency changed): a throttled add, except
   * that a wake the floor would hold runs at once while the object's push
   * budget has a token left. A pending backoff still absorbs it.
   */
  push(id: ObjectId): void {
    if (this.#stopped || this.#queued.has(id)) return;
    const pending = this.#alarms.get(id);
    if (pending?.kind !== "backoff") {
      const held = pending?.kind === "floor" || this.#heldUntil(id) !== undefined;
      if (held && this.#tokens(id, Date.now()) >= 1) {
        if (pending?.kind === "floor") this.#clearAlarm(id);
        this.#add(id, false);
        this.#publish(id);
        return;
      }
    }
    this.add(id);
  }

  /** An immediate add: clears any pending alarm and bypasses the floor. */
  requeueNow(id: ObjectId): void {
    if (this.#stopped) return;
    this.#clearAlarm(id);
    this.#add(id, false);
    this.#publish(id);
  }

  /**
   * Schedules `id` after `ms`; `ms ≤ 0` is a throttled add. A pending alarm
   * is kept or replaced by rank: backoff always wins, admit always loses,
   * against a floor the earlier fire time wins, otherwise the newest wins.
   */
  addAfter(id: ObjectId, ms: number, kind: AlarmKind): void {
    if (this.#stopped) return;
    if (ms <= 0) {
      this.add(id);
      return;
    }
    const fireAt = Date.now() + ms;
    const pending = this.#alarms.get(id);
    if (pending !== undefined && !outranks(kind, fireAt, pending)) return;
    this.#setAlarm(id, kind, fireAt);
    this.#publish(id);
  }

  /**
   * The next id to process, once one is queued; `undefined` once stopped. The
   * id is admitted to the floor window at dispatch.
   */
  get(): Promise<ObjectId | undefined> {
    return this.#get(false);
  }

  /**
   * Like `get`, for a worker that takes its next object ahead of the pass
   * (to read it meanwhile): the id is the worker's as though it were being
   * processed, but its schedule still reads due from when it became due,
   * until `start`.
   */
  getAhead(): Promise<ObjectId | undefined> {
    return this.#get(true);
  }

  /** The pass over `id`, taken with `getAhead`, begins: nothing is scheduled for it meanwhile. */
  start(id: ObjectId): void {
    if (this.#ahead.delete(id)) this.#publish(id);
  }

  #get(ahead: boolean): Promise<ObjectId | undefined> {
    const id = this.#take(ahead);
    if (id !== undefined || this.#stopped) return Promise.resolve(id);
    const { promise, resolve } = Promise.withResolvers<ObjectId | undefined>();
    this.#waiters.push({ resolve, ahead });
    return promise;
  }

  /** Ends processing of `id`; queues it again if it was added meanwhile. */
  done(id: ObjectId): void {
    this.#processing.delete(id);
    this.#ahead.delete(id);
    const dueAt = this.#dirty.get(id);
    if (dueAt !== undefined && !this.#stopped) {
      this.#dirty.delete(id);
      this.#enqueue(id, dueAt);
    }
    this.#publish(id);
  }

  /** Clears `id`'s pending alarm, if any (a stalled object waits for a push). */
  cancel(id: ObjectId): void {
    this.#clearAlarm(id);
    this.#publish(id);
  }

  /** Drops every trace of `id` (it was collected: ids are never reused). */
  forget(id: ObjectId): void {
    this.#clearAlarm(id);
    this.#queued.delete(id);
    this.#dirty.delete(id);
    this.#recent.delete(id);
    this.#processing.delete(id);
    this.#ahead.delete(id);
    this.#publish(id);
  }

  /** Whether `id` is being processed. */
  processing(id: ObjectId): boolean {
    return this.#processing.has(id);
  }

  /** `id`'s schedule: due now if queued, else its alarm, else nothing. */
  schedule(id: ObjectId): Schedule {
    const at = this.#nextAt(id);
    return { nextRequeueAt: at === undefined ? undefined : new Date(at) };
  }

  /** Calls `fn` with `id`'s schedule whenever it changes; returns the unsubscribe. */
  watch(id: ObjectId, fn: (s: Schedule) => void): () => void {
    let set = this.#watchers.get(id);
    if (set === undefined) {
      this.#watchers.set(id, set = new Set());
      this.#published.set(id, this.#nextAt(id));
    }
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0 && this.#watchers.get(id) === set) {
        this.#watchers.delete(id);
        this.#published.delete(id);
      }
    };
  }

  /** The number of ids queued or alarmed (for tests and gauges). */
  get size(): number {
    return this.#queued.size + this.#alarms.size;
  }

  /** Takes work again after `stop` (a new leadership term); the floor window is kept. */
  restart(): void {
    this.#stopped = false;
  }

  /** Stops the queue: clears every alarm, releases waiting workers, publishes final schedules. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const alarm of this.#alarms.values()) clearTimeout(alarm.timer);
    this.#alarms.clear();
    this.#queued.clear();
    this.#dirty.clear();
    this.#ahead.clear();
    for (const w of this.#waiters.splice(0)) w.resolve(undefined);
    for (const id of [...this.#watchers.keys()]) this.#publish(id);
  }

  #add(id: ObjectId, throttled: boolean): void {
    if (this.#stopped || this.#queued.has(id)) return;
    if (throttled) {
      const pending = this.#alarms.get(id);
      // A pending retry or floor alarm already owns the next dispatch.
      if (pending !== undefined && (pending.kind === "backoff" || pending.kind === "floor")) return;
      const until = this.#heldUntil(id);
      if (until !== undefined) {
        // The floor never delays a sooner schedule: arbitrate like `addAfter`.
        if (pending === undefined || outranks("floor", until, pending)) {
          this.#setAlarm(id, "floor", until);
        }
        return;
      }
    }
    const now = Date.now();
    if (this.#processing.has(id)) {
      if (!this.#dirty.has(id)) this.#dirty.set(id, now);
      return;
    }
    this.#enqueue(id, now);
  }

  #enqueue(id: ObjectId, dueAt: number): void {
    this.#queued.set(id, dueAt);
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) waiter.resolve(this.#take(waiter.ahead));
  }

  #take(ahead: boolean): ObjectId | undefined {
    const first = this.#queued.first();
    if (first === undefined) return undefined;
    const [id, dueAt] = first;
    this.#queued.delete(id);
    this.#processing.add(id);
    if (ahead) this.#ahead.set(id, dueAt);
    this.#admit(id);
    this.#publish(id);
    return id;
  }

  /**
   * Records a dispatch: it starts the floor window and spends a token of the
   * push budget (never below zero). Entries whose budget has refilled are
   * evicted first: an absent entry is a full budget and no floor.
   */
  #admit(id: ObjectId): void {
    if (this.#floor <= 0) return;
    const now = Date.now();
    const refill = PUSH_BURST * this.#floor;
    for (let old = this.#recent.first(); old !== undefined; old = this.#recent.first()) {
      if (old[1].at + refill > now) break;
      this.#recent.delete(old[0]);
    }
    const tokens = this.#tokens(id, now);
    this.#recent.delete(id);
    this.#recent.set(id, { at: now, tokens: Math.max(0, tokens - 1) });
  }

  /** The push budget `id` has now: a token per floor interval since its last dispatch. */
  #tokens(id: ObjectId, now: number): number {
    const d = this.#recent.get(id);
    if (d === undefined) return PUSH_BURST;
    return Math.min(PUSH_BURST, d.tokens + (now - d.at) / this.#floor);
  }

  #heldUntil(id: ObjectId): number | undefined {
    const d = this.#recent.get(id);
    if (d === undefined) return undefined;
    const until = d.at + this.#floor;
    return until <= Date.now() ? undefined : until;
  }

  #setAlarm(id: ObjectId, kind: AlarmKind, fireAt: number): void {
    this.#clearAlarm(id);
    const alarm: Alarm = { kind, fireAt, timer: this.#timer(id, () => alarm, fireAt) };
    this.#alarms.set(id, alarm);
  }

  /** A timer for `fireAt`, waiting in steps a timer can take (at most 2^31 − 1 ms each). */
  #timer(id: ObjectId, alarm: () => Alarm, fireAt: number): ReturnType<typeof setTimeout> {
    const wait = Math.max(0, fireAt - Date.now());
    return setTimeout(() => {
      const a = alarm();
      if (this.#alarms.get(id) !== a) return;
      if (wait > MAX_TIMER) {
        // The wait was longer than one timer can take: wait out the rest.
        a.timer = this.#timer(id, alarm, fireAt);
        return;
      }
      this.#fire(id, a);
    }, Math.min(wait, MAX_TIMER));
  }

  #clearAlarm(id: ObjectId): void {
    const alarm = this.#alarms.get(id);
    if (alarm === undefined) return;
    clearTimeout(alarm.timer);
    this.#alarms.delete(id);
  }

  #fire(id: ObjectId, alarm: Alarm): void {
    if (this.#alarms.get(id) !== alarm) return;
    this.#alarms.delete(id);
    if (this.#processing.has(id)) {
      // The floor window restarts when the running pass ends; marking dirty
      // would let `done` queue the id ahead of the backoff that pass may set.
      if (alarm.kind === "floor") this.#setAlarm(id, "floor", Date.now() + this.#floor);
      else if (alarm.kind !== "admit") this.#add(id, false);
    } else {
      this.#add(id, false);
    }
    this.#publish(id);
  }

  #nextAt(id: ObjectId): number | undefined {
    return this.#queued.get(id) ?? this.#ahead.get(id) ?? this.#dirty.get(id) ??
      this.#alarms.get(id)?.fireAt;
  }

  #publish(id: ObjectId): void {
    const set = this.#watchers.get(id);
    if (set === undefined) return;
    const at = this.#nextAt(id);
    if (this.#published.get(id) === at) return;
    this.#published.set(id, at);
    const s: Schedule = { nextRequeueAt: at === undefined ? undefined : new Date(at) };
    for (const fn of [...set]) fn(s);
  }
}

function outranks(kind: AlarmKind, fireAt: number, pending: Alarm): boolean {
  if (kind === "backoff") return true;
  if (kind === "admit") return false;
  if (pending.kind === "admit") return true;
  if (kind === "floor" || pending.kind === "floor") return fireAt < pending.fireAt;
  return true;
}
