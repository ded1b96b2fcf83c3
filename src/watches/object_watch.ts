/**
 * Object watches: `watch`, `watchList` and `watchOwnedObjects`. One shared
 * tailer per watched kind reads the kind's write log above its cursor,
 * decodes each change once and fans the changes out; a stream that keeps up
 * hands out the shared changes as they are, one that is behind collapses
 * them in its own held map, so a slow consumer stalls only itself and loses
 * nothing.
 *
 * Also home of the single-consumer stream machinery the event watch shares.
 *
 * @module
 */
import { WatchStream } from "./watch_stream.ts";
import { DecodeError, type KindCodec } from "../model/_codec.ts";
import { type Engine, kindKey, kindName } from "../engine/_engine.ts";
import {
  BeehiveError,
  StoppedError,
  StoreClosedError,
  WatchTooNewError,
  WatchTooOldError,
} from "../model/errors.ts";
import { type BeehiveObject, decodeObject, type LoadKey, type Relations } from "../model/object.ts";
import { loadRelations } from "../engine/_relations.ts";
import type { GroupKind, ObjectId, RawObject, Store, WriteOp } from "../store.ts";
import { type KindTail, openKindTail, type TailWrite } from "./kind_tail.ts";

/** What a change reports: `"Deleted"` means collected, not requested. */
export type ChangeType = "Added" | "Modified" | "Deleted";

/**
 * One change delivered by an object watch. Frozen, like its `object`: every
 * stream of the kind may be handed the same change.
 */
export interface ObjectChange<Spec, Status> {
  /**
   * `"Added"` for an object not known to be in your view (it may repeat for
   * one your snapshot held), `"Modified"` for a write (a deletion request
   * included), `"Deleted"` for a collected object.
   */
  readonly type: ChangeType;
  /** The object's id; set even when `object` is `undefined`. */
  readonly id: ObjectId;
  /** The log position this change was reported at: what `resumeFrom` takes to continue after it. */
  readonly resourceVersion: number;
  /**
   * The object's current state (its final state on `"Deleted"`), or
   * `undefined` on a `"Deleted"` whose final state does not decode. Deeply
   * frozen: every stream of the kind may be handed the same instance.
   */
  readonly object: BeehiveObject<Spec, Status> | undefined;
}

/** Options of `watch`, `watchList` and `watchOwnedObjects`. */
export interface WatchOptions {
  /**
   * Stream the changes above this position instead of taking a snapshot. A
   * position retention has passed ends the stream with `WatchTooOldError`, one
   * this store never issued with `WatchTooNewError` (both from the iterator).
   */
  readonly resumeFrom?: number;
  /** Relations to load on the snapshot and on every change, batched per delivery. @default {[]} */
  readonly load?: readonly LoadKey[];
  /** Ends the stream quietly when it aborts. */
  readonly signal?: AbortSignal;
}

// ---------------------------------------------------------------------------
// Cadences

/** Write-log entries read per page by the tailer and by a resume replay. */
export const TAIL_PAGE = 512;
/** Pages one tailer drain reads before yielding. */
export const TAIL_PAGES_PER_DRAIN = 4;
/**
 * The least time between two tailer drain starts while commits keep coming,
 * in ms: a quiet kind is read at once, and every commit inside the gap after
 * a drain start is read by the one drain at its end.
 */
export const WATCH_DRAIN_GAP = 4;
/**
 * The share of the thread a busy kind's drains may take: the gap between
 * drain starts is at least a drain's own cost (its store calls and its
 * fan-out to the streams, a running mean) divided by this, up to
 * {@linkcode WATCH_DRAIN_GAP_MAX}.
 */
export const WATCH_DRAIN_SHARE = 0.1;
/** The longest the drain gap grows to as drains cost more, in ms. */
export const WATCH_DRAIN_GAP_MAX = 100;
/**
 * The longest a drain waits, in ms from the last drain start, for the streams
 * handed the last drain's changes to take them: consumers that keep up pace
 * the tailer, and one that does not holds it back at most this long, then
 * collapses what follows in its own held map until it catches up.
 */
export const WATCH_TAKE_WAIT = 20;

/** The first rung of the watch retry ladder, in ms. */
export const WATCH_RETRY_MIN = 100;
/** The top of the watch retry ladder, in ms. */
export const WATCH_RETRY_MAX = 30_000;

/** The next rung of the watch retry ladder. */
export function nextRetry(previous: number): number {
  return previous === 0 ? WATCH_RETRY_MIN : Math.min(previous * 2, WATCH_RETRY_MAX);
}

/** Whether a store failure ends a stream rather than being retried. */
export function isTerminal(error: unknown): boolean {
  return error instanceof WatchTooOldError || error instanceof WatchTooNewError ||
    error instanceof StoppedError || error instanceof StoreClosedError;
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new BeehiveError(String(error));
}

/** Logs a transient failure once per failure class until a read succeeds. */
export class FailureLog {
  #last: string | undefined;
  readonly #engine: Engine;
  readonly #what: string;
  readonly #attrs: Record<string, unknown>;

  constructor(engine: Engine, what: string, attrs: Record<string, unknown>) {
    this.#engine = engine;
    this.#what = what;
    this.#attrs = attrs;
  }

  failed(error: unknown, retryIn: number): void {
    const cls = error instanceof Error ? error.name : typeof error;
    if (cls === this.#last) return;
    this.#last = cls;
    this.#engine.log.warn(`beehive: ${this.#what} failed; retrying`, {
      ...this.#attrs,
      retryIn,
      error,
    });
  }

  succeeded(): void {
    this.#last = undefined;
  }
}

// ---------------------------------------------------------------------------
// The single-consumer stream machinery

/**
 * The state behind one stream: a buffer of ready items, a terminal error, the
 * caller's close, and one consumer's `next()` calls serialized. Subclasses
 * produce items in {@linkcode Feed.fill}.
 */
