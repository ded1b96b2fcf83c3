/**
 * Watches: `?watch=true` as a chunked stream of JSON lines
 * `{"type":"ADDED|MODIFIED|DELETED","object":…}`. Every watch of a kind
 * subscribes to the library's one shared reader of that kind, from the
 * `resourceVersion` asked or the store's current position; without one, the
 * current objects go first as ADDED, read from the store a page at a time as
 * the client takes them (an object written after the watch began comes from
 * the reader instead). What the reader hands a watcher waits in a backlog of
 * at most `WATCH_BACKLOG` changes; a client that does not take them is
 * disconnected once it is full. A watch lasts `timeoutSeconds`, or a random 30
 * to 60 minutes. Each object is a one-row Table when a Table was asked. A
 * position the log no longer holds ends the stream with an `ERROR` event
 * carrying a 410 `Expired` Status, as the Kubernetes API server's watch cache
 * does. `sendInitialEvents=true` gets the current objects as ADDED, then a
 * BOOKMARK annotated `k8s.io/initial-events-end`.
 *
 * @module
 */
import type { ObjectChange } from "@beehive/beehive";
import type { KindRequest } from "./_context.ts";
import type { ServedKind } from "./_kinds.ts";
import { type AnyObject, resolveOwners, toResource } from "./_objects.ts";
import { clientOf } from "./_reads.ts";
import { checkNotTooLarge } from "./_resource_version.ts";
import {
  boolParam,
  includeObjectParam,
  intParam,
  MAX_TIMEOUT_SECONDS,
  negotiate,
  param,
  type Representation,
  resourceVersionParam,
} from "./_request.ts";
import { parseFieldSelector, parseLabelSelector } from "./_selectors.ts";
import { KubeApiFailure } from "./_status.ts";
import { type IncludeObject, printerOf, table } from "./_tables.ts";
import type { InitialPage } from "./_watch_cache.ts";
import { concatBytes } from "./_bytes.ts";
import { errorLine, watchBody, watchEnd, watchHeaders, watchLine } from "./_watch_stream.ts";
import { WATCH_BACKLOG, WatchBacklog } from "./_watch_backlog.ts";

const EVENT_TYPES = { Added: "ADDED", Modified: "MODIFIED", Deleted: "DELETED" } as const;

/** The current objects one page of the initial state reads and sends (their owners resolved together). */
const SNAPSHOT_CHUNK = 100;

/** One watch event to send. */
interface Outgoing {
  readonly type: string;
  readonly obj: AnyObject;
  /** The change's position; a snapshot object's own version when absent. */
  readonly resourceVersion?: number;
}

/** What a watch request asked for, checked before the stream opens. */
interface WatchRequest {
  readonly rep: Representation;
  readonly include: IncludeObject;
  /** The field selector's test; the label selector is the watch's own. */
  readonly keep: (obj: AnyObject) => boolean;
  /** The label selector, checked: the watch reports objects leaving it as DELETED, entering as ADDED. */
  readonly labelSelector: string | undefined;
  /** The field selector as given (`keep` is its test). */
  readonly fieldSelector: string | undefined;
  /** Resume above this position; `undefined` = the current objects as ADDED first. */
  readonly resumeFrom: number | undefined;
  readonly initialEventsEnd: boolean;
  readonly timeoutSeconds: number | undefined;
}

function invalid(message: string, field: string): KubeApiFailure {
  return new KubeApiFailure("Invalid", message, {
    causes: [{ field, message, reason: "FieldValueInvalid" }],
  });
}

