/**
 * `test(name, fn)` on either runtime: `Deno.test` under Deno (with the leak
 * sanitizers deno.json enables), `node:test` under Node 22. The registrar the
 * `"./testing"` entry uses too.
 *
 * @module
 */
export { notApplicable, test } from "../testing/_runner.ts";
