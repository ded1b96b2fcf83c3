/**
 * The event watch: `watchEvents(id)`. One reader per stream reads the
 * object's event log above its cursor when the consumer asks for more, woken
 * by the object's event commits and the watch floor tick.
 *
 * @module
 */
import { WatchStream } from "./watch_stream.ts";
import { type Engine, kindName } from "../engine/_engine.ts";
import {
  NotFoundError,
  StoppedError,
  WatchTooNewError,
  WatchTooOldError,
} from "../model/errors.ts";
import { type Event, type EventType, toEvent } from "../model/object.ts";
import { FailureLog, Feed, isTerminal } from "./_feed.ts";
import { nextRetry } from "./_pacing.ts";
import type { GroupKind, ObjectId, RawEvent } from "../store.ts";

/** Runs read per page of an event tail. */
export const EVENT_PAGE = 256;

/** The event-log retention a stream reports: what the GC sweep enforces (0 = unbounded). */
export interface EventStreamRetention {
  /** The newest runs kept per (object, category) timeline; 0 = unbounded. */
  readonly perTimeline: number;
  /** The age (ms of `lastAt`) past which runs are dropped; 0 = unbounded. */
  readonly maxAge: number;
}

/** Options of `watchEvents`. */
export interface EventWatchOptions {
  /** Only this timeline (`""` is the default one); omitted = every timeline. */
  readonly category?: string;
  /** Only this type. */
  readonly type?: EventType;
  /** Only this reason. */
  readonly reason?: string;
  /** Only the newest N runs in the snapshot (the tail is not bounded); 0 = all. @default {0} */
  readonly limit?: number;
  /** Only runs active at or after this instant (`lastAt >= since`). */
  readonly since?: Date;
  /**
   * Stream the runs above this position instead of taking a snapshot. A
   * position retention has passed ends the stream with `WatchTooOldError`,
   * one above the object's log with `WatchTooNewError` (both from the iterator).
   */
  readonly resumeFrom?: number;
  /** Ends the stream quietly when it aborts. */
  readonly signal?: AbortSignal;
}

/** The filters a delivery must match. */
export interface EventFilter {
  readonly category?: string;
  readonly type?: EventType;
  readonly reason?: string;
  readonly since?: Date;
}

/** Whether a run matches the watch's filters. */
export function eventMatches(run: RawEvent, f: EventFilter): boolean {
  if (f.category !== undefined && run.category !== f.category) return false;
  if (f.type !== undefined && run.type !== f.type) return false;
  if (f.reason !== undefined && f.reason !== "" && run.reason !== f.reason) return false;
  if (f.since !== undefined && run.lastAt.getTime() < f.since.getTime()) return false;
  return true;
}