function parseWatch(request: Request, url: URL): WatchRequest {
  const rep = negotiate(request);
  const fieldSelector = param(url, "fieldSelector");
  const fields = parseFieldSelector(fieldSelector);
  const labelSelector = param(url, "labelSelector");
  parseLabelSelector(labelSelector);
  const rv = resourceVersionParam(url);
  const match = param(url, "resourceVersionMatch");
  const initialEvents = boolParam(url, "sendInitialEvents");
  if (initialEvents && match !== "NotOlderThan") {
    throw invalid(
      "sendInitialEvents requires resourceVersionMatch=NotOlderThan",
      "resourceVersionMatch",
    );
  }
  if (initialEvents && !boolParam(url, "allowWatchBookmarks")) {
    throw invalid("sendInitialEvents requires allowWatchBookmarks=true", "allowWatchBookmarks");
  }
  if (!initialEvents && match !== undefined && match !== "") {
    throw invalid("resourceVersionMatch is forbidden for watch", "resourceVersionMatch");
  }
  return {
    rep,
    include: includeObjectParam(url),
    keep: (obj) => fields.matches(obj),
    labelSelector,
    fieldSelector,
    resumeFrom: initialEvents || rv === undefined || rv === 0 ? undefined : rv,
    initialEventsEnd: initialEvents,
    timeoutSeconds: intParam(url, "timeoutSeconds", MAX_TIMEOUT_SECONDS),
  };
}

/**
 * `GET …/<plural>?watch=true`. The watch subscribes to the kind's shared
 * reader from the store's current position (or the `resourceVersion` asked)
 * and takes its changes as they come into a backlog of at most
 * {@linkcode WATCH_BACKLOG}; without a `resourceVersion` it first streams the
 * current objects a page at a time, read from the store as the client takes
 * them, so no watcher holds the kind.
 */
export async function watchResources(r: KindRequest): Promise<Response> {
  const { ctx, kind, request, url } = r;
  const w = parseWatch(request, url);
  await checkNotTooLarge(ctx, w.resumeFrom);
  const printer = w.rep.as === "table" ? await printerOf(ctx, kind) : undefined;
  const headers = watchHeaders(w.rep);
  if (request.method === "HEAD") return new Response(null, { headers });
  const client = clientOf(r);
  const abort = new AbortController();
  // The initial state is every object as of `from`, then every change above it.
  const from = w.resumeFrom ?? await ctx.store.getLatestResourceVersion();
  const stream = await client.watchList({
    resumeFrom: from,
    labelSelector: w.labelSelector,
    load: ["owner"],
    signal: abort.signal,
  });
  const encoder = new TextEncoder();
  // A change's JSON line is the same for every watcher of the kind: the first encodes it.
  const lines = w.rep.as === "json" ? ctx.watches.lines : undefined;
  /** The JSON lines of `out`, their owners resolved together. */
  const encodeLines = async (out: readonly Outgoing[]): Promise<Uint8Array[]> => {
    const owners = await resolveOwners(ctx.store, out.map((e) => e.obj));
    return out.map(({ type, obj, resourceVersion }) => {
      const answered = { obj, owner: owners.get(obj.id), resourceVersion };
      const object = printer !== undefined && w.rep.as === "table"
        ? table(
          w.rep.version,
          [printer.row({ ...answered, include: w.include, now: Date.now() })],
          { resourceVersion: String(resourceVersion ?? obj.resourceVersion) },
          printer.columns,
        )
        : toResource(kind, answered);
      return encoder.encode(watchLine(type, object));
    });
  };
  /** One chunk of watch events, each line encoded once for every watcher of the kind (JSON). */
  const encode = async (out: readonly Outgoing[]): Promise<Uint8Array> => {
    let chunks: Uint8Array[];
    if (lines === undefined) chunks = await encodeLines(out);
    else {
      const keys = out.map((e) => lineKey(kind, e));
      // The lines no watcher has encoded or is encoding: this one encodes them, once each.
      const fresh = new Map<string, number>();
      const missing: Outgoing[] = [];
      for (const [i, key] of keys.entries()) {
        if (lines.has(key) || fresh.has(key)) continue;
        fresh.set(key, missing.length);
        missing.push(out[i]);
      }
      const encoded = missing.length === 0 ? undefined : encodeLines(missing);
      chunks = await Promise.all(keys.map(async (key) => {
        const line = await lines.get(
          key,
          async () => ({ bytes: (await encoded!)[fresh.get(key)!] }),
        );
        return line.bytes;
      }));
    }
    // A copy: the lines are shared, and a response may hand its chunks on.
    return concatBytes(chunks);
  };

  // The backlog: changes read from the shared reader that the client has not taken yet.
  const backlog = new WatchBacklog<Outgoing>(WATCH_BACKLOG);
  const pump = (async () => {
    let failure: unknown;
    try {
      for await (const changes of stream.batches()) {
        const out = outgoing(changes, w);
        if (out.length > 0 && !backlog.push(out)) break;
      }
      failure = stream.error;
    } catch (error) {
      failure = error;
    } finally {
      backlog.end(failure);
    }
  })();
  let failureSent = false;

  let initial = w.resumeFrom === undefined;
  let after = 0;
  let bookmarkDue = w.initialEventsEnd;
  /** The next chunk to send, or `undefined` when the watch is over. */
  const next = async (): Promise<Uint8Array | undefined> => {
    while (initial && !ended) {
      const read = async (): Promise<InitialPage> => {
        const page = await client.list({
          load: ["owner"],
          after,
          limit: SNAPSHOT_CHUNK,
          labelSelector: w.labelSelector,
        });
        // An object written above `from` is not sent as of now: its changes come from the reader.
        const out: Outgoing[] = [];
        for (const obj of page) {
          if (obj.resourceVersion <= from && w.keep(obj)) out.push({ type: "ADDED", obj });
        }
        return {
          bytes: out.length > 0 ? await encode(out) : new Uint8Array(0),
          after: page.length > 0 ? page[page.length - 1].id : after,
          last: page.length < SNAPSHOT_CHUNK,
        };
      };
      // A Table row carries the object's age: only JSON pages are shared.
      const page = w.rep.as === "json"
        ? await ctx.watches.pages.get(pageKey(r, w, from, after), read)
        : await read();
      initial = !page.last;
      after = page.after;
      if (page.bytes.byteLength > 0) return page.bytes;
    }
    if (bookmarkDue) {
      bookmarkDue = false;
      return bookmark(kind, from, encoder);
    }
    const out = ended ? undefined : await backlog.take();
    if (ended || backlog.overflowed) return undefined;
    if (out !== undefined) return await encode(out);
    if (backlog.error !== undefined && !failureSent) {
      failureSent = true;
      return encoder.encode(errorLine(backlog.error));
    }
    return undefined;
  };

  let ended = false;
  // Ended by the body's cancel (a server cancels it when the client leaves), never by
  // request.signal: Deno.serve aborts that on every completed response, and warns when read.
  const end = watchEnd(w.timeoutSeconds, () => {
    ended = true;
    abort.abort();
    stream.close();
    backlog.end();
  });
  // Pulled, not pushed: a page of the initial state is read only when the client takes the last.
  return new Response(watchBody(next, end, () => pump), { headers });
}

