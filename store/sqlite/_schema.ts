/**
 * The schema, as forward-only numbered migrations: a database written by an
 * earlier build is brought forward on open.
 *
 * Conventions: instants are INTEGER Unix milliseconds from the JS clock; JSON is
 * TEXT; the core group is `''`, never NULL; every table is STRICT.
 *
 * @module
 */

/**
 * The page size a new database is created with (see docs/performance.md for the
 * measurement). SQLite fixes it with the first table, and a WAL database cannot
 * change it, so it is set before anything else; an existing file keeps its own.
 */
export const PAGE_SIZE = 4096;

/** One migration: applied in its own transaction with its bookkeeping row. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
  /** Rebuilds tables: runs with foreign keys off, checked before the commit. */
  readonly foreignKeysOff?: boolean;
}

const init = `
CREATE TABLE objects (
  id                    INTEGER PRIMARY KEY AUTOINCREMENT,
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
  UNIQUE ("group", kind, name)
) STRICT;

-- (group, kind) with the implicit rowid suffix lists a kind in id order.
CREATE INDEX idx_objects_kind ON objects ("group", kind);
CREATE INDEX idx_objects_rv ON objects (resource_version);
-- Covering for the GC listing: keep the columns aligned with that query.
CREATE INDEX idx_objects_deleting ON objects (id, "group", kind)
  WHERE deletion_requested_at IS NOT NULL;
CREATE INDEX idx_objects_unsettled ON objects ("group", kind)
  WHERE observed_generation IS NULL OR observed_generation < generation;
CREATE INDEX idx_objects_owed ON objects ("group", kind) WHERE reconcile_owed <> 0;

CREATE TABLE conditions (
  object_id       INTEGER NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
  type            TEXT    NOT NULL,
  status          TEXT    NOT NULL CHECK (status IN ('True', 'False', 'Unknown')),
  reason          TEXT    NOT NULL DEFAULT '',
  message         TEXT    NOT NULL DEFAULT '',
  liveness        INTEGER NOT NULL DEFAULT 0 CHECK (liveness IN (0, 1)),
  -- The store open that wrote the row: a liveness row from an earlier open reads Unknown.
  open_epoch      INTEGER NOT NULL,
  transitioned_at INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  PRIMARY KEY (object_id, type)
) STRICT, WITHOUT ROWID;

-- WITHOUT ROWID: every column is in the key, and the index below is then covering.
CREATE TABLE edges (
  from_id  INTEGER NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
  to_id    INTEGER NOT NULL REFERENCES objects (id) ON DELETE RESTRICT,
  relation TEXT    NOT NULL CHECK (relation IN ('owned_by', 'depends_on')),
  PRIMARY KEY (from_id, to_id, relation)
) STRICT, WITHOUT ROWID;
CREATE INDEX idx_edges_to ON edges (to_id, relation);

CREATE TABLE dependency_watermarks (
  object_id          INTEGER PRIMARY KEY REFERENCES objects (id) ON DELETE CASCADE,
  reconciled_against INTEGER NOT NULL,
  reconciled_at      INTEGER NOT NULL
) STRICT;

CREATE TABLE driver_cursors (
  name       TEXT    PRIMARY KEY,
  cursor     INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE events (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  object_id        INTEGER NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
  category         TEXT    NOT NULL DEFAULT '',
  type             TEXT    NOT NULL CHECK (type IN ('Normal', 'Warning')),
  reason           TEXT    NOT NULL CHECK (reason <> ''),
  message          TEXT    NOT NULL DEFAULT '',
  detail           TEXT,
  count            INTEGER NOT NULL DEFAULT 1,
  first_at         INTEGER NOT NULL,
  last_at          INTEGER NOT NULL,
  resource_version INTEGER NOT NULL
) STRICT;
CREATE INDEX idx_events_object_cat ON events (object_id, category, last_at DESC, id DESC);
CREATE INDEX idx_events_latest ON events (object_id, category, id DESC);
CREATE INDEX idx_events_object_rv ON events (object_id, resource_version);

CREATE TABLE events_horizon (
  object_id       INTEGER NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
  category        TEXT    NOT NULL,
  trimmed_through INTEGER NOT NULL,
  PRIMARY KEY (object_id, category)
) STRICT, WITHOUT ROWID;

-- No foreign key on object_id: the log must outlive the rows it records.
CREATE TABLE object_writes (
  resource_version INTEGER PRIMARY KEY,
  object_id        INTEGER NOT NULL,
  "group"          TEXT    NOT NULL,
  kind             TEXT    NOT NULL,
  op               INTEGER NOT NULL CHECK (op IN (1, 2, 3)),
  written_at       INTEGER NOT NULL,
  final            TEXT
) STRICT;
CREATE INDEX idx_object_writes_kind ON object_writes ("group", kind, resource_version, object_id, op);
CREATE INDEX idx_object_writes_age ON object_writes (written_at);

CREATE TABLE object_writes_horizon (
  "group"         TEXT    NOT NULL,
  kind            TEXT    NOT NULL,
  trimmed_through INTEGER NOT NULL,
  PRIMARY KEY ("group", kind)
) STRICT, WITHOUT ROWID;

-- A standalone counter: MAX(resource_version) would fall when the newest row goes.
CREATE TABLE resource_version_seq (
  id    INTEGER PRIMARY KEY CHECK (id = 1),
  value INTEGER NOT NULL
) STRICT;
INSERT INTO resource_version_seq (id, value) VALUES (1, 0);

-- Counts opens of the database, for the liveness downgrade.
CREATE TABLE store_epoch (
  id    INTEGER PRIMARY KEY CHECK (id = 1),
  value INTEGER NOT NULL
) STRICT;
INSERT INTO store_epoch (id, value) VALUES (1, 0);
`;

