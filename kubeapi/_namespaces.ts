/**
 * core/v1 `Namespace`s, read-only: `GET /api/v1/namespaces` and
 * `/api/v1/namespaces/<name>`. A namespace exists while objects of a served
 * kind use it, and `default` always (kubectl's namespace when its context names
 * none, and where a cluster-scoped object's events are). Answered as a
 * `NamespaceList` or `Namespace`, or a Table for `kubectl get namespaces`.
 *
 * @module
 */
import type { KubeContext } from "./_context.ts";
import { EVENTS_NAMESPACE } from "./_events.ts";
import { includeObjectParam, negotiate, param } from "./_request.ts";
import { parseFieldSelector, parseLabelSelector } from "./_selectors.ts";
import { jsonResponse, KubeApiFailure, notFoundMessage } from "./_status.ts";
import { type Column, table, tableType } from "./_tables.ts";

/** The label Kubernetes puts on every namespace, naming it (what a selector picks one by). */
const NAME_LABEL = "kubernetes.io/metadata.name";

/** The `namespaces` entry of the core/v1 discovery document. */
export const NAMESPACES_RESOURCE = {
  name: "namespaces",
  singularName: "namespace",
  namespaced: false,
  kind: "Namespace",
  verbs: ["get", "list"],
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
    description: "The namespace's phase: Active.",
    priority: 0,
  },
];

/**
 * The namespaces in use: every served kind's, plus `default`, each once,
 * sorted. One index probe per kind and namespace.
 */
async function namespaceNames(ctx: KubeContext): Promise<string[]> {
  const names = new Set([EVENTS_NAMESPACE]);
  for (const kind of await ctx.kinds.list()) {
    for (const ns of await ctx.store.objects.listNamespaces(kind)) names.add(ns);
  }
  return [...names].sort((a, b) => a < b ? -1 : a > b ? 1 : 0);
}

function toNamespace(name: string): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name, labels: { [NAME_LABEL]: name } },
    spec: { finalizers: ["kubernetes"] },
    status: { phase: "Active" },
  };
}

function partial(ns: Record<string, unknown>): Record<string, unknown> {
  return { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: ns.metadata };
}

/**
 * `GET /api/v1/namespaces[/<name>]`: the namespaces in use, or the one named.
 * `labelSelector` and `fieldSelector` (`metadata.name`) filter the list.
 * @throws {KubeApiFailure} NotFound: no object uses `name`; BadRequest: a malformed selector.
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
  const names = await namespaceNames(ctx);
  const resourceVersion = String(await ctx.store.getLatestResourceVersion());
  const items = names.map(toNamespace).filter((ns) => {
    const meta = ns.metadata as { name: string; labels: Record<string, string> };
    return labels(meta.labels) && fields.matches({ name: meta.name, namespace: "" });
  });
  if (name !== undefined) {
    const one = names.includes(name) ? toNamespace(name) : undefined;
    if (one === undefined) {
      const details = { kind: "namespaces", group: "", name };
      throw new KubeApiFailure("NotFound", notFoundMessage(details), details);
    }
    if (rep.as !== "table") return jsonResponse(200, one);
    items.splice(0, items.length, one);
  }
  if (rep.as === "table") {
    const include = includeObjectParam(url);
    const rows = items.map((ns) => ({
      cells: [(ns.metadata as { name: string }).name, "Active"],
      ...(include === "None" ? {} : { object: include === "Object" ? ns : partial(ns) }),
    }));
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
