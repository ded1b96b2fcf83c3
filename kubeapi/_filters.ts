/**
 * The filters a request passes before authentication and routing: the
 * `Host` it names (`allowedHosts`) and the content type of its body (the
 * ones Kubernetes decodes). A request refused here reads and writes nothing.
 *
 * @module
 */
import { type AllowedHosts, hostAllowed } from "../http/_hosts.ts";
import { KubeApiFailure } from "./_status.ts";

/**
 * The body types the API server decodes: JSON, YAML, protobuf (kubectl sends
 * built-in kinds so) and the patch types. Anything else — `text/plain`, forms,
 * multipart, which a web page may send cross-origin without asking — is 415.
 */
export const KUBERNETES_CONTENT_TYPES: ReadonlySet<string> = new Set([
  "application/json",
  "application/yaml",
  "application/vnd.kubernetes.protobuf",
  "application/merge-patch+json",
  "application/json-patch+json",
  "application/strategic-merge-patch+json",
  "application/apply-patch+yaml",
  "application/apply-patch+cbor",
]);

/** The media type of `request`'s body, lower-cased without parameters; `""` when absent. */
export function contentTypeOf(request: Request): string {
  return (request.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
}

/**
 * Refuses a request the server does not answer: a `Host` outside `allowed`
 * (403), and a body whose content type is not a Kubernetes one, or that
 * names none (415).
 * @throws {KubeApiFailure} Forbidden or UnsupportedMediaType.
 */
export function filterRequest(request: Request, allowed: AllowedHosts): void {
  if (!hostAllowed(request, allowed)) {
    throw new KubeApiFailure(
      "Forbidden",
      "this Host is not one the server answers to (the allowedHosts option)",
    );
  }
  const type = contentTypeOf(request);
  // A request without a body has nothing to decode, whatever type it names.
  if (request.body !== null && !KUBERNETES_CONTENT_TYPES.has(type)) {
    throw new KubeApiFailure(
      "UnsupportedMediaType",
      `the body's content type ${
        JSON.stringify(type.slice(0, 100))
      } is not one this server decodes: send application/json, application/yaml or a patch type`,
    );
  }
}