/** What determines a change's JSON line, as a key: its kind, object, version and type. */
function lineKey(kind: ServedKind, e: Outgoing): string {
  return `${kind.group}/${kind.kind}/${e.obj.id}@${
    e.resourceVersion ?? e.obj.resourceVersion
  }/${e.obj.resourceVersion}/${e.type}`;
}

/** What determines one page of a watch's initial state, as a key. */
function pageKey(r: KindRequest, w: WatchRequest, from: number, after: number): string {
  return JSON.stringify([
    r.kind.group,
    r.kind.kind,
    r.namespace ?? null,
    from,
    after,
    w.labelSelector ?? null,
    w.fieldSelector ?? null,
  ]);
}

/** The watch events `changes` make for this request: what it keeps, typed as Kubernetes types them. */
function outgoing(changes: readonly ObjectChange<unknown, unknown>[], w: WatchRequest): Outgoing[] {
  const out: Outgoing[] = [];
  for (const change of changes) {
    // A collected object whose final state does not decode has no name to report.
    if (change.object === undefined || !w.keep(change.object)) continue;
    out.push({
      type: EVENT_TYPES[change.type],
      obj: change.object,
      resourceVersion: change.resourceVersion,
    });
  }
  return out;
}

function bookmark(kind: ServedKind, rv: number, encoder: TextEncoder): Uint8Array {
  const object = {
    apiVersion: kind.apiVersion,
    kind: kind.kind,
    metadata: {
      resourceVersion: String(rv),
      annotations: { "k8s.io/initial-events-end": "true" },
    },
  };
  return encoder.encode(watchLine("BOOKMARK", object));
}
