/**
 * Watches: `?watch=true` as a chunked stream of JSON lines
 * `{"type":"ADDED|MODIFIED|DELETED","object":…}` over the library's
 * `watchList` (resumed with `resumeFrom` from a given `resourceVersion`).
 * Each object is a one-row Table when a Table was asked. A position the log
 * no longer holds ends the stream with an `ERROR` event carrying a 410
 * `Expired` Status, as the Kubernetes API server's watch cache does.
 * `sendInitialEvents=true` gets the current objects as ADDED, then a
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
import { failureStatus, KubeApiFailure, toFailure } from "./_status.ts";
import { type IncludeObject, printerOf, table, tableType } from "./_tables.ts";

const EVENT_TYPES = { Added: "ADDED", Modified: "MODIFIED", Deleted: "DELETED" } as const;

/** The current objects a snapshot sends per chunk (their owners resolved together). */
const SNAPSHOT_CHUNK = 256;

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
  const fields = parseFieldSelector(param(url, "fieldSelector"));
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
    resumeFrom: initialEvents || rv === undefined || rv === 0 ? undefined : rv,
    initialEventsEnd: initialEvents,
    timeoutSeconds: intParam(url, "timeoutSeconds", MAX_TIMEOUT_SECONDS),
  };
}

/** `GET …/<plural>?watch=true`. */
export async function watchResources(r: KindRequest): Promise<Response> {
  const { ctx, kind, request, url } = r;
  const w = parseWatch(request, url);
  await checkNotTooLarge(ctx, w.resumeFrom);
  const printer = w.rep.as === "table" ? await printerOf(ctx, kind) : undefined;
  const abort = new AbortController();
  const stream = await clientOf(r).watchList({
    resumeFrom: w.resumeFrom,
    labelSelector: w.labelSelector,
    load: ["owner"],
    signal: abort.signal,
  });
  const type = w.rep.as === "table" ? tableType(w.rep.version) : "application/json";
  const headers = { "content-type": type, "cache-control": "no-store" };
  if (request.method === "HEAD") {
    stream.close();
    return new Response(null, { headers });
  }
  const encoder = new TextEncoder();
  /** One chunk of watch events: their owners resolved together, one JSON line each. */
  const encode = async (out: readonly Outgoing[]): Promise<Uint8Array> => {
    const owners = await resolveOwners(ctx.store, out.map((e) => e.obj));
    let text = "";
    for (const { type, obj, resourceVersion } of out) {
      const answered = { obj, owner: owners.get(obj.id), resourceVersion };
      const object = printer !== undefined && w.rep.as === "table"
        ? table(
          w.rep.version,
          [printer.row({ ...answered, include: w.include, now: Date.now() })],
          { resourceVersion: String(resourceVersion ?? obj.resourceVersion) },
          printer.columns,
        )
        : toResource(kind, answered);
      text += `${JSON.stringify({ type, object })}\n`;
    }
    return encoder.encode(text);
  };
  async function* events(): AsyncGenerator<Uint8Array> {
    try {
      if (w.resumeFrom === undefined) {
        const kept = stream.objects.filter((obj) => w.keep(obj));
        for (let i = 0; i < kept.length; i += SNAPSHOT_CHUNK) {
          yield await encode(
            kept.slice(i, i + SNAPSHOT_CHUNK).map((obj) => ({ type: "ADDED", obj })),
          );
        }
      }
      if (w.initialEventsEnd) yield bookmark(kind, stream.resourceVersion, encoder);
      // A batch per step: what one drain handed the stream goes out as one chunk.
      for await (const changes of stream.batches()) {
        const out = outgoing(changes, w);
        if (out.length > 0) yield await encode(out);
      }
      if (stream.error !== undefined) yield errorEvent(stream.error, encoder);
    } catch (error) {
      yield errorEvent(error, encoder);
    }
  }
  const chunks = events();
  let ended = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const end = () => {
    if (ended) return;
    ended = true;
    clearTimeout(timer);
    request.signal.removeEventListener("abort", end);
    abort.abort();
    stream.close();
  };
  if (request.signal.aborted) end();
  else request.signal.addEventListener("abort", end);
  if (!ended && w.timeoutSeconds !== undefined && w.timeoutSeconds > 0) {
    timer = setTimeout(end, w.timeoutSeconds * 1000);
  }
  // Pulled, not pushed: the watch is read only as fast as the client reads, and
  // the library collapses what a slow client has not taken yet.
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await chunks.next();
      try {
        if (next.done) {
          end();
          controller.close();
        } else controller.enqueue(next.value);
      } catch {
        end(); // the reader cancelled meanwhile
      }
    },
    async cancel() {
      end();
      await chunks.return(undefined);
    },
  });
  return new Response(body, { headers });
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
  return encoder.encode(`${JSON.stringify({ type: "BOOKMARK", object })}\n`);
}

function errorEvent(error: unknown, encoder: TextEncoder): Uint8Array {
  const failure = toFailure(error);
  const object = failureStatus(failure.reason, failure.message, failure.details);
  return encoder.encode(`${JSON.stringify({ type: "ERROR", object })}\n`);
}
