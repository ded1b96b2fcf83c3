/**
 * Creating and deleting namespaces: `POST /api/v1/namespaces` (JSON, or the
 * protobuf kubectl sends for a built-in kind) stores the namespace;
 * `DELETE /api/v1/namespaces/<name>` marks it `Terminating` (a store
 * finalizer keeps it while it drains), deletes every object of a served kind
 * in it as the API's DELETE does, and removes it once none is left. One that
 * finalizers hold drains further whenever namespaces are read. `PUT` and
 * `PATCH` write a namespace's labels and annotations.
 *
 * @module
 */
import { DeletionPendingError, NotFoundError } from "@beehive/beehive";
import { namespaceProblem } from "../src/model/namespace.ts";
import type { BodyLimits, KubeContext } from "./_context.ts";
import { EVENTS_NAMESPACE } from "./_events.ts";
import {
  lookupNamespace,
  NAMESPACE_KIND,
  namespaceClient,
  namespaceNotFound,
  type NamespaceObject,
  storedNamespace,
  storedNamespaces,
  toNamespace,
} from "./_namespaces.ts";
import { diffMap } from "./_map_patch.ts";
import { jsonPatch, mergePatch } from "./_patch.ts";
import { fieldsOf, mapField, PROTOBUF, stringField, unwrap } from "./_protobuf.ts";
import { dryRunParam, MAX_PAGE, readBody, readBodyBytes, readJsonBody } from "./_request.ts";
import { invalidFailure, jsonResponse, KubeApiFailure, toFailure } from "./_status.ts";
import { contentTypeOf } from "./_filters.ts";

type Json = Parameters<typeof mergePatch>[0];

/** The store finalizer that keeps a terminating namespace while its objects drain. */
const FINALIZER = "kubernetes";

/** The label every namespace carries, naming it: answered, never stored. */
const NAME_LABEL = "kubernetes.io/metadata.name";

/** The most objects one drain deletes; the rest go on the next. */
const MAX_DRAIN = 10_000;

/** What a namespace body carries. */
interface NamespaceBody {
  readonly name: unknown;
  readonly labels: unknown;
  readonly annotations: unknown;
}

function invalid(name: string, field: string, message: string): KubeApiFailure {
  return invalidFailure({ kind: "Namespace", group: "", name }, [{ field, message }]);
}

/** `Namespace` protobuf: field 1 its ObjectMeta (name 1, labels 11, annotations 12). */
function namespaceOfProtobuf(bytes: Uint8Array): NamespaceBody {
  const meta = fieldsOf(unwrap(bytes)).get(1);
  if (meta === undefined) return { name: undefined, labels: undefined, annotations: undefined };
  return {
    name: stringField(fieldsOf(meta), 1),
    labels: mapField(meta, 11),
    annotations: mapField(meta, 12),
  };
}

async function readNamespaceBody(request: Request, limits: BodyLimits): Promise<NamespaceBody> {
  const type = (request.headers.get("content-type") ?? "application/json").split(";")[0].trim()
    .toLowerCase();
  if (type === PROTOBUF) return namespaceOfProtobuf(await readBodyBytes(request, limits));
  if (type !== "application/json") {
    throw new KubeApiFailure("UnsupportedMediaType", `${type} is not supported: send JSON`);
  }
  const body = await readJsonBody(request, limits, "Namespace");
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new KubeApiFailure("BadRequest", "the request body is not a JSON Namespace");
  }
  const o = body as Record<string, unknown>;
  if (
    o.kind !== undefined && o.kind !== "Namespace" ||
    o.apiVersion !== undefined && o.apiVersion !== "v1"
  ) {
    throw new KubeApiFailure("BadRequest", "the request body is not a v1 Namespace");
  }
  const meta = (o.metadata ?? {}) as Record<string, unknown>;
  if (typeof meta !== "object" || Array.isArray(meta)) {
    throw new KubeApiFailure("BadRequest", "metadata must be an object");
  }
  return { name: meta.name, labels: meta.labels, annotations: meta.annotations };
}

function stringMap(value: unknown, name: string, field: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (
    typeof value !== "object" || Array.isArray(value) ||
    !Object.values(value).every((v) => typeof v === "string")
  ) {
    throw invalid(name, field, "must be a map of strings");
  }
  return value as Record<string, string>;
}

