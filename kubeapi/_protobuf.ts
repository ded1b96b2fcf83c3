/**
 * The least of Kubernetes' protobuf encoding this server reads: the
 * `k8s\0` envelope around a `runtime.Unknown`, and a message's fields by
 * number. kubectl sends built-in kinds (a `SelfSubjectAccessReview`) this
 * way (a `SelfSubjectAccessReview`, a `Namespace`); every answer stays JSON.
 *
 * @module
 */
import { KubeApiFailure } from "./_status.ts";

/** The content type kubectl sends protobuf bodies with. */
export const PROTOBUF = "application/vnd.kubernetes.protobuf";

const MAGIC = [0x6b, 0x38, 0x73, 0x00]; // "k8s\0"

function malformed(): KubeApiFailure {
  return new KubeApiFailure("BadRequest", "the request body is not a Kubernetes protobuf message");
}

/** A message's length-delimited fields (submessages, strings, bytes) by field number; the last wins. */
export function fieldsOf(bytes: Uint8Array): Map<number, Uint8Array> {
  return new Map(entriesOf(bytes));
}

/** A map field's entries (`map<string, string>`: repeated messages of key 1 and value 2). */
export function mapField(bytes: Uint8Array, n: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [field, entry] of entriesOf(bytes)) {
    if (field !== n) continue;
    const kv = fieldsOf(entry);
    out[stringField(kv, 1) ?? ""] = stringField(kv, 2) ?? "";
  }
  return out;
}

/** A message's length-delimited fields in wire order, repeated ones each time they occur. */
function entriesOf(bytes: Uint8Array): [number, Uint8Array][] {
  const out: [number, Uint8Array][] = [];
  let at = 0;
  const varint = () => {
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (at >= bytes.length) throw malformed();
      const b = bytes[at++];
      value += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return value;
    }
    throw malformed();
  };
  while (at < bytes.length) {
    const key = varint();
    const wire = key % 8;
    const field = Math.floor(key / 8);
    if (wire === 0) varint();
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const size = varint();
      if (at + size > bytes.length) throw malformed();
      out.push([field, bytes.subarray(at, at + size)]);
      at += size;
    } else throw malformed();
  }
  if (at !== bytes.length) throw malformed();
  return out;
}

/** A string field, or `undefined` when absent. */
export function stringField(fields: Map<number, Uint8Array>, n: number): string | undefined {
  const value = fields.get(n);
  if (value === undefined) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(value);
  } catch {
    throw malformed();
  }
}

/** The object's own bytes inside the `k8s\0` + `runtime.Unknown` envelope. */
export function unwrap(body: Uint8Array): Uint8Array {
  if (body.length < 4 || MAGIC.some((b, i) => body[i] !== b)) throw malformed();
  const raw = fieldsOf(body.subarray(4)).get(2);
  if (raw === undefined) throw malformed();
  return raw;
}
