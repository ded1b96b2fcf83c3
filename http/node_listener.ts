/**
 * Adapts a fetch handler to Node's `http.createServer` listener signature,
 * typed structurally so the console and the Kubernetes API import nothing
 * from `node:*`. Both serve through it (`./console` and `./kubeapi` export it).
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
  /**
   * The request body's chunks (Node's `IncomingMessage` is async-iterable);
   * forwarded as the fetch request's body for methods that carry one.
   */
  [Symbol.asyncIterator]?(): AsyncIterator<Uint8Array>;
}

/** The part of Node's `ServerResponse` the adapter writes. */
export interface NodeResponseLike {
  /** Sends the status line and headers. */
  writeHead(status: number, headers: Record<string, string>): unknown;
  /**
   * Writes a body chunk; `false` when the socket's buffer is full, and the
   * adapter then waits for `"drain"` before it takes the next chunk.
   */
  write(chunk: Uint8Array): unknown;
  /** Ends the response. */
  end(): unknown;
  /** Sends the status line and headers now, before any body chunk. */
  flushHeaders?(): unknown;
  /** Listens for the connection closing (`"close"`). */
  on(event: "close", listener: () => void): unknown;
  /** Listens once for the socket's buffer emptying (`"drain"`). */
  once?(event: "drain", listener: () => void): unknown;
  /** Stops listening for `"drain"`. */
  off?(event: "drain", listener: () => void): unknown;
  /** Whether the response was fully written. */
  readonly writableFinished?: boolean;
  /** Whether the status line and headers went out. */
  readonly headersSent?: boolean;
}

/** A Node HTTP request listener. */
export type NodeListener = (request: NodeRequestLike, response: NodeResponseLike) => void;

/** A plain-text answer the adapter gives without calling the handler. */
function plain(status: number, text: string, headers: Record<string, string> = {}): Response {
  return new Response(`${text}\n`, {
    status,
    headers: {
      "content-type": "text/plain; charset=utf-8",
      "cache-control": "no-store",
      ...headers,
    },
  });
}

/**
 * Builds the fetch `Request` for a Node request, or the 4xx/5xx answer when
 * there is none to build: a `Host` that makes no URL is 400, a method fetch
 * refuses (`TRACE`, `TRACK`, `CONNECT`) or cannot carry is 501.
 */
function toRequest(req: NodeRequestLike, signal: AbortSignal): Request | Response {
  const headers = new Headers();
  try {
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    }
  } catch {
    return plain(400, "Bad Request: a header fetch cannot carry");
  }
  const host = headers.get("host") ?? "localhost";
  const target = req.url ?? "/";
  let url: URL;
  try {
    // An absolute-form target would let the request line pick the origin: only a path is served.
    if (!target.startsWith("/")) throw new TypeError("not origin-form");
    // The authority must be exactly a host and an optional port.
    if (/[\s/?#@\\]/.test(host)) throw new TypeError("not a host");
    url = new URL(target, `http://${host}`);
    if (url.host === "") throw new TypeError("empty host");
  } catch {
    return plain(400, "Bad Request: the Host header or the request target is not a valid URL");
  }
  const method = req.method ?? "GET";
  const body = method === "GET" || method === "HEAD" || !hasBody(headers) ? null : bodyOf(req);
  try {
    return new Request(url, { method, headers, signal, body, duplex: "half" } as RequestInit);
  } catch {
    return plain(501, `Not Implemented: the ${method.slice(0, 32)} method is not served`);
  }
}

/** Whether the request carries a body: HTTP/1.1 frames one by a length above 0 or a transfer coding. */
function hasBody(headers: Headers): boolean {
  const length = headers.get("content-length");
  return headers.has("transfer-encoding") || (length !== null && length.trim() !== "0");
}

/**
 * The request body as a stream pulled chunk by chunk from `req`, so a
 * handler that reads a bounded prefix holds no more than it reads; `null`
 * when `req` is not iterable.
 */
function bodyOf(req: NodeRequestLike): ReadableStream<Uint8Array> | null {
  const iterable = req[Symbol.asyncIterator];
  if (typeof iterable !== "function") return null;
  let chunks: AsyncIterator<Uint8Array> | undefined;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      chunks ??= iterable.call(req);
      const { done, value } = await chunks.next();
      if (done) controller.close();
      else controller.enqueue(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
    },
    async cancel() {
      await chunks?.return?.();
    },
  }, { highWaterMark: 0 });
}

