/**
 * A read-only web console for a beehive store: the kinds, each kind's objects
 * with their conditions, and an object's detail (spec, status, conditions,
 * recent events, owner, owned objects, dependencies and dependents), updating
 * live over server-sent events. Server-rendered HTML that reads fine without
 * JavaScript; no build step and no framework. Everything from the store is
 * escaped, and a strict content security policy forbids inline script.
 *
 * {@linkcode consoleHandler} is a fetch handler, mountable in `Deno.serve`, in
 * Node's HTTP server through {@linkcode toNodeListener}, or in any router.
 *
 * @example Serve the console beside a controller
 * ```ts ignore
 * import { consoleHandler } from "@beehive/beehive/console";
 * import { openSqliteStore } from "@beehive/beehive/sqlite";
 *
 * const store = await openSqliteStore("./beehive.db");
 * Deno.serve({ hostname: "127.0.0.1", port: 8080 }, consoleHandler({ store, basePath: "/console" }));
 * ```
 *
 * @example Serve the console from its own process, writing nothing to the store
 * ```ts ignore
 * import { consoleHandler } from "@beehive/beehive/console";
 * import { openSqliteStore } from "@beehive/beehive/sqlite";
 *
 * // Read-only: no migration, no new open epoch, no lock file; works on a read-only
 * // copy too. Liveness reads as from any process: True while its writer lives.
 * const store = await openSqliteStore("./beehive.db", { readOnly: true });
 * Deno.serve({ hostname: "127.0.0.1", port: 8080 }, consoleHandler({ store }));
 * ```
 *
 * @example Render a page in-process
 * ```ts
 * import { consoleHandler } from "@beehive/beehive/console";
 * import { openSqliteStore } from "@beehive/beehive/sqlite";
 *
 * const store = await openSqliteStore(":memory:");
 * const handle = consoleHandler({ store });
 * const response = await handle(new Request("http://localhost/"));
 * console.assert(response.status === 200);
 * console.assert((await response.text()).includes("<h1>Kinds</h1>"));
 * await store.close();
 * ```
 *
 * @module
 */
import {
  Beehive,
  type GroupKind,
  InvalidOptionError,
  type Logger,
  NotFoundError,
} from "@beehive/beehive";
import type { Store } from "@beehive/beehive/store";
import {
  kindLabel,
  type ObjectView,
  parseKind,
  prettyJson,
  readRelations,
  type RefView,
  stateSummary,
  toView,
} from "../cli/_inspect.ts";
import { SCRIPT, STYLE } from "./_assets.ts";
import { normalizeBasePath } from "./base_path.ts";
import { kindFeed, kindsFeed, objectFeed } from "./_feeds.ts";
import { checkAllowedHosts, hostAllowed, LOOPBACK_HOSTS } from "../http/_hosts.ts";
import { type Html, html } from "./_html.ts";
import { badKindQuery, kindPage, kindsPage } from "./_kind_pages.ts";
import { parseKindQuery, parseLabels, parseNamespace } from "./_kind_query.ts";
import { LiveFeeds } from "./_live.ts";
import {
  crumbsFor,
  type Ctx,
  kindHref,
  labelChips,
  notFound,
  objectHref,
  page,
  SECURITY_HEADERS,
  text,
  time,
} from "./_page.ts";

export { toNodeListener } from "../http/node_listener.ts";
export type { NodeListener, NodeRequestLike, NodeResponseLike } from "../http/node_listener.ts";

