/**
 * The shared reader of the events watches: events live in per-object logs
 * with no kind-wide change feed, so they are re-read every `pollInterval` —
 * once per scope (a namespace and field selector), however many watches of it
 * are open. Each read is compared with the last: a run above the reader's
 * position is a change, `ADDED` when the reader had not seen its name,
 * `MODIFIED` when it had (observed again). Every watch of the scope gets the
 * same changes in a backlog of at most `backlog` changes of its own; a watch
 * that lets it fill is ended, as the object watches end theirs. The reader
 * stops, and forgets what it read, when its last watch ends.
 *
 * @module
 */
import { WatchBacklog } from "./_watch_backlog.ts";

/** One event as read: the core/v1 `Event` and its run's version. */
export interface ReadEvent {
  readonly event: Record<string, unknown>;
}

/** One change a read found. */
export interface EventChange {
  readonly type: "ADDED" | "MODIFIED";
  readonly event: Record<string, unknown>;
  /** Its JSON watch line, encoded by the first watch that sends it as JSON. */
  json?: Uint8Array;
}

/** One watch's end of a reader. */
export interface EventSubscription {
  /** The scope's events as of the reader's last read, oldest first (the watch's starting point). */
  readonly current: readonly ReadEvent[];
  /** The changes since, as they come: waits while there are none; `undefined` once it ended. */
  next(): Promise<readonly EventChange[] | undefined>;
  /** Why it ended, when a read failed. */
  readonly error: unknown;
  /** Whether it was ended because its backlog filled. */
  readonly overflowed: boolean;
  /** Leaves the reader (it stops with its last watch). */
  close(): void;
}

/** The version of a read event's run. */
function versionOf(e: ReadEvent): number {
  return Number((e.event.metadata as { resourceVersion: string }).resourceVersion);
}

function nameOf(e: ReadEvent): string {
  return (e.event.metadata as { name: string }).name;
}

/** The most run names a reader remembers to tell a new run from one observed again. */
const MAX_SEEN = 100_000;

/** One scope's reader. */
class EventReader {
  readonly #read: () => Promise<readonly ReadEvent[]>;
  readonly #interval: number;
  readonly #backlog: number;
  readonly #idle: () => void;
  readonly #subscribers = new Set<WatchBacklog<EventChange>>();
  #current: readonly ReadEvent[] | undefined;
  #cursor = -1;
  #seen = new Set<string>();
  #reading: Promise<unknown> | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Watches waiting for a read to join on. */
  #joining = 0;

  constructor(
    read: () => Promise<readonly ReadEvent[]>,
    interval: number,
    backlog: number,
    idle: () => void,
  ) {
    this.#read = read;
    this.#interval = interval;
    this.#backlog = backlog;
    this.#idle = idle;
  }

  async subscribe(): Promise<EventSubscription> {
    // The starting point is the last read, taken in the same turn as joining: no change is lost
    // or sent twice. With no read yet (or one in flight), the watch waits for it.
    this.#joining++;
    try {
      while (this.#reading !== undefined || this.#current === undefined) {
        this.#reading ??= this.#poll();
        const failed = await this.#reading;
        if (failed !== undefined) throw failed;
      }
    } finally {
      this.#joining--;
    }
    const sub = new WatchBacklog<EventChange>(this.#backlog);
    this.#subscribers.add(sub);
    this.#schedule();
    const current = this.#current;
    return {
      current,
      next: () => sub.take(),
      get error() {
        return sub.error;
      },
      get overflowed() {
        return sub.overflowed;
      },
      close: () => {
        sub.end();
        this.#subscribers.delete(sub);
        if (this.#subscribers.size === 0) this.#stop();
      },
    };
  }

  /** One read, handed to every watch; resolves to its error when it failed. */
  async #poll(): Promise<unknown> {
    let failed: unknown;
    try {
      const items = await this.#read();
      const changes: EventChange[] = [];
      let top = this.#cursor;
      for (const item of items) {
        const at = versionOf(item);
        if (at <= this.#cursor) continue;
        const name = nameOf(item);
        changes.push({ type: this.#seen.has(name) ? "MODIFIED" : "ADDED", event: item.event });
        // Bounded: a run forgotten here is announced ADDED again if observed again.
        if (this.#seen.size >= MAX_SEEN) this.#seen.clear();
        this.#seen.add(name);
        top = Math.max(top, at);
      }
      this.#cursor = Math.max(top, 0);
      this.#current = items;
      if (changes.length > 0) { for (const sub of this.#subscribers) sub.push(changes); }
    } catch (error) {
      failed = error;
      for (const sub of this.#subscribers) sub.end(error);
      this.#subscribers.clear();
      this.#forget();
    } finally {
      this.#reading = undefined;
    }
    // The last watch left while this read ran, and none waits for it: nothing is kept.
    if (this.#subscribers.size === 0 && this.#joining === 0) this.#forget();
    this.#schedule();
    return failed;
  }

  /** The next read, while a watch is open and none is due or running. */
  #schedule(): void {
    if (this.#subscribers.size === 0 || this.#timer !== undefined || this.#reading) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#subscribers.size > 0 && this.#reading === undefined) this.#reading = this.#poll();
    }, this.#interval);
  }

  #stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#forget();
    this.#idle();
  }

  #forget(): void {
    this.#current = undefined;
    this.#cursor = -1;
    this.#seen = new Set();
  }
}

/** The readers of every open events watch, one per scope. */
export class EventReaders {
  readonly #readers = new Map<string, EventReader>();
  readonly #interval: number;
  readonly #backlog: number;

  /** Readers that re-read every `interval` ms and end a watch past `backlog` pending changes. */
  constructor(interval: number, backlog: number) {
    this.#interval = interval;
    this.#backlog = backlog;
  }

  /**
   * Joins the reader of `scope`, which reads its events with `read` (the
   * first watch of a scope starts it).
   * @throws the first read's error, when it fails.
   */
  subscribe(
    scope: string,
    read: () => Promise<readonly ReadEvent[]>,
  ): Promise<EventSubscription> {
    let reader = this.#readers.get(scope);
    if (reader === undefined) {
      const made: EventReader = new EventReader(read, this.#interval, this.#backlog, () => {
        if (this.#readers.get(scope) === made) this.#readers.delete(scope);
      });
      reader = made;
      this.#readers.set(scope, reader);
    }
    return reader.subscribe();
  }
}
