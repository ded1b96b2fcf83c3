/**
 * `beehive <store> serve`: serves the Kubernetes API over the store on
 * loopback, writes the kubeconfig kubectl reads, and runs until SIGINT,
 * SIGTERM or the caller's signal. Loaded only when serving.
 *
 * @module
 */
import { chmod, writeFile } from "node:fs/promises";
import process from "node:process";
import type { Store } from "@beehive/beehive/store";
import { serveKubeApi } from "@beehive/beehive/kubeapi";

/** What `serve` was asked for. */
export interface ServeOptions {
  readonly port: number;
  /** HTTPS with a generated CA and certificate, and a generated bearer token. */
  readonly tls: boolean;
  /** Where the kubeconfig goes (mode 0600); standard output when `undefined`. */
  readonly kubeconfig: string | undefined;
  /** The server's limits; each `undefined` keeps its default. */
  readonly limits?: {
    readonly maxWatches?: number | undefined;
    readonly maxInflight?: number | undefined;
    readonly maxBodyBytes?: number | undefined;
  };
}

/** Where `serve` writes, and what ends it. */
export interface ServeIo {
  stdout(text: string): void;
  stderr(text: string): void;
  signal?: AbortSignal;
}

function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Writes `text` to `path` readable by its owner alone: an existing file is
 * made 0600 before the token goes in (`mode` applies only to a new file).
 */
async function writePrivate(path: string, text: string): Promise<void> {
  await chmod(path, 0o600).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "ENOENT") throw error;
  });
  await writeFile(path, text, { mode: 0o600 });
}

/**
 * Serves `store` until SIGINT, SIGTERM or `io.signal`, then closes the
 * server. Writes the kubeconfig, and the URL on standard error.
 * @throws {Error} the server cannot start (e.g. the port is taken) or the kubeconfig cannot be written.
 */
export async function serve(store: Store, options: ServeOptions, io: ServeIo): Promise<void> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  io.signal?.addEventListener("abort", onSignal, { once: true });
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  try {
    const server = await serveKubeApi({
      store,
      port: options.port,
      ...Object.fromEntries(
        Object.entries(options.limits ?? {}).filter(([, v]) => v !== undefined),
      ),
      ...(options.tls ? { tls: true, tokens: [{ token: randomToken(), user: "admin" }] } : {}),
    });
    try {
      const config = server.kubeconfig();
      if (options.kubeconfig === undefined) io.stdout(config);
      else await writePrivate(options.kubeconfig, config);
      io.stderr(
        `serving the Kubernetes API at ${server.url}` +
          (options.kubeconfig === undefined
            ? "\n"
            : `; kubectl --kubeconfig ${options.kubeconfig}\n`),
      );
      if (!stop.signal.aborted) {
        await new Promise<void>((resolve) =>
          stop.signal.addEventListener("abort", () => resolve())
        );
      }
    } finally {
      await server.close();
    }
    io.stderr("stopped\n");
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
    io.signal?.removeEventListener("abort", onSignal);
  }
}
