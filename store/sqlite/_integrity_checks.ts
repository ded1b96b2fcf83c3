/**
 * SQLite's own integrity checks, run before the shared ones
 * (`../sql/_integrity.ts`): the b-tree structure, the foreign keys, the
 * tables' columns against what this build's migrations create, and the JSON
 * kept as text.
 *
 * @module
 */
import {
  type DialectChecks,
  type IntegrityFinding,
  type Invariant,
  LIMIT,
  runInvariant,
  unreadable,
} from "../sql/_integrity.ts";
import { q } from "../sql/_query.ts";
import type { Row } from "../sql/_rows.ts";
import { DatabaseSync } from "node:sqlite";
import { migrations } from "./_schema.ts";

/** The most rows of one SQLite check a report quotes. */
const ROWS_QUOTED = 20;

/**
 * The JSON kept as text: a damaged byte there reads back as text a client cannot parse. (On
 * PostgreSQL, a damaged page is the server's to catch, with data checksums on.)
 */
const STORED_JSON: readonly Invariant[] = [
  {
    check: "stored JSON",
    what: "objects whose spec, status, finalizers, labels or annotations are not valid JSON",
    sql: `SELECT id FROM objects WHERE NOT json_valid(spec) OR NOT json_valid(finalizers)
      OR (status IS NOT NULL AND NOT json_valid(status))
      OR NOT json_valid(labels) OR NOT json_valid(annotations)${LIMIT}`,
  },
  {
    check: "stored JSON",
    what: "kinds whose short names, columns or schemas are not valid JSON",
    sql: `SELECT "group" || '/' || kind AS id FROM kinds
      WHERE NOT json_valid(short_names) OR NOT json_valid(columns)
      OR (spec_schema IS NOT NULL AND NOT json_valid(spec_schema))
      OR (status_schema IS NOT NULL AND NOT json_valid(status_schema))${LIMIT}`,
  },
  {
    check: "stored JSON",
    what: "events whose detail is not valid JSON",
    sql: `SELECT id FROM events WHERE detail IS NOT NULL AND NOT json_valid(detail)${LIMIT}`,
  },
];

/** SQLite's own checks: the b-tree structure, the foreign keys and the JSON kept as text. */
export const SQLITE_CHECKS: DialectChecks = {
  latestSchema: migrations[migrations.length - 1].version,
  names: ["integrity_check", "foreign_key_check", "schema", "stored JSON"],
  *run() {
    const findings: IntegrityFinding[] = [];
    try {
      for (const row of yield* q.rows(`PRAGMA integrity_check(${ROWS_QUOTED})`)) {
        if (row[0] !== "ok") findings.push({ check: "integrity_check", detail: String(row[0]) });
      }
    } catch (error) {
      findings.push(unreadable("integrity_check", error));
    }
    let broken: Row[];
    try {
      broken = yield* q.all("PRAGMA foreign_key_check");
    } catch (error) {
      findings.push(unreadable("foreign_key_check", error));
      broken = [];
    }
    for (const r of broken.slice(0, ROWS_QUOTED)) {
      findings.push({
        check: "foreign_key_check",
        detail: `${r.table} row ${r.rowid} refers to a missing ${r.parent} row`,
      });
    }
    if (broken.length > ROWS_QUOTED) {
      findings.push({
        check: "foreign_key_check",
        detail: `and ${broken.length - ROWS_QUOTED} more rows refer to missing rows`,
      });
    }
    try {
      findings.push(...schemaFindings(yield* q.all(TABLE_COLUMNS)));
    } catch (error) {
      findings.push(unreadable("schema", error));
    }
    for (const invariant of STORED_JSON) {
      const found = yield* runInvariant(invariant);
      if (found !== undefined) findings.push(found);
    }
    return findings;
  },
};

/** Every table's columns, as the schema text SQLite parses describes them. */
const TABLE_COLUMNS = `SELECT m.name AS tbl, p.cid, p.name, p.type, p."notnull", p.pk
  FROM sqlite_master m, pragma_table_info(m.name) p
  WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
  ORDER BY m.name, p.cid`;

/** One table's columns, each as `name type notnull pk`. */
type Columns = Map<string, string[]>;

function columnsOf(rows: readonly Row[]): Columns {
  const tables: Columns = new Map();
  for (const r of rows) {
    const tbl = String(r.tbl);
    let cols = tables.get(tbl);
    if (cols === undefined) tables.set(tbl, cols = []);
    cols.push(`${r.name} ${r.type} ${r.notnull} ${r.pk}`);
  }
  return tables;
}

let expected: Columns | undefined;

/**
 * The columns this build's migrations create, from a scratch in-memory
 * database: a stored schema is the migrations' text, so a flipped byte in it
 * (a column renamed, a table gone) passes SQLite's own checks and then breaks
 * every read that names the column.
 */
function expectedColumns(): Columns {
  if (expected !== undefined) return expected;
  const db = new DatabaseSync(":memory:");
  try {
    for (const m of migrations) db.exec(m.sql);
    expected = columnsOf(db.prepare(TABLE_COLUMNS).all() as Row[]);
  } finally {
    db.close();
  }
  return expected;
}

function schemaFindings(rows: readonly Row[]): IntegrityFinding[] {
  const found = columnsOf(rows);
  const findings: IntegrityFinding[] = [];
  for (const [table, cols] of expectedColumns()) {
    const stored = found.get(table);
    if (stored === undefined) {
      findings.push({ check: "schema", detail: `table ${table} is missing` });
    } else if (stored.join(",") !== cols.join(",")) {
      findings.push({
        check: "schema",
        detail: `table ${table}'s columns differ from this build's schema (${
          stored.map((c) => c.split(" ")[0]).join(", ")
        })`,
      });
    }
  }
  return findings.slice(0, ROWS_QUOTED);
}
