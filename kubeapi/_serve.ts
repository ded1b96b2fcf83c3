/**
 * `serveKubeApi`: the Kubernetes API handler on a listening HTTP or HTTPS
 * server (`node:http`/`node:https`, on Deno and Node alike), with the
 * loopback-or-TLS-and-tokens rule, generated or given TLS material, and the
 * kubeconfig a user hands to `kubectl --kubeconfig`.
 *
 * @module
 */
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { InvalidOptionError } from "@beehive/beehive";
import type { Store } from "@beehive/beehive/store";
import { toNodeListener } from "../http/node_listener.ts";
import { checkTokens, type KubeApiToken } from "./_auth.ts";
import { generateTls } from "./_certificates.ts";
import { kubeconfigYaml } from "./_kubeconfig.ts";
import { kubeApiHandler } from "./_handler.ts";

/** Options of {@linkcode serveKubeApi}. */
export interface ServeKubeApiOptions {
  /** The store to serve. */
  readonly store: Store;
  /**
   * The address to bind. Any address but a loopback one (`127.0.0.0/8`,
   * `::1`, `localhost`) needs both `tls` and `tokens`. @default {"127.0.0.1"}
   */
  readonly hostname?: string;
  /** The port; `0` picks a free one (read it from `url`). @default {6443} */
  readonly port?: number;
  /**
   * HTTPS: `true` generates a self-signed CA and a serving certificate for
   * 127.0.0.1, localhost and `hostname`, and puts the CA in the kubeconfig;
   * `{ cert, key, ca? }` serves the given PEMs (`ca`, when given, goes in
   * the kubeconfig). @default {undefined: plain HTTP}
   */
  readonly tls?: true | { readonly cert: string; readonly key: string; readonly ca?: string };
  /** The bearer tokens accepted, and their grants. @default {undefined: no authentication} */
  readonly tokens?: readonly KubeApiToken[];
  /** Aborting it closes the server. */
  readonly signal?: AbortSignal;
  /** How often a watch re-reads the store for other processes' writes, in ms. @default {500} */
  readonly pollInterval?: number;
  /** The largest request body read, in bytes, for every verb (413 above). @default {3_145_728 (3 MiB)} */
  readonly maxBodyBytes?: number;
  /**
   * The host names a request may address the server by, or `"*"`; another
   * is 403. @default {["localhost", "127.0.0.1", "[::1]"] without `tokens`; `"*"` with them}
   */
  readonly allowedHosts?: readonly string[] | "*";
  /** The most watches open at once; one more is 429 with `Retry-After`. @default {1_000} */
  readonly maxWatches?: number;
  /** The most non-watch requests served at once; one more is 429 with `Retry-After`. @default {400} */
  readonly maxInflight?: number;
}

/** What {@linkcode KubeApiServer.kubeconfig} writes. */
export interface KubeconfigOptions {
  /** The token the kubeconfig's user bears; one of the server's. @default {the first token} */
  readonly token?: string;
}

/** A listening Kubernetes API server. */
export interface KubeApiServer {
  /** The server's base URL, e.g. `https://127.0.0.1:6443`. */
  readonly url: string;
  /**
   * A kubeconfig (YAML) with one cluster, user and context named `beehive`:
   * the server's URL, its CA when it has one, and the token.
   * @throws {InvalidOptionError} `token` is not one of the server's tokens.
   */
  kubeconfig(options?: KubeconfigOptions): string;
  /** Stops listening and ends open connections (watches included). */
  close(): Promise<void>;
}

/** Whether `hostname` names a loopback address. */
export function isLoopback(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127(\.\d{1,3}){3}$/.test(h);
}

function checkPort(port: unknown): number {
  if (typeof port !== "number" || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new InvalidOptionError(
      `Cannot use option port: current value is ${
        String(port)
      }, expected an integer from 0 to 65535`,
    );
  }
  return port;
}

function checkTls(tls: unknown): ServeKubeApiOptions["tls"] {
  if (tls === undefined || tls === true) return tls;
  if (typeof tls === "object" && tls !== null) {
    const { cert, key, ca } = tls as Record<string, unknown>;
    const isPem = (v: unknown) => typeof v === "string" && v.includes("-----BEGIN ");
    if (isPem(cert) && isPem(key) && (ca === undefined || isPem(ca))) {
      return {
        cert: cert as string,
        key: key as string,
        ...(ca === undefined ? {} : { ca: ca as string }),
      };
    }
  }
  throw new InvalidOptionError(
    "Cannot use option tls: expected true or { cert, key, ca? } holding PEM strings",
  );
}

