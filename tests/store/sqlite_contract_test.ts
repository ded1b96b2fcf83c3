/**
 * Runs the store contract suite against the SQLite store, under Deno
 * (`deno test`) and Node 22 (`node --test`) alike.
 *
 * @module
 */
import { test } from "../_test.ts";
import { contractSuites } from "./contract/mod.ts";
import { runCase } from "./contract/harness.ts";
import { nodeTempDirs, sqliteFactory } from "./sqlite_factory.ts";

for (const [family, cases] of Object.entries(contractSuites)) {
  for (const c of cases) {
    test(`store contract (sqlite) ${family}: ${c.name}`, () =>
      runCase(sqliteFactory, nodeTempDirs, c));
  }
}
