/**
 * Runs the store contract suite against the PostgreSQL store, under Deno and
 * Node 22 alike, through the published `storeContract`.
 *
 * @module
 */
import { storeContract } from "../../testing/mod.ts";
import { postgresFactory } from "./postgres_factory.ts";

storeContract(postgresFactory.name, postgresFactory.open, {
  openPath: postgresFactory.openPath,
  openReadOnly: postgresFactory.openReadOnly,
});
