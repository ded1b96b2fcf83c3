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
import { parseFieldSelector, parseLabelSelector } from "./_selectors.ts";
import { errorLine, generatedBody, watchEnd, watchHeaders, watchLine } from "./_watch_stream.ts";

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
  const line = (type: string, object: unknown) => encoder.encode(watchLine(type, object));
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
      yield encoder.encode(errorLine(error));
    }
  }
  // Ended by the body's cancel, never request.signal (Deno.serve aborts it on every response).
  const end = watchEnd(timeoutSeconds, () => {
    abort.abort();
    stream.close();
  });
  return new Response(generatedBody(events(), end), { headers: watchHeaders(rep) });
}