/**
 * Serves the Kubernetes API over `store` until `close()` or `signal` aborts.
 * A loopback server may run without TLS and tokens; any other address
 * refuses to start unless it has both.
 *
 * @example Serve on a free loopback port with a generated certificate and a token
 * ```ts ignore
 * import { serveKubeApi } from "@beehive/beehive/kubeapi";
 * import { openSqliteStore } from "@beehive/beehive/sqlite";
 *
 * const store = await openSqliteStore("./beehive.db");
 * const server = await serveKubeApi({
 *   store,
 *   port: 0,
 *   tls: true,
 *   tokens: [{ token: crypto.randomUUID(), user: "admin" }],
 * });
 * await Deno.writeTextFile("kubeconfig", server.kubeconfig());
 * // kubectl --kubeconfig kubeconfig get clusters
 * ```
 *
 * @throws {InvalidOptionError} a non-loopback `hostname` without both `tls`
 *   and `tokens`; a malformed `port`, `tls`, `tokens`, `pollInterval`, `maxBodyBytes`, `allowedHosts`, `maxWatches` or `maxInflight`.
 * @throws {Error} the address cannot be bound (e.g. `EADDRINUSE`).
 */
export async function serveKubeApi(options: ServeKubeApiOptions): Promise<KubeApiServer> {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("Cannot serve the Kubernetes API: options must be like { store }");
  }
  const hostname = options.hostname ?? "127.0.0.1";
  if (typeof hostname !== "string" || hostname === "" || hostname.length > 253) {
    throw new InvalidOptionError(
      `Cannot use option hostname: current value is ${JSON.stringify(hostname)}`,
    );
  }
  const port = checkPort(options.port ?? 6443);
  const tlsOption = checkTls(options.tls);
  const tokens = options.tokens === undefined ? undefined : checkTokens(options.tokens);
  if (!isLoopback(hostname) && (tlsOption === undefined || tokens === undefined)) {
    throw new InvalidOptionError(
      `Cannot serve the Kubernetes API on ${hostname}: an address other than loopback needs ` +
        "both tls and tokens",
    );
  }
  options.signal?.throwIfAborted();
  const handler = kubeApiHandler({
    store: options.store,
    ...(tokens === undefined ? {} : { auth: { tokens } }),
    ...(options.pollInterval === undefined ? {} : { pollInterval: options.pollInterval }),
    ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
    ...(options.allowedHosts === undefined ? {} : { allowedHosts: options.allowedHosts }),
    ...(options.maxWatches === undefined ? {} : { maxWatches: options.maxWatches }),
    ...(options.maxInflight === undefined ? {} : { maxInflight: options.maxInflight }),
  });
  const host = hostname.replace(/^\[|\]$/g, "");
  const unspecified = host === "0.0.0.0" || host === "::";
  const tls = tlsOption === true
    ? await generateTls(["127.0.0.1", "::1", "localhost", ...(unspecified ? [] : [host])])
    : tlsOption;
  const listener = toNodeListener(handler);
  const server: Server = tls === undefined
    ? createHttpServer(listener)
    : createHttpsServer({ cert: tls.cert, key: tls.key }, listener);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const shown = unspecified ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  const url = `${tls === undefined ? "http" : "https"}://${shown}:${bound}`;
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= new Promise<void>((resolve) => {
      options.signal?.removeEventListener("abort", onAbort);
      server.close(() => resolve());
      server.closeAllConnections();
    });
    return closing;
  };
  const onAbort = () => void close();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  return {
    url,
    kubeconfig(config = {}) {
      const token = config.token ?? tokens?.[0]?.token;
      if (config.token !== undefined && !tokens?.some((t) => t.token === config.token)) {
        throw new InvalidOptionError(
          "Cannot write a kubeconfig: the token is not one this server accepts",
        );
      }
      return kubeconfigYaml({ server: url, ca: tls?.ca, token });
    },
    close,
  };
}
