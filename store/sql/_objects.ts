/**
 * The objects family.
 *
 * @module
 */
import {
  DeletionPendingError,
  InvalidObservedGenerationError,
  ObservedGenerationFutureError,
  StoreError,
} from "../../src/model/errors.ts";
import type {
  GroupKind,
  IncomingEdgeQuery,
  ObjectId,
  ObjectNameRef,
  ObjectRef,
  Objects,
  ObjectsCreateInput,
  ObjectsListIdsOptions,
  ObjectsListPage,
  ObjectsUpdateMetadataInput,
  ObjectsUpdateMetadataResult,
  ObjectsUpdateSpecInput,
  ObjectsUpdateSpecResult,
  ObjectsUpdateStatusInput,
  RawCondition,
  RawObject,
  RawObjectMeta,
  ReconcileLoad,
} from "../../src/store.ts";
import {
  assertKind,
  assertVersion,
  type CheckedPage,
  checkExcludeStalled,
  checkFinalizers,
  checkGroupKind,
  checkId,
  checkIds,
  checkJsonText,
  checkListPage,
  checkName,
  checkNameRef,
  checkNamespace,
  checkPrecondition,
  checkRef,
  checkRelation,
  checkSchemaVersion,
  describe,
  kindOf,
  nameNotFound,
  nameTaken,
  objectNotFound,
  quote,
  rejectWith,
  stampVersion,
} from "./_checks.ts";
import type { Dialect } from "./_dialect.ts";
import type { Viewer } from "./_live_opens.ts";
import { type Q, q } from "./_query.ts";
import {
  decodeConditions,
  OBJECTS_OF_KIND,
  readConditions,
  readMeta,
  readObject,
  withConditions,
  withConditionsOfKind,
} from "./_reads.ts";
import {
  CONDITION_COLUMNS,
  decodeFinalizers,
  decodeMeta,
  ID_CHUNK,
  OBJECT_COLUMN_COUNT,
  OBJECT_COLUMNS,
  truthy,
} from "./_rows.ts";
import {
  canonicalLabels,
  labelFilters,
  labelSetOf,
  releaseLabelSet,
  selectRows,
} from "./_labels.ts";
import {
  checkMetadata,
  checkMetadataUpdate,
  type Labels,
  mergeMetadata,
  type MetadataPatch,
  NO_LABELS,
  sameMetadata,
} from "../../src/model/labels.ts";
import { namespaceFilter } from "./_namespace_filter.ts";
import { kindOfRow } from "./_keyed.ts";
import type { SqlSession, WriteScope } from "./_session.ts";
import { appendedFromValues, appendFrom, appendWrite, journalWrite } from "./_write_log.ts";

// Lands only on a row of the ref's kind, at or past the generation, not yet observed at it.
const SETTLE_SQL =
  `UPDATE objects SET observed_generation = ?, observed_at = ?, resource_version = ?
  WHERE id = ? AND ${kindOfRow()} AND generation >= ?
    AND (observed_generation IS NULL OR observed_generation < ?)`;

const INSERT_COLUMNS = `"group", kind, name, spec, spec_version, resource_version,
  finalizers, created_at, updated_at, labels, annotations, namespace, label_set, managed_fields`;
