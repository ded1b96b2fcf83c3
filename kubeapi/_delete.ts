/**
 * `DELETE …/<plural>/<name>`: requests deletion, and `DELETE …/<plural>`
 * of every object its selectors take. The answer is the object
 * with its `deletionTimestamp` while it remains (finalizers, owned objects),
 * else a `Status` Success. A `DeleteOptions` body may carry preconditions
 * (`uid`, `resourceVersion`); `Orphan` propagation is refused (owned objects
 * always go with their owner).
 *
 * @module
 */
import type { KindRequest } from "./_context.ts";
import { resolveOwners, toResource } from "./_objects.ts";
import {
  answerObject,
  clientOf,
  detailsOf,
  findByName,
  notFound,
  readSelected,
  selectionOf,
} from "./_reads.ts";
import {
  type BodyLimits,
  dryRunParam,
  MAX_PAGE,
  negotiate,
  parseJson,
  readBody,
} from "./_request.ts";
import { jsonResponse, KubeApiFailure, successStatus, toFailure } from "./_status.ts";
import { NotFoundError } from "@beehive/beehive";

interface DeleteOptions {
  readonly dryRun: boolean;
  readonly uid: string | undefined;
  readonly resourceVersion: number | undefined;
}

function parseDeleteOptions(text: string, limits: BodyLimits): DeleteOptions {
  if (text.trim() === "") return { dryRun: false, uid: undefined, resourceVersion: undefined };
  const body = parseJson(text, limits.maxDepth, "DeleteOptions");
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new KubeApiFailure("BadRequest", "the request body is not JSON DeleteOptions");
  }
  const o = body as Record<string, unknown>;
  const dryRun = o.dryRun ?? [];
  if (!Array.isArray(dryRun) || dryRun.length > 8 || !dryRun.every((v) => v === "All")) {
    throw new KubeApiFailure("BadRequest", 'dryRun must be a list holding only "All"');
  }
  const policy = o.propagationPolicy;
  if (
    policy !== undefined && policy !== null && policy !== "Background" && policy !== "Foreground"
  ) {
    const message = policy === "Orphan"
      ? "propagationPolicy Orphan is not supported: owned objects are always deleted with their owner"
      : `propagationPolicy must be Background or Foreground: current value is ${
        JSON.stringify(policy)
      }`;
    throw new KubeApiFailure("Invalid", message, {
      causes: [{ field: "propagationPolicy", message, reason: "FieldValueNotSupported" }],
    });
  }
  const pre = (o.preconditions ?? {}) as Record<string, unknown>;
  if (typeof pre !== "object" || Array.isArray(pre)) {
    throw new KubeApiFailure("BadRequest", "preconditions must be an object");
  }
  const uid = pre.uid ?? undefined;
  const rv = pre.resourceVersion ?? undefined;
  if (uid !== undefined && typeof uid !== "string") {
    throw new KubeApiFailure("BadRequest", "preconditions.uid must be a string");
  }
  if (rv !== undefined && (typeof rv !== "string" || !/^[1-9]\d{0,15}$/.test(rv))) {
    throw new KubeApiFailure(
      "BadRequest",
      "preconditions.resourceVersion must be a version string",
    );
  }
  return {
    dryRun: dryRun.length > 0,
    uid,
    resourceVersion: rv === undefined ? undefined : Number(rv),
  };
}

/** `DELETE …/<plural>/<name>`. */
export async function deleteResource(r: KindRequest, name: string): Promise<Response> {
  const { kind, request, url } = r;
  const dryRunQuery = dryRunParam(url);
  const rep = negotiate(request);
  const options = parseDeleteOptions(await readBody(request, r.ctx.body), r.ctx.body);
  const dryRun = dryRunQuery || options.dryRun;
  const obj = await findByName(r, name);
  if (obj === undefined) throw notFound(kind, name);
  const details = { ...detailsOf(kind, name), uid: String(obj.id) };
  if (options.uid !== undefined && options.uid !== String(obj.id)) {
    throw new KubeApiFailure(
      "Conflict",
      `Precondition failed: UID in precondition: ${options.uid}, UID in object meta: ${obj.id}`,
      details,
    );
  }
  try {
    await clientOf(r).delete(obj.id, { resourceVersion: options.resourceVersion, dryRun });
  } catch (error) {
    throw toFailure(error, details);
  }
  const after = await findByName(r, name);
  if (after === undefined || after.id !== obj.id) return jsonResponse(200, successStatus(details));
  return await answerObject(r, after, rep);
}

/**
 * `DELETE …/<plural>` (deletecollection): requests deletion of every object
 * the field and label selectors take, a page at a time, and answers them as a
 * `<Kind>List` — each as it stands after its request, or as it was when it
 * is already gone. How an object the library named outside the API's rules
 * (`x/y`) is still deleted through the API: by `fieldSelector=metadata.name=x/y`.
 */
export async function deleteCollection(r: KindRequest): Promise<Response> {
  const { ctx, kind, request, url } = r;
  const dryRunQuery = dryRunParam(url);
  const selection = selectionOf(url);
  const options = parseDeleteOptions(await readBody(request, ctx.body), ctx.body);
  if (options.uid !== undefined || options.resourceVersion !== undefined) {
    throw new KubeApiFailure("BadRequest", "preconditions are not taken by a collection delete");
  }
  const dryRun = dryRunQuery || options.dryRun;
  const rv = await ctx.store.objectWrites.maxVersion(kind);
  const client = clientOf(r);
  const items: Record<string, unknown>[] = [];
  let after = 0;
  for (let first = true;; first = false) {
    const page = await readSelected(r, selection, { after, want: MAX_PAGE, first });
    const owners = await resolveOwners(ctx.store, page.objects);
    for (const obj of page.objects) {
      try {
        await client.delete(obj.id, { dryRun });
      } catch (error) {
        if (error instanceof NotFoundError) continue;
        throw toFailure(error, { ...detailsOf(kind, obj.name), uid: String(obj.id) });
      }
      const now = await client.get(obj.id).catch(() => obj);
      items.push(toResource(kind, { obj: now, owner: owners.get(obj.id) }));
    }
    if (page.next === undefined) break;
    after = page.next;
  }
  return jsonResponse(200, {
    apiVersion: kind.apiVersion,
    kind: `${kind.kind}List`,
    metadata: { resourceVersion: String(rv) },
    items,
  });
}
