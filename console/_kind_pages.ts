/**
 * The kinds page and a kind's page: the paged, filtered object table, and
 * the rows the live feeds send to patch them.
 *
 * @module
 */
import type { GroupKind } from "@beehive/beehive";
import {
  generationSummary,
  kindLabel,
  type KindSummary,
  listKinds,
  type ObjectView,
  readySummary,
  stateSummary,
} from "../cli/_inspect.ts";
import { type Html, html } from "./_html.ts";
import { type ColumnReader, columnTexts, storedColumns } from "../kubeapi/_tables.ts";
import { SELECTOR_CHARS } from "../src/model/label_selector.ts";
import { NAMESPACE_CHARS } from "../src/model/namespace.ts";
import {
  DEFAULT_LIMIT,
  filters,
  type KindQuery,
  MAX_PREFIX,
  readKindPage,
  SCAN_MAX,
  STATES,
} from "./_kind_query.ts";
import {
  conditionBadges,
  crumbsFor,
  type Ctx,
  kindHref,
  labelChips,
  objectHref,
  page,
  time,
} from "./_page.ts";

export async function kindsPage(ctx: Ctx, request: Request, fragment: boolean): Promise<Response> {
  const kinds = await listKinds(ctx.store, ctx.extraKinds);
  const main = html`
    <h1>Kinds</h1>
    ${kinds.length === 0 ? html`<p class="muted">No kinds yet.</p>` : html`
      <table>
        <thead>
          <tr>
            <th>Kind</th>
            <th>Group</th>
            <th>Objects</th>
          </tr>
        </thead>
        <tbody>${kinds.map((k) =>
          html`
            ${kindRow(ctx, k)}
          `
        )}</tbody>
      </table>
    `}
    <p
      class="muted">Kinds are found through the retained write log; a kind idle for longer than its retention may be missing.</p>
  `;
  return page(ctx, 200, "Kinds", main, request, { fragment, live: `${ctx.base}/live` });
}

export function kindRow(ctx: Ctx, k: KindSummary): Html {
  return html`
    <tr data-kind="${kindLabel(k)}">
      <td><a href="${kindHref(ctx, k)}">${k.kind}</a></td>
      <td>${k.group === "" ? html`<span class="muted">(core)</span>` : k.group}</td>
      <td data-field="objects">${k.objects}</td>
    </tr>
  `;
}

/**
 * The fields a kind page's row shows (the printer columns read the object as
 * the Kubernetes API answers with it): an object as read or as a watch
 * delivers it.
 */
export type RowView = Pick<
  ObjectView,
  | "id"
  | "name"
  | "generation"
  | "observedGeneration"
  | "conditions"
  | "deletionRequestedAt"
  | "createdAt"
  | "labels"
  | "namespace"
  | "resourceVersion"
  | "annotations"
  | "finalizers"
  | "spec"
  | "status"
>;

/** A kind's printer columns and the kind they read. */
export interface KindColumns {
  readonly gk: GroupKind;
  readonly readers: readonly ColumnReader[];
}

export function objectRow(ctx: Ctx, v: RowView, now: number, columns: KindColumns): Html {
  const cells = columnTexts(columns.readers, columns.gk, v, now);
  return html`
    <tr data-id="${v.id}" data-name="${v.name}" data-state="${stateSummary(v).toLowerCase()}">
      <td>${v.namespace === "" ? "" : html`
        <span class="namespace">${v.namespace}/</span>
      `}<a href="${objectHref(ctx, v.id)}">${v.name}</a></td>
      ${cells.map((text, i) =>
        html`
          <td data-column="${columns.readers[i].column.name}">${text}</td>
        `
      )}
      <td class="wide">${v.id}</td>
      <td class="wide">${generationSummary(v)}</td>
      <td>${readySummary(v.conditions)}</td>
      <td>${stateSummary(v)}</td>
      <td>${conditionBadges(v)}</td>
      <td class="labels">${labelChips(v.labels)}</td>
      <td class="wide">${time(v.createdAt, now)}</td>
    </tr>
  `;
}

export function pageHref(ctx: Ctx, gk: GroupKind, q: KindQuery, after: number): string {
  const params = new URLSearchParams();
  if (q.prefix !== "") params.set("prefix", q.prefix);
  if (q.state !== undefined) params.set("state", q.state);
  if (q.labels !== "") params.set("labels", q.labels);
  if (q.namespace !== undefined) params.set("namespace", q.namespace);
  if (q.limit !== DEFAULT_LIMIT) params.set("limit", String(q.limit));
  if (after !== 0) params.set("after", String(after));
  const search = params.toString();
  return `${kindHref(ctx, gk)}${search === "" ? "" : `?${search}`}`;
}

