/**
 * `kubeApiHandler`: the fetch handler — base path, authentication and
 * authorization, then the router.
 *
 * @module
 */
import { Beehive, InvalidOptionError } from "@beehive/beehive";
import type { Store } from "@beehive/beehive/store";
import { normalizeBasePath } from "../console/base_path.ts";
import { isAccessReview, reviewAccess } from "./_access_review.ts";
import {
  allows,
  attributesOf,
  Authenticator,
  checkTokens,
  forbidden,
  type KubeApiToken,
} from "./_auth.ts";
import { ServedKinds } from "./_kinds.ts";
import { answerAnonymous, isAnonymous } from "./_health.ts";
import { reviewSelf, selfReviewOf } from "./_self_reviews.ts";
import { route, segmentsOf } from "./_router.ts";
import { failureResponse, KubeApiFailure, toFailure } from "./_status.ts";
import { BODY_DEPTH_MARGIN, DEFAULT_MAX_BODY_BYTES } from "./_request.ts";
import { DEFAULTS } from "../src/engine/options.ts";
import { checkAllowedHosts, LOOPBACK_HOSTS } from "../http/_hosts.ts";
import { filterRequest } from "./_filters.ts";
import { watchEncodings } from "./_watch_cache.ts";
import { EventReaders } from "./_event_reader.ts";
import { WATCH_BACKLOG } from "./_watch_backlog.ts";
import { isWatch, releasedAfter, RequestSlots } from "./_limits.ts";

/** Options of {@linkcode kubeApiHandler}. */
export interface KubeApiOptions {
  /** The store to serve. The handler reads it and requests deletions; it never starts a Beehive. */
  readonly store: Store;
  /**
   * The path prefix the API is mounted under, e.g. `"/k8s"`, plain or
   * percent-encoded; requests outside it are 404. @default {""}
   */
  readonly basePath?: string;
  /**
   * How often a watch re-reads the store when no write signal reaches it (a
   * write made by another process), in ms. @default {500}
   */
  readonly pollInterval?: number;
  /**
   * Bearer-token authentication and authorization: every request must bear
   * one of `tokens` (else 401 `Unauthorized`), and a request outside its
   * grant's verbs or namespaces is 403 `Forbidden`, reading and writing
   * nothing. @default {undefined: every request is served (loopback use)}
   */
  readonly auth?: KubeApiAuth;
  /**
   * The largest request body read, in bytes, for every verb (create,
   * replace, every patch type, delete options); a larger one is 413
   * `RequestEntityTooLarge`. An integer from 1,024. @default {3_145_728 (3 MiB)}
   */
  readonly maxBodyBytes?: number;
  /**
   * The host names a request may address the server by (its `Host` header,
   * without the port; IPv6 in brackets), or `"*"` for any; another is 403
   * `Forbidden`. A page that rebinds its own name to 127.0.0.1 still sends
   * its own name, so a tokenless server answering only loopback names is
   * closed to it. @default {["localhost", "127.0.0.1", "[::1]"] without `auth`; `"*"` with it}
   */
  readonly allowedHosts?: readonly string[] | "*";
  /**
   * The most watches open at once, over every kind and client; one more is
   * 429 `TooManyRequests` with `Retry-After` until one ends. An integer ≥ 1. @default {1_000}
   */
  readonly maxWatches?: number;
  /**
   * The most non-watch requests served at once (a request holds its slot until
   * its answer is sent); one more is 429 with `Retry-After`. An integer ≥ 1. @default {400}
   */
  readonly maxInflight?: number;
}

/** The tokens {@linkcode kubeApiHandler} accepts. */
export interface KubeApiAuth {
  /** The accepted tokens and their grants (1 to 1000, tokens 8 to 4096 printable ASCII characters). */
  readonly tokens: readonly KubeApiToken[];
}

/** A fetch handler: one request in, one response out. Never rejects. */
export type KubeApiHandler = (request: Request) => Promise<Response>;

