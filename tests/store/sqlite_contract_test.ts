/**
 * Runs the store contract suite against the SQLite store under Deno.
 *
 * @module
 */
import { contractSuites } from "./contract/mod.ts";
import { runCase } from "./contract/harness.ts";
import { nodeTempDirs, sqliteFactory } from "./sqlite_factory.ts";

for (const [family, cases] of Object.entries(contractSuites)) {
  for (const c of cases) {
    Deno.test(`store contract (sqlite) ${family}: ${c.name}`, () =>
      runCase(sqliteFactory, nodeTempDirs, c));
  }
}
