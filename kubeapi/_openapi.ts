/**
 * OpenAPI v3, as kubectl reads it: `/openapi/v3` lists one document per
 * group-version, and `/openapi/v3/apis/<group>/v1` describes the group's
 * kinds — each resource's schema (its stored spec and status schemas under
 * `apiVersion`, `kind`, `metadata`) tagged with
 * `x-kubernetes-group-version-kind`, and its paths, whose `patch` operation
 * takes `fieldValidation`, which tells kubectl to leave validation to the
 * server. `kubectl explain` prints from the same document. The core group's
 * document (`/openapi/v3/api/v1`, `Namespace`) is `_openapi_core.ts`'s.
 * `/openapi/v2` is not served (404): kubectl ≥ 1.27 reads v3.
 *
 * @module
 */
import type { StoredKind } from "@beehive/beehive";
import type { KubeContext } from "./_context.ts";
import { readDefinition, type ServedKind, VERSION } from "./_kinds.ts";
import { FREE_FORM, type OpenApiSchema, toOpenApiSchema } from "./_openapi_schema.ts";
import { SERVED_API } from "./_discovery.ts";

type JsonObject = Record<string, unknown>;

const OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

const text = (description: string) => ({ type: "string", description });
const stringMap = (description: string) => ({
  type: "object",
  description,
  additionalProperties: { type: "string" },
});

/** `metadata` as this server reads and writes it. */
export const OBJECT_META_SCHEMA: OpenApiSchema = {
  type: "object",
  description: "The metadata every object carries: its name, identity, versions and labels.",
  properties: {
    name: text("The object's name, unique within its kind. Required when creating."),
    generateName: text("Not supported: give metadata.name."),
    namespace: text(
      "The namespace of an object of a namespaced kind (the path's); empty for a cluster-scoped kind.",
    ),
    selfLink: text("Not set."),
    uid: text("The object's id: it names this incarnation of the object."),
    resourceVersion: text(
      "The object's version, as a string. A write that carries it must be current.",
    ),
    generation: { type: "integer", format: "int64", description: "Bumped by every spec change." },
    creationTimestamp: { type: "string", format: "date-time", description: "When created." },
    deletionTimestamp: {
      type: "string",
      format: "date-time",
      description: "When deletion was requested; the object stays while finalizers hold it.",
    },
    deletionGracePeriodSeconds: { type: "integer", format: "int64", description: "Not used." },
    labels: stringMap("Labels the object carries, for selecting it."),
    annotations: stringMap("Annotations the object carries."),
    finalizers: {
      type: "array",
      description: "Finalizers holding the object until its controllers release it.",
      items: { type: "string" },
    },
    ownerReferences: {
      type: "array",
      description: "The object's owner: deleting the owner deletes the object.",
      items: {
        type: "object",
        properties: {
          apiVersion: text("The owner's API version."),
          kind: text("The owner's kind."),
          name: text("The owner's name."),
          uid: text("The owner's uid."),
          controller: { type: "boolean", description: "Always true." },
          blockOwnerDeletion: { type: "boolean", description: "Always true." },
        },
      },
    },
    managedFields: {
      type: "array",
      description: "Not recorded.",
      items: { type: "object", ...FREE_FORM },
    },
  },
};

const CONDITIONS: OpenApiSchema = {
  type: "array",
  description: "The object's conditions, as its controllers set them.",
  items: {
    type: "object",
    properties: {
      type: text("The condition's type, e.g. Ready."),
      status: text("True, False or Unknown."),
      reason: text("A one-word reason."),
      message: text("A message for a person."),
      lastTransitionTime: { type: "string", format: "date-time", description: "Last change." },
      observedGeneration: {
        type: "integer",
        format: "int64",
        description: "The generation the object's controller last observed.",
      },
    },
  },
};

/** The stored status schema, with the fields the server adds (`observedGeneration`, `conditions`). */
function statusSchema(definition: StoredKind | undefined): OpenApiSchema {
  const stored = definition?.statusSchema === undefined
    ? { type: "object", ...FREE_FORM }
    : toOpenApiSchema(definition.statusSchema);
  const properties = (stored.properties ?? {}) as JsonObject;
  return {
    ...stored,
    properties: {
      ...properties,
      observedGeneration: {
        type: "integer",
        format: "int64",
        description: "The generation the object's controller last observed.",
      },
      conditions: CONDITIONS,
    },
  };
}

/** The schema of the spec: the stored one, or free-form without one. */
export function specSchema(definition: StoredKind | undefined): OpenApiSchema {
  return definition?.specSchema === undefined
    ? { type: "object", ...FREE_FORM }
    : toOpenApiSchema(definition.specSchema);
}

/** The name of `kind`'s schema in `components.schemas`: the group reversed, then version and kind. */
export function schemaName(kind: ServedKind): string {
  return `${kind.group.split(".").reverse().join(".")}.${VERSION}.${kind.kind}`;
}

/**
 * The resource's schema, with `metadata` as given (a reference in the
 * document, the schema itself where the server checks a body).
 */
export function resourceSchema(
  kind: ServedKind,
  definition: StoredKind | undefined,
  metadata: OpenApiSchema,
): OpenApiSchema {
  return {
    type: "object",
    description: `${kind.kind} is a kind of ${kind.group}, served from a beehive store.`,
    properties: {
      apiVersion: text(`The versioned schema of this object: ${kind.apiVersion}.`),
      kind: text(`The kind of this object: ${kind.kind}.`),
      metadata,
      spec: specSchema(definition),
      status: statusSchema(definition),
    },
    "x-kubernetes-group-version-kind": [{ group: kind.group, version: VERSION, kind: kind.kind }],
  };
}

