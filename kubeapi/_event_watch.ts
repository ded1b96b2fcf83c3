/**
 * `GET /api/v1[/namespaces/<ns>]/events?watch=true` (`kubectl get events
 * -w`): the events the list would answer, as JSON lines — the current ones as
 * `ADDED` unless resumed from a `resourceVersion`, then each new run as
 * `ADDED` and each run observed again as `MODIFIED`. Events live in per-object
 * logs with no kind-wide change feed, so the stream re-reads them (at most
 * {@linkcode MAX_EVENTS} a read) every `pollInterval`; a watch is bounded by
 * `maxWatches` like every other.
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
import { tableType } from "./_tables.ts";
import { checkNotTooLarge } from "./_resource_version.ts";
import { failureStatus, toFailure } from "./_status.ts";
import { watchSeconds } from "./_watch.ts";

/** The most run names a watch remembers to tell a new run from one observed again. */
const MAX_SEEN = 100_000;

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
  const end = () => abort.abort();
  if (request.signal.aborted) end();
  else request.signal.addEventListener("abort", end, { once: true });
  const timer = abort.signal.aborted
    ? undefined
    : setTimeout(end, watchSeconds(timeoutSeconds) * 1000);
  abort.signal.addEventListener("abort", () => {
    clearTimeout(timer);
    request.signal.removeEventListener("abort", end);
  }, { once: true });
  const encoder = new TextEncoder();
  const line = (type: string, object: unknown) => `${JSON.stringify({ type, object })}\n`;
  /** The position above which a run is new to the watcher; every run's version at the last read. */
  let cursor = rv === undefined || rv === 0 ? -1 : rv;
  const seen = new Set<string>();
  const wait = () =>
    new Promise<void>((resolve) => {
      if (abort.signal.aborted) return resolve();
      const t = setTimeout(done, ctx.pollInterval);
      function done() {
        clearTimeout(t);
        abort.signal.removeEventListener("abort", done);
        resolve();
      }
      abort.signal.addEventListener("abort", done, { once: true });
    });
  async function* chunks(): AsyncGenerator<Uint8Array> {
    let first = true;
    try {
      while (!abort.signal.aborted) {
        if (!first) await wait();
        if (abort.signal.aborted) return;
        const items = await collectEvents(ctx, fields, namespace);
        let text = "";
        let top = cursor;
        for (const { event } of items) {
          const meta = event.metadata as { name: string; resourceVersion: string };
          const at = Number(meta.resourceVersion);
          // A resumed watch knows the runs below its position; a fresh one gets them all as ADDED.
          if (first && cursor >= 0 && at <= cursor) seen.add(meta.name);
          if (at <= cursor) continue;
          const object = rep.as === "table" ? eventTable(event, rep.version, include) : event;
          text += line(seen.has(meta.name) ? "MODIFIED" : "ADDED", object);
          // Bounded: a run forgotten here is announced ADDED again if observed again.
          if (seen.size >= MAX_SEEN) seen.clear();
          seen.add(meta.name);
          top = Math.max(top, at);
        }
        cursor = Math.max(top, 0);
        first = false;
        if (text !== "") yield encoder.encode(text);
      }
    } catch (error) {
      const failure = toFailure(error);
      yield encoder.encode(
        line("ERROR", failureStatus(failure.reason, failure.message, failure.details)),
      );
    }
  }
  const it = chunks();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await it.next();
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
      await it.return(undefined);
    },
  });
  const type = rep.as === "table" ? tableType(rep.version) : "application/json";
  return new Response(body, { headers: { "content-type": type, "cache-control": "no-store" } });
}
