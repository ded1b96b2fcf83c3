/**
 * A fetch handler served on 127.0.0.1 on a free port, for tests: over
 * node:http through `toNodeListener` (on either runtime), or on the running
 * runtime's own server (`Deno.serve` under Deno, node:http under Node).
 *
 * @module
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { toNodeListener } from "../console/mod.ts";

/** A listening test server. */
export interface LoopbackServer {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** The port it picked. */
  readonly port: number;
  /** Stops listening and ends open connections (live feeds and watches included). */
  close(): Promise<void>;
}

type Handler = (request: Request) => Promise<Response>;

/** Serves `handler` over node:http through `toNodeListener`, on Deno and Node alike. */
export async function listenNode(handler: Handler): Promise<LoopbackServer> {
  const server = createServer(toNodeListener(handler));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      return closed;
    },
  };
}

/** Serves `handler` on the runtime's own server: `Deno.serve` under Deno, node:http under Node. */
export async function serveLoopback(handler: Handler): Promise<LoopbackServer> {
  if (!("Deno" in globalThis)) return await listenNode(handler);
  const ready = Promise.withResolvers<number>();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: ({ port }) => ready.resolve(port),
  }, handler);
  const port = await ready.promise;
  return { url: `http://127.0.0.1:${port}`, port, close: () => server.shutdown() };
}

/** Runs `fn` against `handler` served by {@linkcode listenNode}, closing the server after. */
export async function withNodeServer(
  handler: Handler,
  fn: (server: LoopbackServer) => Promise<void>,
): Promise<void> {
  const server = await listenNode(handler);
  try {
    await fn(server);
  } finally {
    await server.close();
  }
}