/** Options of {@linkcode consoleHandler}. */
export interface ConsoleOptions {
  /** The store to show. The console only reads it; it never starts a Beehive. */
  readonly store: Store;
  /**
   * The path prefix the console is mounted under, e.g. `"/console"`; requests
   * outside it are 404. @default {""}
   */
  readonly basePath?: string;
  /**
   * Kinds to list even when the retained write log holds no trace of them
   * (the Store port has no kind listing). @default {[]}
   */
  readonly kinds?: readonly GroupKind[];
  /**
   * How often a live page re-reads the store when no write signal reaches it
   * (a write made through another Beehive or another process), in ms.
   * @default {500}
   */
  readonly pollInterval?: number;
  /**
   * The host names (without port) a request's `Host` may carry, compared
   * without case; `"*"` accepts any. Any other `Host` is answered `403`, which
   * stops DNS rebinding: a page on another site cannot read the console
   * through a name it made resolve to the console's address. The handler
   * cannot see which address its server listens on, so the default suits a
   * server bound to loopback; bound to another address, list the names users
   * reach it by.
   * @default {["localhost", "127.0.0.1", "[::1]"]}
   */
  readonly allowedHosts?: readonly string[] | "*";
  /**
   * Decides whether to serve a request (after the `Host` check, before
   * anything is read): `false` is answered `403`. A rejection or throw is a
   * `500` (logged). @default {undefined} (every request is served)
   */
  readonly authorize?: (request: Request) => boolean | Promise<boolean>;
  /**
   * The most live feeds open at once across the handler; one more is
   * answered `503` with `retry-after`. Every feed of one kind shares one
   * watch of it. An integer ≥ 1. @default {256}
   */
  readonly maxLiveFeeds?: number;
  /**
   * Where a failed request's details go (`error`); the response carries a
   * generic body only. @default {undefined} (not logged)
   */
  readonly logger?: Logger;
}

/** A fetch handler: one request in, one response out. Never rejects. */
export type ConsoleHandler = (request: Request) => Promise<Response>;

const EVENTS_SHOWN = 20;

/**
 * Creates the console's fetch handler over `store`. Routes under `basePath`:
 * `/` the kinds, `/kinds/<Kind.group>` a kind's objects (paged by `limit`
 * and `after`, filtered by `prefix`, `state` and a `labels` selector in
 * Kubernetes' syntax; a malformed one is a `400` page saying what is wrong),
 * `/objects/<id>` one object, each with a `/live` server-sent-event feed
 * (`/live` for the kinds), plus `/console.js` and `/console.css`. A
 * request whose `Host` is not in `allowedHosts` is `403`, one `authorize`
 * refuses `403`; only `GET` and `HEAD` are served (`405`
 * otherwise); an unknown or malformed path, kind or object is `404`; a live
 * feed beyond `maxLiveFeeds` is `503`; a failure is a generic `500` (details
 * to `logger`). The handler never rejects. A live feed ends when its
 * response body is cancelled (a server cancels it when the client leaves;
 * `request.signal` is not read, as `Deno.serve` aborts it on every response).
 * @throws {TypeError} `store` is not a Store, or `basePath` does not start with `/`.
 * @throws {InvalidOptionError} `pollInterval` or `maxLiveFeeds` is not a positive number,
 * `allowedHosts` is not an array of host names or `"*"`, or `authorize` is not a function.
 */
export function consoleHandler(options: ConsoleOptions): ConsoleHandler {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("Cannot create a console: options must be an object like { store }");
  }
  const base = normalizeBasePath(options.basePath);
  const store = options.store;
  const pollInterval = positive("pollInterval", options.pollInterval, 500, false);
  const maxLiveFeeds = positive("maxLiveFeeds", options.maxLiveFeeds, 256, true);
  const allowedHosts = checkAllowedHosts(options.allowedHosts ?? LOOPBACK_HOSTS);
  const authorize = options.authorize;
  if (authorize !== undefined && typeof authorize !== "function") {
    throw new InvalidOptionError(
      `Cannot use option authorize: current value is ${typeof authorize}, expected a function`,
    );
  }
  const bh = new Beehive(store, { watchFloorInterval: pollInterval });
  const extraKinds = [...(options.kinds ?? [])];
  const ctx: Ctx = {
    store,
    bh,
    base,
    baseParts: base.split("/").filter((s) => s !== "").map(decodeURIComponent),
    extraKinds,
    pollInterval,
    live: new LiveFeeds(bh, store, maxLiveFeeds),
  };
  const logger = options.logger;
  return async (request) => {
    try {
      if (!hostAllowed(request, allowedHosts)) {
        return text(
          403,
          "Forbidden: this Host is not one the console answers to (the allowedHosts option)",
        );
      }
      if (authorize !== undefined && !(await authorize(request))) {
        return text(403, "Forbidden");
      }
      return await route(ctx, request);
    } catch (error) {
      try {
        logger?.error("console request failed", {
          method: request.method,
          url: request.url,
          error,
        });
      } catch {
        // a failing logger changes nothing about the answer
      }
      return text(500, "Internal Server Error");
    }
  };
}