/**
 * Wraps `handler` as a listener for Node's `http.createServer`. The request's
 * signal aborts when the client disconnects, which ends a live feed. The
 * request body of a method that may carry one (any but `GET` and `HEAD`), when
 * the request frames one (`Content-Length` above 0 or `Transfer-Encoding`), is
 * forwarded as a stream the handler reads at its own pace, bounding what it
 * reads. The response body is pulled only as fast as the socket takes it:
 * when a write fills the socket's buffer, the next chunk waits for `"drain"`,
 * so a client that does not read holds the stream, not the server's memory.
 * The status line and headers go out as soon as the handler answers,
 * before any body chunk, as fetch servers send them (a watch or live feed
 * with nothing to send yet still answers). No request throws out
 * of the listener: a `Host` or target that makes no URL is answered `400`, a
 * method fetch refuses (`TRACE`, `CONNECT`) `501`, and a handler that throws
 * or rejects `500` with a generic body (the handler logs its own details).
 *
 * @example
 * ```ts ignore
 * import { createServer } from "node:http";
 * import { consoleHandler, toNodeListener } from "@beehive/beehive/console";
 *
 * createServer(toNodeListener(consoleHandler({ store }))).listen(8080, "127.0.0.1");
 * ```
 */
export function toNodeListener(handler: (request: Request) => Promise<Response>): NodeListener {
  return (req, res) => {
    void serve(handler, req, res).catch(() => {
      // The response could not be written: the connection is gone or broken.
      try {
        if (res.headersSent === false) res.writeHead(500, {});
        res.end();
      } catch {
        // nothing more to do for this connection
      }
    });
  };
}

/** Resolves once `res` drains or the connection closes. */
function drained(res: NodeResponseLike, closed: AbortSignal): Promise<void> {
  if (res.once === undefined || closed.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = () => {
      res.off?.("drain", done);
      closed.removeEventListener("abort", done);
      resolve();
    };
    res.once!("drain", done);
    closed.addEventListener("abort", done, { once: true });
  });
}

async function serve(
  handler: (request: Request) => Promise<Response>,
  req: NodeRequestLike,
  res: NodeResponseLike,
): Promise<void> {
  const abort = new AbortController();
  res.on("close", () => abort.abort());
  const request = toRequest(req, abort.signal);
  let response: Response;
  if (request instanceof Response) response = request;
  else {
    try {
      response = await handler(request);
    } catch {
      response = plain(500, "Internal Server Error");
    }
  }
  const out: Record<string, string> = {};
  response.headers.forEach((value, name) => (out[name] = value));
  res.writeHead(response.status, out);
  if (response.body === null) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  const cancel = () => void reader.cancel().catch(() => {});
  abort.signal.addEventListener("abort", cancel);
  try {
    let next = reader.read();
    // Node holds the head back until the first body chunk. A chunk already at hand goes out with
    // it, in one write; a stream with nothing to send yet (a quiet watch) must not keep the
    // client waiting for the head (Go's client blocks there), so the head goes out now, as fetch
    // servers send it.
    const notYet = {};
    if (await Promise.race([next, notYet]) === notYet) res.flushHeaders?.();
    for (;;) {
      const { done, value } = await next;
      if (done) break;
      // Back-pressure: a client that does not read stops the body being pulled, not buffered.
      if (res.write(value) === false) await drained(res, abort.signal);
      next = reader.read();
    }
  } catch {
    // the client went away, or the body failed: end what was sent
  } finally {
    abort.signal.removeEventListener("abort", cancel);
  }
  res.end();
}
