/**
 * The schema, as forward-only numbered migrations: a database written by an
 * earlier build is brought forward on open.
 *
 * Conventions: instants are INTEGER Unix milliseconds from the JS clock; JSON is
 * TEXT; the core group is `''`, never NULL; every table is STRICT. The tables
 * both stores share are written once (`../sql/_tables.ts`) and rendered here in
 * SQLite's types; the indexes that differ, table options and rebuilds are its own.
 *
 * @module
 */
import {
  type ColumnTypes,
  createIndexes,
  createTable,
  type Ddl,
  events,
  objects,
  sharedMigrations,
  stalledGeneration,
  type Table,
} from "../sql/_tables.ts";

/**
 * The page size a new database is created with: 2048 bytes, half SQLite's
 * default, because a commit writes one page per B-tree it touches and pays
 * for every byte of each (ADR 2026-12-03-page-size-2048; docs/performance.md
 * has the measurement). SQLite fixes it with the first table, and a WAL
 * database cannot change it, so it is set before anything else; an existing
 * file keeps its own.
 */
export const PAGE_SIZE = 2048;

/** One migration: applied in its own transaction with its bookkeeping row. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
  /** Rebuilds tables: runs with foreign keys off, checked before the commit. */
  readonly foreignKeysOff?: boolean;
}

const TYPES: ColumnTypes = {
  int64: "INTEGER",
  int32: "INTEGER",
  int16: "INTEGER",
  text: "TEXT",
  json: "TEXT",
  id: ["INTEGER", "PRIMARY KEY AUTOINCREMENT"],
};

// A table read in its key's order is stored WITHOUT ROWID: for edges every
// column is in the key, and its index below is then covering.
const WITHOUT_ROWID = new Set([
  "conditions",
  "edges",
  "driver_cursors",
  "events_horizon",
  "object_writes_horizon",
  "leases",
  "kinds",
  "object_labels",
  "label_sets",
  "label_set_entries",
]);

const DDL: Ddl = {
  types: TYPES,
  tableOptions: (t) => ({
    suffix: WITHOUT_ROWID.has(t.name) ? " STRICT, WITHOUT ROWID" : " STRICT",
    notes: t.name === "leases"
      ? { expires_at: "NULL for a held lock, whose liveness is its lock file." }
      : undefined,
  }),
};

const shared = sharedMigrations(DDL);

// On objects, (group, kind) with the implicit rowid suffix lists a kind in id
// order, and idx_objects_deleting is covering for the GC listing (keep its
// columns aligned with that query).
const objectIndexes = `
CREATE INDEX idx_objects_kind ON objects ("group", kind);
CREATE INDEX idx_objects_deleting ON objects (id, "group", kind)
  WHERE deletion_requested_at IS NOT NULL;`;

const init = `
${shared.init}
${objectIndexes}
CREATE INDEX idx_objects_unsettled ON objects ("group", kind)
  WHERE observed_generation IS NULL OR observed_generation < generation;
CREATE INDEX idx_objects_owed ON objects ("group", kind) WHERE reconcile_owed <> 0;
CREATE INDEX idx_edges_to ON edges (to_id, relation);
CREATE INDEX idx_object_writes_kind ON object_writes ("group", kind, resource_version, object_id, op);
`;

const leases = shared.leases;

const origin = shared.origin;

// The owed pass's unsettled listing leaves out rows stalled at their current generation.
const unsettled = `CREATE INDEX idx_objects_unsettled ON objects ("group", kind)
  WHERE (observed_generation IS NULL OR observed_generation < generation)
    AND stalled_generation IS NOT generation;
CREATE INDEX idx_objects_stalled ON objects ("group", kind)
  WHERE stalled_generation IS NOT NULL;`;

const stalled = `
${shared.stalled}
DROP INDEX idx_objects_unsettled;
${unsettled}
`;

