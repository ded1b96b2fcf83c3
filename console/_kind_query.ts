/**
 * A kind page's query: the page (`limit`, `after`) and the filters (name
 * prefix, label selector, state, namespace), parsed and bounded, and the read
 * that serves it. The store pages a kind by id and applies the label selector
 * through its label index and the namespace through its namespace index; a filter the store cannot apply (prefix, state)
 * is applied to a bounded scan, so such a page costs at most
 * {@linkcode SCAN_MAX} rows and may hold fewer matches than `limit`, with a
 * cursor to go on from.
 *
 * @module
 */
import { type GroupKind, InvalidOptionError } from "@beehive/beehive";
import type { Store } from "@beehive/beehive/store";
import { type ObjectView, stateSummary, toView } from "../cli/_inspect.ts";
import { type LabelRequirement, parseLabelSelector } from "../src/model/label_selector.ts";
import { namespaceProblem } from "../src/model/namespace.ts";

/** The states a page can be filtered by, as `stateSummary` names them (lowercased). */
export const STATES = [
  "pending",
  "reconciling",
  "retrying",
  "settled",
  "stalled",
  "terminating",
] as const;

/** One of {@linkcode STATES}. */
export type StateFilter = typeof STATES[number];

/** Rows a page shows when the request names no `limit`. */
export const DEFAULT_LIMIT = 100;
/** The most rows one page shows. */
export const MAX_LIMIT = 250;
/** The most rows one filtered page reads. */
export const SCAN_MAX = 5_000;
/** The longest name prefix accepted, in characters. */
export const MAX_PREFIX = 1_024;
/** Rows a filtered page reads per store call. */
const SCAN_CHUNK = 500;

/** A kind page's query. */
export interface KindQuery {
  /** Rows per page, 1..{@linkcode MAX_LIMIT}. */
  readonly limit: number;
  /** Objects with ids above this one (the previous page's cursor); 0 from the start. */
  readonly after: number;
  /** Only names starting with this (case-sensitive); `""` for every name. */
  readonly prefix: string;
  /** Only objects in this state. */
  readonly state: StateFilter | undefined;
  /** The label selector as written (Kubernetes' string syntax); `""` for none. */
  readonly labels: string;
  /** {@linkcode KindQuery.labels} parsed; empty for none. */
  readonly selector: readonly LabelRequirement[];
  /** Only objects in this namespace; `undefined` for every namespace. */
  readonly namespace: string | undefined;
}

/** Parses a kind page's search parameters; a string is what is wrong with them (a 400). */
export function parseKindQuery(params: URLSearchParams): KindQuery | string {
  const limitText = params.get("limit");
  const afterText = params.get("after");
  const prefix = params.get("prefix") ?? "";
  const state = params.get("state") ?? "";
  const labels = params.get("labels") ?? "";
  let limit = DEFAULT_LIMIT;
  if (limitText !== null && limitText !== "") {
    limit = /^\d{1,4}$/.test(limitText) ? Number(limitText) : NaN;
    if (!(limit >= 1 && limit <= MAX_LIMIT)) return `limit must be an integer 1..${MAX_LIMIT}`;
  }
  let after = 0;
  if (afterText !== null && afterText !== "") {
    after = /^\d{1,16}$/.test(afterText) ? Number(afterText) : NaN;
    if (!Number.isSafeInteger(after)) return "after must be an object id";
  }
  if (prefix.length > MAX_PREFIX || !prefix.isWellFormed()) {
    return `prefix must be text of at most ${MAX_PREFIX} characters`;
  }
  if (state !== "" && !(STATES as readonly string[]).includes(state)) {
    return `state must be one of ${STATES.join(", ")}`;
  }
  const selector = parseLabels(labels);
  if (typeof selector === "string") return selector;
  const namespace = parseNamespace(params.get("namespace") ?? "");
  if (typeof namespace === "object") return namespace.problem;
  return {
    limit,
    after,
    prefix,
    state: state === "" ? undefined : state as StateFilter,
    labels,
    selector,
    namespace,
  };
}

/**
 * Parses a `namespace` parameter: `""` is every namespace; else a DNS-1123
 * label. `{ problem }` is what is wrong with it (a 400).
 */
export function parseNamespace(value: string): string | undefined | { problem: string } {
  if (value === "") return undefined;
  const problem = namespaceProblem(value);
  return problem === undefined ? value : { problem: `namespace: ${problem}` };
}

/** Parses a `labels` parameter; a string is what is wrong with it (a 400). */
export function parseLabels(labels: string): readonly LabelRequirement[] | string {
  if (!labels.isWellFormed()) return "labels must be well-formed text";
  try {
    return parseLabelSelector(labels) ?? [];
  } catch (error) {
    if (error instanceof InvalidOptionError) return `labels: ${error.message}`;
    throw error;
  }
}

/** Whether the query filters rather than only pages. */
export function filters(q: KindQuery): boolean {
  return q.prefix !== "" || q.state !== undefined || q.selector.length > 0 ||
    q.namespace !== undefined;
}

/** Whether the query filters by something the store cannot apply, and so scans. */
function scans(q: KindQuery): boolean {
  return q.prefix !== "" || q.state !== undefined;
}

/** Whether an object (a row's fields) passes the query's filters. */
export function matches(
  q: Pick<KindQuery, "prefix" | "state">,
  v: Pick<
    ObjectView,
    "name" | "deletionRequestedAt" | "conditions" | "observedGeneration" | "generation"
  >,
): boolean {
  return v.name.startsWith(q.prefix) &&
    (q.state === undefined || stateSummary(v).toLowerCase() === q.state);
}

/** One page of a kind. */
export interface KindPageRows {
  readonly views: ObjectView[];
  /** The cursor of the next page (`after`), or `undefined` on the last. */
  readonly next: number | undefined;
  /** Rows read to fill the page. */
  readonly scanned: number;
}

/** Reads the page `q` names of kind `gk`. */
export async function readKindPage(
  store: Store,
  gk: GroupKind,
  q: KindQuery,
): Promise<KindPageRows> {
  const labelSelector = q.selector.length === 0 ? undefined : q.selector;
  if (!scans(q)) {
    const rows = await store.objects.list(gk, {
      after: q.after,
      limit: q.limit + 1,
      labelSelector,
      namespace: q.namespace,
    });
    const views = rows.slice(0, q.limit).map(toView);
    return {
      views,
      next: rows.length > q.limit ? views[views.length - 1].id : undefined,
      scanned: rows.length,
    };
  }
  const views: ObjectView[] = [];
  let after = q.after;
  let scanned = 0;
  const chunk = SCAN_CHUNK;
  for (;;) {
    const rows = await store.objects.list(gk, {
      after,
      limit: chunk,
      labelSelector,
      namespace: q.namespace,
    });
    for (const raw of rows) {
      scanned++;
      after = raw.id;
      if (!matches(q, raw)) continue;
      views.push(toView(raw));
      if (views.length === q.limit) {
        // More may follow: the next page says so (possibly empty).
        return { views, next: raw.id, scanned };
      }
    }
    if (rows.length < chunk) return { views, next: undefined, scanned };
    if (scanned >= SCAN_MAX) return { views, next: after, scanned };
  }
}
