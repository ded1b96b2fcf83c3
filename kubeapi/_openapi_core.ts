/**
 * The core group's OpenAPI v3 document, `/openapi/v3/api/v1`: the kinds this
 * server serves under `/api/v1` that a manifest may hold — `Namespace` —
 * so that kubectl's default validation finds their schema (without it,
 * kubectl falls back to `/openapi/v2`) — and `/openapi/v2`, which kubectl
 * reads to validate a `kind: List`.
 *
 * @module
 */
import { hashOf, OBJECT_META_SCHEMA } from "./_openapi.ts";
import { SERVED_API } from "./_discovery.ts";

const NAMESPACE = "io.k8s.api.core.v1.Namespace";
const OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const GVK = { group: "", version: "v1", kind: "Namespace" };

const text = (description: string) => ({ type: "string", description });

/** The `/openapi/v3/api/v1` document. */
export function coreDocument(): Record<string, unknown> {
  const ref = { $ref: `#/components/schemas/${NAMESPACE}` };
  const op = (action: string, id: string, extra: Record<string, unknown> = {}) => ({
    description: `${action} Namespace`,
    operationId: `${id}CoreV1Namespace`,
    responses: {
      "200": { description: "OK", content: { "application/json": { schema: ref } } },
      "401": { description: "Unauthorized" },
    },
    "x-kubernetes-action": action,
    "x-kubernetes-group-version-kind": GVK,
    ...extra,
  });
  const body = {
    requestBody: { required: true, content: { "application/json": { schema: ref } } },
  };
  const name = {
    name: "name",
    in: "path",
    required: true,
    description: "The namespace's name.",
    schema: { type: "string", uniqueItems: true },
  };
  return {
    openapi: "3.0.0",
    info: { title: "Kubernetes", version: `v${SERVED_API.major}.${SERVED_API.minor}.0+beehive` },
    paths: {
      "/api/v1/namespaces": {
        get: op("list", "list"),
        post: op("post", "create", body),
      },
      "/api/v1/namespaces/{name}": {
        parameters: [name],
        get: op("get", "read"),
        put: op("put", "replace", body),
        // kubectl leaves validation to a server whose patch operation takes fieldValidation.
        patch: op("patch", "patch", {
          parameters: [{
            name: "fieldValidation",
            in: "query",
            description: "Ignore, Warn or Strict.",
            schema: { type: "string", uniqueItems: true },
          }],
        }),
        delete: op("delete", "delete"),
      },
    },
    components: {
      schemas: {
        [OBJECT_META]: OBJECT_META_SCHEMA,
        [NAMESPACE]: {
          type: "object",
          description: "Namespace groups objects: deleting it deletes every object in it.",
          properties: {
            apiVersion: text("v1"),
            kind: text("Namespace"),
            metadata: {
              description: "Standard object metadata: name, uid, labels, annotations.",
              allOf: [{ $ref: `#/components/schemas/${OBJECT_META}` }],
            },
            spec: {
              type: "object",
              description: "The namespace's finalizers: kubernetes, while it is not gone.",
              properties: { finalizers: { type: "array", items: { type: "string" } } },
            },
            status: {
              type: "object",
              description: "The namespace's phase.",
              properties: { phase: text("Active, or Terminating while its objects are deleted.") },
            },
          },
          "x-kubernetes-group-version-kind": [GVK],
        },
      },
    },
  };
}

/** The document's text, computed once (it does not depend on the store). */
export const CORE_DOCUMENT_TEXT: string = JSON.stringify(coreDocument());

/** The core document's entry of the `/openapi/v3` index (`base`: the API's mount path). */
export async function coreIndexEntry(base: string): Promise<Record<string, unknown>> {
  return {
    "api/v1": {
      serverRelativeURL: `${base}/openapi/v3/api/v1?hash=${await hashOf(CORE_DOCUMENT_TEXT)}`,
    },
  };
}

/** The content type kubectl asks `/openapi/v2` in: gnostic's OpenAPI v2 `Document` as protobuf. */
const OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/** A protobuf length-delimited field `n` holding `bytes`. */
function field(n: number, bytes: Uint8Array): Uint8Array {
  if (bytes.length > 127) throw new RangeError("a short field holds at most 127 bytes");
  return new Uint8Array([n * 8 + 2, bytes.length, ...bytes]);
}

const utf8 = (s: string) => new TextEncoder().encode(s);
const VERSION_TEXT = `v${SERVED_API.major}.${SERVED_API.minor}.0+beehive`;

/**
 * `GET /openapi/v2`: a Swagger 2.0 document with no definitions — kubectl
 * validates a `kind: List`'s items against it (through the v2 document
 * whatever the v3 one says), and skips the kinds it does not describe, so the
 * server validates them with `fieldValidation`. Protobuf (gnostic's
 * `Document`: `swagger` 1, `info` 2 with `title` 1 and `version` 2) when the
 * client asks for it, as kubectl does; JSON otherwise.
 */
export function openApiV2(request: Request): Response {
  const accept = request.headers.get("accept") ?? "";
  const headers = { "cache-control": "no-store" };
  if (accept.includes(OPENAPI_V2_PROTOBUF)) {
    const info = new Uint8Array([
      ...field(1, utf8("Kubernetes")),
      ...field(2, utf8(VERSION_TEXT)),
    ]);
    const body = new Uint8Array([...field(1, utf8("2.0")), ...field(2, info)]);
    // Go's media-type parser refuses the requested type's `@`: the body goes as plain bytes.
    return new Response(body, {
      headers: { ...headers, "content-type": "application/octet-stream" },
    });
  }
  const doc = { swagger: "2.0", info: { title: "Kubernetes", version: VERSION_TEXT }, paths: {} };
  return new Response(JSON.stringify(doc), {
    headers: { ...headers, "content-type": "application/json" },
  });
}