/** A create's insert under an id the store drew itself (SQLite's). */
const INSERT_WITH_ID =
  `INSERT INTO objects (id, ${INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

const CREATE_RETURNING = `INSERT INTO objects (${INSERT_COLUMNS})
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`;

/**
/**
 * A create that appends its log entry in the same statement (a data-modifying
 * WITH) and, when it has labels, finds their set inside its own `INSERT`: no
 * round trip of their own where the set exists. Selects the new id and the set
 * found (`NULL` when the kind has no set of these labels yet).
 */
function createChained(labelled: boolean): string {
  const set = labelled
    ? `(SELECT id FROM label_sets WHERE "group" = ? AND kind = ? AND labels = ?)`
    : "?";
  return `WITH o AS (INSERT INTO objects (${INSERT_COLUMNS})
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${set}, ?) RETURNING id, label_set),
    ${appendFrom("o", "create")}
    SELECT id, label_set FROM o`;
}

/** The settle, with its log entry appended in the same statement; selects how many rows it settled. */
const SETTLE_CHAINED = `WITH o AS (${SETTLE_SQL} RETURNING id), ${appendFrom("o", "update")}
  SELECT COUNT(*) AS n FROM o`;

/** The statements whose spelling depends on the dialect, built once per family. */
class Statements {
  readonly listIds: string;
  readonly listIdsActive: string;
  readonly unsettled: string;
  readonly namespaces: string;
  readonly byIds: string;
  readonly finalizersForUpdate: string;
  /** The status write when it lands (see {@linkcode statusWrite}); selects how many rows it wrote. */
  readonly status: string;

  constructor(d: Dialect) {
    this.listIds = `SELECT id FROM objects WHERE "group" = ? AND kind = ? ORDER BY id`;
    this.listIdsActive = `SELECT id FROM objects WHERE "group" = ? AND kind = ?
      AND stalled_generation ${d.isDistinct} generation ORDER BY id`;
    this.unsettled = `SELECT id FROM objects${d.indexedBy("idx_objects_unsettled")}
      WHERE "group" = ? AND kind = ?
        AND (observed_generation IS NULL OR observed_generation < generation)
        AND stalled_generation ${d.isDistinct} generation
      ORDER BY id`;
    // One index probe per namespace (a loose index scan), not one row per object. Each
    // probe says namespace <> '', so the planners read the (partial) namespace index.
    this.namespaces = `WITH RECURSIVE ns (namespace) AS (
        SELECT MIN(namespace) FROM objects
          WHERE "group" = ? AND kind = ? AND namespace > '' AND namespace <> ''
        UNION ALL
        SELECT (SELECT MIN(o.namespace) FROM objects o
          WHERE o."group" = ? AND o.kind = ? AND o.namespace > ns.namespace
            AND o.namespace <> '')
        FROM ns WHERE ns.namespace IS NOT NULL)
      SELECT namespace FROM ns WHERE namespace IS NOT NULL`;
    this.byIds = `SELECT ${OBJECT_COLUMNS} FROM${d.objectsOfIds}
      WHERE ${kindOfRow()} ORDER BY id`;
    this.finalizersForUpdate =
      `SELECT "group", kind, name, finalizers, deletion_requested_at FROM objects
       WHERE id = ?${d.forUpdate}`;
    const update = statusWrite(d);
    this.status = d.chainsInserts
      ? `WITH o AS (${update} RETURNING id), ${appendFrom("o", "update")}
        SELECT COUNT(*) AS n FROM o`
      : update;
  }
}

/**
 * A status write in one statement: it lands only on a row of the kind whose
 * schema version it does not lower and whose status or version it changes,
 * so the gate read runs only to explain a write that did not land. Binds
 * {@linkcode statusWriteValues}.
 */
function statusWrite(d: Dialect): string {
  const incoming = d.bigint;
  return `UPDATE objects SET status = ?,
      status_version = CASE WHEN ${incoming} = 0 THEN status_version ELSE ${incoming} END,
      resource_version = ?, updated_at = ?
    WHERE id = ? AND ${kindOfRow()}
      AND (${incoming} = 0 OR status_version <= ${incoming})
      AND (status ${d.isDistinct} ? OR (${incoming} <> 0 AND status_version <> ${incoming}))`;
}

/** What {@linkcode statusWrite} binds, in order. */
function statusWriteValues(
  scope: WriteScope,
  ref: ObjectRef,
  status: string,
  incoming: number,
  rv: number,
): unknown[] {
  return [
    status,
    incoming,
    incoming,
    rv,
    scope.now,
    ref.id,
    ref.group,
    ref.kind,
    incoming,
    incoming,
    status,
    incoming,
    incoming,
  ];
}

export class SqlObjects implements Objects {
  readonly #s: SqlSession;
  readonly #sql: Statements;

  constructor(session: SqlSession) {
    this.#s = session;
    this.#sql = new Statements(session.dialect);
  }

  create(gk: GroupKind, input: ObjectsCreateInput): Promise<RawObject> {
    return rejectWith(() => {
      checkGroupKind(gk);
      checkName(input?.name);
      const namespace = checkNamespace(input.namespace);
      checkJsonText(input.spec, "spec");
      const specVersion = checkSchemaVersion(input.specVersion, "specVersion");
      const finalizerList = checkFinalizers(input.finalizers);
      const finalizers = JSON.stringify(finalizerList);
      const managedFields = input.managedFields ?? "[]";
      checkJsonText(managedFields, "managedFields");
      const meta = {
        labels: checkMetadata(input.labels, "labels"),
        annotations: checkMetadata(input.annotations, "annotations"),
        namespace,
        managedFields,
      };
      const d = this.#s.dialect;
      return this.#s.write((scope) =>
        createBody(scope, d, gk, input, specVersion, finalizerList, finalizers, meta)
      );
    });
  }

  get(id: ObjectId): Promise<RawObject> {
    return rejectWith(() => {
      checkId(id);
      const viewer = this.#s.viewer;
      return this.#s.read(() => readObject(id, viewer));
    });
  }

  getByName(ref: ObjectNameRef): Promise<RawObject> {
    return rejectWith(() => {
      const namespace = checkNameRef(ref);
      const d = this.#s.dialect;
      const viewer = this.#s.viewer;
      return this.#s.read(() => getByNameBody(d, ref, namespace, viewer));
    });
  }

  getMeta(id: ObjectId): Promise<RawObjectMeta> {
    return rejectWith(() => {
      checkId(id);
      return this.#s.read(() => getMetaBody(id));
    });
  }

  getMetaByName(ref: ObjectNameRef): Promise<RawObjectMeta> {
    return rejectWith(() => {
      const namespace = checkNameRef(ref);
      return this.#s.read(() => readMetaByName(ref, namespace));
    });
  }

  getForReconcile(id: ObjectId): Promise<ReconcileLoad> {
    return rejectWith(() => {
      checkId(id);
      const s = this.#s;
      const viewer = s.viewer;
      // One statement reads the row, its conditions and the cursor together, so they agree
      // with no transaction around them: the cursor can lag the row, never lead it.
      return s.read(() => reconcileLoad(id, viewer));
    });
  }

  list(gk: GroupKind, page?: ObjectsListPage): Promise<RawObject[]> {
    return rejectWith(() => {
      checkGroupKind(gk);
      const p = checkListPage(page);
      const d = this.#s.dialect;
      const viewer = this.#s.viewer;
      return this.#s.read(() => listBody(d, gk, p, viewer));
    });
  }

  listByIds(gk: GroupKind, ids: readonly ObjectId[]): Promise<RawObject[]> {
    return rejectWith(() => {
      checkGroupKind(gk);
      checkIds(ids);
      const d = this.#s.dialect;
      const viewer = this.#s.viewer;
      const byIds = this.#sql.byIds;
      return this.#s.read(() => listByIdsBody(d, byIds, gk, ids, viewer));
    });
  }

  listByIncomingEdge(
    gk: GroupKind,
    edge: IncomingEdgeQuery,
    page?: ObjectsListPage,
  ): Promise<RawObject[]> {
    return rejectWith(() => {
      checkGroupKind(gk);
      checkId(edge?.toId, "toId");
      checkRelation(edge.relation);
      const p = checkListPage(page);
      const d = this.#s.dialect;
      const viewer = this.#s.viewer;
      return this.#s.read(() => incomingBody(d, gk, edge, p, viewer));
    });
  }

  listIds(gk: GroupKind, options?: ObjectsListIdsOptions): Promise<ObjectId[]> {
    return rejectWith(() => {
      checkGroupKind(gk);
      const excludeStalled = checkExcludeStalled(options, "list ids");
      const sql = excludeStalled ? this.#sql.listIdsActive : this.#sql.listIds;
      return this.#s.read(() => idsBody(sql, gk));
    });
  }

  listUnsettledIds(gk: GroupKind): Promise<ObjectId[]> {
    return rejectWith(() => {
      checkGroupKind(gk);
      const sql = this.#sql.unsettled;
      return this.#s.read(() => idsBody(sql, gk));
    });
  }

  listNamespaces(gk: GroupKind): Promise<string[]> {
    return rejectWith(() => {
      checkGroupKind(gk);
      const sql = this.#sql.namespaces;
      return this.#s.read(() => namespacesBody(sql, gk));
    });
  }

  updateSpec(ref: ObjectRef, input: ObjectsUpdateSpecInput): Promise<ObjectsUpdateSpecResult> {
    return rejectWith(() => {
      checkRef(ref);
      const w = checkSpecWrite(input, this.#s.dialect, this.#s.viewer);
      return this.#s.write((scope) => updateSpecBody(scope, ref, input.spec, w));
    });
  }

  updateSpecByName(
    ref: ObjectNameRef,
    input: ObjectsUpdateSpecInput,
  ): Promise<ObjectsUpdateSpecResult> {
    return rejectWith(() => {
      const namespace = checkNameRef(ref);
      const w = checkSpecWrite(input, this.#s.dialect, this.#s.viewer);
      return this.#s.write((scope) => updateSpecByNameBody(scope, ref, namespace, input.spec, w));
    });
  }

  updateMetadata(
    ref: ObjectRef,
    input: ObjectsUpdateMetadataInput,
  ): Promise<ObjectsUpdateMetadataResult> {
    return rejectWith(() => {
      checkRef(ref);
      const patch = {
        ...checkMetadataUpdate(input, "update metadata"),
        managedFields: checkManagedFields(input.managedFields),
        finalizers: checkFinalizerList(input.finalizers),
      };
      const expected = checkPrecondition(input.resourceVersion);
      const d = this.#s.dialect;
      const viewer = this.#s.viewer;
      return this.#s.write((scope) => updateMetadataBody(scope, d, ref, patch, expected, viewer));
    });
  }

  updateStatus(ref: ObjectRef, input: ObjectsUpdateStatusInput): Promise<boolean> {
    return rejectWith(() => {
      checkRef(ref);
      checkJsonText(input?.status, "status");
      const incoming = checkSchemaVersion(input.statusVersion, "statusVersion");
      const d = this.#s.dialect;
      const sql = this.#sql.status;
      return this.#s.write((scope) => updateStatusBody(scope, d, sql, ref, input, incoming));
    });
  }

  setObservedGeneration(ref: ObjectRef, generation: number): Promise<boolean> {
    return rejectWith(() => {
      checkRef(ref);
      if (typeof generation !== "number" || !Number.isSafeInteger(generation) || generation < 1) {
        throw new InvalidObservedGenerationError(
          `Cannot record observed generation ${
            describe(generation)
          } for object ${ref.id}: a generation is an integer >= 1`,
        );
      }
      return this.#s.write((scope) => settleBody(scope, this.#s.dialect, ref, generation));
    });
  }

  addFinalizer(ref: ObjectRef, finalizer: string): Promise<boolean> {
    return rejectWith(() => {
      checkRef(ref);
      const [checked] = checkFinalizers([finalizer]);
      const read = this.#sql.finalizersForUpdate;
      return this.#s.write((scope) => addFinalizerBody(scope, read, ref, checked));
    });
  }

  setStalledGeneration(ref: ObjectRef, generation: number | undefined): Promise<boolean> {
    return rejectWith(() => {
      checkRef(ref);
      if (
        generation !== undefined &&
        (typeof generation !== "number" || !Number.isSafeInteger(generation) || generation < 1)
      ) {
        throw new InvalidObservedGenerationError(
          `Cannot record stalled generation ${
            describe(generation)
          } for object ${ref.id}: a generation is an integer >= 1 or undefined`,
        );
      }
      return this.#s.write(() => stalledBody(ref, generation));
    });
  }

  deleteFinalizer(ref: ObjectRef, finalizer: string): Promise<boolean> {
    return rejectWith(() => {
      checkRef(ref);
      if (typeof finalizer !== "string") {
        throw new TypeError(
          `Cannot delete finalizer: current value is ${describe(finalizer)}, expected a string`,
        );
      }
      return this.#s.write((scope) => deleteFinalizerBody(scope, ref, finalizer));
    });
  }

  delete(id: ObjectId): Promise<void> {
    return rejectWith(() => {
      checkId(id);
      const d = this.#s.dialect;
      const viewer = this.#s.viewer;
      return this.#s.write((scope) => deleteBody(scope, d, id, viewer));
    });
  }
}

/** What a spec write carries beside the row and the spec: checked before the write. */
interface SpecWrite {
  readonly d: Dialect;
  readonly viewer: Viewer;
  /** The incoming schema version. */
  readonly version: number;
  readonly expected: number | undefined;
  readonly patch: { labels: MetadataPatch | undefined; annotations: MetadataPatch | undefined };
  /** The managed fields to hold, whole; `undefined` keeps them. */
  readonly managedFields: string | undefined;
  /** The finalizers to hold, whole; `undefined` keeps them. */
  readonly finalizers: string[] | undefined;
}

/**
 * A spec write's input, checked: spec, schema version, precondition, metadata,
 * managed fields and finalizers, in that order.
 * @throws {TypeError | InvalidOptionError} on the first that is not valid.
 */
function checkSpecWrite(input: ObjectsUpdateSpecInput, d: Dialect, viewer: Viewer): SpecWrite {
  checkJsonText(input?.spec, "spec");
  const version = checkSchemaVersion(input.specVersion, "specVersion");
  const expected = checkPrecondition(input.resourceVersion);
  const patch = checkMetadataUpdate(input, "update spec");
  const managedFields = checkManagedFields(input.managedFields);
  const finalizers = checkFinalizerList(input.finalizers);
  return { d, viewer, version, expected, patch, managedFields, finalizers };
}

/** `finalizers` of a write: checked and deduplicated, or `undefined`. @throws {InvalidOptionError} */
function checkFinalizerList(list: unknown): string[] | undefined {
  return list === undefined ? undefined : checkFinalizers(list);
}

/** Whether two finalizer lists hold the same names in the same order. */
function sameFinalizers(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((f, i) => f === b[i]);
}

/** `managedFields` of a write: JSON text, or `undefined`. @throws {TypeError} */
function checkManagedFields(text: unknown): string | undefined {
  if (text === undefined) return undefined;
  checkJsonText(text, "managedFields");
  return text;
}

/** The spec update both spellings of `updateSpec` share, on the stored row. */
function* updateSpec(
  scope: WriteScope,
  stored: RawObjectMeta,
  spec: string,
  w: SpecWrite,
): Q<ObjectsUpdateSpecResult> {
  // The order is contractual: precondition, deletion mark, version stamp, byte compare.
  assertVersion(stored.id, stored.resourceVersion, w.expected);
  if (stored.deletionRequestedAt !== undefined) {
    throw new DeletionPendingError(
      `Cannot update the spec of ${kindOf(stored)} ${
        quote(stored.name)
      } (id ${stored.id}): its deletion is pending`,
    );
  }
  const version = stampVersion(stored.specVersion, w.version, "spec", stored.id);
  const labels = mergeMetadata(stored.labels, w.patch.labels, "labels");
  const annotations = mergeMetadata(stored.annotations, w.patch.annotations, "annotations");
  const specSame = version === stored.specVersion && spec === stored.spec;
  const managedFields = w.managedFields ?? stored.managedFields;
  const finalizers = w.finalizers ?? stored.finalizers;
  const metadataSame = sameMetadata(labels, stored.labels) &&
    sameMetadata(annotations, stored.annotations) && managedFields === stored.managedFields &&
    sameFinalizers(finalizers, stored.finalizers);
  if (specSame && metadataSame) {
    return {
      object: { ...stored, conditions: yield* readConditions(stored.id, w.viewer) },
      changed: false,
      specChanged: false,
    };
  }
  const rv = scope.draw();
  const generation = specSame ? stored.generation : stored.generation + 1;
  const specPart = specSame ? undefined : { spec, version, generation };
  if (!metadataSame) {
    // One UPDATE for both when both changed.
    yield* writeMetadata(
      scope,
      w.d,
      stored,
      { labels, annotations, managedFields, finalizers },
      rv,
      specPart,
    );
  } else if (specPart !== undefined) {
    yield* q.run(
      `UPDATE objects SET ${SPEC_SET}, resource_version = ?, updated_at = ? WHERE id = ?`,
      ...specValues(specPart),
      rv,
      scope.now,
      stored.id,
    );
  }
  const object: RawObject = {
    ...stored,
    spec,
    specVersion: version,
    generation,
    resourceVersion: rv,
    updatedAt: new Date(scope.now),
    labels,
    annotations,
    managedFields,
    finalizers: [...finalizers],
    conditions: yield* readConditions(stored.id, w.viewer),
  };
  yield* appendWrite(scope, rv, stored, "update", object);
  return { object, changed: true, specChanged: !specSame };
}

/** A spec write's columns, as {@linkcode specValues} binds them. */
const SPEC_SET = "spec = ?, spec_version = ?, generation = ?";

/** A new spec, its version and the generation it makes. */
interface SpecPart {
  readonly spec: string;
  readonly version: number;
  readonly generation: number;
}

const specValues = (p: SpecPart) => [p.spec, p.version, p.generation];

/**
 * Writes merged labels and annotations over the stored row at version `rv`
 * (with `spec`, a new spec in the same statement), moving the row to its new
 * label set when the labels changed.
 */
function* writeMetadata(
  scope: WriteScope,
  d: Dialect,
  stored: RawObjectMeta,
  merged: {
    labels: Labels;
    annotations: Labels;
    managedFields: string;
    finalizers: readonly string[];
  },
  rv: number,
  spec?: SpecPart,
): Q<void> {
  const { labels, annotations, managedFields, finalizers } = merged;
  yield* q.run(
    `UPDATE objects SET ${spec === undefined ? "" : `${SPEC_SET}, `}labels = ?, annotations = ?,
       managed_fields = ?, finalizers = ?, resource_version = ?, updated_at = ?
     WHERE id = ?`,
    ...(spec === undefined ? [] : specValues(spec)),
    JSON.stringify(labels),
    JSON.stringify(annotations),
    managedFields,
    JSON.stringify(finalizers),
    rv,
    scope.now,
    stored.id,
  );
  if (!sameMetadata(labels, stored.labels)) {
    const ref: ObjectRef = { group: stored.group, kind: stored.kind, id: stored.id };
    const before = yield* storedLabelSet(stored.id);
    const after = yield* labelSetOf(d, ref, labels, rv);
    yield* q.run("UPDATE objects SET label_set = ? WHERE id = ?", after, stored.id);
    if (before !== after) yield* releaseLabelSet(d, ref, before, stored.labels);
  }
}

function* readMetaByName(ref: ObjectNameRef, namespace: string): Q<RawObjectMeta> {
  const row = yield* q.row(
    `SELECT ${OBJECT_COLUMNS} FROM objects
     WHERE "group" = ? AND kind = ? AND namespace = ? AND name = ?`,
    ref.group,
    ref.kind,
    namespace,
    ref.name,
  );
  if (row === undefined) throw nameNotFound(ref, ref.name, namespace);
  return decodeMeta(row);
}

function* createBody(
  scope: WriteScope,
  d: Dialect,
  gk: GroupKind,
  input: ObjectsCreateInput,
  specVersion: number,
  finalizerList: string[],
  finalizers: string,
  meta: { labels: Labels; annotations: Labels; namespace: string; managedFields: string },
): Q<RawObject> {
  const { group, kind } = gk;
  const { labels, annotations, namespace, managedFields } = meta;
  const labelsText = labels === NO_LABELS ? "{}" : JSON.stringify(labels);
  const annotationsText = annotations === NO_LABELS ? "{}" : JSON.stringify(annotations);
  const now = scope.now;
  const rv = scope.draw();
  let id = scope.peekId("objects");
  const labelled = labels !== NO_LABELS && Object.keys(labels).length > 0;
  // Where one statement may insert into several tables, the log entry rides along and the
  // label set is looked up inside the insert.
  const chained = id === undefined && d.chainsInserts;
  const labelSet = labelled && !chained ? yield* labelSetOf(d, gk, labels, rv, labelsText) : null;
  let logged = false;
  // INSERT_COLUMNS' values, in its order, but the set and the managed fields.
  const values = [
    group,
    kind,
    input.name,
    input.spec,
    specVersion,
    rv,
    finalizers,
    now,
    now,
    labelsText,
    annotationsText,
    namespace,
  ];
  try {
    if (id !== undefined) {
      yield* q.run(INSERT_WITH_ID, id, ...values, labelSet, managedFields);
      scope.takeId("objects");
    } else if (chained) {
      const row = yield* q.row(
        createChained(labelled),
        ...values,
        ...(labelled ? [group, kind, canonicalLabels(labels, labelsText)] : [null]),
        managedFields,
        ...appendedFromValues(scope, rv, gk),
      );
      id = Number(row![0]);
      logged = true;
      if (labelled && row![1] === null) {
        // The first object of the kind with these labels: the set is made now.
        const made = yield* labelSetOf(d, gk, labels, rv, labelsText);
        yield* q.run("UPDATE objects SET label_set = ? WHERE id = ?", made, id);
      }
    } else {
      const row = yield* q.row(CREATE_RETURNING, ...values, labelSet, managedFields);
      id = Number(row![0]);
    }
  } catch (error) {
    if (d.isUniqueViolation(error)) throw nameTaken(group, kind, input.name, namespace, error);
    throw error;
  }
  // The row is what was just inserted, with the columns' defaults.
  const object: RawObject = {
    id,
    group,
    kind,
    name: input.name,
    spec: input.spec,
    status: undefined,
    specVersion,
    statusVersion: 0,
    generation: 1,
    observedGeneration: undefined,
    observedAt: undefined,
    resourceVersion: rv,
    deletionRequestedAt: undefined,
    reconcileOwed: 0,
    finalizers: finalizerList,
    createdAt: new Date(now),
    updatedAt: new Date(now),
    labels,
    annotations,
    namespace,
    managedFields,
    conditions: [],
  };
  if (logged) journalWrite(scope, rv, object, "create", object);
  else yield* appendWrite(scope, rv, object, "create", object);
  return object;
}

function* getByNameBody(d: Dialect, ref: ObjectNameRef, namespace: string, viewer: Viewer) {
  return (yield* withConditions(d, [yield* readMetaByName(ref, namespace)], viewer))[0];
}

function* getMetaBody(id: ObjectId) {
  const meta = yield* readMeta(id);
  if (meta === undefined) throw objectNotFound(id);
  return meta;
}

/** `columns` (a column list) qualified by table alias `alias`. */
function qualified(alias: string, columns: string): string {
  return columns.split(",").map((c) => `${alias}.${c.trim()}`).join(", ");
}

/**
 * The object, whether it has dependencies, its stalled generation, the
 * counter, and its conditions: one row per condition (one with the
 * condition's columns null when it has none), ordered by type.
 */
const RECONCILE_LOAD = `SELECT ${qualified("o", OBJECT_COLUMNS)}, EXISTS (SELECT 1 FROM edges
    WHERE from_id = o.id AND relation = 'depends_on') AS has_dependencies,
    o.stalled_generation, (SELECT value FROM resource_version_seq WHERE id = 1) AS cursor,
    ${qualified("c", CONDITION_COLUMNS)}
  FROM objects o LEFT JOIN conditions c ON c.object_id = o.id
  WHERE o.id = ? ORDER BY c.type`;

function* reconcileLoad(id: ObjectId, viewer: Viewer): Q<ReconcileLoad> {
  const rows = yield* q.rows(RECONCILE_LOAD, id);
  if (rows.length === 0) throw objectNotFound(id);
  const row = rows[0];
  // has_dependencies, stalled_generation and cursor follow the object columns, then a condition.
  const n = OBJECT_COLUMN_COUNT;
  const conditions = row[n + 3] === null ? [] : rows.map((r) => r.slice(n + 3));
  const object = decodeMeta(row);
  (object as { conditions?: RawCondition[] }).conditions = yield* decodeConditions(
    conditions,
    viewer,
  );
  return {
    object: object as RawObject,
    cursor: Number(row[n + 2]),
    hasDependencies: truthy(row[n]),
    stalledGeneration: row[n + 1] === null ? undefined : Number(row[n + 1]),
  };
}

function* listBody(d: Dialect, gk: GroupKind, p: CheckedPage, viewer: Viewer) {
  const ns = inNamespace(p.namespace, "namespace");
  if (p.selector !== undefined) {
    const where = selectRows(d, gk, p.selector);
    const metas = (yield* q.rows(
      `SELECT ${OBJECT_COLUMNS} FROM objects WHERE ${where.sql}${ns.sql} AND id > ?
       ORDER BY id LIMIT ?`,
      ...where.params,
      ...ns.params,
      p.after,
      p.limit ?? d.noLimit,
    )).map(decodeMeta);
    return yield* withConditions(d, metas, viewer);
  }
  if (p.namespace !== undefined) {
    const metas = (yield* q.rows(
      `SELECT ${OBJECT_COLUMNS} FROM objects WHERE "group" = ? AND kind = ?${
        namespaceFilter(p.namespace, "namespace")
      }
         AND id > ?
       ORDER BY id LIMIT ?`,
      gk.group,
      gk.kind,
      p.namespace,
      p.after,
      p.limit ?? d.noLimit,
    )).map(decodeMeta);
    return yield* withConditions(d, metas, viewer);
  }
  if (p.after === 0 && p.limit === undefined) {
    const metas = (yield* q.rows(OBJECTS_OF_KIND, gk.group, gk.kind)).map(decodeMeta);
    return yield* withConditionsOfKind(metas, gk, viewer);
  }
  const metas = (yield* q.rows(
    `SELECT ${OBJECT_COLUMNS} FROM objects WHERE "group" = ? AND kind = ? AND id > ?
     ORDER BY id LIMIT ?`,
    gk.group,
    gk.kind,
    p.after,
    p.limit ?? d.noLimit,
  )).map(decodeMeta);
  return yield* withConditions(d, metas, viewer);
}

/** A page's namespace as a filter on `column`: nothing when it spans every namespace. */
function inNamespace(namespace: string | undefined, column: string) {
  return namespace === undefined
    ? { sql: "", params: [] }
    : { sql: namespaceFilter(namespace, column), params: [namespace] };
}

function* listByIdsBody(
  d: Dialect,
  byIds: string,
  gk: GroupKind,
  ids: readonly ObjectId[],
  viewer: Viewer,
) {
  const metas: RawObjectMeta[] = [];
  // Each id is read once: the statement reads one row per id it is given.
  const unique = [...new Set(ids)];
  for (let i = 0; i < unique.length; i += ID_CHUNK) {
    const rows = yield* q.rows(byIds, d.ids(unique.slice(i, i + ID_CHUNK)), gk.group, gk.kind);
    for (const row of rows) metas.push(decodeMeta(row));
  }
  if (unique.length > ID_CHUNK) metas.sort((a, b) => a.id - b.id);
  return yield* withConditions(d, metas, viewer);
}

function* incomingBody(
  d: Dialect,
  gk: GroupKind,
  edge: IncomingEdgeQuery,
  p: CheckedPage,
  viewer: Viewer,
) {
  // Driven by the edges into toId, already in from_id order: cost tracks those edges.
  const labels = labelFilters(d, p.selector ?? [], "objects.labels");
  const ns = inNamespace(p.namespace, "objects.namespace");
  const metas = (yield* q.rows(
    `SELECT ${OBJECT_COLUMNS} FROM edges${d.objectAt("edges.from_id")}
     WHERE to_id = ? AND relation = ? AND from_id > ? AND ${kindOfRow()}${labels.sql}${ns.sql}
     ORDER BY from_id LIMIT ?`,
    edge.toId,
    edge.relation,
    p.after,
    gk.group,
    gk.kind,
    ...labels.params,
    ...ns.params,
    p.limit ?? d.noLimit,
  )).map(decodeMeta);
  return yield* withConditions(d, metas, viewer);
}

function* idsBody(sql: string, gk: GroupKind) {
  return (yield* q.rows(sql, gk.group, gk.kind)).map((r) => Number(r[0]));
}

function* namespacesBody(sql: string, gk: GroupKind) {
  const rows = yield* q.rows(sql, gk.group, gk.kind, gk.group, gk.kind);
  // The database's collation orders the scan; the answer is in code-unit order on every store.
  return rows.map((r) => String(r[0])).sort((a, b) => a < b ? -1 : a > b ? 1 : 0);
}

function* updateSpecBody(scope: WriteScope, ref: ObjectRef, spec: string, w: SpecWrite) {
  const row = yield* q.row(`SELECT ${OBJECT_COLUMNS} FROM objects WHERE id = ?`, ref.id);
  assertKind(ref, row && { group: row[1], kind: row[2] });
  return yield* updateSpec(scope, decodeMeta(row!), spec, w);
}

function* updateSpecByNameBody(
  scope: WriteScope,
  ref: ObjectNameRef,
  namespace: string,
  spec: string,
  w: SpecWrite,
) {
  return yield* updateSpec(scope, yield* readMetaByName(ref, namespace), spec, w);
}

function* updateMetadataBody(
  scope: WriteScope,
  d: Dialect,
  ref: ObjectRef,
  patch: {
    labels: MetadataPatch | undefined;
    annotations: MetadataPatch | undefined;
    managedFields: string | undefined;
    finalizers: string[] | undefined;
  },
  expected: number | undefined,
  viewer: Viewer,
): Q<ObjectsUpdateMetadataResult> {
  const row = yield* q.row(`SELECT ${OBJECT_COLUMNS} FROM objects WHERE id = ?`, ref.id);
  assertKind(ref, row && { group: row[1], kind: row[2] });
  const stored = decodeMeta(row!);
  assertVersion(stored.id, stored.resourceVersion, expected);
  const labels = mergeMetadata(stored.labels, patch.labels, "labels");
  const annotations = mergeMetadata(stored.annotations, patch.annotations, "annotations");
  const managedFields = patch.managedFields ?? stored.managedFields;
  const finalizers = patch.finalizers ?? stored.finalizers;
  if (
    sameMetadata(labels, stored.labels) && sameMetadata(annotations, stored.annotations) &&
    managedFields === stored.managedFields && sameFinalizers(finalizers, stored.finalizers)
  ) {
    return {
      object: { ...stored, conditions: yield* readConditions(stored.id, viewer) },
      changed: false,
    };
  }
  const rv = scope.draw();
  yield* writeMetadata(scope, d, stored, { labels, annotations, managedFields, finalizers }, rv);
  const object: RawObject = {
    ...stored,
    labels,
    annotations,
    managedFields,
    finalizers: [...finalizers],
    resourceVersion: rv,
    updatedAt: new Date(scope.now),
    conditions: yield* readConditions(stored.id, viewer),
  };
  yield* appendWrite(scope, rv, stored, "update", object);
  return { object, changed: true };
}

/**
 * Runs a guarded one-row write made at the next version (`values` bind it,
 * read with `peekVersion`), with its log entry: chained into the statement
 * where the dialect can (`sql` then selects how many rows it wrote), else
 * appended. Whether it landed; the version is drawn only then.
 */
function* landed(
  scope: WriteScope,
  d: Dialect,
  ref: ObjectRef,
  sql: string,
  values: unknown[],
): Q<boolean> {
  if (d.chainsInserts) {
    const row = yield* q.get(
      sql,
      ...values,
      ...appendedFromValues(scope, scope.peekVersion(), ref),
    );
    if (Number(row!.n) !== 1) return false;
    journalWrite(scope, scope.draw(), ref, "update");
    return true;
  }
  if ((yield* q.run(sql, ...values)) !== 1) return false;
  yield* appendWrite(scope, scope.draw(), ref, "update");
  return true;
}

function* updateStatusBody(
  scope: WriteScope,
  d: Dialect,
  sql: string,
  ref: ObjectRef,
  input: ObjectsUpdateStatusInput,
  incoming: number,
) {
  // The gate read below only explains a write that did not land.
  const values = statusWriteValues(scope, ref, input.status, incoming, scope.peekVersion());
  if (yield* landed(scope, d, ref, sql, values)) return true;
  const row = yield* q.get(
    `SELECT "group", kind, status, status_version FROM objects WHERE id = ?`,
    ref.id,
  );
  assertKind(ref, row);
  // Throws on a lower version; otherwise the write changed nothing.
  stampVersion(Number(row.status_version), incoming, "status", ref.id);
  return false;
}

function* settleBody(scope: WriteScope, d: Dialect, ref: ObjectRef, generation: number) {
  // The gate read below only explains a write that did not land.
  const rv = scope.peekVersion();
  const settle = [generation, scope.now, rv, ref.id, ref.group, ref.kind, generation, generation];
  if (yield* landed(scope, d, ref, d.chainsInserts ? SETTLE_CHAINED : SETTLE_SQL, settle)) {
    return true;
  }
  const row = yield* q.get(
    `SELECT "group", kind, generation FROM objects WHERE id = ?`,
    ref.id,
  );
  assertKind(ref, row);
  if (generation > Number(row.generation)) {
    throw new ObservedGenerationFutureError(
      `Cannot record observed generation ${generation} for object ${ref.id}: its generation is ${row.generation}`,
    );
  }
  return false;
}

function* addFinalizerBody(scope: WriteScope, read: string, ref: ObjectRef, checked: string) {
  const row = yield* q.get(read, ref.id);
  assertKind(ref, row);
  if (row.deletion_requested_at !== null) {
    throw new DeletionPendingError(
      `Cannot add finalizer ${quote(checked)} to ${kindOf(ref)} ${
        quote(row.name as string)
      } (id ${ref.id}): its deletion is pending`,
    );
  }
  const finalizers = decodeFinalizers(row.finalizers, ref.id);
  if (finalizers.includes(checked)) return false;
  const rv = scope.draw();
  yield* q.run(
    "UPDATE objects SET finalizers = ?, resource_version = ?, updated_at = ? WHERE id = ?",
    JSON.stringify([...finalizers, checked]),
    rv,
    scope.now,
    ref.id,
  );
  yield* appendWrite(scope, rv, ref, "update");
  return true;
}

function* stalledBody(ref: ObjectRef, generation: number | undefined) {
  const row = yield* q.get(
    `SELECT "group", kind, generation, stalled_generation FROM objects WHERE id = ?`,
    ref.id,
  );
  assertKind(ref, row);
  if (generation !== undefined && generation > Number(row.generation)) {
    throw new ObservedGenerationFutureError(
      `Cannot record stalled generation ${generation} for object ${ref.id}: its generation is ${row.generation}`,
    );
  }
  const stored = row.stalled_generation === null ? undefined : Number(row.stalled_generation);
  if (stored === generation) return false;
  yield* q.run(
    "UPDATE objects SET stalled_generation = ? WHERE id = ?",
    generation ?? null,
    ref.id,
  );
  return true;
}

function* deleteFinalizerBody(scope: WriteScope, ref: ObjectRef, finalizer: string) {
  const row = yield* q.get(
    `SELECT "group", kind, finalizers, deletion_requested_at FROM objects WHERE id = ?`,
    ref.id,
  );
  assertKind(ref, row);
  const finalizers = decodeFinalizers(row.finalizers, ref.id);
  if (!finalizers.includes(finalizer)) return false;
  const remaining = finalizers.filter((f) => f !== finalizer);
  const rv = scope.draw();
  yield* q.run(
    "UPDATE objects SET finalizers = ?, resource_version = ?, updated_at = ? WHERE id = ?",
    JSON.stringify(remaining),
    rv,
    scope.now,
    ref.id,
  );
  yield* appendWrite(scope, rv, ref, "update");
  return remaining.length === 0 && row.deletion_requested_at !== null;
}

/** The label set row `id` names (`null` for none). */
function* storedLabelSet(id: ObjectId): Q<number | null> {
  const row = yield* q.row("SELECT label_set FROM objects WHERE id = ?", id);
  return row === undefined || row[0] === null ? null : Number(row[0]);
}

function* deleteBody(scope: WriteScope, d: Dialect, id: ObjectId, viewer: Viewer) {
  // The image is read before the delete cascades its conditions and edges away.
  const object = yield* readObject(id, viewer);
  const ownerRow = yield* q.get(
    `SELECT e.to_id AS id, o."group" AS "group", o.kind AS kind
     FROM edges e JOIN objects o ON o.id = e.to_id
     WHERE e.from_id = ? AND e.relation = 'owned_by' ORDER BY e.to_id LIMIT 1`,
    id,
  );
  yield* q.run("DELETE FROM edges WHERE from_id = ? AND to_id = ?", id, id);
  const labelSet = yield* storedLabelSet(id);
  try {
    yield* q.run("DELETE FROM objects WHERE id = ?", id);
    yield* releaseLabelSet(d, object, labelSet, object.labels);
  } catch (error) {
    if (d.isForeignKeyViolation(error)) {
      throw new StoreError(
        `Cannot delete object ${id}: other objects still hold edges pointing at it`,
        { cause: error },
      );
    }
    throw error;
  }
  const rv = scope.draw();
  const owner = ownerRow === undefined ? undefined : {
    id: Number(ownerRow.id),
    group: ownerRow.group as string,
    kind: ownerRow.kind as string,
  };
  const image = { ...object, resourceVersion: rv, ...(owner ? { owner } : {}) };
  yield* appendWrite(scope, rv, object, "delete", image);
}
