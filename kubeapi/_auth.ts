/**
 * Bearer tokens and their grants: who a request is (401 `Unauthorized` when
 * no configured token matches), what it asks to do (a Kubernetes verb on a
 * resource, in a namespace or at the cluster scope), and whether the grant
 * allows it (403 `Forbidden` before anything is read or written).
 *
 * @module
 */
import { InvalidOptionError } from "@beehive/beehive";
import { KubeApiFailure } from "./_status.ts";

/** A bearer token the server accepts and what it may do. */
export interface KubeApiToken {
  /** The secret a client sends as `Authorization: Bearer <token>`. */
  readonly token: string;
  /** The user name requests with this token act as (shown in `Forbidden` messages). */
  readonly user: string;
  /**
   * The namespaces it may act in: a namespaced kind's paths under them;
   * `"*"` also grants cluster-scoped resources and a namespaced kind's
   * cluster-wide list. @default {"*"}
   */
  readonly namespaces?: readonly string[] | "*";
  /**
   * The Kubernetes verbs it may use (`get`, `list`, `watch`, `create`,
   * `update`, `patch`, `delete`, `deletecollection`, or `"*"`). @default {every verb}
   */
  readonly verbs?: readonly string[];
}

/** The verbs a grant may name. */
export const KNOWN_VERBS: ReadonlySet<string> = new Set([
  "get",
  "list",
  "watch",
  "create",
  "update",
  "patch",
  "delete",
  "deletecollection",
  "*",
]);

/** The longest token accepted, in characters. */
export const MAX_TOKEN = 4096;

/** What one request asks to do, as Kubernetes authorization sees it. */
export interface Attributes {
  readonly verb: string;
  /** Absent for a non-resource path (`/version`, discovery). */
  readonly resource?: {
    readonly group: string;
    readonly resource: string;
    readonly name?: string;
    readonly namespace?: string;
    readonly subresource?: string;
  };
}

const bytes = (s: string) => new TextEncoder().encode(s);

async function digest(token: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes(token)));
}

function invalid(message: string): never {
  throw new InvalidOptionError(`Cannot use option tokens: ${message}`);
}

/**
 * Checks `tokens` and returns them frozen.
 * @throws {InvalidOptionError} `tokens` is not a non-empty array of valid grants, or repeats a token.
 */
export function checkTokens(tokens: unknown): readonly KubeApiToken[] {
  if (!Array.isArray(tokens) || tokens.length === 0 || tokens.length > 1000) {
    invalid("expected an array of 1 to 1000 { token, user } grants");
  }
  const seen = new Set<string>();
  return Object.freeze(tokens.map((t: unknown, i) => {
    if (typeof t !== "object" || t === null) invalid(`tokens[${i}] is not an object`);
    const { token, user, namespaces, verbs } = t as Record<string, unknown>;
    if (
      typeof token !== "string" || token.length < 8 || token.length > MAX_TOKEN ||
      !/^[\x21-\x7e]+$/.test(token)
    ) {
      invalid(`tokens[${i}].token must be 8 to ${MAX_TOKEN} printable ASCII characters`);
    }
    if (seen.has(token)) invalid(`tokens[${i}].token repeats an earlier token`);
    seen.add(token);
    if (typeof user !== "string" || user === "" || user.length > 256) {
      invalid(`tokens[${i}].user must be a non-empty string of at most 256 characters`);
    }
    if (
      namespaces !== undefined && namespaces !== "*" &&
      !(Array.isArray(namespaces) && namespaces.every((n) => typeof n === "string"))
    ) {
      invalid(`tokens[${i}].namespaces must be "*" or an array of namespace names`);
    }
    if (
      verbs !== undefined &&
      !(Array.isArray(verbs) && verbs.every((v) => typeof v === "string" && KNOWN_VERBS.has(v)))
    ) {
      invalid(`tokens[${i}].verbs must be an array of ${[...KNOWN_VERBS].join(", ")}`);
    }
    return Object.freeze({
      token,
      user,
      namespaces: namespaces === undefined || namespaces === "*"
        ? "*" as const
        : Object.freeze([...namespaces as string[]]),
      ...(verbs === undefined ? {} : { verbs: Object.freeze([...verbs as string[]]) }),
    });
  }));
}

/** Finds the grant of a request's bearer token, comparing in constant time. */
export class Authenticator {
  readonly #grants: readonly KubeApiToken[];
  readonly #digests: Promise<Uint8Array[]>;