// A released lease keeps its row, so its epoch is never reused.
const leases = `
CREATE TABLE leases (
  name        TEXT    PRIMARY KEY,
  holder      TEXT,
  epoch       INTEGER NOT NULL CHECK (epoch >= 1),
  acquired_at INTEGER,
  -- NULL for a held lock, whose liveness is its lock file.
  expires_at  INTEGER,
  pid         INTEGER
) STRICT, WITHOUT ROWID;
`;

// Which open of the store committed a write: a process tells others' writes from its own.
const origin = `ALTER TABLE object_writes ADD COLUMN origin INTEGER NOT NULL DEFAULT 0;`;

// The generation a permanent failure stalled an object at; the owed pass's
// unsettled listing leaves out rows stalled at their current generation.
const stalled = `
ALTER TABLE objects ADD COLUMN stalled_generation INTEGER;
DROP INDEX idx_objects_unsettled;
CREATE INDEX idx_objects_unsettled ON objects ("group", kind)
  WHERE (observed_generation IS NULL OR observed_generation < generation)
    AND stalled_generation IS NOT generation;
CREATE INDEX idx_objects_stalled ON objects ("group", kind)
  WHERE stalled_generation IS NOT NULL;
`;

// A leaner write path (docs/adr/2026-12-01-lean-write-path.md). Ids come from
// counters in the resource-version row, which every create already writes, so
// objects and events drop AUTOINCREMENT (and its sqlite_sequence write) and are
// rebuilt; the counters start above every id ever handed out, deleted or not.
// Dropped with them: idx_objects_rv (the stale-dependents scan reads the write
// log) and idx_object_writes_age (the age sweep cuts a prefix of the log in
// version order). The migrator runs this with foreign keys off and checks them
// before it commits.
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

CREATE TABLE objects_v5 (
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
  UNIQUE ("group", kind, name)
) STRICT;
INSERT INTO objects_v5 SELECT id, "group", kind, name, spec, status, spec_version,
  status_version, generation, observed_generation, observed_at, resource_version,
  deletion_requested_at, finalizers, reconcile_owed, created_at, updated_at, stalled_generation
  FROM objects;
