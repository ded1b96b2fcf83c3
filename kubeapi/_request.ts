/**
 * The request's parts, bounded and checked: query parameters (`limit`,
 * `continue`, `resourceVersion`, `timeoutSeconds`, …), the body, and what
 * the `Accept` header asks for. Anything malformed or oversized throws a
 * `KubeApiFailure` the router answers as a 4xx `Status`.
 *
 * @module
 */
import { concatBytes } from "./_bytes.ts";
import { KubeApiFailure } from "./_status.ts";
import type { BodyLimits } from "./_context.ts";
import type { IncludeObject } from "./_tables.ts";

/** The longest query value read. */
export const MAX_QUERY_VALUE = 4096;
/** The most objects one list page holds; a larger `limit` gets this many and a `continue`. */
export const MAX_PAGE = 1000;
/** The longest a watch may be asked to last, in seconds. */
export const MAX_TIMEOUT_SECONDS = 24 * 60 * 60;

function bad(message: string): KubeApiFailure {
  return new KubeApiFailure("BadRequest", message);
}

/** A query parameter, bounded; `undefined` when absent. */
export function param(url: URL, name: string): string | undefined {
  const value = url.searchParams.get(name);
  if (value === null) return undefined;
  if (value.length > MAX_QUERY_VALUE) {
    throw bad(`${name} is too long: ${value.length} characters, at most ${MAX_QUERY_VALUE}`);
  }
  return value;
}

/** A boolean query parameter (`true`/`1`/`false`/`0`, empty = false). */
export function boolParam(url: URL, name: string): boolean {
  const value = param(url, name);
  if (value === undefined || value === "" || value === "false" || value === "0") return false;
  if (value === "true" || value === "1") return true;
  throw bad(`${name} must be true or false: current value is ${JSON.stringify(value)}`);
}

/** A non-negative integer query parameter no larger than `max`. */
export function intParam(url: URL, name: string, max: number): number | undefined {
  const value = param(url, name);
  if (value === undefined || value === "") return undefined;
  if (!/^\d{1,16}$/.test(value) || Number(value) > max) {
    throw bad(
      `${name} must be an integer from 0 to ${max}: current value is ${JSON.stringify(value)}`,
    );
  }
  return Number(value);
}

/**
 * `resourceVersion`: `undefined` when absent or empty, `0` for "any", else the
 * log position.
 */
export function resourceVersionParam(url: URL): number | undefined {
  const value = param(url, "resourceVersion");
  if (value === undefined || value === "") return undefined;
  if (!/^\d{1,16}$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw bad(`invalid resourceVersion: ${JSON.stringify(value)}`);
  }
  return Number(value);
}

/** `includeObject` for a Table: `Metadata` unless asked otherwise. */
export function includeObjectParam(url: URL): IncludeObject {
  const value = param(url, "includeObject");
  if (value === undefined || value === "") return "Metadata";
  if (value === "None" || value === "Metadata" || value === "Object") return value;
  throw bad(`includeObject must be None, Metadata or Object: current value is ${value}`);
}

/**
 * `?dryRun=`: `true` for `All` (check and answer the write, commit nothing),
 * `false` when absent or empty.
 * @throws {KubeApiFailure} BadRequest: any other value, as the API server answers it.
 */
export function dryRunParam(url: URL): boolean {
  const values = url.searchParams.getAll("dryRun");
  if (values.length > 8) throw bad("dryRun is given more than 8 times");
  let dryRun = false;
  for (const value of values) {
    if (value === "All") dryRun = true;
    else if (value !== "") {
      throw bad(`dryRun must be All: current value is ${JSON.stringify(value.slice(0, 64))}`);
    }
  }
  return dryRun;
}

/** The largest request body read unless `maxBodyBytes` says otherwise: 3 MiB, as the API server. */
export const DEFAULT_MAX_BODY_BYTES = 3 * 1024 * 1024;

/**
 * How much deeper than `limits.nestingDepth` a body may nest: the resource
 * around its spec, a JSON patch's operation list, and the managed fields that
 * mirror the spec a few levels down.
 */