  constructor(tokens: readonly KubeApiToken[]) {
    this.#grants = tokens;
    this.#digests = Promise.all(tokens.map((t) => digest(t.token)));
  }

  /**
   * The grant whose token `request` bears.
   * @throws {KubeApiFailure} Unauthorized: no bearer token, or none that matches.
   */
  async authenticate(request: Request): Promise<KubeApiToken> {
    const header = request.headers.get("authorization") ?? "";
    const match = /^Bearer +(\S{1,4096})\s*$/i.exec(header);
    if (match === null) throw unauthorized();
    const presented = await digest(match[1]);
    let found = -1;
    const digests = await this.#digests;
    // Every digest is compared whole, whichever matches: the time says nothing of the token.
    for (let i = 0; i < digests.length; i++) {
      let diff = 0;
      for (let b = 0; b < presented.length; b++) diff |= presented[b] ^ digests[i][b];
      if (diff === 0) found = i;
    }
    if (found < 0) throw unauthorized();
    return this.#grants[found];
  }
}

function unauthorized(): KubeApiFailure {
  return new KubeApiFailure("Unauthorized", "Unauthorized");
}

/** Whether `grant` allows `attributes`; non-resource reads are open to every authenticated user. */
export function allows(grant: KubeApiToken, attributes: Attributes): boolean {
  const verbs = grant.verbs;
  const { resource } = attributes;
  if (resource === undefined) return attributes.verb === "get";
  if (verbs !== undefined && !verbs.includes("*") && !verbs.includes(attributes.verb)) {
    return false;
  }
  const namespaces = grant.namespaces ?? "*";
  if (namespaces === "*") return true;
  return resource.namespace !== undefined && namespaces.includes(resource.namespace);
}

/** The `Forbidden` failure, worded as Kubernetes words it. */
export function forbidden(grant: KubeApiToken, attributes: Attributes): KubeApiFailure {
  const r = attributes.resource;
  if (r === undefined) {
    return new KubeApiFailure(
      "Forbidden",
      `forbidden: User "${grant.user}" cannot ${attributes.verb} this path`,
    );
  }
  const qualified = r.group === "" ? r.resource : `${r.resource}.${r.group}`;
  const what = r.name === undefined ? qualified : `${qualified} "${r.name}"`;
  const resource = r.subresource === undefined ? r.resource : `${r.resource}/${r.subresource}`;
  const scope = r.namespace === undefined
    ? "at the cluster scope"
    : `in the namespace "${r.namespace}"`;
  return new KubeApiFailure(
    "Forbidden",
    `${what} is forbidden: User "${grant.user}" cannot ${attributes.verb} resource "${resource}" ` +
      `in API group "${r.group}" ${scope}`,
    { kind: r.resource, group: r.group, ...(r.name === undefined ? {} : { name: r.name }) },
  );
}

/**
 * What a request to path `parts` (decoded segments under the base path) with
 * `method` asks to do. Paths under `/api/v1` and `/apis/<group>/<version>`
 * name resources; everything else is a non-resource path.
 */
export function attributesOf(method: string, parts: readonly string[], url: URL): Attributes {
  const m = method === "HEAD" ? "GET" : method;
  let rest: readonly string[];
  let group: string;
  if (parts[0] === "api" && parts.length >= 3) {
    group = "";
    rest = parts.slice(2);
  } else if (parts[0] === "apis" && parts.length >= 4) {
    group = parts[1];
    rest = parts.slice(3);
  } else {
    return { verb: m === "GET" ? "get" : m.toLowerCase() };
  }
  let namespace: string | undefined;
  if (rest[0] === "namespaces" && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  } else if (group === "" && rest[0] === "namespaces" && rest.length === 2) {
    // A namespace read by name is in that namespace, as Kubernetes attributes it.
    namespace = rest[1];
  }
  const [resource, name, subresource] = rest;
  const watch = url.searchParams.get("watch");
  const verb = m === "GET"
    ? (watch === "true" || watch === "1" ? "watch" : name === undefined ? "list" : "get")
    : m === "POST"
    ? "create"
    : m === "PUT"
    ? "update"
    : m === "PATCH"
    ? "patch"
    : m === "DELETE"
    ? (name === undefined ? "deletecollection" : "delete")
    : m.toLowerCase();
  return {
    verb,
    resource: {
      group,
      resource,
      ...(name === undefined ? {} : { name }),
      ...(namespace === undefined ? {} : { namespace }),
      ...(subresource === undefined ? {} : { subresource }),
    },
  };
}
