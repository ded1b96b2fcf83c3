/**
 * The SQLite store under the contract suite, plus temp-directory plumbing that
 * works on Deno and Node alike.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteStore } from "../_sqlite_driver.ts";
import type { StoreFactory, TempDirs } from "./contract/harness.ts";

export const sqliteFactory: StoreFactory = {
  name: "sqlite",
  open: () => openSqliteStore(":memory:"),
  openPath: (path) => openSqliteStore(path),
  openReadOnly: (path) => openSqliteStore(path, { readOnly: true }),
};

export const nodeTempDirs: TempDirs = {
  make: () => mkdtempSync(join(tmpdir(), "beehive-test-")),
  remove: (dir) => rmSync(dir, { recursive: true, force: true }),
  join,
};
