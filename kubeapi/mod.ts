/**
 * A Kubernetes API server over a beehive store, for the real `kubectl`:
 * discovery, `get` (objects, lists and server-side Tables with the kind's
 * printer columns, chunked, label-selected), `get -w` (chunked watch
 * streams), `apply`, `create`, `replace`, merge and JSON `patch`, `label`,
 * `annotate`, `delete`, `explain` (OpenAPI v3 built from the stored JSON
 * Schemas, with `fieldValidation` judged on writes), and beehive events as
 * core/v1 `Event`s, with Kubernetes' `Status` errors. Every kind the store
 * holds is served as `<group>/v1`, resource = its plural and with its short
 * names (a stored kind definition's, else the lowercased kind + `s`),
 * namespaced under `/apis/<group>/v1/namespaces/<ns>/…` when its stored
 * definition says `namespaced: true`, else cluster-scoped. The server needs no Beehive of its own: controllers in
 * other processes see its writes like any client's.
 *
 * {@linkcode serveKubeApi} listens (HTTP or HTTPS with a generated or given
 * certificate, bearer tokens with grants) and writes the kubeconfig;
 * {@linkcode kubeApiHandler} is the fetch handler it runs, mountable in
 * `Deno.serve`, in Node's HTTP server through {@linkcode toNodeListener}, or
 * in any router.
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
export { toNodeListener } from "../http/node_listener.ts";
export type { NodeListener, NodeRequestLike, NodeResponseLike } from "../http/node_listener.ts";
export { kubeApiHandler } from "./_handler.ts";
export type { KubeApiAuth, KubeApiHandler, KubeApiOptions } from "./_handler.ts";
export type { KubeApiToken } from "./_auth.ts";
export { serveKubeApi } from "./_serve.ts";
export type { KubeApiServer, KubeconfigOptions, ServeKubeApiOptions } from "./_serve.ts";
