/**
 * The endpoints a load balancer or a probe asks without a token, as the API
 * server serves them: `/healthz`, `/livez` and `/readyz` (each also with
 * `?verbose` and per check, `/readyz/store`), and `/version`. Liveness is
 * the process answering (`ping`); readiness and health also read the store
 * (`store`), so a closed or unreachable store makes them 500.
 *
 * @module
 */
import type { Store } from "@beehive/beehive/store";
import { versionInfo } from "./_discovery.ts";
import { jsonResponse } from "./_status.ts";

const ENDPOINTS = new Set(["healthz", "livez", "readyz"]);

/** The checks each endpoint runs, in order. */
const CHECKS: Readonly<Record<string, readonly string[]>> = {
  livez: ["ping"],
  readyz: ["ping", "store"],
  healthz: ["ping", "store"],
};

/** Whether `parts` (the path under the base) is answered without a token: the probes and `/version`. */
export function isAnonymous(method: string, parts: readonly string[]): boolean {
  if (method !== "GET" && method !== "HEAD") return false;
  if (parts.length === 1 && parts[0] === "version") return true;
  return (parts.length === 1 || parts.length === 2) && ENDPOINTS.has(parts[0]);
}

async function passes(check: string, store: Store): Promise<boolean> {
  if (check === "ping") return true;
  try {
    await store.getLatestResourceVersion();
    return true;
  } catch {
    return false;
  }
}

/**
 * Answers an anonymous path: `/version` as JSON; a probe as text, `ok` (or
 * each check's line and the verdict with `?verbose`), 500 when a check fails
 * and 404 for a check the endpoint does not run.
 */
export async function answerAnonymous(
  store: Store,
  parts: readonly string[],
  url: URL,
): Promise<Response> {
  if (parts[0] === "version") return jsonResponse(200, versionInfo());
  const endpoint = parts[0];
  const all = CHECKS[endpoint];
  const checks = parts.length === 2 ? all.filter((c) => c === parts[1]) : all;
  const text = (status: number, body: string) =>
    new Response(body, {
      status,
      headers: {
        "content-type": "text/plain; charset=utf-8",
        "cache-control": "no-store",
        "x-content-type-options": "nosniff",
      },
    });
  if (checks.length === 0) return text(404, "404 page not found\n");
  const results = await Promise.all(checks.map((c) => passes(c, store)));
  const ok = results.every(Boolean);
  const verbose = url.searchParams.has("verbose");
  if (!verbose && ok) return text(200, "ok");
  const lines = checks.map((c, i) => results[i] ? `[+]${c} ok` : `[-]${c} failed: reason withheld`);
  return text(
    ok ? 200 : 500,
    `${lines.join("\n")}\n${endpoint} check ${ok ? "passed" : "failed"}\n`,
  );
}
