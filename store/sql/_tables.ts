/**
 * The tables and indexes both dialects' schemas share, written once: each
 * table's columns with a portable type ({@linkcode ColumnType}) and
 * constraints both databases read alike, rendered into a dialect's DDL with its
 * own type names ({@linkcode ColumnTypes}). What is a dialect's own (SQLite's
 * `STRICT` and `WITHOUT ROWID` and its lean-write-path rebuild, each store's
 * kind-order and partial indexes) stays in its folder. A definition is a table
 * as the migration that created it made it, so a rendered migration never
 * changes: a later migration adds its columns.
 *
 * @module
 */

/** A column's type, portable: 64-, 32- or 16-bit integer, text, JSON text, or the generated key. */
export type ColumnType = "int64" | "int32" | "int16" | "text" | "json" | "id";

/** How a dialect spells each portable type. */
export interface ColumnTypes {
  readonly int64: string;
  readonly int32: string;
  readonly int16: string;
  readonly text: string;
  /** JSON, stored as text the store never parses. */
  readonly json: string;
  /** The generated key: its type and the clause that makes it the key. */
  readonly id: readonly [type: string, clause: string];
}

/** One column. */
export interface Column {
  /** The name as SQL writes it (`"group"` quoted). */
  readonly name: string;
  readonly type: ColumnType;
  /** What follows the type: constraints and default. */
  readonly constraints: string;
  /** A comment line written above the column. */
  readonly note?: string;
}

/** One table, and the indexes every dialect gives it alike. */
export interface Table {
  readonly name: string;
  readonly columns: readonly Column[];
  /** Table constraints after the columns (`PRIMARY KEY (…)`, `UNIQUE (…)`). */
  readonly constraints: readonly string[];
  /** Index name to its column list. */
  readonly indexes: Readonly<Record<string, string>>;
}

/** How a dialect renders one table beyond its types. */
export interface TableOptions {
  /** The name to create it under, when not its own (a rebuild's new table). */
  readonly name?: string;
  /** What follows the closing parenthesis (`" STRICT"`). */
  readonly suffix?: string;
  /** Comment lines above columns, by column name, in place of the table's own. */
  readonly notes?: Readonly<Record<string, string>>;
}

/** A dialect's DDL: its type names and how it renders each shared table. */
export interface Ddl {
  readonly types: ColumnTypes;
  tableOptions?(table: Table): TableOptions;
}

const TYPE_NAMES = new Set<string>(["int64", "int32", "int16", "text", "json", "id"]);
const COLUMN = /^("[^"]+"|\w+)\s+(\w+)\s*(.*)$/;

/**
 * A table from its name on the first line, its columns one a line
 * (`name type constraints`) with a `-- note` line above the column it
 * describes, then table constraints
 * (`PRIMARY KEY (…)`, `UNIQUE (…)`) and the indexes every dialect gives it
 * (`INDEX name (columns)`).
 */