/** One event watch's reader. */
export class EventFeed extends Feed<Event> {
  readonly #engine: Engine;
  readonly #id: ObjectId;
  readonly #filter: EventFilter;
  readonly #failures: FailureLog;
  #cursor: number;
  /** Whether the object has been seen to exist (so a NotFoundError means collected). */
  #resolved: boolean;
  /** A resume not yet checked against the log's horizon and head. */
  #resuming: boolean;
  #dirty = true;
  #retry = 0;
  #backingOff = false;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    engine: Engine,
    id: ObjectId,
    filter: EventFilter,
    start: { cursor: number; resolved: boolean; resuming: boolean },
  ) {
    super();
    this.#engine = engine;
    this.#id = id;
    this.#filter = filter;
    this.#cursor = start.cursor;
    this.#resolved = start.resolved;
    this.#resuming = start.resuming;
    this.#failures = new FailureLog(engine, "an event watch read", { id });
    // Subscribed before any read: an event committed during subscribe is not lost.
    const offEvents = engine.writes.onEvents(id, () => this.#wake());
    const offClose = engine.writes.onClose(() =>
      this.fail(new StoppedError(`The event watch on ${id} ended: the Beehive stopped`))
    );
    this.onEnd(() => {
      offEvents();
      offClose();
      clearTimeout(this.#timer);
      this.#timer = undefined;
    });
  }

  /** Sets where the tail starts: the snapshot's position. */
  startAt(cursor: number, resolved: boolean): void {
    this.#cursor = cursor;
    this.#resolved = resolved;
  }

  #wake(): void {
    // While backing off a wake carries nothing new; honouring it would void the backoff.
    if (this.#backingOff) return;
    this.#dirty = true;
    this.notify();
  }

  #arm(ms: number): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#backingOff = false;
      this.#dirty = true;
      this.notify();
    }, ms);
  }

  protected override async fill(): Promise<boolean> {
    if (this.terminal !== undefined) return false;
    if (this.#dirty) {
      this.#dirty = false;
      clearTimeout(this.#timer);
      this.#timer = undefined;
      try {
        await this.#drain();
        this.#retry = 0;
        this.#failures.succeeded();
      } catch (error) {
        if (isTerminal(error) || error instanceof NotFoundError) throw error;
        this.#retry = nextRetry(this.#retry);
        this.#failures.failed(error, this.#retry);
        this.#backingOff = true;
        this.#arm(this.#retry);
        return false;
      }
      if (this.#dirty) return true;
    }
    // Waiting: the floor tick covers writes no local commit announced.
    if (this.#timer === undefined && !this.ended) {
      this.#arm(this.#engine.options.watchFloorInterval);
    }
    return false;
  }

  /** Reads one page above the cursor and delivers the runs matching the filters. */
  async #drain(): Promise<void> {
    const store = this.#engine.store;
    const id = this.#id;
    if (!this.#resolved) {
      try {
        await store.objects.getMeta(id);
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
        if (this.#resuming) {
          throw new NotFoundError(
            `Cannot resume the event watch on ${id}: no object holds the id (it may have been collected)`,
          );
        }
        return; // Not created yet: wait for it rather than report it collected.
      }
      this.#resolved = true;
    }
    const cursor = this.#cursor;
    let page;
    try {
      page = await store.events.listSince(id, {
        after: cursor,
        limit: EVENT_PAGE,
        category: this.#filter.category,
      });
    } catch (error) {
      if (error instanceof NotFoundError) {
        throw new NotFoundError(
          `The event watch on ${id} ended: the object was collected and its log with it`,
          { cause: error },
        );
      }
      throw error;
    }
    if (this.ended || this.terminal !== undefined) return;
    if (cursor < page.trimmedThrough) {
      throw new WatchTooOldError(
        `${this.#resuming ? "Cannot resume" : "The event watch"} on ${id} ${
          this.#resuming ? `from ${cursor}` : "fell behind retention"
        }: the log was trimmed through ${page.trimmedThrough}; watch again without resumeFrom`,
      );
    }
    if (this.#resuming && page.events.length === 0) {
      const head = Math.max(await store.events.maxVersion(id), page.trimmedThrough);
      if (cursor > head) {
        throw new WatchTooNewError(
          `Cannot resume the event watch on ${id} from ${cursor}: its log holds nothing above ${head}; watch again without resumeFrom`,
        );
      }
    }
    this.#resuming = false;
    if (page.events.length === 0) return;
    this.push(page.events.filter((run) => eventMatches(run, this.#filter)).map(toEvent));
    this.#cursor = page.events[page.events.length - 1].resourceVersion;
    if (page.events.length === EVENT_PAGE) this.#dirty = true;
  }
}

/**
 * A live view of one object's event log: the runs matching the query as of
 * the subscribe (newest first), the position they were read at, then every
 * run the log grows by above it, oldest first. An extended run is delivered
 * again with a higher `resourceVersion` and `count`: replace it in place.
 * Iterated once, by one consumer: `for await (const run of stream)`.
 */
export class EventStream extends WatchStream<Event> {
  /** The snapshot, newest first; empty on a resume. */
  readonly runs: Event[];
  /** The position the snapshot is complete as of (the `resumeFrom` given, on a resume). */
  readonly resourceVersion: number;
  /** The configured event retention (`eventRetention`), 0 where unbounded. */
  readonly retention: EventStreamRetention;

  /** @internal Use `client.watchEvents(id)`. */
  constructor(
    runs: Event[],
    resourceVersion: number,
    retention: EventStreamRetention,
    feed: EventFeed,
  ) {
    super(feed);
    this.runs = runs;
    this.resourceVersion = resourceVersion;
    this.retention = retention;
  }
}

/**
 * Subscribes, then reads the snapshot (or sets up the resume): resolves to
 * the stream.
 */
export async function openEventWatch(
  engine: Engine,
  gk: GroupKind,
  id: ObjectId,
  options: EventWatchOptions,
): Promise<EventStream> {
  const filter: EventFilter = {
    category: options.category,
    type: options.type,
    reason: options.reason,
    since: options.since,
  };
  const retention = {
    perTimeline: Math.max(0, engine.options.eventRetention.perTimeline),
    maxAge: Math.max(0, engine.options.eventRetention.maxAge),
  };
  const resuming = options.resumeFrom !== undefined;
  const feed = new EventFeed(engine, id, filter, {
    cursor: options.resumeFrom ?? 0,
    resolved: false,
    resuming,
  });
  try {
    let runs: Event[] = [];
    let position = options.resumeFrom ?? 0;
    if (!resuming) {
      const store = engine.store;
      // The horizon before the snapshot: a trim racing it can only end the
      // stream with WatchTooOldError, never skip a run.
      let horizon = 0;
      let resolved = true;
      try {
        horizon = (await store.events.listSince(id, {
          after: 0,
          limit: 0,
          category: options.category,
        })).trimmedThrough;
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
        resolved = false;
      }
      const snap = await store.events.snapshot(id, {
        category: options.category,
        type: options.type,
        reason: options.reason,
        since: options.since,
        limit: options.limit,
      });
      runs = snap.items.map(toEvent);
      position = Math.max(snap.resourceVersion, horizon);
      feed.startAt(position, resolved);
    }
    if (engine.state === "stopped") {
      feed.fail(
        new StoppedError(`The event watch on ${kindName(gk)} ${id} ended: the Beehive stopped`),
      );
    }
    feed.follow(options.signal);
    return new EventStream(runs, position, retention, feed);
  } catch (error) {
    feed.close();
    throw error;
  }
}
