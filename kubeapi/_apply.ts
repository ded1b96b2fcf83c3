/**
 * Server-side apply: `PATCH …/<plural>/<name>` with
 * `application/apply-patch+yaml` (its body JSON, the YAML subset kubectl and
 * client libraries send). `?fieldManager` names the manager (required);
 * the configuration is merged over the object and the manager's managed
 * fields become exactly what it sets (see `_managed_fields.ts`). A field
 * another manager owns with another value is a 409 `Conflict` naming both,
 * unless `?force=true`, which takes it. An absent object is created. Apply
 * meets the same write path as every other write: field validation, one
 * write, `dryRun`.
 *
 * @module
 */
import type { KindRequest } from "./_context.ts";
import { applyConfig } from "./_managed_fields.ts";
import { subdomainProblem } from "./_names.ts";
import { detailsOf } from "./_reads.ts";
import { boolParam, dryRunParam, param, readJsonBody } from "./_request.ts";
import { invalidFailure, KubeApiFailure, type StatusDetails } from "./_status.ts";
import {
  checkResource,
  createWritten,
  fieldsContext,
  judgeFields,
  readStored,
  updateExisting,
} from "./_writes.ts";
import { isJsonObject, type JsonObject } from "../src/model/_json_object.ts";

/** The apply patch type. */
export const APPLY_PATCH = "application/apply-patch+yaml";

/**
 * An apply's `?fieldManager`, required.
 * @throws {KubeApiFailure} Invalid when absent or empty.
 */
export function applyManager(r: KindRequest, details: StatusDetails): string {
  const manager = param(r.url, "fieldManager");
  if (manager === undefined || manager === "") {
    throw invalidFailure({ ...details, kind: r.kind.kind }, [{
      field: "fieldManager",
      message: "Required value: is required for apply patch",
    }]);
  }
  return manager;
}

/**
 * An apply's configuration: the request body, a JSON object.
 * @throws {KubeApiFailure} BadRequest when it is not one (or over the body limits).
 */
export async function readApplyConfig(r: KindRequest): Promise<JsonObject> {
  const config = await readJsonBody(r.request, r.ctx.body, "apply configuration");
  if (!isJsonObject(config)) {
    throw new KubeApiFailure("BadRequest", "the apply configuration is not an object");
  }
  return config;
}

/** `PATCH …/<plural>/<name>` as a server-side apply. */
export async function applyResource(r: KindRequest, name: string): Promise<Response> {
  const details = detailsOf(r.kind, name);
  const manager = applyManager(r, details);
  const force = boolParam(r.url, "force");
  const config = await readApplyConfig(r);
  if (config.apiVersion === undefined || config.kind === undefined) {
    throw new KubeApiFailure(
      "BadRequest",
      "the apply configuration must name its apiVersion and kind",
    );
  }
  const named = isJsonObject(config.metadata) ? config.metadata.name : undefined;
  if (named !== undefined && named !== name) {
    throw new KubeApiFailure(
      "BadRequest",
      `the name of the object (${String(named)}) does not match the name on the URL (${name})`,
    );
  }
  const stored = await readStored(r, name);
  if (stored === undefined) {
    const problem = subdomainProblem(name);
    if (problem !== undefined) {
      throw invalidFailure({ ...details, kind: r.kind.kind }, [{
        field: "metadata.name",
        message: problem,
      }]);
    }
    const c = await fieldsContext(r);
    const judged = judgeFields(r, config, details, c);
    const applied = applyConfig([], manager, undefined, judged.body, { ...c, force, details });
    const written = checkResource(r, applied.resource, details);
    return await createWritten(r, { ...written, name }, details, {
      dryRun: dryRunParam(r.url),
      entries: applied.entries,
      warnings: judged.warnings,
    });
  }
  return await updateExisting(r, name, stored, async (current) => {
    const c = await fieldsContext(r);
    const judged = judgeFields(r, config, details, c, current.resource);
    const applied = applyConfig(current.entries, manager, current.resource, judged.body, {
      ...c,
      force,
      details: { ...details, uid: String(current.obj.id) },
    });
    return { body: applied.resource, warnings: judged.warnings, entries: applied.entries };
  });
}
