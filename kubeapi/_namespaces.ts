/**
 * core/v1 `Namespace`s: `GET /api/v1/namespaces[/<name>]`. A namespace
 * exists while objects of a served kind use it, once created explicitly (an
 * object of the core kind `Namespace`, which the API serves only here), and
 * `default` always (kubectl's namespace when its context names none, and
 * where a cluster-scoped object's events are). One being deleted is
 * `Terminating` while its objects drain. Answered as a `NamespaceList` or
 * `Namespace`, or a Table for `kubectl get namespaces`.
 *
 * @module
 */
import { type BeehiveObject, type Client, NotFoundError } from "@beehive/beehive";
import type { KubeContext } from "./_context.ts";
import { EVENTS_NAMESPACE } from "./_events.ts";
import { rfc3339 } from "./_objects.ts";
import { includeObjectParam, MAX_PAGE, negotiate, param } from "./_request.ts";
import { parseFieldSelector, parseLabelSelector } from "./_selectors.ts";
import { jsonResponse, KubeApiFailure, notFoundMessage, type StatusDetails } from "./_status.ts";
import { type Column, type IncludeObject, table, tableType } from "./_tables.ts";

/** The label Kubernetes puts on every namespace, naming it (what a selector picks one by). */
const NAME_LABEL = "kubernetes.io/metadata.name";

/** The kind an explicitly created namespace is stored as: core, cluster-scoped. */
export const NAMESPACE_KIND = { group: "", kind: "Namespace" } as const;

/** The `namespaces` entry of the core/v1 discovery document. */
export const NAMESPACES_RESOURCE = {
  name: "namespaces",
  singularName: "namespace",
  namespaced: false,
  kind: "Namespace",
  verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
  shortNames: ["ns"],
} as const;

const COLUMNS: readonly Column[] = [
  {
    name: "Name",
    type: "string",
    format: "name",
    description: "The namespace's name.",
    priority: 0,
  },
  {
    name: "Status",
    type: "string",
    format: "",
    description: "The namespace's phase: Active, or Terminating while its objects are deleted.",
    priority: 0,
  },
];

/** A stored (explicitly created) namespace. */
export type NamespaceObject = BeehiveObject<unknown, unknown>;

/** The client of the stored namespaces. */
export function namespaceClient(ctx: KubeContext): Client<unknown, unknown> {
  return ctx.bh.client(NAMESPACE_KIND);
}

/** Every stored namespace, by name. */
export async function storedNamespaces(ctx: KubeContext): Promise<Map<string, NamespaceObject>> {
  const client = namespaceClient(ctx);
  const out = new Map<string, NamespaceObject>();
  let after = 0;
  for (;;) {
    const page = await client.list({ after, limit: MAX_PAGE });
    for (const ns of page) out.set(ns.name, ns);
    if (page.length < MAX_PAGE) return out;
    after = page[page.length - 1].id;
  }
}

/** The namespaces objects of a served kind are in. One index probe per kind. */
export async function usedNamespaces(ctx: KubeContext): Promise<Set<string>> {
  const names = new Set<string>();
  for (const kind of await ctx.kinds.list()) {
    if (!kind.namespaced) continue;
    for (const ns of await ctx.store.objects.listNamespaces(kind)) names.add(ns);
  }
  return names;
}

/** A namespace as the API answers it: the stored one's, or one only in use. */
export function toNamespace(
  name: string,
  stored: NamespaceObject | undefined,
  resourceVersion?: number,
): Record<string, unknown> {
  const terminating = stored?.deletionRequestedAt !== undefined;
  const metadata = stored === undefined ? { name, labels: { [NAME_LABEL]: name } } : {
    name,
    uid: String(stored.id),
    resourceVersion: String(resourceVersion ?? stored.resourceVersion),
    creationTimestamp: rfc3339(stored.createdAt),
    ...(stored.deletionRequestedAt === undefined
      ? {}
      : { deletionTimestamp: rfc3339(stored.deletionRequestedAt) }),
    labels: { ...stored.labels, [NAME_LABEL]: name },
    ...(Object.keys(stored.annotations).length === 0
      ? {}
      : { annotations: { ...stored.annotations } }),
  };
  return {
    apiVersion: "v1",
    kind: "Namespace",
    metadata,
    spec: { finalizers: ["kubernetes"] },
    status: { phase: terminating ? "Terminating" : "Active" },
  };
}

function partial(ns: Record<string, unknown>): Record<string, unknown> {
  return { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: ns.metadata };
}

/** Every namespace, sorted by name: the stored ones, those in use, and `default`. */
export async function allNamespaces(ctx: KubeContext): Promise<Record<string, unknown>[]> {
  const stored = await storedNamespaces(ctx);
  const names = new Set([EVENTS_NAMESPACE, ...stored.keys(), ...await usedNamespaces(ctx)]);
  return [...names].sort((a, b) => a < b ? -1 : a > b ? 1 : 0)
    .map((name) => toNamespace(name, stored.get(name)));
}

