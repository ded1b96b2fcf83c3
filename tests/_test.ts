/**
 * `test(name, fn)` on either runtime: `Deno.test` under Deno (with the leak
 * sanitizers deno.json enables), `node:test` under Node 22.
 *
 * @module
 */
type Fn = () => void | Promise<void>;

interface DenoTest {
  test(name: string, fn: Fn): void;
}

const deno = (globalThis as { Deno?: DenoTest }).Deno;
const nodeTest = deno === undefined ? (await import("node:test")).test : undefined;

/** Registers a test on the runtime running this file. */
export function test(name: string, fn: Fn): void {
  if (deno !== undefined) deno.test(name, fn);
  else void nodeTest!(name, fn);
}
