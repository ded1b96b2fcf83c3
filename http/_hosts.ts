/**
 * The `Host` check of the console and the Kubernetes API: which names a
 * request may address them by (DNS rebinding defence).
 *
 * @module
 */
import { InvalidOptionError } from "@beehive/beehive";

/** The loopback names: the default `allowedHosts`. */
export const LOOPBACK_HOSTS: readonly string[] = Object.freeze(["localhost", "127.0.0.1", "[::1]"]);

/** The checked `allowedHosts`: lower-cased names, or `"*"`. */
export type AllowedHosts = ReadonlySet<string> | "*";

/** @throws {InvalidOptionError} not `"*"` nor an array of non-empty host names. */
export function checkAllowedHosts(value: unknown): AllowedHosts {
  if (value === "*") return "*";
  if (
    !Array.isArray(value) ||
    !value.every((h) => typeof h === "string" && /^(\[[0-9a-fA-F:.]+\]|[^\s/:?#@[\]\\]+)$/.test(h))
  ) {
    throw new InvalidOptionError(
      `Cannot use option allowedHosts: current value is ${
        JSON.stringify(value)?.slice(0, 200)
      }, expected "*" or an array of host names without port (IPv6 in brackets)`,
    );
  }
  return new Set(value.map((h: string) => h.toLowerCase()));
}

/** Whether the request's host name (its URL's, which servers build from `Host`) is allowed. */
export function hostAllowed(request: Request, allowed: AllowedHosts): boolean {
  if (allowed === "*") return true;
  const header = request.headers.get("host");
  let hostname: string;
  try {
    hostname = header === null
      ? new URL(request.url).hostname
      : new URL(`http://${header}`).hostname;
  } catch {
    return false;
  }
  return allowed.has(hostname.toLowerCase().replace(/\.$/, ""));
}
