/**
 * The router: splits the path under the base path, checks its bounds, and
 * hands each route to its concern — discovery, reads, watches, deletes.
 * Every failure becomes a `Status` answer; nothing escapes it.
 *
 * @module
 */
import type { KindRequest, KubeContext } from "./_context.ts";
import { APPLY_PATCH, applyResource } from "./_apply.ts";
import { deleteCollection, deleteResource } from "./_delete.ts";
import { listEvents } from "./_events.ts";
import { watchEvents } from "./_event_watch.ts";
import {
  apiGroup,
  apiGroupList,
  apiResourceList,
  coreResourceList,
  coreVersions,
  versionInfo,
} from "./_discovery.ts";
import { InvalidOptionError } from "@beehive/beehive";
import { isGroupName, type ServedKind, VERSION } from "./_kinds.ts";
import { readNamespaces } from "./_namespaces.ts";
import {
  createNamespace,
  deleteNamespace,
  drainTerminating,
  updateNamespace,
} from "./_namespace_writes.ts";
import { watchNamespaces } from "./_namespace_watch.ts";
import { namespaceProblem } from "../src/model/namespace.ts";
import { groupDocumentText, openApiIndex } from "./_openapi.ts";
import { CORE_DOCUMENT_TEXT, coreIndexEntry, openApiV2 } from "./_openapi_core.ts";
import { getResource, listResources } from "./_reads.ts";
import { boolParam } from "./_request.ts";
import { failureResponse, jsonResponse, KubeApiFailure, toFailure } from "./_status.ts";
import { contentTypeOf } from "./_filters.ts";
import { watchResources } from "./_watch.ts";
import { applyStatus, patchStatus, replaceStatus } from "./_status_writes.ts";
import { createResource, PATCH_TYPES, patchResource, replaceResource } from "./_writes.ts";

/** The longest path served. */
export const MAX_PATH = 2048;

const UNSUPPORTED_PATCH = new Set([
  "application/strategic-merge-patch+json",
  "application/apply-patch+cbor",
]);

function notFoundPath(): KubeApiFailure {
  return new KubeApiFailure("NotFound", "the server could not find the requested resource");
}

function notAllowed(method: string, what: string): KubeApiFailure {
  return new KubeApiFailure(
    "MethodNotAllowed",
    `the server does not allow this method on the requested resource: ${method} on ${what}`,
  );
}

/** Answers `request`, whose path under the base is `path`. Never rejects. */
export async function route(ctx: KubeContext, request: Request, path: string): Promise<Response> {
  try {
    return await dispatch(ctx, request, path);
  } catch (error) {
    return failureResponse(toFailure(error));
  }
}

/**
 * The path's decoded segments.
 * @throws {KubeApiFailure} BadRequest: too long or a malformed escape; NotFound: too deep.
 */
export function segmentsOf(path: string): string[] {
  if (path.length > MAX_PATH) {
    throw new KubeApiFailure("BadRequest", `the path is over ${MAX_PATH} characters`);
  }
  const raw = path.split("/").filter((s) => s !== "");
  if (raw.length > 8) throw notFoundPath();
  try {
    return raw.map(decodeURIComponent);
  } catch {
    throw new KubeApiFailure("BadRequest", "the path holds a malformed percent-escape");
  }
}

