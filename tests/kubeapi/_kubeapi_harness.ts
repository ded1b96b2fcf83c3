/**
 * Shared pieces of the Kubernetes API tests: a store with a few objects, a
 * request helper, a line reader for watch streams, and running the machine's
 * kubectl against a kubeconfig.
 *
 * @module
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { Beehive } from "../../mod.ts";
import type { Store } from "../../store/mod.ts";
import { type KubeApiHandler, serveKubeApi } from "../../kubeapi/mod.ts";
import { openTestStore, type TestStore } from "../_sqlite_driver.ts";

export { intercept } from "../_intercept.ts";

export const Cluster = { group: "kstack.sh", kind: "Cluster" };
export const Node = { group: "kstack.sh", kind: "Node" };
export const TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io";
export const CLUSTERS = "/apis/kstack.sh/v1/clusters";

/** Runs `fn` over a fresh in-memory store and a Beehive on it (never started). */
export async function withStore(
  fn: (store: TestStore, bh: Beehive) => Promise<void>,
): Promise<void> {
  const store = await openTestStore(":memory:");
  try {
    await fn(store, new Beehive(store));
  } finally {
    await store.close();
  }
}

/** A response read whole. */
export interface Answer {
  readonly status: number;
  readonly type: string | null;
  readonly body: Record<string, unknown>;
}

/** Sends `path` to `handle` and parses the JSON answer. */
export async function call(
  handle: KubeApiHandler,
  path: string,
  init?: RequestInit,
): Promise<Answer> {
  const response = await handle(new Request(`http://localhost${path}`, init));
  const text = await response.text();
  return {
    status: response.status,
    type: response.headers.get("content-type"),
    body: JSON.parse(text),
  };
}

/** Reads a watch body as parsed JSON lines; `cancel` stops the reader. */
export function eventsOf(response: Response): {
  next(): Promise<Record<string, unknown> | undefined>;
  cancel(): Promise<void>;
} {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  return {
    async next() {
      for (;;) {
        const nl = buffer.indexOf("\n");
        if (nl >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          return JSON.parse(line);
        }
        const { done, value } = await reader.read();
        if (done) return undefined;
        buffer += value;
      }
    },
    cancel: () => reader.cancel(),
  };
}

/** The machine's kubectl, which the end-to-end tests drive. */
export const KUBECTL = "/usr/bin/kubectl";

/** One finished kubectl run. */
export interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** kubectl's environment for a run in `dir`: its own HOME, so no user's kubeconfig or cache leaks in. */
export function kubectlEnv(dir: string): Record<string, string> {
  return { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir };
}

/** kubectl's arguments: `config` as its kubeconfig, a private cache under `dir`, then `rest`. */
export function kubectlArgs(dir: string, config: string, ...rest: string[]): string[] {
  return ["--kubeconfig", config, "--cache-dir", join(dir, "cache"), ...rest];
}

/**
 * Runs kubectl with `config` as its kubeconfig, in a private cache directory
 * under `dir`; a request gives up after 20 s, a run is killed after 60 s.
 */
export function kubectlIn(dir: string, config: string) {
  return (...rest: string[]) =>
    new Promise<Run>((resolve) => {
      const args = kubectlArgs(dir, config, "--request-timeout=20s", ...rest);
      const options = { env: kubectlEnv(dir), timeout: 60_000 };
      execFile(KUBECTL, args, options, (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
        resolve({ code, stdout, stderr });
      });
    });
}

/** What {@linkcode withKubectl} hands its callback. */
export interface KubectlSession {
  /** Runs the machine's kubectl against the server. */
  readonly kubectl: ReturnType<typeof kubectlIn>;
  /** Writes `manifest` (an object, as JSON, or text) to `name` under the session's directory; its path. */
  readonly manifest: (name: string, manifest: unknown) => Promise<string>;
  /** The server's URL. */
  readonly url: string;
}

/** Runs `fn` with kubectl pointed at `serveKubeApi` over `store`, in a private directory. */
export async function withKubectl(
  store: Store,
  fn: (session: KubectlSession) => Promise<void>,
): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "beehive-kubectl-"));
  const server = await serveKubeApi({ store, port: 0 });
  try {
    const config = join(dir, "kubeconfig");
    await writeFile(config, server.kubeconfig());
    await fn({
      kubectl: kubectlIn(dir, config),
      manifest: async (name, manifest) => {
        const path = join(dir, name);
        await writeFile(path, typeof manifest === "string" ? manifest : JSON.stringify(manifest));
        return path;
      },
      url: server.url,
    });
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}
