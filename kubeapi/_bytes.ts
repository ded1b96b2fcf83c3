/**
 * Byte arrays joined: a request body read in chunks, a watch's lines sent as
 * one chunk, a DER encoding's parts.
 *
 * @module
 */

/** `parts` one after another, in one new array (a copy: the parts may be shared or reused). */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  let size = 0;
  for (const part of parts) size += part.byteLength;
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}
