/**
 * The shared tailer: one per watched kind and engine, reading the kind's tail above
 * its cursor, decoding each change once and fanning it out to the feeds.
 *
 * @module
 */
import { DecodeError, type KindCodec } from "../model/_codec.ts";
import { type Engine, kindKey, kindName } from "../engine/_engine.ts";
import { StoppedError, WatchTooOldError } from "../model/errors.ts";
import { type BeehiveObject, decodeObject, type Relations } from "../model/object.ts";
import type { GroupKind, ObjectId } from "../store.ts";
import { type KindTail, openKindTail, type TailWrite } from "./kind_tail.ts";
import {
  nextRetry,
  TAIL_PAGE,
  TAIL_PAGES_PER_DRAIN,
  WATCH_DRAIN_GAP,
  WATCH_DRAIN_GAP_MAX,
  WATCH_DRAIN_SHARE,
  WATCH_TAKE_WAIT,
} from "./_pacing.ts";
import { asError, FailureLog, isTerminal, SharedAnswers } from "./_feed.ts";
import { changeType, collectChanges, freezeObject, type RawChange } from "./_changes.ts";
import type { ObjectChange } from "./object_change.ts";
/** What the tailer needs of a feed it fans changes out to. */
export interface TailSubscriber {
  /** The drain whose changes the feed still owes a take of, or -1. */
  owedDrain: number;
  /** Hands the feed one drain's changes. */
  publish(batch: Published): void;
  /** Ends the feed with a terminal error. */
  fail(error: Error): void;
}

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
 * Starts, at once, the drain each of `engine`'s tailers owes (a wake its
 * pacing has put off), as the testing kit's `settle()` does at an instant
 * fake time does not leave. Resolves whether any drain started.
 */
export function drainOwedWatches(engine: Engine): boolean {
  let started = false;
  for (const tailer of registries.get(engine)?.values() ?? []) {
    if (tailer.drainOwed()) started = true;
  }
  return started;
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
  readonly answers = new SharedAnswers<ObjectChange<unknown, unknown>>();

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
  readonly #subs = new Set<TailSubscriber>();
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
  add(feed: TailSubscriber): void {
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
  remove(feed: TailSubscriber): void {
    this.taken(feed);
    if (this.#subs.delete(feed)) this.release();
  }

  /** Drops one lease; the last one stops the tailer. */
  release(): void {
    if (--this.leases <= 0) this.#stop();
  }

  /** A stream will hand out the last drain's shared changes: the next drain waits for it. */
  owe(feed: TailSubscriber): void {
    if (feed.owedDrain === this.#drainSerial) return;
    feed.owedDrain = this.#drainSerial;
    this.#owing++;
  }

  /** A stream has taken everything it was handed: the next drain need not wait for it. */
  taken(feed: TailSubscriber): void {
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

  /** Starts the drain a wake left, without its pacing; whether one started. */
  drainOwed(): boolean {
    if (this.#stopped || !this.#started || this.#running || !this.#dirty || this.#retry > 0) {
      return false;
    }
    void this.#run();
    return true;
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
export function decodeChange(
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
