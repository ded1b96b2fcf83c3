/**
 * The SQLite schema that migrations 1–7 create is the one recorded in
 * `tests/store/schema/sqlite_v7.json`, to the letter of each `sqlite_master`
 * entry: rendering the DDL from shared table definitions changes no byte of it.
 * Migrations 1–8 create the one in `sqlite_v8.json`, which every database
 * migration 8 has upgraded holds.
 * `BEEHIVE_RECORD_SCHEMA=1` rewrites the record instead of comparing.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import process from "node:process";
import { DatabaseSync } from "node:sqlite";
import { migrations } from "../../store/sqlite/_schema.ts";
import { test } from "../_test.ts";

const RECORDED_THROUGH = 7;
const record = new URL("./schema/sqlite_v7.json", import.meta.url);
const record8 = new URL("./schema/sqlite_v8.json", import.meta.url);

/** Each `sqlite_master` entry of a fresh database brought to `version` by the migrations. */
function schemaAt(version: number): Record<string, unknown>[] {
  const db = new DatabaseSync(":memory:");
  try {
    for (const m of migrations.filter((m) => m.version <= version)) {
      if (m.foreignKeysOff) db.exec("PRAGMA foreign_keys = OFF");
      db.exec("BEGIN");
      db.exec(m.sql);
      db.exec("COMMIT");
      if (m.foreignKeysOff) db.exec("PRAGMA foreign_keys = ON");
    }
    return db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").all()
      .map((row) => ({ ...row }));
  } finally {
    db.close();
  }
}

test("SQLite migrations 1-7 create the recorded schema, every sqlite_master entry to the letter", () => {
  const actual = schemaAt(RECORDED_THROUGH);
  if (process.env.BEEHIVE_RECORD_SCHEMA === "1") {
    writeFileSync(record, JSON.stringify(actual, null, 2) + "\n");
    return;
  }
  assert.deepEqual(actual, JSON.parse(readFileSync(record, "utf8")));
});

test("SQLite migrations 1-8 create the recorded schema, every sqlite_master entry to the letter", () => {
  const actual = schemaAt(8);
  if (process.env.BEEHIVE_RECORD_SCHEMA === "1") {
    writeFileSync(record8, JSON.stringify(actual, null, 2) + "\n");
    return;
  }
  assert.deepEqual(actual, JSON.parse(readFileSync(record8, "utf8")));
});
