/**
 * What the route handlers read: the store, the Beehive its clients come from
 * (never started: the server only reads and marks), and one request to a
 * served kind.
 *
 * @module
 */
import type { Beehive } from "@beehive/beehive";
import type { Store } from "@beehive/beehive/store";
import type { ServedKind, ServedKinds } from "./_kinds.ts";
import type { WatchEncodings } from "./_watch_cache.ts";
import type { EventReaders } from "./_event_reader.ts";

/** What bounds one request body: its size in bytes and how deep it nests. */
export interface BodyLimits {
  /** The most bytes read. */
  readonly maxBodyBytes: number;
  /** The deepest a decoded body may nest (`{}` is 1). */
  readonly maxDepth: number;
}

/** The handler's shared state. */
export interface KubeContext {
  readonly store: Store;
  readonly bh: Beehive;
  readonly kinds: ServedKinds;
  /** The path the API is mounted under, as requests spell it (`""` at the root). */
  readonly base: string;
  /** What bounds a request body: `maxBodyBytes`, and the store's nesting depth plus a margin. */
  readonly body: BodyLimits;
  /** The object size limit: the most a JSON patch may grow a resource by, in bytes. */
  readonly objectBytes: number;
  /** What the watches of every kind encode once and share. */
  readonly watches: WatchEncodings;
  /** The readers the events watches share, one per namespace and field selector. */
  readonly eventReaders: EventReaders;
}

/** A request addressed to one served kind. */
export interface KindRequest {
  readonly ctx: KubeContext;
  readonly kind: ServedKind;
  readonly request: Request;
  readonly url: URL;
  /**
   * The namespace the path names (`/namespaces/<ns>/…`), for a namespaced
   * kind; `undefined` on a cluster-scoped kind's paths and on a namespaced
   * kind's cluster-wide list, which spans every namespace.
   */
  readonly namespace?: string;
}