const QUERY = (name: string, description: string) => ({
  name,
  in: "query",
  description,
  schema: { type: "string", uniqueItems: true },
});
const WRITE_PARAMETERS = [
  QUERY("dryRun", "All: the write is checked and answered as if made, and nothing is written."),
  QUERY("fieldManager", "Accepted and not recorded."),
  QUERY(
    "fieldValidation",
    "Ignore, Warn (the default) or Strict: how fields the kind's schema does not " +
      "declare are treated — dropped silently, dropped with a warning, or refused with 422.",
  ),
];

function operation(
  kind: ServedKind,
  action: string,
  id: string,
  response: OpenApiSchema,
  extra: JsonObject = {},
): JsonObject {
  return {
    description: `${action} ${kind.kind}`,
    operationId: `${id}${kind.kind}`,
    responses: {
      "200": { description: "OK", content: { "application/json": { schema: response } } },
      "401": { description: "Unauthorized" },
    },
    "x-kubernetes-action": action,
    "x-kubernetes-group-version-kind": { group: kind.group, version: VERSION, kind: kind.kind },
    ...extra,
  };
}

/** The OpenAPI v3 document of `group`'s served kinds, each with its stored definition. */
export function groupDocument(
  group: string,
  kinds: readonly { kind: ServedKind; definition: StoredKind | undefined }[],
): JsonObject {
  const paths: JsonObject = {};
  const schemas: JsonObject = { [OBJECT_META]: OBJECT_META_SCHEMA };
  for (const { kind, definition } of kinds) {
    const name = schemaName(kind);
    const ref = { $ref: `#/components/schemas/${name}` };
    const metadata = {
      description: "Standard object metadata: name, uid, resourceVersion, labels, annotations.",
      allOf: [{ $ref: `#/components/schemas/${OBJECT_META}` }],
    };
    schemas[name] = resourceSchema(kind, definition, metadata);
    const body = (types: readonly string[]) => ({
      requestBody: {
        required: true,
        content: Object.fromEntries(types.map((t) => [t, { schema: ref }])),
      },
      parameters: WRITE_PARAMETERS,
    });
    const list = { type: "object", description: `A list of ${kind.kind}.` };
    const all = `/apis/${group}/${VERSION}/${kind.plural}`;
    const base = kind.namespaced
      ? `/apis/${group}/${VERSION}/namespaces/{namespace}/${kind.plural}`
      : all;
    const scope = kind.namespaced
      ? [{
        name: "namespace",
        in: "path",
        required: true,
        description: "The namespace of the objects.",
        schema: { type: "string", uniqueItems: true },
      }]
      : [];
    // A namespaced kind's cluster-wide path lists every namespace; it creates nothing.
    if (kind.namespaced) paths[all] = { get: operation(kind, "list", "listAllNamespaces", list) };
    paths[base] = {
      ...(kind.namespaced ? { parameters: scope } : {}),
      get: operation(kind, "list", "list", list),
      post: operation(kind, "post", "create", ref, body(["application/json"])),
    };
    paths[`${base}/{name}`] = {
      parameters: [...scope, {
        name: "name",
        in: "path",
        required: true,
        description: `The name of the ${kind.kind}.`,
        schema: { type: "string", uniqueItems: true },
      }],
      get: operation(kind, "get", "read", ref),
      put: operation(kind, "put", "replace", ref, body(["application/json"])),
      patch: operation(
        kind,
        "patch",
        "patch",
        ref,
        body(["application/merge-patch+json", "application/json-patch+json"]),
      ),
      delete: operation(kind, "delete", "delete", { type: "object" }),
    };
  }
  return {
    openapi: "3.0.0",
    info: {
      title: "Kubernetes",
      version: `v${SERVED_API.major}.${SERVED_API.minor}.0+beehive`,
    },
    paths,
    components: { schemas },
  };
}

/**
 * The document of `group` as JSON text, from the served kinds `served` and
 * their definitions, read afresh; `undefined` when no kind of `group` is served.
 */
export async function groupDocumentText(
  ctx: KubeContext,
  group: string,
  served: readonly ServedKind[],
): Promise<string | undefined> {
  const kinds = served.filter((k) => k.group === group);
  if (kinds.length === 0) return undefined;
  const defined = [];
  for (const kind of kinds) defined.push({ kind, definition: await readDefinition(ctx.bh, kind) });
  return JSON.stringify(groupDocument(group, defined));
}

/** The hash of a document's text a client caches it by. */
export async function hashOf(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("")
    .toUpperCase();
}

/**
 * `GET /openapi/v3`: each group-version's document path, with a hash of its
 * contents in `serverRelativeURL` (clients cache by it); `base` is the path
 * the API is mounted under.
 */
export async function openApiIndex(ctx: KubeContext, base: string): Promise<JsonObject> {
  const served = await ctx.kinds.list();
  const paths: JsonObject = {};
  for (const group of new Set(served.map((k) => k.group))) {
    const doc = await groupDocumentText(ctx, group, served);
    if (doc === undefined) continue;
    const path = `apis/${group}/${VERSION}`;
    paths[path] = { serverRelativeURL: `${base}/openapi/v3/${path}?hash=${await hashOf(doc)}` };
  }
  return { paths };
}