export const BODY_DEPTH_MARGIN = 8;

/**
 * Reads the request body as text, at most `limits.maxBodyBytes` bytes.
 * @throws {KubeApiFailure} RequestEntityTooLarge above the limit; BadRequest when not UTF-8.
 */
export async function readBody(request: Request, limits: BodyLimits): Promise<string> {
  const bytes = await readBodyBytes(request, limits);
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new KubeApiFailure("BadRequest", "the request body is not UTF-8");
  }
}

/**
 * Reads the body as JSON, refusing it before parsing when it nests deeper
 * than `limits.maxDepth`.
 * @throws {KubeApiFailure} RequestEntityTooLarge above the size limit; BadRequest when it is not
 *   JSON (`what` says what it should have been) or nests too deep.
 */
export async function readJsonBody(
  request: Request,
  limits: BodyLimits,
  what: string,
): Promise<unknown> {
  return parseJson(await readBody(request, limits), limits.maxDepth, what);
}

/**
 * Parses `text` as JSON after checking, in one pass over the text, that it
 * nests no deeper than `maxDepth`: a deeper body never reaches a recursive
 * walk (a merge patch, a copy) that would overflow the stack.
 * @throws {KubeApiFailure} BadRequest: not JSON, or nested too deep.
 */
export function parseJson(text: string, maxDepth: number, what: string): unknown {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) {
        throw new KubeApiFailure(
          "BadRequest",
          `the request body nests deeper than ${maxDepth} levels`,
        );
      }
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new KubeApiFailure("BadRequest", `the request body is not JSON ${what}`);
  }
}

/**
 * Reads the request body, at most `limits.maxBodyBytes` bytes.
 * @throws {KubeApiFailure} RequestEntityTooLarge above the limit.
 */
export async function readBodyBytes(
  request: Request,
  limits: Pick<BodyLimits, "maxBodyBytes">,
): Promise<Uint8Array> {
  const max = limits.maxBodyBytes;
  const tooLarge = () =>
    new KubeApiFailure(
      "RequestEntityTooLarge",
      `the request body is over ${max} bytes (the maxBodyBytes limit)`,
    );
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > max) throw tooLarge();
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  return concatBytes(chunks);
}

/** One media range of an `Accept` header: type and parameters. */
interface MediaRange {
  readonly type: string;
  readonly params: Map<string, string>;
}

function mediaRanges(accept: string): MediaRange[] {
  return accept.split(",").slice(0, 32).map((range) => {
    const [type, ...rest] = range.split(";");
    const params = new Map<string, string>();
    for (const p of rest) {
      const eq = p.indexOf("=");
      if (eq > 0) params.set(p.slice(0, eq).trim().toLowerCase(), p.slice(eq + 1).trim());
    }
    return { type: type.trim().toLowerCase(), params };
  });
}

/** What a read answers with. */
export type Representation = { readonly as: "json" } | {
  readonly as: "table";
  /** `v1`, or `v1beta1` for a client that offered only that. */
  readonly version: string;
};

/**
 * Picks the representation from `Accept`: the first media range this server
 * can answer, Tables included; JSON when none is given.
 * @throws {KubeApiFailure} NotAcceptable: only representations it cannot give are offered.
 */
export function negotiate(request: Request): Representation {
  const accept = request.headers.get("accept");
  if (accept === null || accept.trim() === "") return { as: "json" };
  for (const range of mediaRanges(accept.slice(0, MAX_QUERY_VALUE))) {
    const json = range.type === "application/json" || range.type === "*/*" ||
      range.type === "application/*";
    if (!json) continue;
    const as = range.params.get("as");
    if (as === undefined) return { as: "json" };
    const version = range.params.get("v");
    if (
      as === "Table" && range.params.get("g") === "meta.k8s.io" &&
      (version === "v1" || version === "v1beta1")
    ) return { as: "table", version };
  }
  throw new KubeApiFailure(
    "NotAcceptable",
    "only application/json is served, as objects, lists or meta.k8s.io Tables",
  );
}