export abstract class Feed<T> {
  /** The terminal error, once the stream knows it will end with one. */
  error: Error | undefined;
  #buffer: readonly T[] = [];
  /** The next item to hand out of `#buffer`. */
  #head = 0;
  /**
   * Set while `#buffer` is an adopted array other feeds share (copied before
   * a push): the settled `next()` answers for its items, shared the same way.
   */
  #answers: (Promise<IteratorResult<T>> | undefined)[] | undefined;
  #terminal: Error | undefined;
  #ended = false;
  #wake: (() => void) | undefined;
  /** Set by notify(): a wake that lands while fill() runs must not be lost. */
  #signalled = false;
  #chain: Promise<unknown> = Promise.resolve();
  /** `next()` calls not yet settled. */
  #inflight = 0;
  /** The answer to a `next()` parked on an idle feed. */
  #parked: ((result: IteratorResult<T> | Promise<IteratorResult<T>>) => void) | undefined;
  readonly #cleanups: (() => void)[] = [];
  readonly #sleepers = new Set<() => void>();

  /** Whether the stream has ended (closed by the caller, or its terminal error thrown). */
  get ended(): boolean {
    return this.#ended;
  }

  /** The terminal error not yet thrown. */
  protected get terminal(): Error | undefined {
    return this.#terminal;
  }

  /**
   * Produces into the buffer with {@linkcode Feed.push}. Resolves `true` when
   * it may have more to do at once, `false` to wait for {@linkcode Feed.notify}.
   * A terminal error it throws ends the stream.
   */
  protected abstract fill(): Promise<boolean>;

  /** Appends items for the consumer. */
  protected push(items: readonly T[]): void {
    if (items.length === 0) return;
    const own = this.#answers !== undefined ? this.#buffer.slice(this.#head) : this.#buffer as T[];
    if (this.#answers !== undefined) {
      this.#head = 0;
      this.#answers = undefined;
    }
    for (const item of items) own.push(item);
    this.#buffer = own;
  }

  /**
   * Hands out `items` from index `from` on, without copying them: the feed
   * never writes to an adopted array, so many feeds may share one, and the
   * settled answer to a `next()` for `items[i]`, made by the first feed to
   * hand it out, is kept in `answers[i]` for the others. Only while nothing
   * is ready.
   */
  protected adopt(
    items: readonly T[],
    from: number,
    answers: (Promise<IteratorResult<T>> | undefined)[],
  ): void {
    if (from >= items.length) return;
    this.#buffer = items;
    this.#head = from;
    this.#answers = answers;
  }

  /** Whether items are ready for the consumer. */
  protected get buffered(): boolean {
    return this.#ready();
  }

  /** Called when the consumer has taken the last ready item. */
  protected taken(): void {}

