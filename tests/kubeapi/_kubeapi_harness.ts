/**
 * Shared pieces of the Kubernetes API tests: a store with a few objects, a
 * request helper, a line reader for watch streams and a loopback server on
 * Deno.serve or node:http.
 *
 * @module
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Beehive, type Store } from "../../mod.ts";
import { type KubeApiHandler, toNodeListener } from "../../kubeapi/mod.ts";
import { openTestStore, type TestStore } from "../_sqlite_driver.ts";

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

/**
 * `store` with `family.method` replaced by `around`, which receives the
 * original (bound) and the call's arguments; everything else passes through.
 */
export function intercept<F extends keyof Store>(
  store: Store,
  target: { family: F; method: string },
  // deno-lint-ignore no-explicit-any
  around: (original: (...args: any[]) => Promise<any>, ...args: any[]) => Promise<unknown>,
): Store {
  const bound = (owner: object, key: PropertyKey) => {
    const value = Reflect.get(owner, key, owner);
    return typeof value === "function" ? value.bind(owner) : value;
  };
  return new Proxy(store, {
    get(s, key) {
      if (key !== target.family) return bound(s, key);
      return new Proxy(s[target.family] as object, {
        get(family, k) {
          const value = bound(family, k);
          return k === target.method ? (...args: unknown[]) => around(value, ...args) : value;
        },
      });
    },
  });
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
  const response = await handle(new Request(`http://kube.test${path}`, init));
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

/** Serves `handler` on 127.0.0.1 port 0: Deno.serve under Deno, node:http under Node. */
export async function serve(
  handler: KubeApiHandler,
): Promise<{ url: string; close(): Promise<void> }> {
  if ("Deno" in globalThis) {
    const ready = Promise.withResolvers<number>();
    const server = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      onListen: ({ port }) => ready.resolve(port),
    }, handler);
    const port = await ready.promise;
    return { url: `http://127.0.0.1:${port}`, close: () => server.shutdown() };
  }
  const server = createServer(toNodeListener(handler));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      return closed;
    },
  };
}
