/**
 * `test(name, fn)` on either runtime: `Deno.test` under Deno (with its leak
 * sanitizers), `node:test` under Node 22.
 *
 * @module
 */

/** A test body. */
export type TestFn = () => void | Promise<void>;

interface DenoTest {
  test(name: string, fn: TestFn): void;
  test(options: { name: string; ignore: boolean; fn: TestFn }): void;
}

const deno = (globalThis as { Deno?: DenoTest }).Deno;
const nodeTest = deno === undefined ? (await import("node:test")).test : undefined;

/** Registers a test on the runtime running this file. */
export function test(name: string, fn: TestFn): void {
  if (deno !== undefined) deno.test(name, fn);
  else void nodeTest!(name, fn);
}

/**
 * Registers a case that does not apply in this run, shown as ignored (Deno) or skipped (Node)
 * with `reason` in its name: never a silent skip.
 */
export function notApplicable(name: string, reason: string): void {
  const label = `${name} (not applicable: ${reason})`;
  if (deno !== undefined) deno.test({ name: label, ignore: true, fn: () => {} });
  else void nodeTest!(label, { skip: reason }, () => {});
}
