/**
 * `storeContract` on a store with no notion of paths (SQLite's `:memory:`, the
 * kit's own store): every case either passes or is reported not applicable.
 *
 * @module
 */
import { storeContract } from "../../testing/mod.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";

storeContract("in-memory", () => openSqliteStore(":memory:"));
