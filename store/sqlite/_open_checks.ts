/**
 * What an open reads before it may write: whether the file is a beehive store
 * at all (another application's database is refused, never migrated), and the
 * read-only connections of a read-only open.
 *
 * @module
 */
import { pathToFileURL } from "node:url";
import { StoreError } from "../../src/model/errors.ts";
import { quote } from "../../src/model/_values.ts";
import { Db } from "./_core.ts";
import type { Driver } from "./_driver.ts";

const SQLITE_READONLY = 8;
const SQLITE_CANTOPEN = 14;

/**
 * A read-only connection to `file`. A WAL database needs its shared-memory index beside it;
 * where that cannot be created (read-only media, where nothing can write the file either) the
 * file is opened immutable.
 */
export function openReading(driver: Driver, file: string, busy: number): Db {
  const open = (name: string) => {
    const db = new Db(driver.open(name, { readOnly: true }));
    try {
      db.exec(`PRAGMA busy_timeout = ${busy}`);
      db.exec("PRAGMA query_only = ON");
      // The first read opens the WAL index: where it cannot, this throws.
      db.get("SELECT COUNT(*) AS n FROM sqlite_master");
      return db;
    } catch (error) {
      db.close();
      throw error;
    }
  };
  try {
    return open(file);
  } catch (error) {
    const code = (driver.describeFailure(error).code ?? 0) & 0xff;
    if (code !== SQLITE_READONLY && code !== SQLITE_CANTOPEN) throw error;
  }
  const uri = `${pathToFileURL(file).href}?immutable=1`;
  try {
    return open(uri);
  } catch (error) {
    // Deno's node:sqlite, run with granular permissions (not --allow-all), resolves a `file:`
    // URI as a path relative to the working directory, so the immutable open cannot be made.
    if (driver.describeFailure(error).message.includes(`/${uri}`)) {
      throw new StoreError(
        `Cannot open SQLite store at ${
          quote(file)
        } read-only: its WAL index cannot be created beside it (read-only media), which needs an immutable open through a file: URI, and Deno's node:sqlite takes none under granular permissions; run with --allow-all, or open it with { driver: "ffi" }`,
        { cause: error },
      );
    }
    throw error;
  }
}

/** The longest list of foreign table names an open's refusal quotes. */
const TABLES_QUOTED = 5;

/**
 * The schema version of the database on `db`, 0 when it is empty; a database
 * with tables but no beehive schema is refused before anything writes to it.
 * @throws {StoreError}
 */
export function storedVersion(db: Db, path: string): number {
  // One snapshot: another process may be migrating the file at this instant.
  db.exec("BEGIN");
  try {
    return readStoredVersion(db, path);
  } finally {
    db.exec("COMMIT");
  }
}

function readStoredVersion(db: Db, path: string): number {
  const tables = db.all(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
  ).map((r) => String(r.name));
  if (tables.length === 0) return 0;
  const columns = tables.includes("schema_migrations")
    ? db.all("SELECT name FROM pragma_table_info('schema_migrations')").map((r) => String(r.name))
    : [];
  const ours = ["version", "name", "applied_at"].every((c) => columns.includes(c));
  const version = ours
    ? Number(db.get("SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations")!.v)
    : 0;
  if (!ours || (version > 0 && !tables.includes("store_epoch"))) {
    const shown = tables.slice(0, TABLES_QUOTED).map((t) => quote(t)).join(", ");
    const more = tables.length > TABLES_QUOTED ? ` and ${tables.length - TABLES_QUOTED} more` : "";
    throw new StoreError(
      `Cannot open SQLite store at ${
        JSON.stringify(path)
      }: it is not a beehive store (it holds the tables ${shown}${more} and no beehive schema); beehive changes nothing in it`,
    );
  }
  return version;
}
