/**
 * Writes: `POST …/<plural>` creates, `PUT …/<plural>/<name>` replaces the
 * spec, labels and annotations (a stale `metadata.resourceVersion` is 409
 * `Conflict`), `PATCH` applies a JSON merge patch or a JSON patch to the
 * resource and writes the result's spec, labels and annotations. Fields the
 * kind's schema does not declare are judged by `?fieldValidation`. A create
 * takes `metadata.finalizers` as the API server does and ignores the
 * server-set fields (`uid`, `resourceVersion`, `creationTimestamp`,
 * `generation`, `managedFields`), so a `get -o yaml` export creates anew.
 * Every write sets `metadata.finalizers` whole (none added once deletion is
 * requested; the last removed from a deleting object finishes its delete).
 * Names are not generated.
 * `status` in a body is ignored, as on a resource with a status subresource.
 * `?dryRun=All` runs every write through the same path, rolled back where it
 * would commit.
 *
 * @module
 */
import { InvalidOptionError, NotFoundError } from "@beehive/beehive";
import type { KindRequest } from "./_context.ts";
import {
  fieldValidationParam,
  judgeUnknown,
  pruneUnknown,
  schemaOf,
  unknownFields,
  warningHeader,
} from "./_field_validation.ts";
import { readDefinition, type ServedKind } from "./_kinds.ts";
import { type AnyObject, resolveOwners, toResource } from "./_objects.ts";
import { subdomainProblem } from "./_names.ts";
import {
  API_FINALIZERS,
  API_MANAGED_FIELDS,
  API_SET_FINALIZERS,
  type ApiCreateOptions,
  type ApiMetadataWriteOptions,
  type ApiUpdateOptions,
} from "../src/clients/client.ts";
import { sameJson } from "./_field_sets.ts";
import {
  boundedManagedFieldsText,
  fieldManagerOf,
  type FieldsContext,
  managedFieldsJson,
  managedFieldsText,
  type ManagerEntry,
  parseManagedFields,
  recordUpdate,
} from "./_managed_fields.ts";
import { diffMap, type StringMap } from "./_map_patch.ts";
import { jsonPatch, mergePatch } from "./_patch.ts";
import { refuseTerminating } from "./_namespaces.ts";
import { clientOf, detailsOf, findByName, notFound } from "./_reads.ts";
import { dryRunParam, readJsonBody } from "./_request.ts";
import {
  invalidFailure,
  jsonResponse,
  KubeApiFailure,
  type StatusDetails,
  toFailure,
} from "./_status.ts";
import { isJsonObject, type JsonObject } from "../src/model/_json_object.ts";

/** The longest finalizer name: a qualified name's 253-character prefix, `/` and 63 characters. */
const MAX_FINALIZER_CHARS = 317;

/**
 * A client's refusal of a finalizer list (too many, too long for the store's
 * limits) as 422 on `metadata.finalizers`; anything else unchanged.
 */
function finalizerFailure(error: unknown, r: KindRequest, details: StatusDetails): unknown {
  if (error instanceof InvalidOptionError && /finalizer/i.test(error.message)) {
    return invalid(r.kind, details, "metadata.finalizers", error.message);
  }
  return error;
}

/** How many times a patch re-reads and re-applies after a concurrent write moved the object. */
const PATCH_ATTEMPTS = 5;

/** Invalid `field` of an object of `kind` (`details` name its resource). */
function invalid(
  kind: ServedKind,
  details: StatusDetails,
  field: string,
  message: string,
): KubeApiFailure {
  return invalidFailure({ ...details, kind: kind.kind }, [{ field, message }]);
}

async function jsonBody(r: KindRequest, what: string): Promise<unknown> {
  const request = r.request;
  const type = (request.headers.get("content-type") ?? "application/json").split(";")[0].trim()
    .toLowerCase();
  if (type === "application/yaml" || type === "application/vnd.kubernetes.protobuf") {
    throw new KubeApiFailure("UnsupportedMediaType", `${type} is not supported: send JSON`);
  }
  return await readJsonBody(request, r.ctx.body, what);
}

