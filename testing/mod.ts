/**
 * Testing with beehive. {@linkcode createTestEnv} runs your controllers on an
 * in-memory store and fake time, so a test of an hour-long `requeueAfter`, a
 * finalizer or an owner cascade takes milliseconds and never sleeps.
 * {@linkcode storeContract} registers the store contract suite — every
 * promise of the Store port — as tests, so the author of a store (libSQL,
 * D1, MySQL, …) proves it keeps them. Both work under `deno test` (with its
 * leak sanitizers on) and `node --test`.
 *
 * @example
 * ```ts
 * import { settled } from "@beehive/beehive";
 * import { createTestEnv } from "@beehive/beehive/testing";
 *
 * const Greeting = { group: "example.com", kind: "Greeting" };
 * const env = await createTestEnv();
 * try {
 *   env.bh.register<{ to: string }, { message: string }>(Greeting, async (obj, cc) => {
 *     await cc.updateStatus({ message: `Hello, ${obj.spec.to}!` });
 *     return settled();
 *   });
 *   await env.start();
 *   await env.bh.client(Greeting).create("hello", { to: "world" });
 *   await env.settle();
 *   const hello = await env.bh.client<{ to: string }, { message: string }>(Greeting)
 *     .getByName("hello");
 *   console.assert(hello?.status?.message === "Hello, world!");
 * } finally {
 *   await env.close();
 * }
 * ```
 *
 * @module
 */
export { createTestEnv } from "./test_env.ts";
export type { TestEnv, TestEnvOptions } from "./test_env.ts";
export { storeContract } from "./store_contract.ts";
export type { StoreContractOptions } from "./store_contract.ts";
