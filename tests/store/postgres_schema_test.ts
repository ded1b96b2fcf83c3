/**
 * The PostgreSQL schema that migrations 1–7 create is the one recorded in
 * `tests/store/schema/postgres_v7.json`: every column (type, nullability,
 * default, identity), index and constraint of the store's schema, as the
 * catalog reports them (the migrator's own bookkeeping table left out).
 * `BEEHIVE_RECORD_SCHEMA=1` rewrites the record instead of
 * comparing.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import process from "node:process";
import type pg from "pg";
import { test } from "../_test.ts";
import { withSchemaAt } from "../_postgres.ts";

const RECORDED_THROUGH = 7;
const record = new URL("./schema/postgres_v7.json", import.meta.url);

/** The catalog's view of `schema`, with the schema's own name written `<schema>`. */
async function catalog(client: pg.Client, schema: string): Promise<unknown> {
  const rows = async (sql: string) => (await client.query(sql, [schema])).rows;
  const result = {
    columns: await rows(`SELECT table_name, ordinal_position, column_name, data_type, is_nullable,
        column_default, is_identity, identity_generation
      FROM information_schema.columns WHERE table_schema = $1 AND table_name <> 'schema_migrations'
      ORDER BY table_name, ordinal_position`),
    indexes: await rows(`SELECT tablename, indexname, indexdef FROM pg_indexes
      WHERE schemaname = $1 AND tablename <> 'schema_migrations' ORDER BY indexname`),
    constraints: await rows(`SELECT t.relname AS table_name, c.conname, c.contype,
        pg_get_constraintdef(c.oid) AS definition
      FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
      JOIN pg_namespace n ON n.oid = c.connamespace
      WHERE n.nspname = $1 AND t.relname <> 'schema_migrations'
      ORDER BY t.relname, c.conname`),
  };
  return JSON.parse(JSON.stringify(result).replaceAll(schema, "<schema>"));
}

test("PostgreSQL migrations 1-7 create the recorded schema: columns, indexes and constraints", () =>
  withSchemaAt(RECORDED_THROUGH, async (client, schema) => {
    const actual = await catalog(client, schema);
    if (process.env.BEEHIVE_RECORD_SCHEMA === "1") {
      writeFileSync(record, JSON.stringify(actual, null, 2) + "\n");
      return;
    }
    assert.deepEqual(actual, JSON.parse(readFileSync(record, "utf8")));
  }));