/** `POST /api/v1/namespaces`: stores the namespace (one only in use becomes stored). */
export async function createNamespace(
  ctx: KubeContext,
  request: Request,
  url: URL,
): Promise<Response> {
  const dryRun = dryRunParam(url);
  const body = await readNamespaceBody(request, ctx.body);
  const name = body.name;
  if (typeof name !== "string" || name === "") {
    throw invalid("", "metadata.name", "Required value: name is required");
  }
  const problem = namespaceProblem(name);
  if (problem !== undefined) throw invalid(name.slice(0, 100), "metadata.name", problem);
  const { [NAME_LABEL]: _, ...labels } = stringMap(body.labels, name, "metadata.labels");
  const annotations = stringMap(body.annotations, name, "metadata.annotations");
  const details = { kind: "namespaces", group: "", name };
  if (await storedNamespace(ctx, name) !== undefined) {
    throw new KubeApiFailure("AlreadyExists", `namespaces "${name}" already exists`, details);
  }
  try {
    const created = await namespaceClient(ctx).create(name, {}, { labels, annotations, dryRun });
    return jsonResponse(201, toNamespace(name, created));
  } catch (error) {
    throw toFailure(error, details);
  }
}

/**
 * `DELETE /api/v1/namespaces/<name>`: marks it `Terminating` and drains it;
 * the answer is the namespace, `Terminating` while objects remain.
 * @throws {KubeApiFailure} NotFound: no such namespace; Forbidden: `default`.
 */
export async function deleteNamespace(
  ctx: KubeContext,
  request: Request,
  url: URL,
  name: string,
): Promise<Response> {
  const dryRun = dryRunParam(url);
  // DeleteOptions are read (bounded) and ignored: a namespace's propagation is always its contents.
  await readBody(request, ctx.body);
  const details = { kind: "namespaces", group: "", name };
  if (name === EVENTS_NAMESPACE) {
    throw new KubeApiFailure(
      "Forbidden",
      `namespaces "${name}" is forbidden: this namespace may not be deleted`,
      details,
    );
  }
  const found = await lookupNamespace(ctx, name);
  if (found === undefined) throw namespaceNotFound(name);
  if (dryRun) return jsonResponse(200, found.namespace);
  const client = namespaceClient(ctx);
  // Only in use: stored now, so that it can be Terminating while it drains.
  const ns = found.stored ?? await client.create(name, {});
  if (ns.deletionRequestedAt === undefined) {
    try {
      await ctx.store.objects.addFinalizer({ ...NAMESPACE_KIND, id: ns.id }, FINALIZER);
    } catch (error) {
      if (!(error instanceof DeletionPendingError)) throw error;
    }
    await client.delete(ns.id);
  }
  const last = await drainNamespace(ctx, ns);
  return jsonResponse(200, toNamespace(name, last ?? await client.get(ns.id)));
}

/**
 * Deletes the objects of terminating namespace `ns` (at most
 * {@linkcode MAX_DRAIN}) and removes `ns` once none is left: resolves to its
 * last state when it is gone, else `undefined`.
 */
async function drainNamespace(
  ctx: KubeContext,
  ns: NamespaceObject,
): Promise<NamespaceObject | undefined> {
  let budget = MAX_DRAIN;
  let left = false;
  for (const kind of await ctx.kinds.list()) {
    if (!kind.namespaced) continue;
    const client = ctx.bh.client(kind, { namespace: ns.name });
    const admin = ctx.bh.adminClient(kind);
    let after = 0;
    for (;;) {
      const page = await client.list({ after, limit: MAX_PAGE });
      for (const obj of page) {
        if (budget-- <= 0) return undefined;
        try {
          if (!await admin.deleteNow(obj.id)) left = true;
        } catch (error) {
          if (!(error instanceof NotFoundError)) throw error;
        }
      }
      if (page.length < MAX_PAGE) break;
      after = page[page.length - 1].id;
    }
  }
  if (left) return undefined;
  const ref = { ...NAMESPACE_KIND, id: ns.id };
  try {
    const last = await namespaceClient(ctx).get(ns.id);
    await ctx.store.objects.deleteFinalizer(ref, FINALIZER);
    await ctx.bh.adminClient(NAMESPACE_KIND).deleteNow(ns.id);
    return last;
  } catch (error) {
    if (error instanceof NotFoundError) return ns;
    throw error;
  }
}

