/**
 * The PostgreSQL store under the contract suite: each case's fresh store is a
 * fresh schema of the test database, and a "path" names a schema, so restart
 * cases reopen the same one.
 *
 * @module
 */
import { openPostgresStore, schemaForPath } from "../_postgres.ts";
import type { StoreFactory } from "../../testing/_contract/harness.ts";

export const postgresFactory: StoreFactory = {
  name: "postgres",
  open: () => openPostgresStore(),
  openPath: (path) => openPostgresStore({ schema: schemaForPath(path) }),
  openReadOnly: (path) => openPostgresStore({ schema: schemaForPath(path), readOnly: true }),
};