// A leaner write path (docs/adr/2026-12-01-lean-write-path.md). Ids come from
// counters in the resource-version row, which every create already writes, so
// objects and events drop AUTOINCREMENT (and its sqlite_sequence write) and are
// rebuilt; the counters start above every id ever handed out, deleted or not.
// Dropped with them: idx_objects_rv (the stale-dependents scan reads the write
// log) and idx_object_writes_age (the age sweep cuts a prefix of the log in
// version order). The migrator runs this with foreign keys off and checks them
// before it commits.
const rebuild = (t: Table, name: string) =>
  createTable(t, { ...TYPES, id: ["INTEGER", "PRIMARY KEY"] }, { ...DDL.tableOptions!(t), name });
const lean = `
ALTER TABLE resource_version_seq ADD COLUMN last_object_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE resource_version_seq ADD COLUMN last_event_id INTEGER NOT NULL DEFAULT 0;
UPDATE resource_version_seq SET
  last_object_id = MAX(
    COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'objects'), 0),
    COALESCE((SELECT MAX(id) FROM objects), 0)),
  last_event_id = MAX(
    COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0),
    COALESCE((SELECT MAX(id) FROM events), 0))
WHERE id = 1;

${rebuild({ ...objects, columns: [...objects.columns, stalledGeneration] }, "objects_v5")}
INSERT INTO objects_v5 SELECT id, "group", kind, name, spec, status, spec_version,
  status_version, generation, observed_generation, observed_at, resource_version,
  deletion_requested_at, finalizers, reconcile_owed, created_at, updated_at, stalled_generation
  FROM objects;
DROP TABLE objects;
ALTER TABLE objects_v5 RENAME TO objects;
${objectIndexes}
${unsettled}
CREATE INDEX idx_objects_owed ON objects ("group", kind) WHERE reconcile_owed <> 0;

${rebuild(events, "events_v5")}
INSERT INTO events_v5 SELECT id, object_id, category, type, reason, message, detail, count,
  first_at, last_at, resource_version FROM events;
DROP TABLE events;
ALTER TABLE events_v5 RENAME TO events;
${createIndexes(events)}

DELETE FROM sqlite_sequence WHERE name IN ('objects', 'events');
DROP INDEX idx_object_writes_age;
`;

const kinds = shared.kinds;

const labels = shared.labels;

// Namespaces (docs/adr/2026-12-02-namespaces.md): every object has one ('' for the
// cluster scope, which every existing row is in), and a name is unique per (group,
// kind, namespace). A table constraint cannot be changed in place, so the table is
// rebuilt as migration 5 did, with foreign keys off and checked before commit. The
// ids, the write log, the label index and every edge keep their values.
const namespaces = `
CREATE TABLE objects_v8 (
  id                    INTEGER PRIMARY KEY,
  "group"               TEXT    NOT NULL,
  kind                  TEXT    NOT NULL,
  name                  TEXT    NOT NULL CHECK (name <> ''),
  spec                  TEXT    NOT NULL,
  status                TEXT,
  spec_version          INTEGER NOT NULL DEFAULT 0,
  status_version        INTEGER NOT NULL DEFAULT 0,
  generation            INTEGER NOT NULL DEFAULT 1,
  observed_generation   INTEGER,
  observed_at           INTEGER,
  resource_version      INTEGER NOT NULL,
  deletion_requested_at INTEGER,
  finalizers            TEXT    NOT NULL DEFAULT '[]',
  reconcile_owed        INTEGER NOT NULL DEFAULT 0,
  created_at            INTEGER NOT NULL,
  updated_at            INTEGER NOT NULL,
  stalled_generation    INTEGER,
  labels                TEXT    NOT NULL DEFAULT '{}',
  annotations           TEXT    NOT NULL DEFAULT '{}',
  namespace             TEXT    NOT NULL DEFAULT '',
  UNIQUE ("group", kind, namespace, name)
) STRICT;
INSERT INTO objects_v8 SELECT id, "group", kind, name, spec, status, spec_version,
  status_version, generation, observed_generation, observed_at, resource_version,
  deletion_requested_at, finalizers, reconcile_owed, created_at, updated_at, stalled_generation,
  labels, annotations, ''
  FROM objects;
DROP TABLE objects;
ALTER TABLE objects_v8 RENAME TO objects;
CREATE INDEX idx_objects_kind ON objects ("group", kind);
-- (group, kind, namespace) with the implicit rowid suffix lists a namespace in id order.
CREATE INDEX idx_objects_namespace ON objects ("group", kind, namespace);
CREATE INDEX idx_objects_deleting ON objects (id, "group", kind)
  WHERE deletion_requested_at IS NOT NULL;
CREATE INDEX idx_objects_unsettled ON objects ("group", kind)
  WHERE (observed_generation IS NULL OR observed_generation < generation)
    AND stalled_generation IS NOT generation;
CREATE INDEX idx_objects_owed ON objects ("group", kind) WHERE reconcile_owed <> 0;
CREATE INDEX idx_objects_stalled ON objects ("group", kind)
  WHERE stalled_generation IS NOT NULL;
`;