/**
 * Creates the API server's fetch handler over `store`. Routes under
 * `basePath`: `/version`, `/apis`, `/apis/<group>`, `/apis/<group>/v1`,
 * `/openapi/v3` and `/openapi/v3/apis/<group>/v1`, core/v1 events and
 * namespaces (get, list, watch, create, and delete, which deletes every object
 * in the namespace; the namespaces objects use, those created, and `default`), and per
 * kind `/apis/<group>/v1/<plural>` (`GET`: list, or watch with
 * `?watch=true`; `POST`; for a namespaced kind under
 * `/apis/<group>/v1/namespaces/<ns>/<plural>`, its cluster-wide path only
 * listing and watching every namespace), `…/<plural>/<name>` (`GET`, `PUT`, `PATCH` as a
 * merge or JSON patch, `DELETE`) and `…/<name>/status` (`GET`). Writes keep
 * labels and annotations and honour `fieldValidation` (`Strict` refuses a
 * field the kind's stored schema does not declare). Failures answer Kubernetes `Status` objects
 * (400, 404, 405, 406, 409, 413, 415, 422, 503); a watch whose version the
 * log no longer holds ends with an `ERROR` event carrying a 410 `Expired`
 * Status. A watch ends when its response body is cancelled (a server cancels it when the
 * client leaves; `request.signal` is not read, as `Deno.serve` aborts it on every response).
 * `/healthz`, `/livez` and `/readyz` (with `?verbose`, and per check) and
 * `/version` answer without a token. With `auth`, any other request without a
 * matching bearer token is 401 and one outside its grant 403, before anything else is looked at;
 * `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews` and
 * `…/selfsubjectrulesreviews` answer from the requester's grant, and
 * `POST /apis/authentication.k8s.io/v1/selfsubjectreviews` names its user. Before that, a request whose `Host` is not in
 * `allowedHosts` is 403, and a body in a type Kubernetes does not decode
 * (`text/plain`, a form, multipart, or a body without a type) 415, and one
 * past `maxWatches` open watches or `maxInflight` other requests 429 with
 * `Retry-After`.
 * Every body is bounded by `maxBodyBytes` and by the store's nesting depth
 * (400 deeper), and a JSON patch may grow the object by at most the object
 * size limit (422 before it builds more).
 * @throws {TypeError} `options` is not an object, or `basePath` does not start with `/`.
 * @throws {InvalidOptionError} `pollInterval` is not a positive number, `maxBodyBytes` is not an
 *   integer ≥ 1,024, `maxWatches` or `maxInflight` is not an integer ≥ 1, `allowedHosts` is not `"*"` nor an array of host names, or `auth.tokens` is
 *   malformed.
 */
export function kubeApiHandler(options: KubeApiOptions): KubeApiHandler {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("Cannot create a Kubernetes API handler: options must be like { store }");
  }
  const base = normalizeBasePath(options.basePath);
  const store = options.store;
  const pollInterval = options.pollInterval ?? 500;
  if (typeof pollInterval !== "number" || !(pollInterval > 0) || !Number.isFinite(pollInterval)) {
    throw new InvalidOptionError(
      `Cannot use option pollInterval: current value is ${pollInterval}, expected a number > 0 (ms)`,
    );
  }
  const bh = new Beehive(store, { watchFloorInterval: pollInterval });
  const authenticator = options.auth === undefined
    ? undefined
    : new Authenticator(checkTokens(options.auth?.tokens));
  const allowedHosts = checkAllowedHosts(
    options.allowedHosts ?? (options.auth === undefined ? LOOPBACK_HOSTS : "*"),
  );
  const slots = new RequestSlots(
    checkLimit("maxWatches", options.maxWatches, 1000, 1),
    checkLimit("maxInflight", options.maxInflight, 400, 1),
  );
  const limits = DEFAULTS.limits;
  const ctx = {
    store,
    bh,
    kinds: new ServedKinds(store),
    base,
    body: {
      maxBodyBytes: checkLimit("maxBodyBytes", options.maxBodyBytes, DEFAULT_MAX_BODY_BYTES, 1024),
      maxDepth: limits.nestingDepth + BODY_DEPTH_MARGIN,
    },
    objectBytes: limits.objectBytes,
    watches: watchEncodings(),
    eventReaders: new EventReaders(pollInterval, WATCH_BACKLOG),
  };
  return async (request) => {
    let path: string;
    try {
      path = new URL(request.url).pathname;
    } catch {
      return failureResponse(new KubeApiFailure("BadRequest", "the request URL is malformed"));
    }
    if (path !== base && !path.startsWith(`${base}/`)) {
      return failureResponse(
        new KubeApiFailure("NotFound", "the server could not find the requested resource"),
      );
    }
    const rest = path.slice(base.length);
    let release: () => void;
    try {
      filterRequest(request, allowedHosts);
      const parts = segmentsOf(rest);
      if (isAnonymous(request.method, parts)) {
        return await answerAnonymous(store, parts, new URL(request.url));
      }
      const grant = await authenticator?.authenticate(request);
      const url = new URL(request.url);
      if (isAccessReview(parts)) return await reviewAccess(request, grant, ctx.body);
      const self = selfReviewOf(parts);
      if (self !== undefined) return await reviewSelf(self, request, grant, ctx.body);
      const attributes = attributesOf(request.method, parts, url);
      if (grant !== undefined && !allows(grant, attributes)) throw forbidden(grant, attributes);
      release = slots.take(isWatch(url));
    } catch (error) {
      return failureResponse(toFailure(error));
    }
    return releasedAfter(await route(ctx, request, rest), release);
  };
}

/**
 * An integer option of at least `min`, or its default.
 * @throws {InvalidOptionError} it is not.
 */
export function checkLimit(name: string, value: unknown, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
    throw new InvalidOptionError(
      `Cannot use option ${name}: current value is ${String(value)}, expected an integer ≥ ${min}`,
    );
  }
  return value;
}