/** What a written resource may carry: its name, spec and the metadata this server can keep. */
export interface Written {
  readonly name: string | undefined;
  readonly spec: unknown;
  readonly resourceVersion: number | undefined;
  readonly finalizers: readonly string[] | undefined;
  /** The labels the object is to hold, whole (`{}` when the body has none). */
  readonly labels: StringMap;
  /** The annotations the object is to hold, whole. */
  readonly annotations: StringMap;
}

/**
 * `metadata.labels` or `metadata.annotations` of a body: a map of strings,
 * `{}` when absent. Keys and values are judged by the library when written.
 */
function stringMap(
  r: KindRequest,
  value: unknown,
  field: string,
  details: StatusDetails,
): StringMap {
  if (value === undefined || value === null) return {};
  if (!isJsonObject(value) || !Object.values(value).every((v) => typeof v === "string")) {
    throw invalid(r.kind, details, `metadata.${field}`, "must be a map of strings");
  }
  return value as StringMap;
}

/**
 * Checks a resource body against the kind: `apiVersion`/`kind` when given,
 * and the shape of the metadata this server keeps.
 */
export function checkResource(r: KindRequest, body: unknown, details: StatusDetails): Written {
  if (!isJsonObject(body)) {
    throw new KubeApiFailure("BadRequest", "the request body is not an object");
  }
  const { kind } = r;
  if (body.apiVersion !== undefined && body.apiVersion !== kind.apiVersion) {
    throw new KubeApiFailure(
      "BadRequest",
      `the body's apiVersion ${JSON.stringify(body.apiVersion)} does not match ${kind.apiVersion}`,
    );
  }
  if (body.kind !== undefined && body.kind !== kind.kind) {
    throw new KubeApiFailure(
      "BadRequest",
      `the body's kind ${JSON.stringify(body.kind)} does not match ${kind.kind}`,
    );
  }
  const metadata = body.metadata ?? {};
  if (!isJsonObject(metadata)) throw invalid(r.kind, details, "metadata", "must be an object");
  const owners = metadata.ownerReferences;
  if (owners !== undefined && owners !== null && !Array.isArray(owners)) {
    throw invalid(r.kind, details, "metadata.ownerReferences", "must be an array");
  }
  if (metadata.generateName !== undefined && metadata.name === undefined) {
    throw invalid(
      r.kind,
      details,
      "metadata.generateName",
      "is not supported yet: give metadata.name",
    );
  }
  const name = metadata.name;
  if (name !== undefined && typeof name !== "string") {
    throw invalid(r.kind, details, "metadata.name", "must be a string");
  }
  const namespace = metadata.namespace;
  if (namespace !== undefined && namespace !== null && typeof namespace !== "string") {
    throw invalid(r.kind, details, "metadata.namespace", "must be a string");
  }
  // A cluster-scoped kind's body may name any namespace: Kubernetes drops it, as does this server.
  if (kind.namespaced && typeof namespace === "string" && namespace !== "") {
    if (namespace !== r.namespace) {
      throw new KubeApiFailure(
        "BadRequest",
        "the namespace of the provided object does not match the namespace sent on the request",
      );
    }
  }
  const rv = metadata.resourceVersion;
  if (rv !== undefined && rv !== "" && (typeof rv !== "string" || !/^[1-9]\d{0,15}$/.test(rv))) {
    throw invalid(r.kind, details, "metadata.resourceVersion", "must be a resourceVersion string");
  }
  const finalizers = metadata.finalizers;
  if (
    finalizers !== undefined && finalizers !== null &&
    !(Array.isArray(finalizers) && finalizers.every((f) => typeof f === "string"))
  ) {
    throw invalid(r.kind, details, "metadata.finalizers", "must be an array of strings");
  }
  if (Array.isArray(finalizers)) {
    const bad = finalizers.findIndex((f: string) =>
      // deno-lint-ignore no-control-regex
      f === "" || f.length > MAX_FINALIZER_CHARS || /[\u0000-\u001f\u007f]/.test(f)
    );
    if (bad >= 0) {
      throw invalid(
        r.kind,
        details,
        `metadata.finalizers[${bad}]`,
        `Invalid value: must be 1 to ${MAX_FINALIZER_CHARS} printable characters`,
      );
    }
  }
  return {
    name,
    spec: body.spec === undefined ? {} : body.spec,
    resourceVersion: rv === undefined || rv === "" ? undefined : Number(rv),
    finalizers: (finalizers ?? undefined) as string[] | undefined,
    labels: stringMap(r, metadata.labels, "labels", details),
    annotations: stringMap(r, metadata.annotations, "annotations", details),
  };
}