  #ready(): boolean {
    return this.#head < this.#buffer.length;
  }

  #take(): IteratorResult<T> {
    const value = this.#buffer[this.#head++];
    if (this.#head === this.#buffer.length) this.#emptied();
    return { done: false, value };
  }

  /** The shared settled answer for the next item of an adopted buffer. */
  #takeShared(answers: (Promise<IteratorResult<T>> | undefined)[]): Promise<IteratorResult<T>> {
    const i = this.#head++;
    const answer = answers[i] ??= Promise.resolve(
      Object.freeze({ done: false, value: this.#buffer[i] }),
    );
    if (this.#head === this.#buffer.length) this.#emptied();
    return answer;
  }

  #emptied(): void {
    this.#buffer = [];
    this.#head = 0;
    this.#answers = undefined;
    this.taken();
  }

  /** Runs `fn` once when the stream ends. */
  onEnd(fn: () => void): void {
    if (this.#ended) fn();
    else this.#cleanups.push(fn);
  }

  /** Listens to `signal` until the stream ends: aborting closes it quietly. */
  follow(signal: AbortSignal | undefined): void {
    if (signal === undefined) return;
    if (signal.aborted) return this.close();
    const abort = () => this.close();
    signal.addEventListener("abort", abort, { once: true });
    this.onEnd(() => signal.removeEventListener("abort", abort));
  }

  /**
   * Whether nothing is left to produce and producing needs no await: a
   * `next()` then parks, and the next {@linkcode Feed.notify} calls
   * {@linkcode Feed.produce} and answers it at once.
   */
  protected idle(): boolean {
    return false;
  }

  /** Produces into the buffer what needs no await (for a feed that can be idle). */
  protected produce(): void {}

  /** Wakes a waiting consumer (and any backoff sleep). */
  notify(): void {
    this.#signalled = true;
    const parked = this.#parked;
    if (parked !== undefined) {
      this.#parked = undefined;
      if (!this.#ended && this.#terminal === undefined) this.produce();
      if (this.#ready() && !this.#ended) {
        this.#inflight--;
        parked(this.#take());
        return;
      }
      const result = this.#next();
      const settled = () => this.#inflight--;
      result.then(settled, settled);
      parked(result);
      return;
    }
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** Ends the stream with `error` once what is already ready has been delivered. */
  fail(error: Error): void {
    if (this.#ended || this.#terminal !== undefined) return;
    this.#terminal = error;
    this.error = error;
    for (const wake of [...this.#sleepers]) wake();
    this.notify();
  }

  /** Ends the stream quietly; a waiting `next()` resolves as done. Idempotent. */
  close(): void {
    this.#buffer = [];
    this.#head = 0;
    this.#answers = undefined;
    this.#end();
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    const fns = this.#cleanups.splice(0);
    for (const fn of fns) fn();
    for (const wake of [...this.#sleepers]) wake();
    this.notify();
  }

  /** Waits `ms`, or less when the stream ends or fails. */
  protected sleep(ms: number): Promise<void> {
    if (this.#ended || this.#terminal !== undefined) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#sleepers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#sleepers.add(done);
    });
  }

  /** The next item; serialized, so a second caller waits its turn. */
  next(): Promise<IteratorResult<T>> {
    if (this.#inflight === 0 && !this.#ended) {
      // The common case, an item ready and no call in flight, costs one promise.
      if (this.#ready()) {
        const answers = this.#answers;
        return answers === undefined ? Promise.resolve(this.#take()) : this.#takeShared(answers);
      }
      if (this.#terminal === undefined && this.idle()) {
        this.#inflight++;
        const { promise, resolve } = Promise.withResolvers<IteratorResult<T>>();
        this.#parked = resolve;
        this.#chain = promise.catch(() => undefined);
        return promise;
      }
    }
    this.#inflight++;
    const result = this.#chain.then(() => this.#next()).finally(() => this.#inflight--);
    this.#chain = result.catch(() => undefined);
    return result;
  }

  async #next(): Promise<IteratorResult<T>> {
    for (;;) {
      if (this.#ended) return { done: true, value: undefined };
      if (this.#ready()) return this.#take();
      let more: boolean;
      this.#signalled = false;
      try {
        more = await this.fill();
      } catch (error) {
        // Whatever escapes fill() ends the stream: a retry loop would spin on it.
        this.fail(asError(error));
        more = false;
      }
      if (this.#ended || this.#ready() || more) continue;
      if (this.#terminal !== undefined) {
        const error = this.#terminal;
        this.#end();
        throw error;
      }
      if (this.#signalled) continue;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  /** An iterator over this feed; `return()` (a `break`) closes it. */
  iterator(): AsyncIterator<T> {
    return {
      next: () => this.next(),
      return: () => {
        this.close();
        return Promise.resolve({ done: true, value: undefined });
      },
    };
  }
}

// ---------------------------------------------------------------------------
// Changes as the tailer reads them

/** One object's collapsed change, as read from the log (undecoded). */
export interface RawChange {
  readonly id: ObjectId;
  /** The log position of the last entry folded in. */
  readonly rv: number;
  readonly op: WriteOp;
  /** The live row (the delete entry's image for a delete). */
  readonly row: RawObject;
  /** The owner's id, `null` for none, `undefined` when not resolved. */
  readonly owner: ObjectId | null | undefined;
}

/** A run that began with a create and did not end in a delete is still a create. */
export function coalesceOp(first: WriteOp, last: WriteOp): WriteOp {
  return first === "create" && last !== "delete" ? "create" : last;
}

/** Folds a newer change into a pending one; never annihilates a create+delete pair. */
export function mergeChange(pending: RawChange | undefined, next: RawChange): RawChange {
  if (pending === undefined) return next;
  if (next.rv <= pending.rv) return pending;
  return { ...next, op: coalesceOp(pending.op, next.op) };
}

/** How a change's type reads. */
export function changeType(op: WriteOp): ChangeType {
  return op === "create" ? "Added" : op === "delete" ? "Deleted" : "Modified";
}

/**
 * Collapses one page of write-log entries to the latest state per object:
 * one batched row read for the live objects (and one edge read when owners
 * are asked for), delete entries from their row image. Ascending by position.
 */
export async function collectChanges(
  store: Store,
  gk: GroupKind,
  writes: readonly TailWrite[],
  options: { readonly owners: boolean; readonly only?: ObjectId },
  warn: (message: string, attrs: Record<string, unknown>) => void,
): Promise<RawChange[]> {
  const last = new Map<ObjectId, TailWrite>();
  const first = new Map<ObjectId, WriteOp>();
  for (const w of writes) {
    if (options.only !== undefined && w.id !== options.only) continue;
    if (!first.has(w.id)) first.set(w.id, w.op);
    last.set(w.id, w);
  }
  if (last.size === 0) return [];
  const liveIds: ObjectId[] = [];
  const unread: ObjectId[] = [];
  const rows = new Map<ObjectId, RawObject>();
  for (const w of last.values()) {
    if (w.op === "delete") continue;
    liveIds.push(w.id);
    // The row the object's latest write left, when the tail carries it; else the live row.
    if (w.row !== undefined) rows.set(w.id, w.row);
    else unread.push(w.id);
  }
  let owners: Map<ObjectId, { id: ObjectId }[]> | undefined;
  if (unread.length > 0) {
    for (const raw of await store.objects.listByIds(gk, unread)) rows.set(raw.id, raw);
  }
  if (liveIds.length > 0 && options.owners) {
    owners = await store.edges.groupOutgoingByIds(liveIds, "owned_by");
  }
  const out: RawChange[] = [];
  const ordered = [...last.values()].sort((a, b) => a.resourceVersion - b.resourceVersion);
  for (const w of ordered) {
    const op = coalesceOp(first.get(w.id)!, w.op);
    if (w.op === "delete") {
      if (w.final === undefined) {
        warn("beehive: a delete entry carries no row image; skipping it", {
          kind: kindName(gk),
          id: w.id,
          resourceVersion: w.resourceVersion,
        });
        continue;
      }
      out.push({
        id: w.id,
        rv: w.resourceVersion,
        op,
        row: w.final,
        owner: w.final.owner?.id ?? null,
      });
      continue;
    }
    const row = rows.get(w.id);
    // Collected between the page and the row read: its delete entry is later in the log.
    if (row === undefined) continue;
    const owner = owners === undefined ? undefined : owners.get(w.id)?.[0]?.id ?? null;
    out.push({ id: w.id, rv: w.resourceVersion, op, row, owner });
  }
  return out;
}

// ---------------------------------------------------------------------------
// The shared tailer

const registries = new WeakMap<Engine, Map<string, Tailer>>();

function registry(engine: Engine): Map<string, Tailer> {
  let reg = registries.get(engine);
  if (reg === undefined) registries.set(engine, reg = new Map());
  return reg;
}

/**
 * Joins the kind's tailer, building it on the first watch. Resolves once
 * its starting cursor is read, so a snapshot read after it is at or above.
 */
export async function acquireTailer(engine: Engine, gk: GroupKind): Promise<Tailer> {
  const reg = registry(engine);
  const key = kindKey(gk);
  let tailer = reg.get(key);
  if (tailer === undefined || tailer.failed) {
    tailer = new Tailer(engine, gk, () => {
      if (reg.get(key) === tailer) reg.delete(key);
    });
    reg.set(key, tailer);
  }
  tailer.leases++;
  try {
    await tailer.ready;
  } catch (error) {
    tailer.release();
    throw error;
  }
  return tailer;
}

/**
 * One drain's changes as every stream of the kind shares them: the raw
 * changes for the streams that load relations, and one decode of each
 * (deeply frozen, the change object too) for the streams that load none.
 */
export class Published {
  /** Ascending by position. */
  readonly raw: readonly RawChange[];
  readonly #decode: (c: RawChange) => ObjectChange<unknown, unknown> | undefined;
  #changes: ObjectChange<unknown, unknown>[] | undefined;
  readonly #owners: (ObjectId | null | undefined)[] = [];
  /** The settled `next()` answers for `changes`, made by the first stream to hand each out. */
  readonly answers: (Promise<IteratorResult<ObjectChange<unknown, unknown>>> | undefined)[] = [];

  constructor(
    raw: readonly RawChange[],
    decode: (c: RawChange) => ObjectChange<unknown, unknown> | undefined,
  ) {
    this.raw = raw;
    this.#decode = decode;
  }

  /**
   * The decoded changes, ascending by position, decoded on first use; a
   * change that does not decode is left out unless it reports a removal.
   */
  get changes(): readonly ObjectChange<unknown, unknown>[] {
    if (this.#changes === undefined) {
      const out: ObjectChange<unknown, unknown>[] = [];
      for (const c of this.raw) {
        const change = this.#decode(c);
        if (change === undefined) continue;
        out.push(change);
        this.#owners.push(c.owner);
      }
      this.#changes = out;
    }
    return this.#changes;
  }

  /** The owner of `changes[i]`: `null` for none, `undefined` when not resolved. */
  ownerAt(i: number): ObjectId | null | undefined {
    return this.#owners[i];
  }
}

/** One kind's write-log reader, shared by every watch on the kind. */
export class Tailer {
  readonly gk: GroupKind;
  readonly ready: Promise<void>;
  /** Set by an owner-scoped watch before it registers; never cleared. */
  ownerScoped = false;
  leases = 0;
  failed = false;
  readonly #engine: Engine;
  readonly #tail: KindTail;
  readonly #subs = new Set<ObjectFeed>();
  /** Numbers the drains: a stream owes the drain whose number it holds in `owedDrain`. */
  #drainSerial = 0;
  /** How many streams handed the last drain's changes have not taken them all yet. */
  #owing = 0;
  readonly #unregister: () => void;
  readonly #offKind: () => void;
  readonly #offClose: () => void;
  readonly #failures: FailureLog;
  readonly #warned = new Set<string>();
  #cursor = 0;
  #failure: Error | undefined;
  #started = false;
  #stopped = false;
  #running = false;
  /** A wake not yet covered by a drain start. */
  #dirty = false;
  /** The thread time a drain's own work takes, in ms: a running mean. */
  #cost = 0;
  /** The thread time the running drain has taken so far, in ms. */
  #spent = 0;
  /** When the last drain started (`Date.now()`), for the pacing. */
  #lastStart = Number.NEGATIVE_INFINITY;
  /**
   * When the armed timer fires, if one is armed. One timer serves the gap,
   * the floor and the backoff: it is moved only to fire earlier, and when it
   * fires it does what is due by then, so a busy kind sets no timer per drain.
   */
  #dueAt: number | undefined;
  /** When the floor read is next due: a drain at least this often. */
  #floorAt = Number.POSITIVE_INFINITY;
  #retry = 0;
  /** When the backoff after a failed read ends. */
  #retryAt = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(engine: Engine, gk: GroupKind, unregister: () => void) {
    this.#engine = engine;
    this.gk = gk;
    this.#unregister = unregister;
    this.#failures = new FailureLog(engine, "a watch read", { kind: kindName(gk) });
    // Subscribe before reading the starting cursor: a commit in between is not lost.
    this.#tail = openKindTail(engine.store, gk);
    this.#offKind = engine.writes.onKind(gk, () => this.wake());
    this.#offClose = engine.writes.onClose(() =>
      this.#fail(new StoppedError(`The watch on ${kindName(gk)} ended: the Beehive stopped`))
    );
    this.ready = engine.store.objectWrites.maxVersion(gk).then(
      (at) => {
        if (this.#stopped) return;
        this.#cursor = at;
        this.#started = true;
        this.#floorAt = Date.now() + engine.options.watchFloorInterval;
        if (this.#dirty) this.#schedule();
        else this.#arm(this.#floorAt);
      },
      (error) => {
        this.failed = true;
        this.#stop();
        throw error;
      },
    );
  }

  /** Registers a stream: it receives every change published from now on. */
  add(feed: ObjectFeed): void {
    if (this.#stopped) {
      // Failed between the join and this call: the stream shares the failure.
      feed.fail(
        this.#failure ??
          new StoppedError(`The watch on ${kindName(this.gk)} ended: its reader stopped`),
      );
      return;
    }
    this.#subs.add(feed);
  }

  /** Drops a stream and its lease. */
  remove(feed: ObjectFeed): void {
    this.taken(feed);
    if (this.#subs.delete(feed)) this.release();
  }

  /** Drops one lease; the last one stops the tailer. */
  release(): void {
    if (--this.leases <= 0) this.#stop();
  }

  /** A stream will hand out the last drain's shared changes: the next drain waits for it. */
  owe(feed: ObjectFeed): void {
    if (feed.owedDrain === this.#drainSerial) return;
    feed.owedDrain = this.#drainSerial;
    this.#owing++;
  }

  /** A stream has taken everything it was handed: the next drain need not wait for it. */
  taken(feed: ObjectFeed): void {
    if (feed.owedDrain !== this.#drainSerial) return;
    feed.owedDrain = -1;
    if (--this.#owing > 0) return;
    // After the consumer's turn, not inside its next().
    queueMicrotask(() => this.#schedule());
  }

  /** Warns once per (change, message) across every subscriber. */
  warnOnce(key: string, message: string, attrs: Record<string, unknown>): void {
    if (this.#warned.has(key)) return;
    if (this.#warned.size >= 4096) this.#warned.clear();
    this.#warned.add(key);
    this.#engine.log.warn(message, attrs);
  }

  /**
   * A commit (or the floor) says the log may have moved. A quiet kind is
   * read at once. While commits keep coming, the next drain starts at the
   * first wake that finds the gap passed since the last start (at least
   * {@linkcode WATCH_DRAIN_GAP}, more as drains cost more: see
   * {@linkcode WATCH_DRAIN_SHARE}) and the last drain's changes taken by
   * every stream it was handed to (waiting for that at most
   * {@linkcode WATCH_TAKE_WAIT}); every commit meanwhile is read by that one
   * drain.
   */
  wake(): void {
    if (this.#stopped) return;
    this.#dirty = true;
    this.#schedule();
  }

  /** The least time between two drain starts now, in ms. */
  #gap(): number {
    return Math.min(WATCH_DRAIN_GAP_MAX, Math.max(WATCH_DRAIN_GAP, this.#cost / WATCH_DRAIN_SHARE));
  }

  /** Calls `fn`, counting the thread time it takes (its synchronous part) as the drain's. */
  #timed<T>(fn: () => T): T {
    const started = Date.now();
    try {
      return fn();
    } finally {
      this.#spent += Date.now() - started;
    }
  }

  #schedule(): void {
    if (this.#stopped || !this.#started || this.#running || !this.#dirty) return;
    // While backing off a wake carries nothing new; honouring it would void the backoff.
    if (this.#retry > 0) return;
    let at = this.#lastStart + this.#gap();
    if (this.#owing > 0) at = Math.max(at, this.#lastStart + WATCH_TAKE_WAIT);
    if (at <= Date.now()) {
      void this.#run();
      return;
    }
    this.#arm(at);
  }

  /** Makes sure the timer fires by `at` (a `Date.now()` time); one due earlier stays. */
  #arm(at: number): void {
    if (this.#stopped || (this.#dueAt !== undefined && this.#dueAt <= at)) return;
    clearTimeout(this.#timer);
    this.#dueAt = at;
    this.#timer = setTimeout(() => this.#fire(), Math.max(0, at - Date.now()));
  }

  /** The timer fired: ends a backoff, takes the floor read, or runs the drain a wake left. */
  #fire(): void {
    this.#timer = undefined;
    this.#dueAt = undefined;
    if (this.#stopped) return;
    const now = Date.now();
    if (this.#retry > 0) {
      if (now < this.#retryAt) this.#arm(this.#retryAt);
      else if (!this.#running) void this.#run();
      return;
    }
    if (now >= this.#floorAt) this.#dirty = true;
    if (this.#dirty) this.#schedule();
    else if (!this.#running) this.#arm(this.#floorAt);
  }

  async #run(): Promise<void> {
    this.#running = true;
    this.#dirty = false;
    this.#spent = 0;
    this.#lastStart = Date.now();
    this.#floorAt = this.#lastStart + this.#engine.options.watchFloorInterval;
    let more = false;
    try {
      more = await this.#drain();
      // Capped: a drain the OS preempted mid-call reads long, and one such must not set the pace.
      this.#cost += (Math.min(this.#spent, 4 * this.#cost + 1) - this.#cost) / 4;
      this.#retry = 0;
      this.#failures.succeeded();
    } catch (error) {
      this.#running = false;
      if (this.#stopped) return;
      if (isTerminal(error)) {
        this.#fail(asError(error));
        return;
      }
      this.#retry = nextRetry(this.#retry);
      this.#failures.failed(error, this.#retry);
      this.#retryAt = Date.now() + this.#retry;
      this.#arm(this.#retryAt);
      return;
    }
    this.#running = false;
    if (this.#stopped) return;
    // A backlog beyond the page budget continues like a commit would: paced.
    if (more) this.#dirty = true;
    if (this.#dirty) this.#schedule();
    else this.#arm(this.#floorAt);
  }

  /**
   * Reads up to the page budget above the cursor, collapses it to one change
   * per object and publishes that; resolves whether more remains.
   */
  async #drain(): Promise<boolean> {
    const store = this.#engine.store;
    const writes: TailWrite[] = [];
    let cursor = this.#cursor;
    let more = true;
    for (let pages = 0; pages < TAIL_PAGES_PER_DRAIN; pages++) {
      const after = cursor;
      const page = await this.#timed(() => this.#tail.read(after, TAIL_PAGE));
      if (this.#stopped) return false;
      if (cursor < page.trimmedThrough) {
        throw new WatchTooOldError(
          `The watch on ${
            kindName(this.gk)
          } fell behind retention: entries above ${cursor} were trimmed through ${page.trimmedThrough} unread; watch again for a fresh snapshot`,
        );
      }
      for (const w of page.writes) writes.push(w);
      if (page.writes.length > 0) cursor = page.writes[page.writes.length - 1].resourceVersion;
      if (page.writes.length < TAIL_PAGE) {
        more = false;
        break;
      }
    }
    if (writes.length === 0) return false;
    const changes = await this.#timed(() =>
      collectChanges(
        store,
        this.gk,
        writes,
        { owners: this.ownerScoped },
        (message, attrs) => this.#engine.log.warn(message, attrs),
      )
    );
    if (this.#stopped) return false;
    const codec = this.#engine.codec(this.gk);
    const warn = this.warnOnce.bind(this);
    const kind = kindName(this.gk);
    const batch = new Published(changes, (c) => decodeChange(c, codec, undefined, warn, kind));
    this.#drainSerial++;
    this.#owing = 0;
    this.#timed(() => {
      for (const feed of this.#subs) feed.publish(batch);
    });
    this.#cursor = cursor;
    return more;
  }

  /** Ends every stream with `error` (after what each already holds) and stops. */
  #fail(error: Error): void {
    if (this.#stopped) return;
    this.failed = true;
    this.#failure = error;
    const subs = [...this.#subs];
    this.#subs.clear();
    this.#stop();
    for (const feed of subs) feed.fail(error);
  }

  #stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.failed = true;
    this.#owing = 0;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#dueAt = undefined;
    this.#offKind();
    this.#offClose();
    this.#tail.close();
    this.#unregister();
  }
}

/**
 * Decodes one change, deeply frozen with its object; `undefined` for a
 * change that does not decode (logged once per change), unless it reports
 * a removal, which arrives with no object.
 * @throws what the codec throws other than `DecodeError`.
 */
function decodeChange(
  c: RawChange,
  codec: KindCodec,
  rel: Relations | undefined,
  warnOnce: (key: string, message: string, attrs: Record<string, unknown>) => void,
  kind: string,
): ObjectChange<unknown, unknown> | undefined {
  let object: BeehiveObject<unknown, unknown> | undefined;
  try {
    object = freezeObject(decodeObject(c.row, codec, rel));
  } catch (error) {
    if (!(error instanceof DecodeError)) throw error;
    warnOnce(`decode:${c.rv}`, "beehive: a watched object does not decode", {
      kind,
      id: c.id,
      resourceVersion: c.rv,
      error,
    });
    // A removal is reported whatever its image holds; nothing later names the id.
    if (c.op !== "delete") return undefined;
  }
  return Object.freeze({ type: changeType(c.op), id: c.id, resourceVersion: c.rv, object });
}

// ---------------------------------------------------------------------------
// One object watch's subscriber

/** What scopes a subscriber. */
export interface FeedScope {
  /** `watch(id)`: only this id. */
  readonly id?: ObjectId;
  /** `watchOwnedObjects(owner)`: only this owner's children. */
  readonly owner?: ObjectId;
}

/**
 * One object watch: what it has not handed out yet, its replay, and its
 * deliveries. A stream that loads no relations and keeps up hands out each
 * drain's shared changes as they are, when its consumer pulls; one still
 * busy with earlier changes folds the new ones into its held map, latest
 * per object, and sorts that when its consumer pulls.
 */
export class ObjectFeed extends Feed<ObjectChange<unknown, unknown>> {
  /** Deliveries at or below this position are dropped (the snapshot or resume position). */
  floor = 0;
  /** The number of the tailer's drain this stream still owes a take of; -1 for none. */
  owedDrain = -1;
  readonly #engine: Engine;
  readonly #gk: GroupKind;
  readonly #scope: FeedScope;
  readonly #load: readonly LoadKey[];
  /** Raw changes not yet decoded, latest per object: the streams that load relations. */
  readonly #pending = new Map<ObjectId, RawChange>();
  /**
   * The last drain's shared changes from `#sharedFrom` on, not pulled yet: a
   * stream that loads nothing and had nothing else waiting takes them as they are.
   */
  #shared: Published | undefined;
  #sharedFrom = 0;
  /** Decoded changes not yet handed out, latest per object: the streams that load none. */
  readonly #held = new Map<ObjectId, ObjectChange<unknown, unknown>>();
  readonly #failures: FailureLog;
  #tailer: Tailer | undefined;
  /** Set once the floor is known: until then everything published is held. */
  #open = false;
  /** The replay cursor of a resume; `undefined` once live. */
  #replay: number | undefined;
  #replayFirst = true;
  #retry = 0;

  constructor(engine: Engine, gk: GroupKind, scope: FeedScope, load: readonly LoadKey[]) {
    super();
    this.#engine = engine;
    this.#gk = gk;
    this.#scope = scope;
    this.#load = load;
    this.#failures = new FailureLog(engine, "a watch delivery", { kind: kindName(gk) });
  }

  /** Joins `tailer`: changes it publishes from now on are this stream's. */
  attach(tailer: Tailer): void {
    this.#tailer = tailer;
    tailer.add(this);
    this.onEnd(() => {
      this.#pending.clear();
      this.#held.clear();
      this.#shared = undefined;
      tailer.remove(this);
    });
  }

  /** Goes live above `floor` (the snapshot's position). */
  open(floor: number): void {
    this.floor = floor;
    this.#open = true;
  }

  /** Starts with a replay of the log above `from` instead of a snapshot. */
  resume(from: number): void {
    this.#replay = from;
    this.open(from);
  }

  /**
   * Takes a drain's changes. A stream that will hand out the shared array
   * itself tells the tailer, which waits for it to be taken.
   */
  publish(batch: Published): void {
    if (this.ended) return;
    if (this.#load.length > 0) {
      this.#publishRaw(batch.raw);
      return;
    }
    let changes: readonly ObjectChange<unknown, unknown>[];
    try {
      changes = batch.changes;
    } catch (error) {
      // A codec failing other than with DecodeError: the stream cannot go on truthfully.
      this.fail(asError(error));
      return;
    }
    const scope = this.#scope;
    if (scope.id === undefined && scope.owner === undefined) {
      const caughtUp = this.#open && this.#replay === undefined && this.#shared === undefined &&
        this.#held.size === 0 && !this.buffered;
      if (caughtUp) {
        let from = 0;
        while (from < changes.length && changes[from].resourceVersion <= this.floor) from++;
        if (from === changes.length) return;
        this.#shared = batch;
        this.#sharedFrom = from;
        this.#tailer?.owe(this);
        this.notify();
        return;
      }
      const shared = this.#shared;
      if (shared !== undefined) {
        // Not pulled before the next drain: it collapses with what follows.
        this.#shared = undefined;
        const held = shared.changes;
        for (let i = this.#sharedFrom; i < held.length; i++) this.#hold(held[i]);
      }
      for (const c of changes) this.#hold(c);
      if (changes.length > 0) this.notify();
      return;
    }
    let added = false;
    for (let i = 0; i < changes.length; i++) {
      const c = changes[i];
      if (scope.id !== undefined && c.id !== scope.id) continue;
      if (scope.owner !== undefined) {
        const owner = batch.ownerAt(i);
        if (owner === undefined) {
          this.#warnOwnerless(c.id, c.resourceVersion);
          continue;
        }
        if (owner !== scope.owner) continue;
      }
      this.#hold(c);
      added = true;
    }
    if (added) this.notify();
    return;
  }

  /** Folds a decoded change into the held ones: latest per object, a create stays `Added`. */
  #hold(c: ObjectChange<unknown, unknown>): void {
    const held = this.#held.get(c.id);
    if (held === undefined) {
      this.#held.set(c.id, c);
      return;
    }
    if (c.resourceVersion <= held.resourceVersion) return;
    const added = held.type === "Added" && c.type === "Modified";
    this.#held.set(c.id, added ? Object.freeze({ ...c, type: "Added" }) : c);
  }

  #publishRaw(changes: readonly RawChange[]): void {
    const scope = this.#scope;
    let added = false;
    for (const c of changes) {
      if (scope.id !== undefined && c.id !== scope.id) continue;
      if (scope.owner !== undefined) {
        if (c.owner === undefined) {
          this.#warnOwnerless(c.id, c.rv);
          continue;
        }
        if (c.owner !== scope.owner) continue;
      }
      this.#pending.set(c.id, mergeChange(this.#pending.get(c.id), c));
      added = true;
    }
    if (added) this.notify();
  }

  #warnOwnerless(id: ObjectId, rv: number): void {
    this.#tailer?.warnOnce(
      `owner:${rv}`,
      "beehive: a change reached an owner-scoped watch without its owner; skipping it",
      { kind: kindName(this.#gk), id, resourceVersion: rv },
    );
  }

  protected override idle(): boolean {
    return this.#load.length === 0 && this.#replay === undefined && this.#shared === undefined &&
      this.#held.size === 0;
  }

  /** Hands out the shared changes as they are, or the held ones sorted. */
  protected override produce(): void {
    if (this.#replay !== undefined) return;
    if (this.#shared !== undefined) {
      this.adopt(this.#shared.changes, this.#sharedFrom, this.#shared.answers);
      this.#shared = undefined;
      return;
    }
    if (this.#held.size === 0) return;
    const held = [...this.#held.values()].filter((c) => c.resourceVersion > this.floor);
    this.#held.clear();
    held.sort((a, b) => a.resourceVersion - b.resourceVersion);
    this.push(held);
  }

  protected override taken(): void {
    this.#tailer?.taken(this);
  }

  override fail(error: Error): void {
    this.#replay = undefined;
    super.fail(error);
  }

  protected override async fill(): Promise<boolean> {
    if (this.#replay !== undefined && this.terminal === undefined) {
      await this.#replayStep(this.#replay);
      return true;
    }
    if (this.#shared !== undefined || this.#held.size > 0) {
      this.produce();
      return true;
    }
    if (this.#pending.size === 0) return false;
    const batch = [...this.#pending.values()].filter((c) => c.rv > this.floor);
    this.#pending.clear();
    batch.sort((a, b) => a.rv - b.rv);
    this.push(await this.#decode(batch));
    return true;
  }

  /** One replay page: gap entries above `cursor`, delivered before anything live. */
  async #replayStep(cursor: number): Promise<void> {
    const store = this.#engine.store;
    try {
      const page = await store.objectWrites.listSince(this.#gk, {
        after: cursor,
        limit: TAIL_PAGE,
      });
      if (cursor < page.trimmedThrough) {
        throw new WatchTooOldError(
          `Cannot resume the watch on ${
            kindName(this.#gk)
          } from ${cursor}: retention trimmed the log through ${page.trimmedThrough}; watch again without resumeFrom`,
        );
      }
      if (page.writes.length === 0 && this.#replayFirst) {
        const [head, latest] = await Promise.all([
          store.objectWrites.maxVersion(this.#gk),
          store.getLatestResourceVersion(),
        ]);
        if (cursor > Math.max(head, latest)) {
          throw new WatchTooNewError(
            `Cannot resume the watch on ${
              kindName(this.#gk)
            } from ${cursor}: this store has issued nothing above ${
              Math.max(head, latest)
            }; watch again without resumeFrom`,
          );
        }
      }
      const changes = await collectChanges(
        store,
        this.#gk,
        page.writes,
        { owners: this.#scope.owner !== undefined, only: this.#scope.id },
        (message, attrs) => this.#engine.log.warn(message, attrs),
      );
      if (this.ended || this.terminal !== undefined) return;
      const scoped = this.#scope.owner === undefined
        ? changes
        : changes.filter((c) => c.owner === this.#scope.owner);
      this.#retry = 0;
      this.#failures.succeeded();
      this.push(await this.#decode(scoped));
      this.#replayFirst = false;
      const end = page.writes.length === 0
        ? cursor
        : page.writes[page.writes.length - 1].resourceVersion;
      if (page.writes.length < TAIL_PAGE) {
        this.#replay = undefined;
        this.floor = end;
      } else {
        this.#replay = end;
      }
    } catch (error) {
      if (isTerminal(error)) throw error;
      this.#retry = nextRetry(this.#retry);
      this.#failures.failed(error, this.#retry);
      await this.sleep(this.#retry);
    }
  }

  /** Loads relations (retrying until it works or the stream ends), then decodes once. */
  async #decode(batch: readonly RawChange[]): Promise<ObjectChange<unknown, unknown>[]> {
    if (batch.length === 0) return [];
    let rels: Map<ObjectId, Relations> | undefined;
    if (this.#load.length > 0) {
      for (;;) {
        try {
          rels = await loadRelations(this.#engine.store, batch.map((c) => c.id), this.#load);
          this.#retry = 0;
          break;
        } catch (error) {
          // The tailer's cursor has moved past these: skipping would lose them.
          if (isTerminal(error)) throw error;
          if (this.ended || this.terminal !== undefined) return [];
          this.#retry = nextRetry(this.#retry);
          this.#failures.failed(error, this.#retry);
          await this.sleep(this.#retry);
          if (this.ended || this.terminal !== undefined) return [];
        }
      }
    }
    const codec = this.#engine.codec(this.#gk);
    const warn = (key: string, message: string, attrs: Record<string, unknown>) =>
      this.#tailer === undefined
        ? this.#engine.log.warn(message, attrs)
        : this.#tailer.warnOnce(key, message, attrs);
    const kind = kindName(this.#gk);
    const out: ObjectChange<unknown, unknown>[] = [];
    for (const c of batch) {
      let rel = rels?.get(c.id);
      if (rel !== undefined && c.op === "delete" && "owner" in rel) {
        // The owned_by edge cascaded away with the row; the image remembers it.
        rel = { ...rel, owner: c.row.owner ?? null };
      }
      const change = decodeChange(c, codec, rel, warn, kind);
      if (change !== undefined) out.push(change);
    }
    return out;
  }
}

/** Freezes a value and everything it holds. */
function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}

/**
 * Freezes a decoded object and everything it holds: the same as
 * `deepFreeze`, walking only the fields that can hold objects (a third of
 * its cost, paid once per change per drain).
 */
function freezeObject<Spec, Status>(o: BeehiveObject<Spec, Status>): BeehiveObject<Spec, Status> {
  deepFreeze(o.spec);
  deepFreeze(o.status);
  Object.freeze(o.finalizers);
  for (const c of o.conditions) deepFreeze(c);
  Object.freeze(o.conditions);
  Object.freeze(o.createdAt);
  Object.freeze(o.updatedAt);
  if (o.observedAt !== undefined) Object.freeze(o.observedAt);
  if (o.deletionRequestedAt !== undefined) Object.freeze(o.deletionRequestedAt);
  return Object.freeze(o);
}

// ---------------------------------------------------------------------------
// The public streams

/**
 * A live view of one object: its state as of the subscribe, the position
 * that state was read at, then every change above it. Iterated once, by one
 * consumer: `for await (const change of stream)`.
 */
export class ObjectStream<Spec, Status> extends WatchStream<ObjectChange<Spec, Status>> {
  /**
   * The object's state at the snapshot (deeply frozen): `undefined` when the
   * id held nothing of this kind, or on a resume.
   */
  readonly object: BeehiveObject<Spec, Status> | undefined;
  /** The position the snapshot is complete as of (the `resumeFrom` given, on a resume). */
  readonly resourceVersion: number;
  /** @internal Use `client.watch(id)`. */
  constructor(
    object: BeehiveObject<Spec, Status> | undefined,
    resourceVersion: number,
    feed: Feed<ObjectChange<unknown, unknown>>,
  ) {
    super(feed);
    this.object = object;
    this.resourceVersion = resourceVersion;
  }
}

/**
 * A live view of many objects (a kind, or one owner's children of a kind):
 * the snapshot, its position, then every change above it. Iterated once, by
 * one consumer: `for await (const change of stream)`.
 */
export class ObjectListStream<Spec, Status> extends WatchStream<ObjectChange<Spec, Status>> {
  /** The objects at the snapshot (deeply frozen), ordered by id; empty on a resume. */
  readonly objects: BeehiveObject<Spec, Status>[];
  /** The position the snapshot is complete as of (the `resumeFrom` given, on a resume). */
  readonly resourceVersion: number;
  /** @internal Use `client.watchList()` or `client.watchOwnedObjects(ownerId)`. */
  constructor(
    objects: BeehiveObject<Spec, Status>[],
    resourceVersion: number,
    feed: Feed<ObjectChange<unknown, unknown>>,
  ) {
    super(feed);
    this.objects = objects;
    this.resourceVersion = resourceVersion;
  }
}

// ---------------------------------------------------------------------------
// Opening a watch

/** What `openObjectWatch` needs from the client. */
export interface OpenWatch {
  readonly engine: Engine;
  readonly gk: GroupKind;
  readonly scope: FeedScope;
  readonly load: readonly LoadKey[];
  readonly resumeFrom: number | undefined;
  readonly signal: AbortSignal | undefined;
  /** Reads the snapshot (list plus position in one read). */
  readonly snapshot: () => Promise<{ items: RawObject[]; resourceVersion: number }>;
  /** Decodes the snapshot's rows (skipping and logging what does not decode). */
  readonly decode: (rows: RawObject[]) => Promise<BeehiveObject<unknown, unknown>[]>;
}

/**
 * Subscribes, then reads the snapshot (or sets up the resume): resolves to
 * the feed, the decoded snapshot and its position.
 */
export async function openObjectWatch(o: OpenWatch): Promise<{
  feed: ObjectFeed;
  objects: BeehiveObject<unknown, unknown>[];
  resourceVersion: number;
}> {
  const feed = new ObjectFeed(o.engine, o.gk, o.scope, o.load);
  const inert = o.engine.state === "stopped" || o.signal?.aborted === true;
  if (!inert) {
    const tailer = await acquireTailer(o.engine, o.gk);
    if (o.scope.owner !== undefined) tailer.ownerScoped = true;
    feed.attach(tailer);
  }
  try {
    if (o.resumeFrom !== undefined) {
      feed.resume(o.resumeFrom);
      finish(o, feed);
      return { feed, objects: [], resourceVersion: o.resumeFrom };
    }
    const snap = await o.snapshot();
    const objects = (await o.decode(snap.items)).map(freezeObject);
    feed.open(snap.resourceVersion);
    finish(o, feed);
    return { feed, objects, resourceVersion: snap.resourceVersion };
  } catch (error) {
    feed.close();
    throw error;
  }
}

function finish(o: OpenWatch, feed: ObjectFeed): void {
  if (o.engine.state === "stopped") {
    feed.fail(new StoppedError(`The watch on ${kindName(o.gk)} ended: the Beehive stopped`));
  }
  feed.follow(o.signal);
}
