/**
 * What every console page shares: the request context, the security headers,
 * links, the page frame, the not-found page, and the small pieces of markup
 * (times, condition badges, breadcrumbs) several pages show.
 *
 * @module
 */
import type { Beehive, GroupKind } from "@beehive/beehive";
import type { Store } from "@beehive/beehive/store";
import { age, kindLabel, type ObjectView } from "../cli/_inspect.ts";
import { type Html, html } from "./_html.ts";
import type { LiveFeeds } from "./_live.ts";

export const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; " +
    "connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; " +
    "frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

/** A plain-text answer with the security headers. */
export function text(status: number, body: string, headers: Record<string, string> = {}): Response {
  return new Response(`${body}\n`, {
    status,
    headers: { ...SECURITY_HEADERS, "content-type": "text/plain; charset=utf-8", ...headers },
  });
}

export interface Ctx {
  readonly store: Store;
  readonly bh: Beehive;
  /** The base path, percent-encoded, as links carry it. */
  readonly base: string;
  /** The base path's segments, decoded, as requests are matched. */
  readonly baseParts: readonly string[];
  readonly extraKinds: GroupKind[];
  readonly pollInterval: number;
  readonly live: LiveFeeds;
}

export function kindHref(ctx: Ctx, gk: GroupKind): string {
  return `${ctx.base}/kinds/${encodeURIComponent(kindLabel(gk))}`;
}

export function objectHref(ctx: Ctx, id: number): string {
  return `${ctx.base}/objects/${id}`;
}

export function respond(status: number, body: string, request: Request): Response {
  return new Response(request.method === "HEAD" ? null : body, {
    status,
    headers: { ...SECURITY_HEADERS, "content-type": "text/html; charset=utf-8" },
  });
}

export function page(
  ctx: Ctx,
  status: number,
  title: string,
  main: Html,
  request: Request,
  options: { fragment?: boolean; live?: string; crumbs?: Html } = {},
): Response {
  if (options.fragment) return respond(status, main.text, request);
  const doc = html`
    <!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>${title} · beehive</title>
        <link rel="stylesheet" href="${ctx.base}/console.css">
        <script src="${ctx.base}/console.js" defer></script>
      </head>
      <body${options.live === undefined ? "" : html`
        data-live="${options.live}"
      `}>
        <header><a class="brand" href="${ctx.base}/">beehive</a><nav>${options.crumbs ??
          ""}</nav><span id="live">${options.live === undefined
          ? ""
          : "static: reload to refresh"}</span></header>
        <main>
    ${main}
        </main>
        </body>
        </html>
  `;
  return respond(status, doc.text, request);
}

export function notFound(ctx: Ctx, request: Request, what = "No such page."): Response {
  return page(
    ctx,
    404,
    "Not found",
    html`
      <h1>Not found</h1>
      <p>${what}</p>
    `,
    request,
    {
      fragment: new URL(request.url).searchParams.get("fragment") === "main",
    },
  );
}

/** A map of labels as `key=value` chips; a dash when empty. */
export function labelChips(labels: Readonly<Record<string, string>>): Html {
  const keys = Object.keys(labels);
  if (keys.length === 0) return html`<span class="muted">-</span>`;
  return html`${keys.map((k) => html`<span class="label">${k}=${labels[k]}</span>`)}`;
}

export function time(at: Date | undefined, now: number): Html {
  if (at === undefined) return html`<span class="muted">never</span>`;
  return html`<time datetime="${at.toISOString()}" title="${at.toISOString()}">${
    age(at, now)
  } ago</time>`;
}

export function conditionBadges(view: Pick<ObjectView, "conditions">): Html {
  if (view.conditions.length === 0) return html`<span class="muted">none</span>`;
  return html`${
    view.conditions.map((c) => {
      const status = c.unconfirmed ? "Unknown" : c.status;
      return html`
        <span class="cond s-${status}" data-condition="${c.type}" data-status="${status}"
          title="${c.reason}${c.message === "" ? "" : `: ${c.message}`}">${c.type}=${status}</span>
      `;
    })
  }`;
}

export function crumbsFor(ctx: Ctx, gk: GroupKind, name?: string): Html {
  return html`<a href="${ctx.base}/">Kinds</a> / <a href="${kindHref(ctx, gk)}">${
    kindLabel(gk)
  }</a>${
    name === undefined ? "" : html`
      / ${name}
    `
  }`;
}
