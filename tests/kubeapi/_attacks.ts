/**
 * The request shapes an attacker sends, shared by the Kubernetes API tests
 * and the bad-input campaign.
 *
 * @module
 */

/**
 * The 57-operation copy bomb: an array of 999 integers, 16 copies that each
 * nest the array in itself (doubling it), then 40 more copies of the whole.
 */
export function copyBomb(at: string): unknown[] {
  const ops: unknown[] = [{
    op: "add",
    path: `${at}/a`,
    value: Array.from({ length: 999 }, (_, i) => i),
  }];
  for (let i = 0; i < 16; i++) ops.push({ op: "copy", from: `${at}/a`, path: `${at}/a/-` });
  for (let i = 0; i < 40; i++) ops.push({ op: "copy", from: `${at}/a`, path: `${at}/c${i}` });
  return ops;
}

/** A merge patch whose spec nests `depth` objects deep, built without recursion. */
export function deepMergePatch(depth: number): string {
  return `{"spec":${'{"a":'.repeat(depth)}1${"}".repeat(depth)}}`;
}