function sameList(a: readonly string[] | undefined, b: readonly string[]): boolean {
  return JSON.stringify([...(a ?? [])].sort()) === JSON.stringify([...b].sort());
}

/** Answers a write: the object as written, its managed fields, and the warnings. */
export async function answer(
  r: KindRequest,
  obj: AnyObject,
  status: number,
  warnings: readonly string[],
  entries: readonly ManagerEntry[],
): Promise<Response> {
  const owner = (await resolveOwners(r.ctx.store, [obj])).get(obj.id);
  return jsonResponse(
    status,
    toResource(r.kind, { obj, owner, managedFields: managedFieldsJson(entries) }),
    "application/json",
    warningHeader(warnings),
  );
}

/**
 * Applies `?fieldValidation` to the fields of `body` the kind's schema does
 * not declare and `before` (the stored resource) does not hold: a throw
 * under `Strict`; else the body without them, and the warnings to send
 * under `Warn`.
 */
export function judgeFields(
  r: KindRequest,
  body: unknown,
  details: StatusDetails,
  c: FieldsContext,
  before?: unknown,
): { body: unknown; warnings: string[] } {
  const mode = fieldValidationParam(r.url);
  // A write is judged on what it adds, not on what was already stored.
  const stored = new Set(before === undefined ? [] : unknownFields(c.schema, before));
  const pruned = pruneUnknown(c.schema, body, stored);
  const warnings = judgeUnknown(mode, pruned.dropped, { ...details, kind: r.kind.kind });
  return { body: pruned.body, warnings };
}

/** `POST …/<plural>`: creates the object the body describes. */
export async function createResource(r: KindRequest): Promise<Response> {
  const dryRun = dryRunParam(r.url);
  const body = await jsonBody(r, r.kind.kind);
  const named =
    isJsonObject(body) && isJsonObject(body.metadata) && typeof body.metadata.name === "string"
      ? body.metadata.name
      : undefined;
  const c = await fieldsContext(r);
  const judged = judgeFields(r, body, detailsOf(r.kind, named), c);
  const written = checkResource(r, judged.body, detailsOf(r.kind, named));
  const manager = fieldManagerOf(r.request, r.url);
  if (written.name === undefined || written.name === "") {
    throw invalid(r.kind, detailsOf(r.kind), "metadata.name", "Required value: name is required");
  }
  const details = detailsOf(r.kind, written.name);
  const problem = subdomainProblem(written.name);
  if (problem !== undefined) throw invalid(r.kind, details, "metadata.name", problem);
  // The server-set fields of a body (uid, resourceVersion, creationTimestamp, generation,
  // managedFields, status) are not read: a `get -o yaml` export creates anew.
  const entries = recordUpdate([], manager, undefined, judged.body, c);
  return await createWritten(r, { ...written, name: written.name }, details, {
    dryRun,
    entries,
    warnings: judged.warnings,
  });
}

/** Creates `written` (named) with `entries` as its managed fields, answering 201. */
export async function createWritten(
  r: KindRequest,
  written: Written & { readonly name: string },
  details: StatusDetails,
  o: { dryRun: boolean; entries: readonly ManagerEntry[]; warnings: readonly string[] },
): Promise<Response> {
  const options: ApiCreateOptions = {
    labels: written.labels,
    annotations: written.annotations,
    dryRun: o.dryRun,
    ...(written.finalizers === undefined ? {} : { finalizers: written.finalizers }),
    [API_FINALIZERS]: true,
    [API_MANAGED_FIELDS]: boundedManagedFieldsText(o.entries, r.ctx.objectBytes, {
      ...details,
      kind: r.kind.kind,
    }),
  };
  if (r.namespace !== undefined) await refuseTerminating(r.ctx, r.namespace, details);
  let obj: AnyObject;
  try {
    obj = await clientOf(r).create(written.name, written.spec, options);
  } catch (error) {
    throw toFailure(finalizerFailure(error, r, details), details, r.kind.kind);
  }
  return await answer(r, obj, 201, o.warnings, o.entries);
}

