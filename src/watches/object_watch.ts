/**
 * Object watches: `watch`, `watchList` and `watchOwnedObjects`. One shared
 * tailer per watched kind reads the kind's write log above its cursor,
 * decodes each change once and fans the changes out; a stream that keeps up
 * hands out the shared changes as they are, one that is behind collapses
 * them in its own held map, so a slow consumer stalls only itself and loses
 * nothing.
 *
 * @module
 */
import { WatchStream } from "./watch_stream.ts";
import { type Engine, kindName } from "../engine/_engine.ts";
import { StoppedError } from "../model/errors.ts";
import type { BeehiveObject, LoadKey } from "../model/object.ts";
import type { LabelSelector } from "../model/label_selector.ts";
import type { GroupKind, RawObject } from "../store.ts";
import type { Feed } from "./_feed.ts";
import { acquireTailer } from "./_tailer.ts";
import { freezeObject } from "./_changes.ts";
import { type FeedScope, ObjectFeed } from "./_object_feed.ts";
import type { ObjectChange } from "./object_change.ts";

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

/** Options of `watchList` and `watchOwnedObjects`. */
export interface WatchListOptions extends WatchOptions {
  /**
   * Only objects whose labels match: the snapshot holds the matching ones, an
   * object that comes to match is streamed as `"Added"` and one that stops
   * matching as `"Deleted"` (carrying its state).
   * @throws {InvalidOptionError} the selector is malformed.
   * @default {undefined} (every object)
   */
  readonly labelSelector?: LabelSelector;
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
      if (o.scope.selector !== undefined) {
        // What matches now, and as of when: the resume point's view for every object not changed since.
        const now = await o.snapshot();
        feed.seedSelection(now.items.map((r) => r.id), now.resourceVersion);
      }
      feed.resume(o.resumeFrom);
      finish(o, feed);
      return { feed, objects: [], resourceVersion: o.resumeFrom };
    }
    const snap = await o.snapshot();
    if (o.scope.selector !== undefined) feed.seedSelection(snap.items.map((r) => r.id));
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
