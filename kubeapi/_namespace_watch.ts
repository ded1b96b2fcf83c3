/**
 * `GET /api/v1/namespaces?watch=true`: every namespace as `ADDED` (unless
 * resumed from a `resourceVersion`), then the stored namespaces' changes —
 * created, `Terminating`, removed — as JSON lines, filtered by the
 * `metadata.name` field selector and the label selector. A namespace only in
 * use by objects is in the initial events; its stream has no changes.
 *
 * @module
 */
import type { KubeContext } from "./_context.ts";
import { allNamespaces, namespaceClient, namespaceTable, toNamespace } from "./_namespaces.ts";
import { drainTerminating } from "./_namespace_writes.ts";
import { checkNotTooLarge } from "./_resource_version.ts";
import {
  includeObjectParam,
  intParam,
  MAX_TIMEOUT_SECONDS,
  negotiate,
  param,
  resourceVersionParam,
} from "./_request.ts";
import { tableType } from "./_tables.ts";
import { parseFieldSelector, parseLabelSelector } from "./_selectors.ts";
import { failureStatus, toFailure } from "./_status.ts";
import { watchSeconds } from "./_watch.ts";

const TYPES = { Added: "ADDED", Modified: "MODIFIED", Deleted: "DELETED" } as const;

/** `GET /api/v1/namespaces?watch=true`. */
export async function watchNamespaces(
  ctx: KubeContext,
  request: Request,
  url: URL,
): Promise<Response> {
  const rep = negotiate(request);
  const include = includeObjectParam(url);
  const labels = parseLabelSelector(param(url, "labelSelector"));
  const fields = parseFieldSelector(param(url, "fieldSelector"));
  const rv = resourceVersionParam(url);
  const timeoutSeconds = intParam(url, "timeoutSeconds", MAX_TIMEOUT_SECONDS);
  const keep = (ns: Record<string, unknown>) => {
    const meta = ns.metadata as { name: string; labels: Record<string, string> };
    return labels(meta.labels) && fields.matches({ name: meta.name, namespace: "" });
  };
  await checkNotTooLarge(ctx, rv);
  await drainTerminating(ctx);
  const abort = new AbortController();
  const resumeFrom = rv === undefined || rv === 0 ? undefined : rv;
  const stream = await namespaceClient(ctx).watchList({ resumeFrom, signal: abort.signal });
  const initial = resumeFrom === undefined ? (await allNamespaces(ctx)).filter(keep) : [];
  const encoder = new TextEncoder();
  const line = (type: string, object: unknown) =>
    encoder.encode(`${JSON.stringify({ type, object })}\n`);
  const as = (ns: Record<string, unknown>) =>
    rep.as === "table" ? namespaceTable(ns, rep.version, include) : ns;
  async function* events(): AsyncGenerator<Uint8Array> {
    try {
      for (const ns of initial) yield line("ADDED", as(ns));
      for await (const changes of stream.batches()) {
        for (const change of changes) {
          if (change.object === undefined) continue;
          const ns = toNamespace(change.object.name, change.object, change.resourceVersion);
          if (keep(ns)) yield line(TYPES[change.type], as(ns));
        }
      }
      if (stream.error !== undefined) throw stream.error;
    } catch (error) {
      const failure = toFailure(error);
      yield line("ERROR", failureStatus(failure.reason, failure.message, failure.details));
    }
  }
  const chunks = events();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const end = () => {
    clearTimeout(timer);
    request.signal.removeEventListener("abort", end);
    abort.abort();
    stream.close();
  };
  if (request.signal.aborted) end();
  else request.signal.addEventListener("abort", end);
  if (!request.signal.aborted) timer = setTimeout(end, watchSeconds(timeoutSeconds) * 1000);
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
  const type = rep.as === "table" ? tableType(rep.version) : "application/json";
  return new Response(body, { headers: { "content-type": type, "cache-control": "no-store" } });
}
