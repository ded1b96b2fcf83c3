/**
 * Who am I and what may I do: `POST
 * /apis/authentication.k8s.io/v1/selfsubjectreviews` (`kubectl auth whoami`)
 * answers the requesting token's user, and `POST
 * /apis/authorization.k8s.io/v1/selfsubjectrulesreviews` (`kubectl auth
 * can-i --list`) its grant's rules in the namespace asked. Every
 * authenticated requester may ask both about itself, as in Kubernetes. A
 * server without tokens answers `system:anonymous`, allowed everything.
 *
 * @module
 */
import type { KubeApiToken } from "./_auth.ts";
import { fieldsOf, PROTOBUF, stringField, unwrap } from "./_protobuf.ts";
import type { BodyLimits } from "./_context.ts";
import { readBodyBytes, readJsonBody } from "./_request.ts";
import { jsonResponse, KubeApiFailure } from "./_status.ts";
import { contentTypeOf } from "./_filters.ts";

const WHOAMI = ["apis", "authentication.k8s.io", "v1", "selfsubjectreviews"];
const RULES = ["apis", "authorization.k8s.io", "v1", "selfsubjectrulesreviews"];

const at = (parts: readonly string[], path: readonly string[]) =>
  parts.length === path.length && parts.every((p, i) => p === path[i]);

/** Which self review `parts` address, if any. */
export function selfReviewOf(parts: readonly string[]): "whoami" | "rules" | undefined {
  return at(parts, WHOAMI) ? "whoami" : at(parts, RULES) ? "rules" : undefined;
}

/** The namespace a rules review asks about, from its JSON or protobuf body. */
async function namespaceAsked(request: Request, limits: BodyLimits): Promise<string> {
  if (contentTypeOf(request) === PROTOBUF) {
    const spec = fieldsOf(unwrap(await readBodyBytes(request, limits))).get(2);
    return spec === undefined ? "" : stringField(fieldsOf(spec), 1) ?? "";
  }
  const body = await readJsonBody(request, limits, "SelfSubjectRulesReview");
  const spec = typeof body === "object" && body !== null
    ? (body as Record<string, unknown>).spec
    : undefined;
  const ns = typeof spec === "object" && spec !== null
    ? (spec as Record<string, unknown>).namespace
    : undefined;
  if (ns !== undefined && ns !== null && (typeof ns !== "string" || ns.length > 253)) {
    throw new KubeApiFailure("BadRequest", "spec.namespace must be a namespace name");
  }
  return (ns ?? "") as string;
}

/** Answers self review `which` for the holder of `grant` (none: no tokens configured). */
export async function reviewSelf(
  which: "whoami" | "rules",
  request: Request,
  grant: KubeApiToken | undefined,
  limits: BodyLimits,
): Promise<Response> {
  if (request.method !== "POST") {
    throw new KubeApiFailure(
      "MethodNotAllowed",
      `self${which === "whoami" ? "subjectreviews" : "subjectrulesreviews"} accept only POST`,
    );
  }
  const meta = { creationTimestamp: null };
  if (which === "whoami") {
    await readBodyBytes(request, limits); // nothing in it is asked about
    const userInfo = grant === undefined
      ? { username: "system:anonymous", groups: ["system:unauthenticated"] }
      : { username: grant.user, groups: ["system:authenticated"] };
    return jsonResponse(201, {
      kind: "SelfSubjectReview",
      apiVersion: "authentication.k8s.io/v1",
      metadata: meta,
      status: { userInfo },
    });
  }
  const namespace = await namespaceAsked(request, limits);
  const namespaces = grant?.namespaces ?? "*";
  const inScope = namespaces === "*" || namespaces.includes(namespace);
  const verbs = grant?.verbs === undefined || grant.verbs.includes("*") ? ["*"] : [...grant.verbs];
  return jsonResponse(201, {
    kind: "SelfSubjectRulesReview",
    apiVersion: "authorization.k8s.io/v1",
    metadata: meta,
    spec: { namespace },
    status: {
      resourceRules: [
        {
          verbs: ["create"],
          apiGroups: ["authorization.k8s.io"],
          resources: ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
        },
        {
          verbs: ["create"],
          apiGroups: ["authentication.k8s.io"],
          resources: ["selfsubjectreviews"],
        },
        ...(inScope ? [{ verbs, apiGroups: ["*"], resources: ["*"] }] : []),
      ],
      nonResourceRules: [{
        verbs: ["get"],
        nonResourceURLs: [
          "/api",
          "/api/*",
          "/apis",
          "/apis/*",
          "/healthz",
          "/livez",
          "/openapi",
          "/openapi/*",
          "/readyz",
          "/version",
        ],
      }],
      incomplete: false,
    },
  });
}
