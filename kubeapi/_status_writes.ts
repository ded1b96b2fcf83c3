/**
 * The `/status` subresource of every served kind: `PUT …/<name>/status`
 * replaces the object's status and `PATCH` (merge or JSON patch) patches the
 * resource and keeps only its `status`. The stored status takes every field
 * but `conditions` (written as the object's conditions: each one named is
 * set, one no longer named is removed) and `observedGeneration` (the
 * reconcile handshake's, never a client's). Spec, labels and the rest of
 * the body are ignored, as the API server ignores them on `/status`. A
 * server-side apply (`application/apply-patch+yaml`, `fieldManager`,
 * `force`) merges the configuration over the resource under the object's
 * managed fields (a conflict is 409) and keeps its `status`; the status
 * manager's own entry is not recorded (status writes carry no managed fields).
 * `metadata.resourceVersion`, when given, must be current (409 otherwise).
 *
 * @module
 */
import type { ConditionWrite } from "@beehive/beehive";
import type { KindRequest } from "./_context.ts";
import { type AnyObject, resolveOwners, toResource } from "./_objects.ts";
import { jsonPatch, mergePatch } from "./_patch.ts";
import { detailsOf, findByName, notFound } from "./_reads.ts";
import { boolParam, dryRunParam, readJsonBody } from "./_request.ts";
import { applyConfig } from "./_managed_fields.ts";
import { applyManager, readApplyConfig } from "./_apply.ts";
import { fieldsContext, readStored } from "./_writes.ts";
import {
  invalidFailure,
  jsonResponse,
  KubeApiFailure,
  type StatusDetails,
  toFailure,
} from "./_status.ts";
import { isJsonObject } from "../src/model/_json_object.ts";

type Json = Parameters<typeof mergePatch>[0];
const STATUSES = new Set(["True", "False", "Unknown"]);

/** A status write, checked: the stored status and the conditions. */
interface StatusWrite {
  readonly stored: Record<string, unknown>;
  readonly conditions: ConditionWrite[];
}

function checkStatus(r: KindRequest, details: StatusDetails, status: unknown): StatusWrite {
  const invalid = (field: string, message: string) =>
    invalidFailure({ ...details, kind: r.kind.kind }, [{ field, message }]);
  if (status === undefined || status === null) return { stored: {}, conditions: [] };
  if (!isJsonObject(status)) throw invalid("status", "must be an object");
  const { conditions, observedGeneration: _, ...stored } = status;
  const out: ConditionWrite[] = [];
  if (conditions !== undefined && conditions !== null) {
    if (!Array.isArray(conditions)) throw invalid("status.conditions", "must be a list");
    const seen = new Set<string>();
    conditions.forEach((c, i) => {
      const at = `status.conditions[${i}]`;
      if (!isJsonObject(c)) throw invalid(at, "must be an object");
      if (typeof c.type !== "string" || c.type === "") {
        throw invalid(`${at}.type`, "Required value");
      }
      if (seen.has(c.type)) throw invalid(`${at}.type`, `Duplicate value: "${c.type}"`);
      seen.add(c.type);
      if (!STATUSES.has(c.status as string)) {
        throw invalid(`${at}.status`, 'supported values: "True", "False", "Unknown"');
      }
      for (const key of ["reason", "message"] as const) {
        if (c[key] !== undefined && c[key] !== null && typeof c[key] !== "string") {
          throw invalid(`${at}.${key}`, "must be a string");
        }
      }
      out.push({
        type: c.type,
        status: c.status as ConditionWrite["status"],
        reason: (c.reason ?? "") as string,
        message: (c.message ?? "") as string,
      });
    });
  }
  return { stored, conditions: out };
}

