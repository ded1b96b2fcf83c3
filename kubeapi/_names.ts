/**
 * The names the API can address: a DNS-1123 subdomain, as the API server
 * requires of most resources — at most 253 lowercase alphanumerics, `-` and
 * `.`, starting and ending with an alphanumeric. The library takes wider
 * names; the API refuses to create them, so every object it creates can be
 * named in a path.
 *
 * @module
 */

/** The most characters of a DNS-1123 subdomain. */
export const SUBDOMAIN_CHARS = 253;

const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why `name` is not a DNS-1123 subdomain, worded as the API server words it; `undefined` when it is one. */
export function subdomainProblem(name: string): string | undefined {
  const shown = JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name);
  if (name.length > SUBDOMAIN_CHARS) {
    return `Invalid value: ${shown}: must be no more than ${SUBDOMAIN_CHARS} characters`;
  }
  if (SUBDOMAIN.test(name)) return undefined;
  return `Invalid value: ${shown}: a lowercase RFC 1123 subdomain must consist of lower case ` +
    "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric " +
    `character (e.g. 'example.com', regex used for validation is '${
      SUBDOMAIN.source.slice(1, -1)
    }')`;
}
