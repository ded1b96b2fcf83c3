/**
 * Runs the store contract suite against the SQLite store, under Deno
 * (`deno test`) and Node 22 (`node --test`) alike, through the published
 * `storeContract`; then the SQLite store's own cases (files, pages, drivers).
 *
 * @module
 */
import { storeContract } from "../../testing/mod.ts";
import { test } from "../_test.ts";
import { runCase } from "../../testing/_contract/harness.ts";
import { nodeTempDirs, sqliteFactory } from "./sqlite_factory.ts";
import { sqliteAdapterCases } from "./sqlite_adapter_cases.ts";

storeContract(sqliteFactory.name, sqliteFactory.open, {
  openPath: sqliteFactory.openPath,
  openReadOnly: sqliteFactory.openReadOnly,
});

for (const c of sqliteAdapterCases) {
  test(`store contract (sqlite) sqlite_adapter: ${c.name}`, () =>
    runCase(sqliteFactory, nodeTempDirs, c));
}