/** The stored namespace `name` (one read by name), or `undefined` when none is stored. */
export async function storedNamespace(
  ctx: KubeContext,
  name: string,
): Promise<NamespaceObject | undefined> {
  try {
    return await namespaceClient(ctx).getByName(name);
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}

/** Whether namespace `name`, not stored, exists as one in use (or as `default`). */
async function inUse(ctx: KubeContext, name: string): Promise<boolean> {
  return name === EVENTS_NAMESPACE || (await usedNamespaces(ctx)).has(name);
}

/** A namespace that exists: the stored one (none when it is only in use), and as the API answers it. */
export interface FoundNamespace {
  readonly stored: NamespaceObject | undefined;
  readonly namespace: Record<string, unknown>;
}

/** The namespace `name` (one read by name), or `undefined` when it does not exist. */
export async function lookupNamespace(
  ctx: KubeContext,
  name: string,
): Promise<FoundNamespace | undefined> {
  const stored = await storedNamespace(ctx, name);
  if (stored !== undefined) return { stored, namespace: toNamespace(name, stored) };
  if (!await inUse(ctx, name)) return undefined;
  return { stored: undefined, namespace: toNamespace(name, undefined) };
}

/** The namespace `name` as the API answers it, or `undefined` when it does not exist. */
export async function findNamespace(
  ctx: KubeContext,
  name: string,
): Promise<Record<string, unknown> | undefined> {
  return (await lookupNamespace(ctx, name))?.namespace;
}

/** Kubernetes' NotFound for namespace `name`. */
export function namespaceNotFound(name: string): KubeApiFailure {
  const details = { kind: "namespaces", group: "", name };
  return new KubeApiFailure("NotFound", notFoundMessage(details), details);
}

/** `ns` as a Table row, its object included as `include` asks. */
function namespaceRow(ns: Record<string, unknown>, include: IncludeObject) {
  return {
    cells: [(ns.metadata as { name: string }).name, phaseOf(ns)],
    ...(include === "None" ? {} : { object: include === "Object" ? ns : partial(ns) }),
  };
}

/** `ns` as a one-row Table of `version` (a Table watch's object). */
export function namespaceTable(
  ns: Record<string, unknown>,
  version: string,
  include: IncludeObject,
): Record<string, unknown> {
  const resourceVersion = (ns.metadata as { resourceVersion?: string }).resourceVersion ?? "0";
  return table(version, [namespaceRow(ns, include)], { resourceVersion }, COLUMNS);
}

/** The phase column's value. */
function phaseOf(ns: Record<string, unknown>): string {
  return (ns.status as { phase: string }).phase;
}

/**
 * `GET /api/v1/namespaces[/<name>]`: every namespace, or the one named.
 * `labelSelector` and `fieldSelector` (`metadata.name`) filter the list.
 * @throws {KubeApiFailure} NotFound: no namespace `name`; BadRequest: a malformed selector.
 */
export async function readNamespaces(
  ctx: KubeContext,
  request: Request,
  url: URL,
  name: string | undefined,
): Promise<Response> {
  const rep = negotiate(request);
  const labels = parseLabelSelector(param(url, "labelSelector"));
  const fields = parseFieldSelector(param(url, "fieldSelector"));
  const resourceVersion = String(await ctx.store.getLatestResourceVersion());
  let items: Record<string, unknown>[];
  if (name !== undefined) {
    const one = await findNamespace(ctx, name);
    if (one === undefined) throw namespaceNotFound(name);
    if (rep.as !== "table") return jsonResponse(200, one);
    items = [one];
  } else {
    items = (await allNamespaces(ctx)).filter((ns) => {
      const meta = ns.metadata as { name: string; labels: Record<string, string> };
      return labels(meta.labels) && fields.matches({ name: meta.name, namespace: "" });
    });
  }
  if (rep.as === "table") {
    const include = includeObjectParam(url);
    const rows = items.map((ns) => namespaceRow(ns, include));
    return jsonResponse(
      200,
      table(rep.version, rows, { resourceVersion }, COLUMNS),
      tableType(rep.version),
    );
  }
  return jsonResponse(200, {
    kind: "NamespaceList",
    apiVersion: "v1",
    metadata: { resourceVersion },
    items,
  });
}

/**
 * Refuses a create into namespace `ns` while it is `Terminating`, as the API
 * server does (its objects are being deleted).
 * @throws {KubeApiFailure} Forbidden: `ns` is terminating.
 */
export async function refuseTerminating(
  ctx: KubeContext,
  ns: string,
  details: StatusDetails,
): Promise<void> {
  const stored = await storedNamespace(ctx, ns);
  if (stored?.deletionRequestedAt === undefined) return;
  const what = `${details.kind}${details.group === "" ? "" : `.${details.group}`}`;
  throw new KubeApiFailure(
    "Forbidden",
    `${what} "${details.name}" is forbidden: unable to create new content in namespace ${ns} ` +
      "because it is being terminated",
    details,
  );
}
