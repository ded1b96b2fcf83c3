/**
 * Namespaces: the rule a namespace name follows (a DNS-1123 label, as in
 * Kubernetes), checked once for every writer — the clients, the store's
 * argument checks and the API server.
 *
 * @module
 */
import { describe } from "./_values.ts";

/** The most characters of a namespace name (a DNS-1123 label). */
export const NAMESPACE_CHARS = 63;

/** The namespace of every object of a cluster-scoped kind. */
export const CLUSTER_SCOPE = "";

const DNS_1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * Why `value` is not a namespace name, or `undefined` when it is one: a
 * DNS-1123 label of at most 63 lowercase alphanumerics and `-`, starting and
 * ending with an alphanumeric. `""` is not a name (it is the cluster scope).
 */
export function namespaceProblem(value: unknown): string | undefined {
  if (typeof value !== "string") return `current value is ${describe(value)}, expected a string`;
  if (value === "") return "it must not be empty";
  if (value.length > NAMESPACE_CHARS) {
    return `it is ${value.length} characters, above ${NAMESPACE_CHARS}`;
  }
  if (!DNS_1123_LABEL.test(value)) {
    return `${
      describe(value)
    } is not a DNS-1123 label (lowercase alphanumerics and '-', starting and ending with an alphanumeric)`;
  }
  return undefined;
}
