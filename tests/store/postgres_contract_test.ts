/**
 * Runs the store contract suite against the PostgreSQL store, under Deno and
 * Node 22 alike. The `sqlite_adapter` family tests the SQLite files, pages and
 * drivers, and is not run here.
 *
 * @module
 */
import { test } from "../_test.ts";
import { contractSuites } from "./contract/mod.ts";
import { runCase } from "./contract/harness.ts";
import { postgresFactory } from "./postgres_factory.ts";
import { nodeTempDirs } from "./sqlite_factory.ts";

for (const [family, cases] of Object.entries(contractSuites)) {
  if (family === "sqlite_adapter") continue;
  for (const c of cases) {
    test(`store contract (postgres) ${family}: ${c.name}`, () =>
      runCase(postgresFactory, nodeTempDirs, c));
  }
}
