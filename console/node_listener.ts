/**
 * Adapts a fetch handler to Node's `http.createServer` listener signature,
 * typed structurally so the console imports nothing from `node:*`.
 *
 * @module
 */

/** The part of Node's `IncomingMessage` the adapter reads. */
export interface NodeRequestLike {
  /** The request method. */
  readonly method?: string;
  /** The path and query. */
  readonly url?: string;
  /** The request headers. */
  readonly headers: Record<string, string | string[] | undefined>;
}

/** The part of Node's `ServerResponse` the adapter writes. */
export interface NodeResponseLike {
  /** Sends the status line and headers. */
  writeHead(status: number, headers: Record<string, string>): unknown;
  /** Writes a body chunk. */
  write(chunk: Uint8Array): unknown;
  /** Ends the response. */
  end(): unknown;
  /** Listens for the connection closing (`"close"`). */
  on(event: "close", listener: () => void): unknown;
  /** Whether the response was fully written. */
  readonly writableFinished?: boolean;
}

/** A Node HTTP request listener. */
export type NodeListener = (request: NodeRequestLike, response: NodeResponseLike) => void;

/**
 * Wraps `handler` as a listener for Node's `http.createServer`. The request's
 * signal aborts when the client disconnects, which ends a live feed. Request
 * bodies are not forwarded (the console is read-only).
 *
 * @example
 * ```ts ignore
 * import { createServer } from "node:http";
 * import { consoleHandler, toNodeListener } from "@beehive/beehive/console";
 *
 * createServer(toNodeListener(consoleHandler({ store }))).listen(8080);
 * ```
 */
export function toNodeListener(handler: (request: Request) => Promise<Response>): NodeListener {
  return (req, res) => {
    const abort = new AbortController();
    res.on("close", () => abort.abort());
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    }
    const host = headers.get("host") ?? "localhost";
    const request = new Request(new URL(req.url ?? "/", `http://${host}`), {
      method: req.method ?? "GET",
      headers,
      signal: abort.signal,
    });
    void (async () => {
      let response: Response;
      try {
        response = await handler(request);
      } catch {
        response = new Response("Internal Server Error\n", { status: 500 });
      }
      const out: Record<string, string> = {};
      response.headers.forEach((value, name) => (out[name] = value));
      res.writeHead(response.status, out);
      if (response.body === null) {
        res.end();
        return;
      }
      const reader = response.body.getReader();
      abort.signal.addEventListener("abort", () => void reader.cancel().catch(() => {}));
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          res.write(value);
        }
      } catch {
        // the client went away
      }
      res.end();
    })();
  };
}
