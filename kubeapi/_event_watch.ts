/**
 * `GET /api/v1[/namespaces/<ns>]/events?watch=true` (`kubectl get events
 * -w`): the events the list would answer, as JSON lines — the current ones as
 * `ADDED` unless resumed from a `resourceVersion`, then each new run as
 * `ADDED` and each run observed again as `MODIFIED`. Events live in per-object
 * logs with no kind-wide change feed: the watches of one scope (namespace and
 * field selector) share one reader that re-reads them (at most
 * {@linkcode MAX_EVENTS} a read) every `pollInterval`
 * (`_event_reader.ts`); a watch takes the reader's changes into a backlog of at
 * most `WATCH_BACKLOG` and is ended when its client lets it fill. A watch is
 * bounded by `maxWatches` and `timeoutSeconds` (else 30–60 minutes) like
 * every other.
 *
 * @module
 */
import type { KubeContext } from "./_context.ts";
import { collectEvents, eventSelector, eventTable } from "./_events.ts";
import {
  includeObjectParam,
  intParam,
  MAX_TIMEOUT_SECONDS,
  negotiate,
  resourceVersionParam,
} from "./_request.ts";
import { concatBytes } from "./_bytes.ts";
import { checkNotTooLarge } from "./_resource_version.ts";
import { errorLine, generatedBody, watchEnd, watchHeaders, watchLine } from "./_watch_stream.ts";
import type { EventChange, EventSubscription } from "./_event_reader.ts";

/** `GET …/events?watch=true`. */
export async function watchEvents(
  ctx: KubeContext,
  request: Request,
  url: URL,
  namespace: string | undefined,
): Promise<Response> {
  const rep = negotiate(request);
  const include = includeObjectParam(url);
  const fields = eventSelector(url);
  const rv = resourceVersionParam(url);
  const timeoutSeconds = intParam(url, "timeoutSeconds", MAX_TIMEOUT_SECONDS);
  await checkNotTooLarge(ctx, rv);
  const abort = new AbortController();
  // Ended by the body's cancel, never request.signal (Deno.serve aborts it on every response).
  const end = watchEnd(timeoutSeconds, () => abort.abort());
  const encoder = new TextEncoder();
  /** A change's line for this watch: the JSON one is the same for every watch, encoded once. */
  const encode = (change: EventChange): Uint8Array => {
    if (rep.as === "table") {
      return encoder.encode(
        watchLine(change.type, eventTable(change.event, rep.version, include)),
      );
    }
    return change.json ??= encoder.encode(watchLine(change.type, change.event));
  };
  const scope = JSON.stringify([namespace ?? null, url.searchParams.get("fieldSelector") ?? ""]);
  async function* chunks(): AsyncGenerator<Uint8Array> {
    let sub: EventSubscription | undefined;
    try {
      sub = await ctx.eventReaders.subscribe(
        scope,
        () => collectEvents(ctx, fields, namespace),
      );
      if (abort.signal.aborted) return;
      const stop = () => sub!.close();
      abort.signal.addEventListener("abort", stop, { once: true });
      // A fresh watch gets every current run as ADDED; a resumed one those above its position.
      const from = rv === undefined || rv === 0 ? -1 : rv;
      const first = sub.current.filter(({ event }) =>
        Number((event.metadata as { resourceVersion: string }).resourceVersion) > from
      ).map(({ event }): EventChange => ({ type: "ADDED", event }));
      if (first.length > 0) yield concatBytes(first.map(encode));
      for (;;) {
        const changes = await sub.next();
        if (changes === undefined) break;
        yield concatBytes(changes.map(encode));
      }
      if (sub.error !== undefined) throw sub.error;
    } catch (error) {
      yield encoder.encode(errorLine(error));
    } finally {
      sub?.close();
    }
  }
  return new Response(generatedBody(chunks(), end), { headers: watchHeaders(rep) });
}
