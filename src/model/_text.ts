/**
 * The rule for text stored as a key or value.
 *
 * @module
 */

/**
 * Whether `text` can be stored and read back intact: well-formed UTF-16
 * (SQLite would fold malformed text) and free of NUL (the driver reads text
 * back only up to the first NUL).
 */
export function isStorableText(text: string): boolean {
  return text.isWellFormed() && !text.includes("\u0000");
}