/** The schema, API version and instant a write judges its managed fields by. */
export async function fieldsContext(r: KindRequest): Promise<FieldsContext> {
  const definition = await readDefinition(r.ctx.bh, r.kind);
  return { schema: schemaOf(r.kind, definition), apiVersion: r.kind.apiVersion, now: new Date() };
}

/**
 * Writes `written` over `current` (named `name`) as one write: its spec,
 * labels and annotations together (a byte-identical spec writes nothing of
 * it); the labels and annotations alone when the spec is unchanged, which a
 * deletion-pending object still takes.
 */
export async function writeObject(
  r: KindRequest,
  name: string,
  written: Written,
  current: AnyObject,
  details: StatusDetails,
  o: { dryRun: boolean; managedFields: string | undefined },
): Promise<AnyObject> {
  if (written.name !== undefined && written.name !== name) {
    throw new KubeApiFailure(
      "BadRequest",
      `the name of the object (${written.name}) does not match the name on the URL (${name})`,
    );
  }
  // The body's list is the object's, whole: absent is none, as on the API server.
  const finalizers = written.finalizers ?? [];
  const refinalized = !sameList(finalizers, current.finalizers);
  const deleting = current.deletionRequestedAt !== undefined;
  if (refinalized && deleting && finalizers.some((f) => !current.finalizers.includes(f))) {
    throw invalid(
      r.kind,
      details,
      "metadata.finalizers",
      "Forbidden: no new finalizers can be added if the object is being deleted",
    );
  }
  const client = clientOf(r);
  const labels = diffMap(current.labels, written.labels);
  const annotations = diffMap(current.annotations, written.annotations);
  const metadata = {
    ...(labels === undefined ? {} : { labels }),
    ...(annotations === undefined ? {} : { annotations }),
  };
  const { resourceVersion } = written;
  const { dryRun, managedFields } = o;
  const managed = {
    ...(managedFields === undefined ? {} : { [API_MANAGED_FIELDS]: managedFields }),
    ...(refinalized ? { [API_SET_FINALIZERS]: finalizers } : {}),
  };
  let obj: AnyObject;
  if (sameJson(written.spec, current.spec)) {
    const options: ApiMetadataWriteOptions = { resourceVersion, dryRun, ...managed };
    obj = await client.updateMetadata(current.id, metadata, options);
  } else {
    const options: ApiUpdateOptions = { resourceVersion, dryRun, ...metadata, ...managed };
    obj = await client.updateByName(name, written.spec, options);
  }
  // The last finalizer of a deleting object gone: its delete finishes, as the API's delete does.
  if (refinalized && deleting && finalizers.length === 0 && !dryRun) {
    await r.ctx.bh.adminClient(r.kind).deleteNow(current.id).catch((error) => {
      if (!(error instanceof NotFoundError)) throw error;
    });
  }
  return obj;
}

/** An object as stored, read whole: the decoded object, the resource it answers as, its managed fields. */
export interface Stored {
  readonly obj: AnyObject;
  readonly resource: JsonObject;
  readonly entries: ManagerEntry[];
}

/**
 * Reads `name` with its managed fields, as of one version (the two reads are
 * retried while a write lands between them); `undefined` when absent.
 */
export async function readStored(r: KindRequest, name: string): Promise<Stored | undefined> {
  for (let attempt = 1;; attempt++) {
    const obj = await findByName(r, name);
    if (obj === undefined) return undefined;
    const meta = await r.ctx.store.objects.getMeta(obj.id).catch(() => undefined);
    if (meta !== undefined && meta.resourceVersion === obj.resourceVersion) {
      const owner = (await resolveOwners(r.ctx.store, [obj])).get(obj.id);
      const entries = parseManagedFields(meta.managedFields);
      const resource = toResource(r.kind, { obj, owner });
      return { obj, resource, entries };
    }
    if (attempt >= PATCH_ATTEMPTS) {
      throw new KubeApiFailure("Conflict", "the object kept changing while it was read: try again");
    }
  }
}