function positive(name: string, value: unknown, fallback: number, integer: boolean): number {
  if (value === undefined) return fallback;
  if (
    typeof value !== "number" || !Number.isFinite(value) || value <= 0 ||
    (integer && !Number.isSafeInteger(value))
  ) {
    throw new InvalidOptionError(
      `Cannot use option ${name}: current value is ${String(value)}, expected ${
        integer ? "an integer >= 1" : "a positive number"
      }`,
    );
  }
  return value;
}

/** A path segment the store could hold: no control character, no lone surrogate. */
function isPlainSegment(segment: string): boolean {
  // deno-lint-ignore no-control-regex
  return !/[\u0000-\u001f\u007f]/.test(segment) && segment.isWellFormed();
}

async function route(ctx: Ctx, request: Request): Promise<Response> {
  const url = new URL(request.url);
  if (request.method !== "GET" && request.method !== "HEAD") {
    return text(405, "Method Not Allowed: the console is read-only", { allow: "GET, HEAD" });
  }
  let all: string[];
  try {
    all = url.pathname.split("/").filter((s) => s !== "").map(decodeURIComponent);
  } catch {
    return notFound(ctx, request);
  }
  if (!ctx.baseParts.every((p, i) => all[i] === p)) return notFound(ctx, request);
  const parts = all.slice(ctx.baseParts.length);
  if (!parts.every(isPlainSegment)) return notFound(ctx, request);
  const fragment = url.searchParams.get("fragment") === "main";
  if (parts.length === 0) return await kindsPage(ctx, request, fragment);
  if (parts.length === 1 && parts[0] === "live") return await kindsFeed(ctx, request);
  if (parts.length === 1 && parts[0] === "console.js") return asset(SCRIPT, "text/javascript");
  if (parts.length === 1 && parts[0] === "console.css") return asset(STYLE, "text/css");
  if (parts[0] === "kinds" && (parts.length === 2 || (parts.length === 3 && parts[2] === "live"))) {
    const gk = parseKind(parts[1]);
    if (gk === undefined) return notFound(ctx, request);
    if (parts.length === 3) {
      const selector = parseLabels(url.searchParams.get("labels") ?? "");
      if (typeof selector === "string") return text(400, `Bad Request: ${selector}`);
      const namespace = parseNamespace(url.searchParams.get("namespace") ?? "");
      if (typeof namespace === "object") return text(400, `Bad Request: ${namespace.problem}`);
      return await kindFeed(ctx, gk, selector, namespace, request);
    }
    const query = parseKindQuery(url.searchParams);
    if (typeof query === "string") {
      return badKindQuery(ctx, gk, url.searchParams, query, request);
    }
    return await kindPage(ctx, gk, query, request, fragment);
  }
  if (
    parts[0] === "objects" && (parts.length === 2 || (parts.length === 3 && parts[2] === "live"))
  ) {
    if (!/^[1-9]\d{0,15}$/.test(parts[1]) || !Number.isSafeInteger(Number(parts[1]))) {
      return notFound(ctx, request);
    }
    const id = Number(parts[1]);
    if (parts.length === 3) return await objectFeed(ctx, id, request);
    return await objectPage(ctx, id, request, fragment);
  }
  return notFound(ctx, request);
}

function asset(body: string, type: string): Response {
  return new Response(body, {
    headers: {
      ...SECURITY_HEADERS,
      "content-type": `${type}; charset=utf-8`,
      "cache-control": "no-cache",
    },
  });
}

