/**
 * `DELETE …/<plural>/<name>`: deletes as the Kubernetes API server does (the
 * store's `AdminClient.deleteNow`): an object nothing holds is gone when the
 * answer (the object, 200) is sent; one that finalizers or owned objects hold
 * is answered with its `deletionTimestamp` and collected once they let go. A
 * `DeleteOptions` body may carry preconditions (`uid`, `resourceVersion`) and
 * a `propagationPolicy` (`Background`, `Foreground`, or `Orphan`, which keeps
 * the children and removes their owner edge). Under `dryRun` the same
 * deletion runs and is rolled back: the answer is what it would have been.
 * `DELETE …/<plural>` deletes so every object its selectors take.
 *
 * @module
 */
import { type DeleteNowOptions, NotFoundError } from "@beehive/beehive";

/** How a delete treats the objects its object owns. */
type PropagationPolicy = NonNullable<DeleteNowOptions["propagationPolicy"]>;
import type { BodyLimits, KindRequest } from "./_context.ts";
import { resolveOwners, toResource } from "./_objects.ts";
import {
  answerObject,
  detailsOf,
  findByName,
  notFound,
  readSelected,
  selectionOf,
} from "./_reads.ts";
import { dryRunParam, MAX_PAGE, negotiate, parseJson, readBody } from "./_request.ts";
import { jsonResponse, KubeApiFailure, successStatus, toFailure } from "./_status.ts";

interface DeleteOptions {
  readonly dryRun: boolean;
  readonly uid: string | undefined;
  readonly resourceVersion: number | undefined;
  readonly propagationPolicy: PropagationPolicy | undefined;
}

const POLICIES: ReadonlySet<unknown> = new Set(["Background", "Foreground", "Orphan"]);

function parseDeleteOptions(text: string, limits: BodyLimits): DeleteOptions {
  if (text.trim() === "") {
    return {
      dryRun: false,
      uid: undefined,
      resourceVersion: undefined,
      propagationPolicy: undefined,
    };
  }
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
  if (policy !== undefined && policy !== null && !POLICIES.has(policy)) {
    const message = `propagationPolicy must be Background, Foreground or Orphan: current value is ${
      JSON.stringify(policy).slice(0, 100)
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
    propagationPolicy: (policy ?? undefined) as PropagationPolicy | undefined,
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
  let gone: boolean;
  try {
    gone = await r.ctx.bh.adminClient(kind).deleteNow(obj.id, {
      resourceVersion: options.resourceVersion,
      propagationPolicy: options.propagationPolicy,
      dryRun,
    });
  } catch (error) {
    throw toFailure(error, details);
  }
  if (gone) return await answerObject(r, obj, rep);
  const after = await findByName(r, name);
  if (after === undefined || after.id !== obj.id) return jsonResponse(200, successStatus(details));
  return await answerObject(r, after, rep);
}

/**
 * `DELETE …/<plural>` (deletecollection): deletes every object the field and
 * label selectors take, a page at a time, as `DELETE …/<name>` deletes one,
 * and answers them as a `<Kind>List` — each as it stands after its delete, or
 * as it was when it is gone. How an object the library named outside the
 * API's rules (`x/y`) is still deleted through the API: by
 * `fieldSelector=metadata.name=x/y`.
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
  const admin = ctx.bh.adminClient(kind);
  const client = ctx.bh.client(kind);
  const items: Record<string, unknown>[] = [];
  let after = 0;
  for (let first = true;; first = false) {
    const page = await readSelected(r, selection, { after, want: MAX_PAGE, first });
    const owners = await resolveOwners(ctx.store, page.objects);
    for (const obj of page.objects) {
      let gone: boolean;
      try {
        gone = await admin.deleteNow(obj.id, {
          propagationPolicy: options.propagationPolicy,
          dryRun,
        });
      } catch (error) {
        if (error instanceof NotFoundError) continue;
        throw toFailure(error, { ...detailsOf(kind, obj.name), uid: String(obj.id) });
      }
      const now = gone ? obj : await client.get(obj.id).catch(() => obj);
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
