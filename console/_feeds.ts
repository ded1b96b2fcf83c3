/**
 * The console's server-sent-event feeds: the kinds page's counts, a kind's
 * changed rows, and one object's changes, each within the live-feed cap.
 *
 * @module
 */
import { type GroupKind, InvalidOptionError, NotFoundError } from "@beehive/beehive";
import { kindLabel, type KindSummary, listKinds } from "../cli/_inspect.ts";
import { kindRow, objectRow } from "./_kind_pages.ts";
import { storedColumns } from "../kubeapi/_tables.ts";
import { type Ctx, notFound, SECURITY_HEADERS, text } from "./_page.ts";
import { type LabelRequirement, matchesLabels } from "../src/model/label_selector.ts";

/** Write-log entries the kinds feed reads per page. */
export const KINDS_FEED_PAGE = 1_000;

export const HEARTBEAT_MS = 15_000;

/** A server-sent-event response fed by `start`, which returns its cleanup (run once, always). */
export function feed(
  start: (send: (event: string, data: unknown) => void, end: () => void) => () => void,
): Response {
  const encoder = new TextEncoder();
  let cleanup: (() => void) | undefined;
  let closed = false;
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  const finish = () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    cleanup?.();
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const write = (text: string) => {
        if (closed) return;
        try {
          controller.enqueue(encoder.encode(text));
        } catch {
          finish();
        }
      };
      const end = () => {
        finish();
        try {
          controller.close();
        } catch {
          // already closed by the reader
        }
      };
      write("retry: 2000\n\n");
      const stop = start(
        (event, data) => write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`),
        end,
      );
      if (closed) {
        stop();
        return;
      }
      cleanup = stop;
      // Ended by cancel() (a server cancels the body when the client leaves), never by
      // request.signal: Deno.serve aborts that on every completed response, and warns when read.
      heartbeat = setInterval(() => write(": heartbeat\n\n"), HEARTBEAT_MS);
    },
    cancel() {
      finish();
    },
  });
  return new Response(body, {
    headers: {
      ...SECURITY_HEADERS,
      "content-type": "text/event-stream; charset=utf-8",
      "x-accel-buffering": "no",
    },
  });
}

/** The answer to a feed's `HEAD`: its headers, no stream. */
export function feedHead(): Response {
  return new Response(null, {
    headers: {
      ...SECURITY_HEADERS,
      "content-type": "text/event-stream; charset=utf-8",
      "x-accel-buffering": "no",
    },
  });
}

export function tooManyFeeds(ctx: Ctx): Response {
  return text(
    503,
    `Service Unavailable: ${ctx.live.max} live feeds are open, the most this console serves ` +
      "(the maxLiveFeeds option); reload later",
    { "retry-after": "5" },
  );
}

export function failedData(): { message: string } {
  return { message: "the live feed failed; reload to retry" };
}

/**
 * The kinds page's feed: each poll that finds new writes recounts the kinds
 * they touched (every kind, when the write log was trimmed past the feed's
 * position) and sends each as a `kind` event with its rendered row.
 */
export async function kindsFeed(ctx: Ctx, request: Request): Promise<Response> {
  if (request.method === "HEAD") return feedHead();
  const release = ctx.live.reserve();
  if (release === undefined) return tooManyFeeds(ctx);
  // The position is taken before the answer: every write after it is reported.
  let at: number;
  try {
    at = await ctx.store.getLatestResourceVersion();
  } catch (error) {
    release();
    throw error;
  }
  return feed((send) => {
    let busy = false;
    const tick = async () => {
      if (busy) return;
      busy = true;
      try {
        const latest = await ctx.store.getLatestResourceVersion();
        if (latest === at) return;
        const touched = new Map<string, GroupKind>();
        let after = at;
        let trimmed = false;
        for (;;) {
          const { writes, trimmedThrough } = await ctx.store.objectWrites.listSinceAll({
            after,
            limit: KINDS_FEED_PAGE,
          });
          if (trimmedThrough > after) {
            trimmed = true;
            break;
          }
          for (const w of writes) touched.set(kindLabel(w), { group: w.group, kind: w.kind });
          if (writes.length < KINDS_FEED_PAGE) break;
          after = writes[writes.length - 1].resourceVersion;
        }
        at = latest;
        const kinds: KindSummary[] = trimmed
          ? await listKinds(ctx.store, ctx.extraKinds)
          : await Promise.all(
            [...touched.values()].map(async (gk) => ({
              ...gk,
              objects: (await ctx.store.objects.listIds(gk)).length,
            })),
          );
        for (const k of kinds) {
          send("kind", {
            kind: kindLabel(k),
            objects: k.objects,
            row: kindRow(ctx, k).text.trim(),
          });
        }
      } catch {
        send("failed", failedData());
      } finally {
        busy = false;
      }
    };
    const timer = setInterval(tick, ctx.pollInterval);
    return () => {
      clearInterval(timer);
      release();
    };
  });
}

/**
 * A kind's feed: each change with its rendered row. With a label selector or
 * a namespace, a change to an object that does not match carries no row and
 * `matches: false`, so the page drops it (an object that stops matching
 * leaves the page; one that starts is added like a new one).
 */
export async function kindFeed(
  ctx: Ctx,
  gk: GroupKind,
  selector: readonly LabelRequirement[],
  namespace: string | undefined,
  request: Request,
): Promise<Response> {
  if (request.method === "HEAD") return feedHead();
  const release = ctx.live.reserve();
  if (release === undefined) return tooManyFeeds(ctx);
  const sink: {
    send?: (event: string, data: unknown) => void;
    end?: () => void;
  } = {};
  let unsubscribe: () => void;
  try {
    const columns = { gk, readers: await storedColumns(ctx.store, gk) };
    unsubscribe = await ctx.live.listenKind(gk, {
      change: (change) => {
        const object = change.object;
        const base = { type: change.type, id: change.id, resourceVersion: change.resourceVersion };
        if (object === undefined) return sink.send?.("change", base);
        if (
          (selector.length > 0 && !matchesLabels(selector, object.labels)) ||
          (namespace !== undefined && object.namespace !== namespace)
        ) {
          return sink.send?.("change", { ...base, matches: false });
        }
        // The row itself, rendered: the page patches it in place of refetching its list.
        sink.send?.("change", {
          ...base,
          row: objectRow(ctx, object, Date.now(), columns).text.trim(),
        });
      },
      failed: () => sink.send?.("failed", failedData()),
      end: () => sink.end?.(),
    });
  } catch (error) {
    release();
    // A kind no client may name (above limits.fieldBytes) holds nothing to watch.
    if (error instanceof InvalidOptionError) return notFound(ctx, request);
    throw error;
  }
  return feed((send, end) => {
    sink.send = send;
    sink.end = end;
    return () => {
      unsubscribe();
      release();
    };
  });
}

export async function objectFeed(ctx: Ctx, id: number, request: Request): Promise<Response> {
  let gk: GroupKind;
  try {
    const meta = await ctx.store.objects.getMeta(id);
    gk = { group: meta.group, kind: meta.kind };
  } catch (error) {
    if (error instanceof NotFoundError) return notFound(ctx, request, `No object ${id}.`);
    throw error;
  }
  if (request.method === "HEAD") return feedHead();
  const release = ctx.live.reserve();
  if (release === undefined) return tooManyFeeds(ctx);
  const abort = new AbortController();
  let stream;
  let eventsAt: number;
  try {
    stream = await ctx.bh.client(gk).watch(id, { signal: abort.signal });
    eventsAt = await ctx.store.events.maxVersion(id).catch(() => 0);
  } catch (error) {
    abort.abort();
    release();
    throw error;
  }
  return feed((send, end) => {
    // Event runs bump no object version: a light probe notices new ones.
    const probe = setInterval(() => {
      ctx.store.events.maxVersion(id).then((v) => {
        if (v !== eventsAt) {
          eventsAt = v;
          send("change", { type: "Event", id, resourceVersion: v });
        }
      }, () => {});
    }, ctx.pollInterval);
    void (async () => {
      try {
        for await (const change of stream) {
          send("change", { type: change.type, id, resourceVersion: change.resourceVersion });
          if (change.type === "Deleted") break;
        }
      } catch {
        send("failed", failedData());
      }
      end();
    })();
    return () => {
      clearInterval(probe);
      abort.abort();
      release();
    };
  });
}