async function dispatch(ctx: KubeContext, request: Request, path: string): Promise<Response> {
  const url = new URL(request.url);
  const parts = segmentsOf(path);
  const method = request.method === "HEAD" ? "GET" : request.method;
  const readOnly = (what: string) => {
    if (method !== "GET") throw notAllowed(request.method, what);
  };
  if (parts.length === 1 && parts[0] === "version") {
    readOnly("/version");
    return jsonResponse(200, versionInfo());
  }
  if (parts[0] === "api") return core(ctx, request, url, parts, readOnly);
  if (parts[0] === "openapi") {
    readOnly(`/${parts.join("/")}`);
    return await openApi(ctx, request, parts);
  }
  if (parts[0] !== "apis") throw notFoundPath();
  if (parts.length === 1) {
    readOnly("/apis");
    return jsonResponse(200, apiGroupList(await ctx.kinds.list()));
  }
  const group = parts[1];
  if (!isGroupName(group)) throw notFoundPath();
  if (parts.length === 2 || parts.length === 3) {
    const kinds = (await ctx.kinds.list()).filter((k) => k.group === group);
    if (kinds.length === 0 || (parts.length === 3 && parts[2] !== VERSION)) throw notFoundPath();
    readOnly(`/apis/${group}`);
    return jsonResponse(200, parts.length === 2 ? apiGroup(group) : apiResourceList(group, kinds));
  }
  if (parts[2] !== VERSION) throw notFoundPath();
  // `/namespaces/<ns>/<plural>[/<name>[/status]]` or `/<plural>[/<name>[/status]]`.
  const scoped = parts[3] === "namespaces";
  const namespace = scoped ? parts[4] : undefined;
  const rest = parts.slice(scoped ? 5 : 3);
  if (rest.length === 0 || (namespace !== undefined && namespaceProblem(namespace) !== undefined)) {
    throw notFoundPath();
  }
  // Kubernetes serves a cluster-scoped kind only outside namespaces, and a
  // namespaced kind's objects only inside one (its list also spans them all).
  const fits = (k: ServedKind | undefined): k is ServedKind =>
    k !== undefined && (k.namespaced === scoped || k.namespaced && rest.length === 1);
  let kind = await ctx.kinds.find(group, rest[0]);
  // A scope remembered from an earlier request is read again before it refuses the path.
  if (kind !== undefined && !fits(kind)) kind = await ctx.kinds.find(group, rest[0], true);
  if (!fits(kind)) throw notFoundPath();
  const r: KindRequest = { ctx, kind, request, url, namespace };
  try {
    return await kindRoute(r, rest, method);
  } catch (error) {
    // The clients refuse a scope only on a fresh read of the kind's definition: it changed since
    // this request read it, and the path is answered as the new scope answers it.
    if (error instanceof InvalidOptionError && !fits(await ctx.kinds.find(group, rest[0], true))) {
      throw notFoundPath();
    }
    throw error;
  }
}

/** A request to one served kind, under `rest` (`<plural>[/<name>[/status]]`). */
async function kindRoute(
  r: KindRequest,
  rest: readonly string[],
  method: string,
): Promise<Response> {
  const { kind, namespace } = r;
  const scoped = namespace !== undefined;
  if (rest.length === 1) {
    if (kind.namespaced && !scoped && method === "POST") {
      throw notAllowed(r.request.method, `${kind.plural}.${kind.group} across namespaces`);
    }
    return await collection(r, method);
  }
  if (rest.length === 2) return await item(r, rest[1], method);
  if (rest.length === 3 && rest[2] === "status") return await statusItem(r, rest[1], method);
  throw notFoundPath();
}

/**
 * `/openapi/v3`, `/openapi/v3/apis/<group>/v1`, the core group's
 * `/openapi/v3/api/v1`, and `/openapi/v2` (no definitions: what kubectl
 * validates a `kind: List` against).
 */
async function openApi(
  ctx: KubeContext,
  request: Request,
  parts: readonly string[],
): Promise<Response> {
  if (parts.length === 2 && parts[1] === "v3") {
    const index = await openApiIndex(ctx, ctx.base);
    const paths = { ...await coreIndexEntry(ctx.base), ...index.paths as object };
    return jsonResponse(200, { ...index, paths });
  }
  if (parts.length === 2 && parts[1] === "v2") return openApiV2(request);
  if (parts.length === 4 && parts[1] === "v3" && parts[2] === "api" && parts[3] === VERSION) {
    return new Response(CORE_DOCUMENT_TEXT, {
      headers: { "content-type": "application/json", "cache-control": "no-store" },
    });
  }
  if (parts.length === 5 && parts[1] === "v3" && parts[2] === "apis" && parts[4] === VERSION) {
    const doc = isGroupName(parts[3])
      ? await groupDocumentText(ctx, parts[3], await ctx.kinds.list())
      : undefined;
    if (doc !== undefined) {
      return new Response(doc, {
        headers: { "content-type": "application/json", "cache-control": "no-store" },
      });
    }
  }
  throw notFoundPath();
}

