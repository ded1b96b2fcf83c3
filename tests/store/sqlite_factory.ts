/**
 * The SQLite store under the contract suite, and the suite's temp-directory
 * plumbing (Deno and Node alike).
 *
 * @module
 */
import { openSqliteStore } from "../_sqlite_driver.ts";
import type { StoreFactory } from "../../testing/_contract/harness.ts";

export { nodeTempDirs } from "../../testing/_contract/harness.ts";

export const sqliteFactory: StoreFactory = {
  name: "sqlite",
  open: () => openSqliteStore(":memory:"),
  openPath: (path) => openSqliteStore(path),
  openReadOnly: (path) => openSqliteStore(path, { readOnly: true }),
};