/**
 * Drains every terminating namespace a step further, or only `name` when
 * given (a read of one namespace): held objects may have let go.
 */
export async function drainTerminating(ctx: KubeContext, name?: string): Promise<void> {
  const namespaces = name === undefined
    ? (await storedNamespaces(ctx)).values()
    : [await storedNamespace(ctx, name)];
  for (const ns of namespaces) {
    if (ns?.deletionRequestedAt !== undefined) await drainNamespace(ctx, ns);
  }
}

/** The patch types a namespace takes; a strategic merge patch merges its maps as a merge patch does. */
const NAMESPACE_PATCHES = new Set([
  "application/merge-patch+json",
  "application/strategic-merge-patch+json",
  "application/json-patch+json",
]);

/**
 * `PUT` and `PATCH` (merge, strategic merge — a namespace's maps merge alike —
 * or JSON patch) `/api/v1/namespaces/<name>`: writes the namespace's labels
 * and annotations, storing one only in use first; the rest of the body is the
 * server's. `metadata.resourceVersion`, when given, must be current.
 * @throws {KubeApiFailure} NotFound, UnsupportedMediaType, Conflict, Invalid.
 */
export async function updateNamespace(
  ctx: KubeContext,
  request: Request,
  url: URL,
  name: string,
): Promise<Response> {
  const dryRun = dryRunParam(url);
  const type = contentTypeOf(request);
  const put = request.method === "PUT";
  if (!put && !NAMESPACE_PATCHES.has(type)) {
    throw new KubeApiFailure("UnsupportedMediaType", `${type} is not supported on namespaces`);
  }
  const body = await readJsonBody(request, ctx.body, put ? "Namespace" : "patch");
  const found = await lookupNamespace(ctx, name);
  if (found === undefined) throw namespaceNotFound(name);
  let ns = found.stored;
  const current = found.namespace;
  const client = namespaceClient(ctx);
  const details = { kind: "namespaces", group: "", name };
  const target = put
    ? body
    : type === "application/json-patch+json"
    ? jsonPatch(current as Json, body as Json, ctx.objectBytes)
    : mergePatch(current as Json, body as Json);
  if (typeof target !== "object" || target === null || Array.isArray(target)) {
    throw new KubeApiFailure("BadRequest", "the namespace is not an object");
  }
  const meta = ((target as Record<string, unknown>).metadata ?? {}) as Record<string, unknown>;
  if (typeof meta !== "object" || Array.isArray(meta)) {
    throw invalid(name, "metadata", "must be an object");
  }
  if (meta.name !== undefined && meta.name !== name) {
    throw new KubeApiFailure(
      "BadRequest",
      `the name of the object (${String(meta.name)}) does not match the name on the URL (${name})`,
    );
  }
  const rv = meta.resourceVersion;
  const currentRv = (current.metadata as { resourceVersion?: string }).resourceVersion;
  if (put && rv !== undefined && rv !== null && rv !== "" && String(rv) !== currentRv) {
    throw new KubeApiFailure(
      "Conflict",
      `Operation cannot be fulfilled on namespaces "${name}": the object has been modified; ` +
        "please apply your changes to the latest version and try again",
      details,
    );
  }
  const { [NAME_LABEL]: _, ...labels } = stringMap(meta.labels, name, "metadata.labels");
  const annotations = stringMap(meta.annotations, name, "metadata.annotations");
  if (dryRun) {
    const preview = toNamespace(name, ns);
    const m = preview.metadata as Record<string, unknown>;
    return jsonResponse(200, {
      ...preview,
      metadata: { ...m, labels: { ...labels, [NAME_LABEL]: name }, annotations },
    });
  }
  try {
    ns ??= await client.create(name, {});
    const update = {
      labels: diffMap(ns.labels, labels),
      annotations: diffMap(ns.annotations, annotations),
    };
    if (update.labels !== undefined || update.annotations !== undefined) {
      await client.updateMetadata(ns.id, update);
    }
    return jsonResponse(200, toNamespace(name, await client.get(ns.id)));
  } catch (error) {
    throw toFailure(error, details);
  }
}
