/**
 * Runs the store contract suite against the SQLite store under Node 22
 * (`node --test`, type stripping, no build step).
 *
 * @module
 */
import { test } from "node:test";
import { contractSuites } from "./contract/mod.ts";
import { runCase } from "./contract/harness.ts";
import { nodeTempDirs, sqliteFactory } from "./sqlite_factory.ts";

for (const [family, cases] of Object.entries(contractSuites)) {
  for (const c of cases) {
    test(`store contract (sqlite) ${family}: ${c.name}`, () =>
      runCase(sqliteFactory, nodeTempDirs, c));
  }
}
