/**
 * The kubeconfig YAML for one server: a cluster (its URL and CA), a user
 * (its bearer token) and a context, all named `beehive`.
 *
 * @module
 */

/** What one kubeconfig names. */
export interface KubeconfigInput {
  readonly server: string;
  /** The CA certificate (PEM) kubectl verifies the server with. */
  readonly ca?: string;
  /** The bearer token the user sends. */
  readonly token?: string;
}

function base64(text: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** The kubeconfig as YAML; strings are JSON-quoted, which YAML reads as double-quoted scalars. */
export function kubeconfigYaml(input: KubeconfigInput): string {
  const q = JSON.stringify;
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: beehive",
    "  cluster:",
    `    server: ${q(input.server)}`,
    ...(input.ca === undefined ? [] : [`    certificate-authority-data: ${base64(input.ca)}`]),
    "contexts:",
    "- name: beehive",
    "  context:",
    "    cluster: beehive",
    "    user: beehive",
    "current-context: beehive",
    "users:",
    "- name: beehive",
    ...(input.token === undefined ? ["  user: {}"] : ["  user:", `    token: ${q(input.token)}`]),
    "",
  ].join("\n");
}
