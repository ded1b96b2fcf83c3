/**
 * Reads: one object by name, and a list — as a `<Kind>List` or a Table —
 * filtered by field and label selectors and chunked by `limit`/`continue`.
 *
 * @module
 */
import { type Client, NotFoundError } from "@beehive/beehive";
import type { KindRequest } from "./_context.ts";
import type { ServedKind } from "./_kinds.ts";
import { type AnyObject, resolveOwners, toResource } from "./_objects.ts";
import {
  includeObjectParam,
  intParam,
  MAX_PAGE,
  negotiate,
  param,
  type Representation,
} from "./_request.ts";
import { parseFieldSelector, parseLabelSelector } from "./_selectors.ts";
import { jsonResponse, KubeApiFailure, notFoundMessage, type StatusDetails } from "./_status.ts";
import { printerOf, table, tableType } from "./_tables.ts";
import { managedFieldsJson, parseManagedFields } from "./_managed_fields.ts";
import { listPosition } from "./_resource_version.ts";

const LOAD = { load: ["owner"] } as const;
const MAX_LIMIT = 2 ** 31 - 1;

/** The kind a read addresses, its namespace if any, and the state it reads through. */
export type KindTarget = Pick<KindRequest, "ctx" | "kind" | "namespace">;

/** The client of the target's kind, in its namespace when the path names one. */
export function clientOf({ ctx, kind, namespace }: KindTarget): Client<unknown, unknown> {
  return ctx.bh.client(kind, namespace === undefined ? undefined : { namespace });
}

/** The `details` of a failure about `name` of `kind`. */
export function detailsOf(kind: ServedKind, name?: string): StatusDetails {
  return { ...(name === undefined ? {} : { name }), group: kind.group, kind: kind.plural };
}