/** The core group: `/api`, `/api/v1`, the events and the namespaces in it. */
async function core(
  ctx: KubeContext,
  request: Request,
  url: URL,
  parts: readonly string[],
  readOnly: (what: string) => void,
): Promise<Response> {
  const method = request.method === "HEAD" ? "GET" : request.method;
  if (parts[1] === "v1" && parts[2] === "namespaces" && parts.length <= 4) {
    const name = parts[3];
    if (name === undefined && method === "POST") return await createNamespace(ctx, request, url);
    if (name !== undefined && method === "DELETE") {
      return await deleteNamespace(ctx, request, url, name);
    }
    if (name !== undefined && (method === "PUT" || method === "PATCH")) {
      return await updateNamespace(ctx, request, url, name);
    }
    readOnly(`/${parts.join("/")}`);
    if (name === undefined && boolParam(url, "watch")) {
      return await watchNamespaces(ctx, request, url);
    }
    await drainTerminating(ctx, name);
    return await readNamespaces(ctx, request, url, name);
  }
  readOnly(`/${parts.join("/")}`);
  if (parts.length === 1) return jsonResponse(200, coreVersions());
  if (parts[1] !== "v1") throw notFoundPath();
  if (parts.length === 2) return jsonResponse(200, coreResourceList());
  const all = parts.length === 3 && parts[2] === "events";
  const one = parts.length === 5 && parts[2] === "namespaces" && parts[4] === "events";
  if (!all && !one || one && namespaceProblem(parts[3]) !== undefined) throw notFoundPath();
  if (boolParam(url, "watch")) {
    return await watchEvents(ctx, request, url, one ? parts[3] : undefined);
  }
  return await listEvents(ctx, request, url, one ? parts[3] : undefined);
}

function collection(r: KindRequest, method: string): Promise<Response> {
  if (method === "POST") return createResource(r);
  if (method === "DELETE") return deleteCollection(r);
  if (method !== "GET") throw notAllowed(r.request.method, `${r.kind.plural}.${r.kind.group}`);
  return boolParam(r.url, "watch") ? watchResources(r) : listResources(r);
}

/** `…/<name>/status`: read, replaced, patched (merge or JSON patch) or applied. */
function statusItem(r: KindRequest, name: string, method: string): Promise<Response> {
  if (method === "GET") return getResource(r, name);
  if (method === "PUT") return replaceStatus(r, name);
  if (method === "PATCH") {
    const type = contentTypeOf(r.request);
    if (PATCH_TYPES.has(type)) return patchStatus(r, name, type);
    if (type === APPLY_PATCH) return applyStatus(r, name);
  }
  throw notAllowed(r.request.method, `${r.kind.plural}.${r.kind.group}/${name}/status`);
}

function item(r: KindRequest, name: string, method: string): Promise<Response> {
  if (method === "GET") return getResource(r, name);
  if (method === "DELETE") return deleteResource(r, name);
  if (method === "PUT") return replaceResource(r, name);
  if (method === "PATCH") {
    const type = contentTypeOf(r.request);
    if (PATCH_TYPES.has(type)) return patchResource(r, name, type);
    if (type === APPLY_PATCH) return applyResource(r, name);
    if (UNSUPPORTED_PATCH.has(type)) {
      throw new KubeApiFailure(
        "UnsupportedMediaType",
        `${type} is not supported: strategic-merge patches need kinds compiled into the ` +
          "server, and apply configurations are taken as JSON (application/apply-patch+yaml)",
      );
    }
  }
  throw notAllowed(r.request.method, `${r.kind.plural}.${r.kind.group}/${name}`);
}
