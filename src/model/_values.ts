/**
 * Small helpers every public surface shares: rendering a value for an error
 * message, and turning a synchronous argument error into a rejection.
 *
 * @module
 */

/** A short rendering of a value for error messages. */
export function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  if (Array.isArray(value)) return "an array";
  if (value === null) return "null";
  if (typeof value === "object") return "an object";
  return String(value);
}

/** Runs `fn`, rejecting with whatever it throws synchronously: async members never throw. */
export function attempt<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return fn();
  } catch (error) {
    return Promise.reject(error);
  }
}
