/**
 * Small helpers every public surface shares: rendering a value for an error
 * message, and turning a synchronous argument error into a rejection.
 *
 * @module
 */

/** The most characters of a user's string an error message quotes. */
export const QUOTED_CHARS = 64;

/**
 * `text` as a JSON string literal for an error message, cut to its first
 * {@linkcode QUOTED_CHARS} characters with the rest counted: a hostile value
 * never makes a huge message.
 */
export function quote(text: string): string {
  if (text.length <= QUOTED_CHARS) return JSON.stringify(text);
  return `${JSON.stringify(head(text))}… (${text.length} characters)`;
}

/**
 * `text` unquoted, cut like {@linkcode quote} (for a kind's name, `Kind.group`,
 * in a message): at most {@linkcode QUOTED_CHARS} characters and the rest counted.
 */
export function clip(text: string): string {
  if (text.length <= QUOTED_CHARS) return text;
  return `${head(text)}… (${text.length} characters)`;
}

/** The first {@linkcode QUOTED_CHARS} characters of `text`, cut on a code point boundary. */
function head(text: string): string {
  // A lone surrogate would make the message ill-formed.
  const cut = /[\uD800-\uDBFF]/.test(text[QUOTED_CHARS - 1]) ? QUOTED_CHARS - 1 : QUOTED_CHARS;
  return text.slice(0, cut);
}

/** A short rendering of a value for error messages. */
export function describe(value: unknown): string {
  if (typeof value === "string") return quote(value);
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