/** The live feed of a kind page: the kind's, narrowed to the page's label selector and namespace. */
export function feedHref(
  ctx: Ctx,
  gk: GroupKind,
  labels: string,
  namespace: string | undefined,
): string {
  const live = `${kindHref(ctx, gk)}/live`;
  const params = new URLSearchParams();
  if (labels !== "") params.set("labels", labels);
  if (namespace !== undefined) params.set("namespace", namespace);
  const search = params.toString();
  return search === "" ? live : `${live}?${search}`;
}

export function filterForm(ctx: Ctx, gk: GroupKind, q: KindQuery): Html {
  return html`
    <form class="filters" method="get" action="${kindHref(ctx, gk)}" role="search">
      <label>Name starts with <input name="prefix" value="${q.prefix}" maxlength="1024"
          autocomplete="off"></label>
      <label>Labels <input name="labels" value="${q.labels}" maxlength="${SELECTOR_CHARS}"
          placeholder="app=web,tier!=db" autocomplete="off" spellcheck="false"></label>
      <label>Namespace <input name="namespace" value="${q.namespace ??
        ""}" maxlength="${NAMESPACE_CHARS}"
          placeholder="every namespace" autocomplete="off" spellcheck="false"></label>
      <label>State <select name="state">
          <option value="">any</option>
          ${STATES.map((st) =>
            html`
              <option value="${st}" ${q.state === st
                ? html`
                  selected
                `
                : ""}>${st}</option>
            `
          )}
        </select></label>
      ${q.limit === DEFAULT_LIMIT
        ? ""
        : html`<input type="hidden" name="limit" value="${q.limit}">`}
      <button type="submit">Filter</button>
      ${filters(q) ? html`<a href="${kindHref(ctx, gk)}">clear</a>` : ""}
    </form>
  `;
}

export async function kindPage(
  ctx: Ctx,
  gk: GroupKind,
  q: KindQuery,
  request: Request,
  fragment: boolean,
): Promise<Response> {
  const { views, next, scanned } = await readKindPage(ctx.store, gk, q);
  const columns = { gk, readers: await storedColumns(ctx.store, gk) };
  const now = Date.now();
  const pager = html`
    <nav class="pager">
      ${q.after === 0 ? "" : html`<a href="${pageHref(ctx, gk, q, 0)}" rel="first">first page</a>`}
      ${next === undefined
        ? html`<span class="muted">end of list</span>`
        : html`<a href="${pageHref(ctx, gk, q, next)}" rel="next">next page</a>`}
      ${filters(q) && next !== undefined && scanned >= SCAN_MAX
        ? html`<span class="muted">(a filtered page reads at most ${SCAN_MAX} objects)</span>`
        : ""}
    </nav>
  `;
  const main = html`<h1>${kindLabel(gk)}</h1>
${filterForm(ctx, gk, q)}
<div class="scroll">
  <table id="objects" data-prefix="${q.prefix}" data-state="${q.state ?? ""}" data-last="${
    next ===
      undefined
  }">
    <thead>
      <tr>
        <th>Name</th>
        ${
    columns.readers.map((r) =>
      html`
        <th data-column="${r.column.name}">${r.column.name}</th>
      `
    )
  }
        <th class="wide">ID</th>
        <th class="wide">Generation</th>
        <th>Ready</th>
        <th>State</th>
        <th>Conditions</th>
        <th>Labels</th>
        <th class="wide">Age</th>
      </tr>
    </thead>
    <tbody>${views.map((v) => objectRow(ctx, v, now, columns))}</tbody>
  </table>
</div>
${
    views.length === 0
      ? html`<p class="muted" id="empty">${
        filters(q) || q.after !== 0 ? "No objects on this page match." : "No objects."
      }</p>`
      : ""
  }
${pager}`;
  return page(ctx, 200, kindLabel(gk), main, request, {
    fragment,
    live: feedHref(ctx, gk, q.labels, q.namespace),
    crumbs: crumbsFor(ctx, gk),
  });
}

/**
 * A kind page whose query is malformed: `400`, with what is wrong and the
 * filter form (holding what was typed, when it can be shown) to fix it.
 */
export function badKindQuery(
  ctx: Ctx,
  gk: GroupKind,
  params: URLSearchParams,
  problem: string,
  request: Request,
): Response {
  const typed = (name: string, max: number) => {
    const value = params.get(name) ?? "";
    return value.length <= max && value.isWellFormed() ? value : "";
  };
  const q: KindQuery = {
    limit: DEFAULT_LIMIT,
    after: 0,
    prefix: typed("prefix", MAX_PREFIX),
    state: undefined,
    labels: typed("labels", SELECTOR_CHARS),
    selector: [],
    namespace: typed("namespace", NAMESPACE_CHARS) || undefined,
  };
  const main = html`<h1>${kindLabel(gk)}</h1>
${filterForm(ctx, gk, q)}
<p class="error" role="alert">Bad Request: ${problem}</p>`;
  return page(ctx, 400, kindLabel(gk), main, request, { crumbs: crumbsFor(ctx, gk) });
}
