/**
 * `beehive <store> serve [--port N] [--tls] [--kubeconfig FILE]`: serves the
 * Kubernetes API over the store (a SQLite file or a `postgres://` url, opened
 * as every command opens it) on loopback, writes the kubeconfig kubectl
 * reads, and runs until SIGINT, SIGTERM or the caller's signal.
 *
 * @module
 */
import { writeFile } from "node:fs/promises";
import process from "node:process";
import type { Store } from "@beehive/beehive";
import { serveKubeApi } from "@beehive/beehive/kubeapi";
import { openStore, workingDirectory } from "./_open.ts";

/** Where the command writes, and what ends it. */
export interface ServeIo {
  stdout(text: string): void;
  stderr(text: string): void;
  signal?: AbortSignal;
  /** Where a relative store path resolves from. @default {`INIT_CWD`, else the working directory} */
  cwd?: string;
}

/** `beehive <store> serve --help`. */
export const SERVE_HELP = `Usage: beehive <store> serve [--port N] [--tls] [--kubeconfig FILE]

Serve the store's kinds as a Kubernetes API on 127.0.0.1, for kubectl.

  --port N            the port (default 6443; 0 picks a free one)
  --tls               HTTPS with a generated CA and certificate, and a generated
                      bearer token; both go in the kubeconfig
  --kubeconfig FILE   write the kubeconfig to FILE (mode 0600) rather than
                      standard output

Then: kubectl --kubeconfig FILE get <plural>. Runs until Ctrl-C or SIGTERM.
`;

interface ServeArgs {
  readonly port: number;
  readonly tls: boolean;
  readonly kubeconfig: string | undefined;
  readonly help: boolean;
}

function parse(args: readonly string[]): ServeArgs {
  let port = 6443;
  let tls = false;
  let kubeconfig: string | undefined;
  let help = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const eq = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const value = (): string => {
      const v = eq > 0 ? arg.slice(eq + 1) : args[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    if (flag === "-h" || flag === "--help") help = true;
    else if (flag === "--tls" && eq < 0) tls = true;
    else if (flag === "--kubeconfig") kubeconfig = value();
    else if (flag === "--port") {
      const v = value();
      if (!/^\d{1,5}$/.test(v) || Number(v) > 65535) {
        throw new Error(`--port must be an integer from 0 to 65535, got ${JSON.stringify(v)}`);
      }
      port = Number(v);
    } else throw new Error(`serve takes no ${JSON.stringify(arg.slice(0, 64))}`);
  }
  return { port, tls, kubeconfig, help };
}

function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Runs `serve` over the store at `where` with the arguments after `serve`;
 * resolves to the exit code (0 after a clean stop, 1 on an error, 2 on a
 * usage mistake).
 */
export async function serveCommand(
  where: string,
  args: readonly string[],
  io: ServeIo,
): Promise<number> {
  let parsed: ServeArgs;
  try {
    parsed = parse(args);
  } catch (error) {
    io.stderr(`error: ${(error as Error).message}\nRun 'beehive serve --help' for usage.\n`);
    return 2;
  }
  if (parsed.help) {
    io.stdout(SERVE_HELP);
    return 0;
  }
  let store: Store;
  try {
    store = await openStore(where, workingDirectory(io.cwd));
  } catch (error) {
    io.stderr(`error: ${(error as Error).message}\n`);
    return 1;
  }
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  io.signal?.addEventListener("abort", onSignal, { once: true });
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  try {
    const server = await serveKubeApi({
      store,
      port: parsed.port,
      ...(parsed.tls ? { tls: true, tokens: [{ token: randomToken(), user: "admin" }] } : {}),
    });
    const config = server.kubeconfig();
    if (parsed.kubeconfig === undefined) io.stdout(config);
    else await writeFile(parsed.kubeconfig, config, { mode: 0o600 });
    io.stderr(
      `serving the Kubernetes API at ${server.url}` +
        (parsed.kubeconfig === undefined ? "\n" : `; kubectl --kubeconfig ${parsed.kubeconfig}\n`),
    );
    if (!stop.signal.aborted) {
      await new Promise<void>((resolve) => stop.signal.addEventListener("abort", () => resolve()));
    }
    await server.close();
    io.stderr("stopped\n");
    return 0;
  } catch (error) {
    io.stderr(`error: ${(error as Error).message}\n`);
    return 1;
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
    io.signal?.removeEventListener("abort", onSignal);
    await store.close().catch(() => {});
  }
}
