/**
 * `resourceVersion` and `resourceVersionMatch` on reads, as the API server
 * treats them: a version above anything the store issued is 504 `Timeout`
 * "Too large resource version" (clients relist); a list's `Exact` match is
 * served when nothing of the kind changed since that version (the kind's
 * objects are then as they were), else 410 `Expired`; `NotOlderThan` (and a
 * bare version) is served at the current position; a malformed combination is
 * 422. Never silently ignored.
 *
 * @module
 */
import type { KubeContext } from "./_context.ts";
import type { ServedKind } from "./_kinds.ts";
import { param, resourceVersionParam } from "./_request.ts";
import { invalidFailure, KubeApiFailure } from "./_status.ts";

const MATCHES = new Set(["Exact", "NotOlderThan"]);

/** The 504 the API server answers a version it has not reached with. */
export function tooLargeResourceVersion(rv: number, current: number): KubeApiFailure {
  return new KubeApiFailure("Timeout", `Too large resource version: ${rv}, current: ${current}`, {
    causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }],
    retryAfterSeconds: 1,
  });
}

/** @throws {KubeApiFailure} Timeout: `rv` is above the store's latest version. */
export async function checkNotTooLarge(ctx: KubeContext, rv: number | undefined): Promise<void> {
  if (rv === undefined || rv === 0) return;
  const current = await ctx.store.getLatestResourceVersion();
  if (rv > current) throw tooLargeResourceVersion(rv, current);
}

function invalidMatch(message: string): KubeApiFailure {
  return invalidFailure({ kind: "ListOptions", group: "meta.k8s.io" }, [{
    field: "resourceVersionMatch",
    message,
  }]);
}

/**
 * The position a list of `kind` answers as of: `current` (the kind's log
 * position), or the `Exact` version asked for when the kind's objects are
 * unchanged since it.
 * @throws {KubeApiFailure} Invalid: a malformed match; Timeout: a version not reached yet;
 *   Expired: an `Exact` version the kind has changed since.
 */
export async function listPosition(
  ctx: KubeContext,
  kind: ServedKind,
  url: URL,
  current: number,
): Promise<number> {
  const rv = resourceVersionParam(url);
  const match = param(url, "resourceVersionMatch");
  if (match !== undefined && match !== "") {
    if (!MATCHES.has(match)) {
      throw invalidMatch(
        `Unsupported value: ${
          JSON.stringify(match.slice(0, 64))
        }: supported values: "Exact", "NotOlderThan"`,
      );
    }
    if (rv === undefined) {
      throw invalidMatch("resourceVersionMatch is forbidden unless resourceVersion is provided");
    }
    if (match === "Exact" && rv === 0) {
      throw invalidMatch('resourceVersionMatch "Exact" is forbidden for resourceVersion "0"');
    }
  }
  await checkNotTooLarge(ctx, rv);
  if (match !== "Exact") return current;
  if (rv! < current) {
    throw new KubeApiFailure(
      "Expired",
      `too old resource version: ${rv} (${kind.plural}.${kind.group} changed since: ${current})`,
    );
  }
  return rv!;
}
