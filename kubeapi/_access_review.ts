/**
 * `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`: answers
 * "may I?" from the requesting token's grant (everything is allowed on a
 * server without tokens), as `kubectl auth can-i` and k9s ask it.
 *
 * @module
 */
import type { BodyLimits } from "./_context.ts";
import { allows, type Attributes, type KubeApiToken } from "./_auth.ts";
import { fieldsOf, PROTOBUF, stringField, unwrap } from "./_protobuf.ts";
import { readBodyBytes, readJsonBody } from "./_request.ts";
import { jsonResponse, KubeApiFailure } from "./_status.ts";
import { contentTypeOf } from "./_filters.ts";

/** The group, version and resource of the review. */
export const REVIEW_PATH = ["apis", "authorization.k8s.io", "v1", "selfsubjectaccessreviews"];

/** Whether `parts` address the self-subject access review. */
export function isAccessReview(parts: readonly string[]): boolean {
  return parts.length === REVIEW_PATH.length && parts.every((p, i) => p === REVIEW_PATH[i]);
}

function invalid(field: string, message: string): KubeApiFailure {
  return new KubeApiFailure("Invalid", `SelfSubjectAccessReview is invalid: ${field}: ${message}`, {
    kind: "SelfSubjectAccessReview",
    group: "authorization.k8s.io",
    causes: [{ field, message, reason: "FieldValueInvalid" }],
  });
}

function text(o: Record<string, unknown>, key: string, field: string): string | undefined {
  const v = o[key];
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v !== "string" || v.length > 256) {
    throw invalid(`${field}.${key}`, "must be a string of at most 256 characters");
  }
  return v;
}

function attributesOfReview(spec: Record<string, unknown>): Attributes {
  const ra = spec.resourceAttributes;
  const nra = spec.nonResourceAttributes;
  if (typeof ra === "object" && ra !== null && !Array.isArray(ra)) {
    const o = ra as Record<string, unknown>;
    const f = "spec.resourceAttributes";
    const verb = text(o, "verb", f) ?? "";
    const name = text(o, "name", f);
    const namespace = text(o, "namespace", f);
    const subresource = text(o, "subresource", f);
    return {
      verb,
      resource: {
        group: text(o, "group", f) ?? "",
        resource: text(o, "resource", f) ?? "",
        ...(name === undefined ? {} : { name }),
        ...(namespace === undefined ? {} : { namespace }),
        ...(subresource === undefined ? {} : { subresource }),
      },
    };
  }
  if (typeof nra === "object" && nra !== null && !Array.isArray(nra)) {
    return {
      verb: text(nra as Record<string, unknown>, "verb", "spec.nonResourceAttributes") ?? "",
    };
  }
  throw invalid(
    "spec.resourceAttributes",
    "exactly one of resourceAttributes or nonResourceAttributes is required",
  );
}

/** Answers a review posted with `request` by the holder of `grant` (none: no tokens configured), its body read within `limits`. */
export async function reviewAccess(
  request: Request,
  grant: KubeApiToken | undefined,
  limits: BodyLimits,
): Promise<Response> {
  if (request.method !== "POST") {
    throw new KubeApiFailure("MethodNotAllowed", "selfsubjectaccessreviews accept only POST");
  }
  const type = contentTypeOf(request);
  if (type === PROTOBUF) return answer(specOfProtobuf(await readBodyBytes(request, limits)), grant);
  const body = await readJsonBody(request, limits, "SelfSubjectAccessReview");
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new KubeApiFailure(
      "BadRequest",
      "the request body is not a JSON SelfSubjectAccessReview",
    );
  }
  const spec = (body as Record<string, unknown>).spec;
  if (typeof spec !== "object" || spec === null || Array.isArray(spec)) {
    throw invalid("spec", "is required");
  }
  return answer(spec as Record<string, unknown>, grant);
}

/** `SelfSubjectAccessReview` (protobuf): field 2 the spec; its fields 1 and 2 the attributes. */
function specOfProtobuf(body: Uint8Array): Record<string, unknown> {
  const spec = fieldsOf(unwrap(body)).get(2);
  if (spec === undefined) throw invalid("spec", "is required");
  const parts = fieldsOf(spec);
  const ra = parts.get(1);
  const nra = parts.get(2);
  const strings = (bytes: Uint8Array, names: readonly string[]) => {
    const fields = fieldsOf(bytes);
    const out: Record<string, string> = {};
    names.forEach((name, i) => {
      const value = stringField(fields, i + 1);
      if (value !== undefined && name !== "") out[name] = value;
    });
    return out;
  };
  if (ra !== undefined) {
    const names = ["namespace", "verb", "group", "version", "resource", "subresource", "name"];
    return { resourceAttributes: strings(ra, names) };
  }
  if (nra !== undefined) return { nonResourceAttributes: strings(nra, ["path", "verb"]) };
  return {};
}

function answer(spec: Record<string, unknown>, grant: KubeApiToken | undefined): Response {
  const attributes = attributesOfReview(spec);
  const allowed = grant === undefined || allows(grant, attributes);
  return jsonResponse(201, {
    kind: "SelfSubjectAccessReview",
    apiVersion: "authorization.k8s.io/v1",
    metadata: { creationTimestamp: null },
    spec,
    status: {
      allowed,
      ...(allowed ? {} : { reason: "the token's grant does not include this verb or namespace" }),
    },
  });
}