DROP TABLE objects;
ALTER TABLE objects_v5 RENAME TO objects;
-- (group, kind) with the implicit rowid suffix lists a kind in id order.
CREATE INDEX idx_objects_kind ON objects ("group", kind);
-- Covering for the GC listing: keep the columns aligned with that query.
CREATE INDEX idx_objects_deleting ON objects (id, "group", kind)
  WHERE deletion_requested_at IS NOT NULL;
CREATE INDEX idx_objects_unsettled ON objects ("group", kind)
  WHERE (observed_generation IS NULL OR observed_generation < generation)
    AND stalled_generation IS NOT generation;
CREATE INDEX idx_objects_owed ON objects ("group", kind) WHERE reconcile_owed <> 0;
CREATE INDEX idx_objects_stalled ON objects ("group", kind)
  WHERE stalled_generation IS NOT NULL;

CREATE TABLE events_v5 (
  id               INTEGER PRIMARY KEY,
  object_id        INTEGER NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
  category         TEXT    NOT NULL DEFAULT '',
  type             TEXT    NOT NULL CHECK (type IN ('Normal', 'Warning')),
  reason           TEXT    NOT NULL CHECK (reason <> ''),
  message          TEXT    NOT NULL DEFAULT '',
  detail           TEXT,
  count            INTEGER NOT NULL DEFAULT 1,
  first_at         INTEGER NOT NULL,
  last_at          INTEGER NOT NULL,
  resource_version INTEGER NOT NULL
) STRICT;
INSERT INTO events_v5 SELECT id, object_id, category, type, reason, message, detail, count,
  first_at, last_at, resource_version FROM events;
DROP TABLE events;
ALTER TABLE events_v5 RENAME TO events;
CREATE INDEX idx_events_object_cat ON events (object_id, category, last_at DESC, id DESC);
CREATE INDEX idx_events_latest ON events (object_id, category, id DESC);
CREATE INDEX idx_events_object_rv ON events (object_id, resource_version);

DELETE FROM sqlite_sequence WHERE name IN ('objects', 'events');
DROP INDEX idx_object_writes_age;
`;

// Kind definitions (docs/adr/2026-12-02-stored-kinds-and-json-schema.md): what
// start() learns from defineKind, for every process and tool that lacks it.
const kinds = `
CREATE TABLE kinds (
  "group"       TEXT    NOT NULL,
  kind          TEXT    NOT NULL,
  plural        TEXT    NOT NULL,
  singular      TEXT    NOT NULL,
  short_names   TEXT    NOT NULL DEFAULT '[]',
  namespaced    INTEGER NOT NULL DEFAULT 0,
  columns       TEXT    NOT NULL DEFAULT '[]',
  spec_schema   TEXT,
  status_schema TEXT,
  updated_at    INTEGER NOT NULL,
  PRIMARY KEY ("group", kind)
) STRICT, WITHOUT ROWID;
`;

// Labels and annotations (docs/adr/2026-12-02-labels.md): JSON columns a read decodes
// and a selector's other requirements test, and an index table a selector is driven
// by, one row per (object, label) keyed by kind, key and value. It has no foreign key:
// the family writes and deletes its rows with the object's. Existing rows read as
// having none.
const labels = `
ALTER TABLE objects ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';
ALTER TABLE objects ADD COLUMN annotations TEXT NOT NULL DEFAULT '{}';
CREATE TABLE object_labels (
  "group"   TEXT    NOT NULL,
  kind      TEXT    NOT NULL,
  key       TEXT    NOT NULL,
  value     TEXT    NOT NULL,
  object_id INTEGER NOT NULL,
  PRIMARY KEY ("group", kind, key, value, object_id)
) STRICT, WITHOUT ROWID;
`;

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
];
