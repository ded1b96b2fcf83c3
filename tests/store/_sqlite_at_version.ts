/**
 * A SQLite database file at an earlier schema version, made with this build's
 * own migrations: what the upgrade cases and the migration benchmark open.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import { migrations } from "../../store/sqlite/_schema.ts";

/** A database file at `path` brought to schema `version` by this build's own migrations, left open. */
export function databaseAt(
  path: string,
  version: number,
  options: { foreignKeys?: boolean } = {},
): DatabaseSync {
  const db = new DatabaseSync(path);
  db.exec("PRAGMA journal_mode = WAL");
  if (options.foreignKeys) db.exec("PRAGMA foreign_keys = ON");
  db.exec(`CREATE TABLE schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`);
  for (const m of migrations.filter((m) => m.version <= version)) {
    db.exec(m.sql);
    db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, 0)")
      .run(m.version, m.name);
  }
  return db;
}