/** Reads `name`, or `undefined` when no object of the kind holds it. */
export async function findByName(
  target: KindTarget,
  name: string,
): Promise<AnyObject | undefined> {
  try {
    return await clientOf(target).getByName(name, LOAD);
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}

/** `obj` answered as JSON or a one-row Table. */
export async function answerObject(
  { ctx, kind, url }: KindRequest,
  obj: AnyObject,
  rep: Representation,
): Promise<Response> {
  const owner = (await resolveOwners(ctx.store, [obj])).get(obj.id);
  if (rep.as === "table") {
    const printer = await printerOf(ctx, kind);
    const row = printer.row({ obj, owner, include: includeObjectParam(url), now: Date.now() });
    return jsonResponse(
      200,
      table(rep.version, [row], { resourceVersion: String(obj.resourceVersion) }, printer.columns),
      tableType(rep.version),
    );
  }
  return jsonResponse(200, toResource(kind, { obj, owner }));
}

/** `GET …/<plural>/<name>`. */
export async function getResource(r: KindRequest, name: string): Promise<Response> {
  const rep = negotiate(r.request);
  const obj = await findByName(r, name);
  if (obj === undefined) throw notFound(r.kind, name);
  if (rep.as === "table") return await answerObject(r, obj, rep);
  // The managed fields are the server's own record, kept beside the object: read as of its version.
  const meta = await r.ctx.store.objects.getMeta(obj.id).catch(() => undefined);
  const managedFields = meta?.resourceVersion === obj.resourceVersion
    ? managedFieldsJson(parseManagedFields(meta.managedFields))
    : undefined;
  const owner = (await resolveOwners(r.ctx.store, [obj])).get(obj.id);
  return jsonResponse(200, toResource(r.kind, { obj, owner, managedFields }));
}

/** Kubernetes' NotFound for `name` of `kind`. */
export function notFound(kind: ServedKind, name: string): KubeApiFailure {
  const details = detailsOf(kind, name);
  return new KubeApiFailure("NotFound", notFoundMessage(details), details);
}

/** Where a chunked list resumes: the list's position and the last id it handed out. */
interface ContinueToken {
  readonly rv: number;
  readonly after: number;
}

function encodeContinue(token: ContinueToken): string {
  return btoa(JSON.stringify({ rv: token.rv, after: token.after }))
    .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function decodeContinue(text: string | undefined): ContinueToken | undefined {
  if (text === undefined || text === "") return undefined;
  const bad = () =>
    new KubeApiFailure("BadRequest", "continue key is not valid: list again without it");
  if (text.length > 256 || !/^[A-Za-z0-9_-]+$/.test(text)) throw bad();
  let value: unknown;
  try {
    value = JSON.parse(atob(text.replace(/-/g, "+").replace(/_/g, "/")));
  } catch {
    throw bad();
  }
  const { rv, after } = (value ?? {}) as Record<string, unknown>;
  const position = (n: unknown) => typeof n === "number" && Number.isSafeInteger(n) && n >= 0;
  if (!position(rv) || !position(after)) throw bad();
  return { rv: rv as number, after: after as number };
}

/** One page of a list: the objects, and where the next page starts if there may be one. */
export interface Page {
  readonly objects: AnyObject[];
  readonly next: number | undefined;
}

/**
 * The objects above `after` that `labelSelector` (the store's label index
 * selects them) and `keep` (a field selector) take, up to `want`.
 */
async function readPage(
  target: KindTarget,
  o: {
    after: number;
    want: number;
    labelSelector: string | undefined;
    keep: (obj: AnyObject) => boolean;
  },
): Promise<Page> {
  const client = clientOf(target);
  const objects: AnyObject[] = [];
  let after = o.after;
  for (;;) {
    const batch = await client.list({
      ...LOAD,
      after,
      limit: MAX_PAGE,
      labelSelector: o.labelSelector,
    });
    for (let i = 0; i < batch.length; i++) {
      after = batch[i].id;
      if (!o.keep(batch[i])) continue;
      objects.push(batch[i]);
      if (objects.length === o.want) {
        const exhausted = batch.length < MAX_PAGE && i === batch.length - 1;
        return { objects, next: exhausted ? undefined : after };
      }
    }
    if (batch.length < MAX_PAGE) return { objects, next: undefined };
  }
}

/** What a list or a collection delete selects: its field and label selectors, parsed. */
export interface Selection {
  readonly fields: ReturnType<typeof parseFieldSelector>;
  readonly labelSelector: string | undefined;
  readonly labels: ReturnType<typeof parseLabelSelector>;
}

/**
 * The request's `fieldSelector` and `labelSelector`.
 * @throws {KubeApiFailure} BadRequest: a selector that does not parse.
 */
export function selectionOf(url: URL): Selection {
  const fields = parseFieldSelector(param(url, "fieldSelector"));
  const labelSelector = param(url, "labelSelector");
  // Checked here for a 400 worded as Kubernetes words it; the store's list selects with it.
  return { fields, labelSelector, labels: parseLabelSelector(labelSelector) };
}

/** One page of what `selection` takes, from above id `after`, at most `want` objects. */
export async function readSelected(
  r: KindTarget,
  selection: Selection,
  page: { after: number; want: number; first: boolean },
): Promise<Page> {
  const { fields, labelSelector, labels } = selection;
  const keep = (obj: AnyObject) => fields.matches(obj);
  // A name picks one object only within a namespace: across them, it is a filter.
  if (fields.name !== undefined && (!r.kind.namespaced || r.namespace !== undefined)) {
    const obj = page.first ? await findByName(r, fields.name) : undefined;
    const taken = obj !== undefined && keep(obj) && labels(obj.labels);
    return { objects: taken ? [obj] : [], next: undefined };
  }
  return await readPage(r, { after: page.after, want: page.want, labelSelector, keep });
}

/**
 * `GET …/<plural>`: the kind's objects ordered by id. The list's
 * `resourceVersion` is the kind's log position read before the first page: a
 * watch from it may repeat a change the list already shows, never miss one.
 */
export async function listResources(r: KindRequest): Promise<Response> {
  const { ctx, kind, request, url } = r;
  const rep = negotiate(request);
  const selection = selectionOf(url);
  const limit = intParam(url, "limit", MAX_LIMIT) ?? 0;
  const token = decodeContinue(param(url, "continue"));
  const include = includeObjectParam(url);
  const rv = token?.rv ??
    await listPosition(ctx, kind, url, await ctx.store.objectWrites.maxVersion(kind));
  const want = limit === 0 ? Infinity : Math.min(limit, MAX_PAGE);
  const page = await readSelected(r, selection, {
    after: token?.after ?? 0,
    want,
    first: token === undefined,
  });
  const owners = await resolveOwners(ctx.store, page.objects);
  const metadata = {
    resourceVersion: String(rv),
    ...(page.next === undefined ? {} : { continue: encodeContinue({ rv, after: page.next }) }),
  };
  if (rep.as === "table") {
    const now = Date.now();
    const printer = await printerOf(ctx, kind);
    const rows = page.objects.map((obj) =>
      printer.row({ obj, owner: owners.get(obj.id), include, now })
    );
    return jsonResponse(
      200,
      table(rep.version, rows, metadata, printer.columns),
      tableType(rep.version),
    );
  }
  return jsonResponse(200, {
    apiVersion: kind.apiVersion,
    kind: `${kind.kind}List`,
    metadata,
    items: page.objects.map((obj) => toResource(kind, { obj, owner: owners.get(obj.id) })),
  });
}