/** The stored status as the API shows it without conditions: `{}` for none. */
function storedOf(obj: AnyObject): Record<string, unknown> {
  const s = obj.status;
  if (s === undefined) return {};
  return isJsonObject(s) ? s : { value: s };
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Writes `write` over `current`: the stored status when it changed, then the conditions. */
async function writeStatus(
  r: KindRequest,
  current: AnyObject,
  write: StatusWrite,
): Promise<void> {
  const admin = r.ctx.bh.adminClient(r.kind);
  if (!sameJson(write.stored, storedOf(current))) {
    await admin.updateStatus(current.id, write.stored);
  }
  const named = new Set(write.conditions.map((c) => c.type));
  const changed = write.conditions.filter((c) => {
    const was = current.conditions.find((k) => k.type === c.type);
    return was === undefined || was.status !== c.status || was.reason !== c.reason ||
      was.message !== c.message;
  });
  if (changed.length > 0) await admin.setConditions(current.id, changed);
  for (const c of current.conditions) {
    if (!named.has(c.type)) await admin.deleteCondition(current.id, c.type);
  }
}

/** Checks, writes (unless a dry run) and answers the object with its new status. */
async function commitStatus(
  r: KindRequest,
  name: string,
  current: AnyObject,
  body: unknown,
): Promise<Response> {
  const details = { ...detailsOf(r.kind, name), uid: String(current.id) };
  const meta = isJsonObject(body) && isJsonObject(body.metadata) ? body.metadata : {};
  const rv = meta.resourceVersion;
  if (
    rv !== undefined && rv !== null && rv !== "" && String(rv) !== String(current.resourceVersion)
  ) {
    throw new KubeApiFailure(
      "Conflict",
      `Operation cannot be fulfilled on ${r.kind.plural}.${r.kind.group} "${name}": the object ` +
        "has been modified; please apply your changes to the latest version and try again",
      details,
    );
  }
  const write = checkStatus(r, details, isJsonObject(body) ? body.status : undefined);
  const owner = (await resolveOwners(r.ctx.store, [current])).get(current.id);
  if (dryRunParam(r.url)) {
    const resource = toResource(r.kind, { obj: current, owner });
    const status = { ...write.stored, conditions: write.conditions };
    return jsonResponse(200, { ...resource, status });
  }
  try {
    await writeStatus(r, current, write);
  } catch (error) {
    throw toFailure(error, details, r.kind.kind);
  }
  const after = await findByName(r, name);
  if (after === undefined) throw notFound(r.kind, name);
  const afterOwner = (await resolveOwners(r.ctx.store, [after])).get(after.id);
  return jsonResponse(200, toResource(r.kind, { obj: after, owner: afterOwner }));
}

/** `PUT …/<name>/status`: replaces the status. */
export async function replaceStatus(r: KindRequest, name: string): Promise<Response> {
  const body = await readJsonBody(r.request, r.ctx.body, r.kind.kind);
  if (!isJsonObject(body)) {
    throw new KubeApiFailure("BadRequest", `the request body is not a JSON ${r.kind.kind}`);
  }
  const current = await findByName(r, name);
  if (current === undefined) throw notFound(r.kind, name);
  return await commitStatus(r, name, current, body);
}

/** `PATCH …/<name>/status` as a merge or JSON patch of the resource: its status is kept. */
export async function patchStatus(r: KindRequest, name: string, type: string): Promise<Response> {
  const patch = await readJsonBody(r.request, r.ctx.body, "patch");
  const current = await findByName(r, name);
  if (current === undefined) throw notFound(r.kind, name);
  const owner = (await resolveOwners(r.ctx.store, [current])).get(current.id);
  const resource = toResource(r.kind, { obj: current, owner }) as Json;
  const patched = type === "application/merge-patch+json"
    ? mergePatch(resource, patch as Json)
    : jsonPatch(resource, patch as Json, r.ctx.objectBytes);
  return await commitStatus(r, name, current, patched);
}

/** `PATCH …/<name>/status` as a server-side apply: the configuration's status, merged. */
export async function applyStatus(r: KindRequest, name: string): Promise<Response> {
  const details = detailsOf(r.kind, name);
  const manager = applyManager(r, details);
  const config = await readApplyConfig(r);
  const stored = await readStored(r, name);
  if (stored === undefined) throw notFound(r.kind, name);
  const c = await fieldsContext(r);
  const applied = applyConfig(stored.entries, manager, stored.resource, config, {
    ...c,
    force: boolParam(r.url, "force"),
    details: { ...details, uid: String(stored.obj.id) },
  });
  return await commitStatus(r, name, stored.obj, applied.resource);
}