function refLink(ctx: Ctx, ref: RefView): Html {
  return html`<a href="${objectHref(ctx, ref.id)}">${kindLabel(ref)}/${
    ref.name ?? `#${ref.id}`
  }</a>`;
}

function refList(ctx: Ctx, refs: readonly RefView[]): Html {
  if (refs.length === 0) return html`<span class="muted">none</span>`;
  return html`${refs.map((r, i) => html`${i === 0 ? "" : ", "}${refLink(ctx, r)}`)}`;
}

function jsonBlock(value: unknown): Html {
  if (value === undefined) return html`<p class="muted">not written yet</p>`;
  return html`<pre>${prettyJson(value)}</pre>`;
}

async function objectPage(
  ctx: Ctx,
  id: number,
  request: Request,
  fragment: boolean,
): Promise<Response> {
  let view: ObjectView;
  try {
    view = toView(await ctx.store.objects.get(id));
  } catch (error) {
    if (error instanceof NotFoundError) return notFound(ctx, request, `No object ${id}.`);
    throw error;
  }
  const rel = await readRelations(ctx.store, id, EVENTS_SHOWN);
  const now = Date.now();
  const main = html`
    <h1>${kindLabel(view)} <span data-field="name">${view.name}</span></h1>
    <dl>
      <dt>Kind</dt>
      <dd><a href="${kindHref(ctx, view)}">${kindLabel(view)}</a></dd>
      <dt>ID</dt>
      <dd>${view.id}</dd>
      <dt>Generation</dt>
      <dd data-field="generation">${view.generation} (observed ${view.observedGeneration ??
        "never"}, ${time(view.observedAt, now)})</dd>
      <dt>State</dt>
      <dd data-field="state">${stateSummary(view)}</dd>
      <dt>Resource version</dt>
      <dd>${view.resourceVersion}</dd>
      <dt>Created</dt>
      <dd>${time(view.createdAt, now)}</dd>
      <dt>Updated</dt>
      <dd>${time(view.updatedAt, now)}</dd>
      <dt>Deletion requested</dt>
      <dd>${view.deletionRequestedAt === undefined ? html`<span class="muted">no</span>` : time(
        view.deletionRequestedAt,
        now,
      )}</dd>
      <dt>Labels</dt>
      <dd data-field="labels">${labelChips(view.labels)}</dd>
      <dt>Annotations</dt>
      <dd data-field="annotations" class="annotations">${Object.keys(view.annotations).length === 0
        ? html`<span class="muted">none</span>`
        : Object.entries(view.annotations).map(([k, v]) =>
          html`<div><span class="muted">${k}:</span> ${v}</div>`
        )}</dd>
      <dt>Finalizers</dt>
      <dd>${view.finalizers.length === 0
        ? html`<span class="muted">none</span>`
        : view.finalizers.join(", ")}</dd>
      <dt>Owner</dt>
      <dd>${rel.owner === undefined
        ? html`<span class="muted">none</span>`
        : refLink(ctx, rel.owner)}</dd>
      <dt>Owned</dt>
      <dd>${refList(ctx, rel.owned)}</dd>
      <dt>Dependencies</dt>
      <dd>${refList(ctx, rel.dependencies)}</dd>
      <dt>Dependents</dt>
      <dd>${refList(ctx, rel.dependents)}</dd>
    </dl>
    <h2>Conditions</h2>
    ${view.conditions.length === 0 ? html`<p class="muted">none</p>` : html`
      <table id="conditions">
        <thead>
          <tr>
            <th>Type</th>
            <th>Status</th>
            <th>Reason</th>
            <th>Message</th>
            <th>Transitioned</th>
            <th>Updated</th>
          </tr>
        </thead>
        <tbody>${view.conditions.map((c) =>
          html`
            <tr data-condition="${c.type}">
              <td>${c.type}</td>
              <td class="s-${c.unconfirmed
                ? "Unknown"
                : c.status}" data-field="status">${c.unconfirmed
                ? "Unknown (unconfirmed)"
                : c.status}</td>
              <td data-field="reason">${c.reason}</td>
              <td>${c.message}</td>
              <td>${time(c.transitionedAt, now)}</td>
              <td>${time(c.updatedAt, now)}</td>
            </tr>
          `
        )}</tbody>
      </table>
    `}
    <h2>Spec</h2>
    ${jsonBlock(view.spec)}
    <h2>Status</h2>
    ${jsonBlock(view.status)}
    <h2>Recent events</h2>
    ${rel.events.length === 0 ? html`<p class="muted">none</p>` : html`
      <table id="events">
        <thead>
          <tr>
            <th>Last</th>
            <th>Type</th>
            <th>Reason</th>
            <th>Category</th>
            <th>Count</th>
            <th>First</th>
            <th>Message</th>
          </tr>
        </thead>
        <tbody>${rel.events.map((e) =>
          html`
            <tr>
              <td>${time(e.lastAt, now)}</td>
              <td class="${e.type}">${e.type}</td>
              <td>${e.reason}</td>
              <td>${e.category}</td>
              <td>${e.count}</td>
              <td>${time(e.firstAt, now)}</td>
              <td>${e.message}</td>
            </tr>
          `
        )}</tbody>
      </table>
    `}
  `;
  return page(ctx, 200, `${kindLabel(view)} ${view.name}`, main, request, {
    fragment,
    live: `${objectHref(ctx, id)}/live`,
    crumbs: crumbsFor(ctx, view, view.name),
  });
}
