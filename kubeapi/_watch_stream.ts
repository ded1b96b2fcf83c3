/**
 * What every watch stream shares — of objects (`_watch.ts`), events
 * (`_event_watch.ts`) and namespaces (`_namespace_watch.ts`): its JSON lines
 * `{"type":…,"object":…}`, its `ERROR` line, its lifetime (`timeoutSeconds`,
 * else a random 30 to 60 minutes) and its body, pulled chunk by chunk as the
 * client takes them. Its backlog is `_watch_backlog.ts`.
 *
 * @module
 */
import type { Representation } from "./_request.ts";
import { failureStatus, toFailure } from "./_status.ts";
import { tableType } from "./_tables.ts";

/** The shortest and longest a watch without `timeoutSeconds` lasts, in seconds: 30 to 60 minutes. */
export const DEFAULT_WATCH_SECONDS = { min: 30 * 60, max: 60 * 60 } as const;

/** How long a watch lasts: `timeoutSeconds`, or a random 30 to 60 minutes (`random` in [0, 1)). */
export function watchSeconds(timeoutSeconds: number | undefined, random = Math.random()): number {
  if (timeoutSeconds !== undefined && timeoutSeconds > 0) return timeoutSeconds;
  const { min, max } = DEFAULT_WATCH_SECONDS;
  return min + Math.floor(random * (max - min));
}

/** One watch event's JSON line. */
export function watchLine(type: string, object: unknown): string {
  return `${JSON.stringify({ type, object })}\n`;
}

/** The `ERROR` event line that ends a watch on `error`: its Status. */
export function errorLine(error: unknown): string {
  const failure = toFailure(error);
  return watchLine("ERROR", failureStatus(failure.reason, failure.message, failure.details));
}

/** A watch response's headers: JSON lines, or Table lines when a Table was asked. */
export function watchHeaders(rep: Representation): Record<string, string> {
  const type = rep.as === "table" ? tableType(rep.version) : "application/json";
  return { "content-type": type, "cache-control": "no-store" };
}

/**
 * A watch's end: `onEnd` runs once, when the returned function is first called
 * (the body's cancel, the stream's end) or after {@linkcode watchSeconds} of
 * `timeoutSeconds`. No watch reads `request.signal`: `Deno.serve` aborts it on
 * every completed response, and warns when it is read.
 */
export function watchEnd(
  timeoutSeconds: number | undefined,
  onEnd: () => void,
): () => void {
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    clearTimeout(timer);
    onEnd();
  };
  const timer = setTimeout(end, watchSeconds(timeoutSeconds) * 1000);
  return end;
}

/**
 * A watch's body, pulled: each pull sends `next()`'s chunk, or an `ERROR` line
 * when it throws; `undefined` ends the watch and closes the body once
 * `settle()` has (so does the client's cancel).
 */
export function watchBody(
  next: () => Promise<Uint8Array | undefined>,
  end: () => void,
  settle: () => Promise<unknown>,
): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Uint8Array | undefined;
      try {
        chunk = await next();
      } catch (error) {
        chunk = new TextEncoder().encode(errorLine(error));
        end();
      }
      try {
        if (chunk === undefined) {
          end();
          await settle();
          controller.close();
        } else controller.enqueue(chunk);
      } catch {
        end(); // the reader cancelled meanwhile
      }
    },
    async cancel() {
      end();
      await settle();
    },
  });
}

/** {@linkcode watchBody} of a generator's chunks. */
export function generatedBody(
  chunks: AsyncGenerator<Uint8Array>,
  end: () => void,
): ReadableStream<Uint8Array> {
  return watchBody(
    async () => {
      const next = await chunks.next();
      return next.done ? undefined : next.value;
    },
    end,
    () => chunks.return(undefined),
  );
}