/** What one attempt of an update makes of the stored object. */
export interface Update {
  /** The resource to write (judged). */
  readonly body: unknown;
  readonly warnings: readonly string[];
  /** The managed fields after the write. */
  readonly entries: readonly ManagerEntry[];
}

/**
 * The update loop every write to an existing object shares (PUT, every
 * patch, apply): reads the object, lets `make` produce the resource to
 * write, and writes it in one write with the object's version as the
 * precondition, so managed fields never lose a concurrent write; a write that
 * lost that race is made again from a fresh read (unless the body pins a
 * `resourceVersion`, which then must be current).
 */
export async function updateExisting(
  r: KindRequest,
  name: string,
  stored: Stored | undefined,
  make: (stored: Stored) => Promise<Update>,
): Promise<Response> {
  const dryRun = dryRunParam(r.url);
  const details = detailsOf(r.kind, name);
  for (let attempt = 1;; attempt++) {
    const current = attempt === 1 && stored !== undefined ? stored : await readStored(r, name);
    if (current === undefined) throw notFound(r.kind, name);
    const update = await make(current);
    const written = checkResource(r, update.body, details);
    const pinned = written.resourceVersion !== undefined &&
      written.resourceVersion !== current.obj.resourceVersion;
    const text = boundedManagedFieldsText(update.entries, r.ctx.objectBytes, {
      ...details,
      kind: r.kind.kind,
    });
    try {
      const obj = await writeObject(
        r,
        name,
        {
          ...written,
          resourceVersion: pinned ? written.resourceVersion : current.obj.resourceVersion,
        },
        current.obj,
        details,
        { dryRun, managedFields: text === managedFieldsText(current.entries) ? undefined : text },
      );
      return await answer(r, obj, 200, update.warnings, update.entries);
    } catch (error) {
      const failure = toFailure(
        finalizerFailure(error, r, details),
        { ...details, uid: String(current.obj.id) },
        r.kind.kind,
      );
      if (failure.reason !== "Conflict" || pinned || attempt >= PATCH_ATTEMPTS) throw failure;
    }
  }
}

/**
 * `PUT …/<plural>/<name>`: replaces the spec, labels and annotations;
 * `metadata.resourceVersion`, when given, must be current.
 */
export async function replaceResource(r: KindRequest, name: string): Promise<Response> {
  const details = detailsOf(r.kind, name);
  const body = await jsonBody(r, r.kind.kind);
  const manager = fieldManagerOf(r.request, r.url);
  return await updateExisting(r, name, undefined, async (stored) => {
    const c = await fieldsContext(r);
    const judged = judgeFields(r, body, details, c, stored.resource);
    const entries = recordUpdate(stored.entries, manager, stored.resource, judged.body, c);
    return { body: judged.body, warnings: judged.warnings, entries };
  });
}

/** The patch media types applied here. */
export const PATCH_TYPES = new Set(["application/merge-patch+json", "application/json-patch+json"]);

/**
 * `PATCH …/<plural>/<name>`: applies the patch to the resource as served and
 * writes the result's spec, labels and annotations, retrying from a fresh read when another write
 * moved the object in between (unless the patch names a `resourceVersion`).
 */
export async function patchResource(r: KindRequest, name: string, type: string): Promise<Response> {
  const details = detailsOf(r.kind, name);
  const patch = await readJsonBody(r.request, r.ctx.body, "patch");
  const merge = type === "application/merge-patch+json";
  const manager = fieldManagerOf(r.request, r.url);
  return await updateExisting(r, name, undefined, async (stored) => {
    const patched = merge
      ? mergePatch(stored.resource, patch)
      : jsonPatch(stored.resource, patch, r.ctx.objectBytes);
    const c = await fieldsContext(r);
    const judged = judgeFields(r, patched, details, c, stored.resource);
    const entries = recordUpdate(stored.entries, manager, stored.resource, judged.body, c);
    return { body: judged.body, warnings: judged.warnings, entries };
  });
}