// Label sets (docs/adr/2026-12-03-label-sets.md) replace the per-object label
// index: each labelled row gets the set of its labels (canonical JSON, keys in
// order), each set its entries, and the old index goes. A namespace's index keeps
// only namespaced rows: a cluster-scoped create writes no entry in it.
const labelSets = `
${shared.labelSets}
CREATE TEMP TABLE labelled AS
  SELECT o.id, o."group", o.kind,
    (SELECT '{' || group_concat(json_quote(key) || ':' || json_quote(value), ',') || '}'
     FROM (SELECT key, value FROM json_each(o.labels) ORDER BY key)) AS labels
  FROM objects o WHERE o.labels <> '{}';
${shared.labelSetsNumbered}
UPDATE objects SET label_set = (
  SELECT s.id FROM labelled l JOIN label_sets s
    ON s."group" = l."group" AND s.kind = l.kind AND s.labels = l.labels
  WHERE l.id = objects.id)
WHERE labels <> '{}';
INSERT INTO label_set_entries ("group", kind, key, value, set_id)
  SELECT s."group", s.kind, j.key, j.value, s.id FROM label_sets s, json_each(s.labels) j;
DROP TABLE temp.labelled;
DROP TABLE object_labels;
CREATE INDEX idx_objects_label_set ON objects (label_set) WHERE label_set IS NOT NULL;
DROP INDEX idx_objects_namespace;
CREATE INDEX idx_objects_namespace ON objects ("group", kind, namespace) WHERE namespace <> '';
`;

// Live opens (docs/adr/2026-12-03-liveness-follows-the-writing-open.md): which open
// holds each open-slot lock file (`<db>-open-<slot>`). A liveness row reads True while
// the open that wrote it holds the slot recorded here; a slot's next holder replaces
// its row. Existing liveness rows have no slot, and read Unknown until rewritten.
const openSlots = `
CREATE TABLE open_slots (
  slot       INTEGER PRIMARY KEY CHECK (slot >= 0),
  open_epoch INTEGER NOT NULL
) STRICT;
`;

/** Every migration, in order, numbered from 1 without gaps. */
export const migrations: readonly Migration[] = [
  { version: 1, name: "init", sql: init },
  { version: 2, name: "leases", sql: leases },
  { version: 3, name: "write origin", sql: origin },
  { version: 4, name: "stalled generation", sql: stalled },
  { version: 5, name: "lean write path", sql: lean, foreignKeysOff: true },
  { version: 6, name: "kinds", sql: kinds },
  { version: 7, name: "labels", sql: labels },
  { version: 8, name: "namespaces", sql: namespaces, foreignKeysOff: true },
  { version: 9, name: "label sets", sql: labelSets },
  { version: 10, name: "open slots", sql: openSlots },
  { version: 11, name: "lease durations", sql: shared.leaseDurations },
  { version: 12, name: "managed fields", sql: shared.managedFields },
];
