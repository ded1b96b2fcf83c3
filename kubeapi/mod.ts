/**
 * A Kubernetes API server over a beehive store, for the real `kubectl`:
 * discovery, `get` (objects, lists and server-side Tables, chunked), `get -w`
 * (chunked watch streams) and `delete`, with Kubernetes' `Status` errors.
 * Every kind the store holds is served as `<group>/v1`, resource = the
 * lowercased kind + `s`, cluster-scoped. The server needs no Beehive of its
 * own: controllers in other processes see its deletions like any client's.
 *
 * {@linkcode kubeApiHandler} is a fetch handler, mountable in `Deno.serve`,
 * in Node's HTTP server through {@linkcode toNodeListener}, or in any router.
 *
 * @example Serve the API on loopback and point kubectl at it
 * ```ts ignore
 * import { kubeApiHandler } from "@beehive/beehive/kubeapi";
 * import { openSqliteStore } from "@beehive/beehive/sqlite";
 *
 * const store = await openSqliteStore("./beehive.db");
 * Deno.serve({ hostname: "127.0.0.1", port: 6443 }, kubeApiHandler({ store }));
 * // kubectl --server http://127.0.0.1:6443 get clusters
 * ```
 *
 * @example Answer a request in-process
 * ```ts
 * import { Beehive } from "@beehive/beehive";
 * import { kubeApiHandler } from "@beehive/beehive/kubeapi";
 * import { openSqliteStore } from "@beehive/beehive/sqlite";
 *
 * const store = await openSqliteStore(":memory:");
 * await new Beehive(store).client({ group: "kstack.sh", kind: "Cluster" }).create("prod", {});
 * const handle = kubeApiHandler({ store });
 * const response = await handle(new Request("http://localhost/apis/kstack.sh/v1/clusters/prod"));
 * const cluster = await response.json();
 * console.assert(cluster.metadata.name === "prod");
 * await store.close();
 * ```
 *
 * @module
 */
import { Beehive, InvalidOptionError, type Store } from "@beehive/beehive";
import { ServedKinds } from "./_kinds.ts";
import { route } from "./_router.ts";
import { failureResponse, KubeApiFailure } from "./_status.ts";

export { toNodeListener } from "../console/node_listener.ts";
export type { NodeListener, NodeRequestLike, NodeResponseLike } from "../console/node_listener.ts";

/** Options of {@linkcode kubeApiHandler}. */
export interface KubeApiOptions {
  /** The store to serve. The handler reads it and requests deletions; it never starts a Beehive. */
  readonly store: Store;
  /**
   * The path prefix the API is mounted under, e.g. `"/k8s"`; requests outside
   * it are 404. @default {""}
   */
  readonly basePath?: string;
  /**
   * How often a watch re-reads the store when no write signal reaches it (a
   * write made by another process), in ms. @default {500}
   */
  readonly pollInterval?: number;
}

/** A fetch handler: one request in, one response out. Never rejects. */
export type KubeApiHandler = (request: Request) => Promise<Response>;

function normalizeBase(basePath: unknown): string {
  if (basePath === undefined) return "";
  if (typeof basePath !== "string" || (basePath !== "" && !basePath.startsWith("/"))) {
    throw new TypeError(
      `Cannot use basePath: current value is ${
        JSON.stringify(basePath)
      }, expected "" or a path starting with "/"`,
    );
  }
  return basePath.replace(/\/+$/, "");
}

/**
 * Creates the API server's fetch handler over `store`. Routes under
 * `basePath`: `/version`, `/apis`, `/apis/<group>`, `/apis/<group>/v1`, and
 * per kind `/apis/<group>/v1/<plural>` (`GET`: list, or watch with
 * `?watch=true`), `…/<plural>/<name>` (`GET`, `DELETE`) and
 * `…/<name>/status` (`GET`). Failures answer Kubernetes `Status` objects
 * (400, 404, 405, 406, 409, 413, 415, 422, 503); a watch whose version the
 * log no longer holds ends with an `ERROR` event carrying a 410 `Expired`
 * Status. A watch ends when its request's signal aborts or its reader cancels.
 * @throws {TypeError} `options` is not an object, or `basePath` does not start with `/`.
 * @throws {InvalidOptionError} `pollInterval` is not a positive number.
 */
export function kubeApiHandler(options: KubeApiOptions): KubeApiHandler {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("Cannot create a Kubernetes API handler: options must be like { store }");
  }
  const base = normalizeBase(options.basePath);
  const store = options.store;
  const pollInterval = options.pollInterval ?? 500;
  if (typeof pollInterval !== "number" || !(pollInterval > 0) || !Number.isFinite(pollInterval)) {
    throw new InvalidOptionError(
      `Cannot use option pollInterval: current value is ${pollInterval}, expected a number > 0 (ms)`,
    );
  }
  const bh = new Beehive(store, { watchFloorInterval: pollInterval });
  const ctx = { store, bh, kinds: new ServedKinds(store) };
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
    return await route(ctx, request, path.slice(base.length));
  };
}
