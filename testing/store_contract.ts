/**
 * `storeContract`: the store contract suite, registered as tests of the
 * runner that loads it, for an adapter author to prove a store.
 *
 * @module
 */
import type { Store } from "../src/store.ts";
import { describe } from "../src/model/_values.ts";
import { contractTests } from "./_contract/mod.ts";
import { notApplicable, test } from "./_runner.ts";

/** The longest store name {@linkcode storeContract} accepts (it goes into every test name). */
const MAX_NAME = 100;

/** Options of {@linkcode storeContract}. */
export interface StoreContractOptions {
  /**
   * Opens the store at `path` (a file path the suite makes in a temporary
   * directory), creating it when missing: two opens of one path must see the
   * same data, as two processes or a restart would. A store with no notion of
   * paths (a database URL, say) maps `path` to a name of its own, e.g. a
   * schema. The cases that reopen a store (restarts, two connections) need it.
   * @default {undefined} (those cases are registered as ignored, "not applicable")
   */
  openPath?: (path: string) => Promise<Store>;
  /**
   * Opens the existing store at `path` read-only: every write refused, nothing
   * created or migrated. The read-only cases need it (and `openPath`).
   * @default {undefined} (those cases are registered as ignored, "not applicable")
   */
  openReadOnly?: (path: string) => Promise<Store>;
}

/**
 * Registers the store contract suite — every promise of the Store port, one
 * test per case — with the runner that loads the calling file: `Deno.test`
 * under `deno test`, `node:test` under `node --test`. Each test is named
 * `store contract (<name>) <family>: <case>`, opens its stores with `open`
 * (each a fresh, empty store), and closes every store it opened before it
 * ends, so Deno's leak sanitizers hold the store to its `close()`. The cases
 * fake `Date` where they test time; they need read and write access to a
 * temporary directory.
 *
 * @example Run the contract on an adapter (in `my_store_contract_test.ts`)
 * ```ts ignore
 * import { storeContract } from "@beehive/beehive/testing";
 * import { openMyStore } from "./my_store.ts";
 *
 * storeContract("my-store", () => openMyStore({ memory: true }), {
 *   openPath: (path) => openMyStore({ file: path }),
 * });
 * ```
 *
 * @param name A short label for the test names, e.g. `"libsql"`: 1 to 100 characters.
 * @param open Opens a fresh, empty store.
 * @throws {TypeError} `name` is not a string of 1 to 100 characters, `open`
 * or `openPath` is not a function, or `options` is not an object. An `open`
 * that does not resolve to a Store fails every case with a `TypeError` saying
 * what it resolved to.
 */
export function storeContract(
  name: string,
  open: () => Promise<Store>,
  options: StoreContractOptions = {},
): void {
  if (typeof name !== "string" || name === "" || name.length > MAX_NAME) {
    throw new TypeError(
      `Cannot register the store contract with name: current value is ${
        describe(name)
      }, expected a string of 1 to ${MAX_NAME} characters`,
    );
  }
  if (typeof open !== "function") {
    throw new TypeError(
      `Cannot register the store contract (${name}) with open: current value is ${
        describe(open)
      }, expected a function that resolves to a fresh Store`,
    );
  }
  if (typeof options !== "object" || options === null) {
    throw new TypeError(
      `Cannot register the store contract (${name}) with options: current value is ${
        describe(options)
      }, expected an object like { openPath }`,
    );
  }
  const { openPath } = options;
  if (openPath !== undefined && typeof openPath !== "function") {
    throw new TypeError(
      `Cannot register the store contract (${name}) with openPath: current value is ${
        describe(openPath)
      }, expected a function of a path that resolves to a Store`,
    );
  }
  const { openReadOnly } = options;
  if (openReadOnly !== undefined && typeof openReadOnly !== "function") {
    throw new TypeError(
      `Cannot register the store contract (${name}) with openReadOnly: current value is ${
        describe(openReadOnly)
      }, expected a function of a path that resolves to a read-only Store`,
    );
  }
  const factory = {
    name,
    open: () => open(),
    openPath: openPath && ((p: string) => openPath(p)),
    openReadOnly: openReadOnly && ((p: string) => openReadOnly(p)),
  };
  for (const t of contractTests(factory)) {
    if ("run" in t) test(t.name, t.run);
    else notApplicable(t.name, t.notApplicable);
  }
}
