/**
 * In-flight accounting: at most `maxInflight` non-watch requests and
 * `maxWatches` open watches at once. A request past either is answered 429
 * `TooManyRequests` with `Retry-After`, as the API server's max-in-flight
 * filter does; a slot is held until the response's body is read to its end
 * or cancelled (a watch: until it ends).
 *
 * @module
 */
import { KubeApiFailure } from "./_status.ts";

/** How long a refused client is told to wait, in seconds. */
export const RETRY_AFTER_SECONDS = 1;

/** Whether `url` asks for a watch (`?watch=true` or `?watch=1`). */
export function isWatch(url: URL): boolean {
  const watch = url.searchParams.get("watch");
  return watch === "true" || watch === "1";
}

/** The two counters and their limits. */
export class RequestSlots {
  readonly #limits: { readonly watches: number; readonly inflight: number };
  #watches = 0;
  #inflight = 0;

  constructor(maxWatches: number, maxInflight: number) {
    this.#limits = { watches: maxWatches, inflight: maxInflight };
  }

  /**
   * Takes a slot for a request (a watch when `watch`), returning its release.
   * @throws {KubeApiFailure} TooManyRequests: every slot of its sort is taken.
   */
  take(watch: boolean): () => void {
    if (watch ? this.#watches >= this.#limits.watches : this.#inflight >= this.#limits.inflight) {
      throw new KubeApiFailure(
        "TooManyRequests",
        watch
          ? `too many open watches (maxWatches ${this.#limits.watches}), please try again later`
          : `too many requests in flight (maxInflight ${this.#limits.inflight}), please try again later`,
        { retryAfterSeconds: RETRY_AFTER_SECONDS },
      );
    }
    if (watch) this.#watches++;
    else this.#inflight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (watch) this.#watches--;
      else this.#inflight--;
    };
  }
}

/** `response` whose body calls `release` once read to its end, failed or cancelled (at once when it has none). */
export function releasedAfter(response: Response, release: () => void): Response {
  if (response.body === null) {
    release();
    return response;
  }
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          release();
          controller.close();
        } else controller.enqueue(value);
      } catch (error) {
        release();
        controller.error(error);
      }
    },
    async cancel(reason) {
      release();
      await reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
  return new Response(body, { status: response.status, headers: response.headers });
}
