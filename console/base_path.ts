/**
 * The `basePath` option the console and the Kubernetes API handler share:
 * checked, stripped of trailing slashes and kept percent-encoded, the form
 * request paths carry and links point at.
 *
 * @module
 */

/** One path segment, percent-encoded once (an already encoded one is kept). */
function encodeSegment(segment: string): string {
  let decoded = segment;
  try {
    decoded = decodeURIComponent(segment);
  } catch {
    // not encoded: encode it as given
  }
  return encodeURIComponent(decoded);
}

/**
 * `basePath` as a handler matches it: `""` for none, else a path starting
 * with `/`, without trailing slashes, each segment percent-encoded once
 * (`"/my console/"` and `"/my%20console"` are both `"/my%20console"`).
 * @throws {TypeError} `basePath` is not a string, or neither `""` nor starts with `/`.
 */
export function normalizeBasePath(basePath: unknown): string {
  if (basePath === undefined) return "";
  if (typeof basePath !== "string" || (basePath !== "" && !basePath.startsWith("/"))) {
    throw new TypeError(
      `Cannot use basePath: current value is ${
        JSON.stringify(basePath)
      }, expected "" or a path starting with "/"`,
    );
  }
  return basePath.replace(/\/+$/, "").split("/").map(encodeSegment).join("/");
}