function table(text: string): Table {
  const [name, ...lines] = text.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  const columns: Column[] = [];
  const constraints: string[] = [];
  const indexes: Record<string, string> = {};
  let note: string | undefined;
  for (const line of lines) {
    const m = COLUMN.exec(line);
    const index = /^INDEX (\w+) \((.+)\)$/.exec(line);
    if (line.startsWith("-- ")) note = line.slice(3);
    else if (index !== null) indexes[index[1]] = index[2];
    else if (/^(PRIMARY KEY|UNIQUE) \(/.test(line)) constraints.push(line);
    else if (m !== null && TYPE_NAMES.has(m[2])) {
      columns.push({ name: m[1], type: m[2] as ColumnType, constraints: m[3], note });
      note = undefined;
    } else throw new Error(`Cannot read table ${name}: current line is ${line}`);
  }
  return { name, columns, constraints, indexes };
}

/** Columns a migration adds, written one a line as in {@linkcode table}. */
const columns = (text: string) => table(`(added columns)\n${text}`).columns;

function column(c: Column, types: ColumnTypes): readonly [type: string, rest: string] {
  return c.type === "id" ? types.id : [types[c.type], c.constraints];
}

/** The `CREATE TABLE` statement for `t`, names, types and constraints aligned. */
export function createTable(t: Table, types: ColumnTypes, options: TableOptions = {}): string {
  const typed = t.columns.map((c) => [c, ...column(c, types)] as const);
  const nameWidth = Math.max(...t.columns.map((c) => c.name.length));
  const typeWidth = Math.max(...typed.map(([, type]) => type.length));
  const lines = typed.map(([c, type, rest]) => {
    const note = options.notes?.[c.name] ?? c.note;
    const head = note === undefined ? "  " : `  -- ${note}\n  `;
    return `${head}${c.name.padEnd(nameWidth)} ${
      rest === "" ? type : `${type.padEnd(typeWidth)} ${rest}`
    }`;
  });
  lines.push(...t.constraints.map((c) => `  ${c}`));
  return `CREATE TABLE ${options.name ?? t.name} (\n${lines.join(",\n")}\n)${
    options.suffix ?? ""
  };`;
}

/** The `CREATE INDEX` statements for the indexes `t` has in every dialect. */
export function createIndexes(t: Table): string {
  return Object.entries(t.indexes)
    .map(([name, columns]) => `CREATE INDEX ${name} ON ${t.name} (${columns});`)
    .join("\n");
}

/** The `ALTER TABLE … ADD COLUMN` statement adding `c` to table `to`. */
export function addColumn(to: string, c: Column, types: ColumnTypes): string {
  const [type, rest] = column(c, types);
  return `ALTER TABLE ${to} ADD COLUMN ${c.name} ${rest === "" ? type : `${type} ${rest}`};`;
}

/** Stored objects, as migration 1 made them. */
export const objects: Table = table(
  `objects
  id                    id
  "group"               text  NOT NULL
  kind                  text  NOT NULL
  name                  text  NOT NULL CHECK (name <> '')
  spec                  json  NOT NULL
  status                json
  spec_version          int64 NOT NULL DEFAULT 0
  status_version        int64 NOT NULL DEFAULT 0
  generation            int64 NOT NULL DEFAULT 1
  observed_generation   int64
  observed_at           int64
  resource_version      int64 NOT NULL
  deletion_requested_at int64
  finalizers            json  NOT NULL DEFAULT '[]'
  reconcile_owed        int64 NOT NULL DEFAULT 0
  created_at            int64 NOT NULL
  updated_at            int64 NOT NULL
  UNIQUE ("group", kind, name)
  INDEX idx_objects_rv (resource_version)`,
);

const conditions = table(`conditions
  object_id       int64 NOT NULL REFERENCES objects (id) ON DELETE CASCADE
  type            text  NOT NULL
  status          text  NOT NULL CHECK (status IN ('True', 'False', 'Unknown'))
  reason          text  NOT NULL DEFAULT ''
  message         text  NOT NULL DEFAULT ''
  liveness        int16 NOT NULL DEFAULT 0 CHECK (liveness IN (0, 1))
  -- The store open that wrote the row: a liveness row from an earlier open reads Unknown.
  open_epoch      int64 NOT NULL
  transitioned_at int64 NOT NULL
  updated_at      int64 NOT NULL
  PRIMARY KEY (object_id, type)`);

const edges = table(`edges
  from_id  int64 NOT NULL REFERENCES objects (id) ON DELETE CASCADE
  to_id    int64 NOT NULL REFERENCES objects (id) ON DELETE RESTRICT
  relation text  NOT NULL CHECK (relation IN ('owned_by', 'depends_on'))
  PRIMARY KEY (from_id, to_id, relation)`);

const dependencyWatermarks = table(`dependency_watermarks
  object_id          int64 PRIMARY KEY REFERENCES objects (id) ON DELETE CASCADE
  reconciled_against int64 NOT NULL
  reconciled_at      int64 NOT NULL`);

const driverCursors = table(`driver_cursors
  name       text  PRIMARY KEY
  cursor     int64 NOT NULL
  updated_at int64 NOT NULL`);

/** Events, as migration 1 made them. */
export const events: Table = table(
  `events
  id               id
  object_id        int64 NOT NULL REFERENCES objects (id) ON DELETE CASCADE
  category         text  NOT NULL DEFAULT ''
  type             text  NOT NULL CHECK (type IN ('Normal', 'Warning'))
  reason           text  NOT NULL CHECK (reason <> '')
  message          text  NOT NULL DEFAULT ''
  detail           text
  count            int64 NOT NULL DEFAULT 1
  first_at         int64 NOT NULL
  last_at          int64 NOT NULL
  resource_version int64 NOT NULL
  INDEX idx_events_object_cat (object_id, category, last_at DESC, id DESC)
  INDEX idx_events_latest (object_id, category, id DESC)
  INDEX idx_events_object_rv (object_id, resource_version)`,
);

const eventsHorizon = table(`events_horizon
  object_id       int64 NOT NULL REFERENCES objects (id) ON DELETE CASCADE
  category        text  NOT NULL
  trimmed_through int64 NOT NULL
  PRIMARY KEY (object_id, category)`);

// No foreign key on object_id: the log must outlive the rows it records.
const objectWrites = table(
  `object_writes
  resource_version int64 PRIMARY KEY
  object_id        int64 NOT NULL
  "group"          text  NOT NULL
  kind             text  NOT NULL
  op               int16 NOT NULL CHECK (op IN (1, 2, 3))
  written_at       int64 NOT NULL
  final            text
  INDEX idx_object_writes_age (written_at)`,
);

const objectWritesHorizon = table(`object_writes_horizon
  "group"         text  NOT NULL
  kind            text  NOT NULL
  trimmed_through int64 NOT NULL
  PRIMARY KEY ("group", kind)`);

/** A singleton row holding one counter, starting at 0. */
const counter = (name: string) =>
  table(`${name}
  id    int32 PRIMARY KEY CHECK (id = 1)
  value int64 NOT NULL`);

/**
 * The tables migration 1 creates, each after those it references. The
 * resource-version counter is standalone (MAX(resource_version) would fall
 * when the newest row goes); the epoch counts opens of the store, for the
 * liveness downgrade and write origins.
 */
const initTables = [
  objects,
  conditions,
  edges,
  dependencyWatermarks,
  driverCursors,
  events,
  eventsHorizon,
  objectWrites,
  objectWritesHorizon,
  counter("resource_version_seq"),
  counter("store_epoch"),
];

/** The generation a permanent failure stalled an object at (migration 4). */
export const stalledGeneration: Column = columns("stalled_generation int64")[0];

/** Which open of the store committed a write (migration 3): a process tells others' writes from its own. */
const writeOrigin = columns("origin int64 NOT NULL DEFAULT 0")[0];

// A released lease keeps its row, so its epoch is never reused; a held lock's
// expiry is NULL, its liveness each store's own (a lock file, an advisory lock).
const leases = table(`leases
  name        text  PRIMARY KEY
  holder      text
  epoch       int64 NOT NULL CHECK (epoch >= 1)
  acquired_at int64
  expires_at  int64
  pid         int64`);

// A timed lease's duration (migration 11), NULL for a held lock and for a row
// written before it: another open judges the lease's expiry by how long it has seen
// the term unchanged against this, never by the timestamps its holder's clock wrote.
const leaseDuration = columns("duration int64")[0];

// Kind definitions (docs/adr/2026-12-02-stored-kinds-and-json-schema.md): what
// start() learns from defineKind, for every process and tool that lacks it.
const kinds = table(`kinds
  "group"       text  NOT NULL
  kind          text  NOT NULL
  plural        text  NOT NULL
  singular      text  NOT NULL
  short_names   json  NOT NULL DEFAULT '[]'
  namespaced    int32 NOT NULL DEFAULT 0
  columns       json  NOT NULL DEFAULT '[]'
  spec_schema   json
  status_schema json
  updated_at    int64 NOT NULL
  PRIMARY KEY ("group", kind)`);

// Labels and annotations (docs/adr/2026-12-02-labels.md): JSON columns a read
// decodes and a selector's other requirements test, and an index table a
// selector is driven by, one row per (object, label) keyed by kind, key and
// value. It has no foreign key: the family writes and deletes its rows with the
// object's. Existing rows read as having none.
const labelColumns = columns(`
  labels      json NOT NULL DEFAULT '{}'
  annotations json NOT NULL DEFAULT '{}'`);
const objectLabels = table(`object_labels
  "group"   text  NOT NULL
  kind      text  NOT NULL
  key       text  NOT NULL
  value     text  NOT NULL
  object_id int64 NOT NULL
  PRIMARY KEY ("group", kind, key, value, object_id)`);

// Label sets (docs/adr/2026-12-03-label-sets.md): the index a selector is driven
// by, kept per distinct set of labels rather than per object, so a create whose
// labels another object of its kind already has writes no index row, only its
// `label_set`. A set is keyed by its canonical JSON (keys in code-unit order) and
// numbered by the resource version of the write that made it (unique, never
// reused); its entries list it by key and value. A set no object refers to is
// removed by the write that left it unused.
const labelSets = table(`label_sets
  "group" text  NOT NULL
  kind    text  NOT NULL
  labels  text  NOT NULL
  id      int64 NOT NULL
  PRIMARY KEY ("group", kind, labels)`);
const labelSetEntries = table(`label_set_entries
  "group" text  NOT NULL
  kind    text  NOT NULL
  key     text  NOT NULL
  value   text  NOT NULL
  set_id  int64 NOT NULL
  PRIMARY KEY ("group", kind, key, value, set_id)`);
const labelSetColumn = columns("label_set int64")[0];

// Managed fields (docs/adr/2026-12-07-managed-fields.md): the Kubernetes API's
// record of which manager set which fields, kept whole with the row as JSON text
// the store never reads. Existing rows read as having none.
const managedFieldsColumn = columns(`managed_fields json NOT NULL DEFAULT '[]'`)[0];

/**
 * What each migration writes alike in every dialect, in the dialect's DDL: a
 * dialect's migration is this part and its own.
 */
export function sharedMigrations(ddl: Ddl): {
  /** Migration 1: the tables, their shared indexes, and the counters' rows. */
  readonly init: string;
  /** Migration 2: leases. */
  readonly leases: string;
  /** Migration 3: which open of the store committed a write. */
  readonly origin: string;
  /** Migration 4: the stalled generation column. */
  readonly stalled: string;
  /** Migration 6: kind definitions. */
  readonly kinds: string;
  /** Migration 7: labels and annotations, and the label index. */
  readonly labels: string;
  /** Migration 9's tables and column: label sets (the dialect fills them and drops the old index). */
  readonly labelSets: string;
  /**
   * Migration 9's sets, one per distinct canonical set in the dialect's temporary `labelled`
   * table (id, group, kind, labels), numbered 0, −1, −2, …: a later set takes its write's
   * resource version, which is positive.
   */
  readonly labelSetsNumbered: string;
  /** Migration 11: a timed lease's duration. */
  readonly leaseDurations: string;
  /** Migration 12: the managed fields column. */
  readonly managedFields: string;
} {
  const create = (t: Table) => createTable(t, ddl.types, ddl.tableOptions?.(t));
  const add = (to: string, c: Column) => addColumn(to, c, ddl.types);
  return {
    init: [
      ...initTables.map(create),
      ...initTables.map(createIndexes).filter((s) => s !== ""),
      "INSERT INTO resource_version_seq (id, value) VALUES (1, 0);",
      "INSERT INTO store_epoch (id, value) VALUES (1, 0);",
    ].join("\n"),
    leases: create(leases),
    origin: add("object_writes", writeOrigin),
    stalled: add("objects", stalledGeneration),
    kinds: create(kinds),
    labels: [...labelColumns.map((c) => add("objects", c)), create(objectLabels)].join("\n"),
    labelSets: [create(labelSets), create(labelSetEntries), add("objects", labelSetColumn)].join(
      "\n",
    ),
    labelSetsNumbered: `INSERT INTO label_sets ("group", kind, labels, id)
  SELECT "group", kind, labels, 1 - ROW_NUMBER() OVER (ORDER BY "group", kind, labels)
  FROM (SELECT DISTINCT "group", kind, labels FROM labelled) AS distinct_sets;`,
    leaseDurations: add("leases", leaseDuration),
    managedFields: add("objects", managedFieldsColumn),
  };
}
