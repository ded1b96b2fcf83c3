/**
 * The Store port: the durable-store contract beehive's engine is written
 * against. Rows carry spec, status and event detail as JSON **text**; a store
 * never parses them. Each table family is a readonly property
 * (`store.objects.get(id)`).
 *
 * Rules every implementation MUST follow:
 * - Every member returns a promise and never throws synchronously.
 * - Failures are {@linkcode BeehiveError} subclasses: a driver's own error
 *   (e.g. a UNIQUE violation) is translated, never leaked. Once closed, every
 *   call rejects with `StoreClosedError`.
 * - A mutator commits atomically: when it rejects, nothing it did is visible.
 * - Resource versions come from one store-wide sequence: unique, increasing in
 *   commit order, never reused (gaps are allowed; consumers compare with `>`).
 * - Every stored instant comes from `Date.now()`, never from the database clock.
 *
 * @module
 */

/** The store-assigned identifier of an object: a positive safe integer, never reused. */
export type ObjectId = number;

/** The store-assigned identifier of an event run. */
export type EventId = number;

/** A kind of resource. An empty `group` is the core group. */
export interface GroupKind {
  /** The API group; `""` is the core group. */
  readonly group: string;
  /** The kind within the group. */
  readonly kind: string;
}

/** One object: its id plus the kind needed to route work to it. */
export interface ObjectRef extends GroupKind {
  /** The object's id. */
  readonly id: ObjectId;
}

/** One object addressed by name within its kind and namespace. */
export interface ObjectNameRef extends GroupKind {
  /** The object's name, unique within its kind and namespace. */
  readonly name: string;
  /**
   * The namespace the name is held in: a DNS-1123 label, or `""` (the
   * cluster scope, where every object of a cluster-scoped kind lives).
   * @default {""}
   */
  readonly namespace?: string;
}

/** A condition's status. */
export type ConditionStatus = "True" | "False" | "Unknown";

/** A condition as written. */
export interface ConditionInput {
  /** The condition's type; the key within its object. */
  readonly type: string;
  /** `"True"`, `"False"` or `"Unknown"`. */
  readonly status: ConditionStatus;
  /** A machine-readable reason. @default {""} */
  readonly reason?: string;
  /** A human-readable message. @default {""} */
  readonly message?: string;
  /**
   * Marks an in-process condition: valid only while the open of the store
   * that wrote it is alive. @default {false}
   */
  readonly liveness?: boolean;
}

/** A condition as read. */
export interface RawCondition {
  /** The condition's type. */
  readonly type: string;
  /** The status; `"Unknown"` when {@linkcode RawCondition.unconfirmed}. */
  readonly status: ConditionStatus;
  /** The reason, `""` when none. */
  readonly reason: string;
  /** The message, `""` when none. */
  readonly message: string;
  /** Whether this is a liveness condition. */
  readonly liveness: boolean;
  /**
   * True when the status was synthesized on read: a liveness condition whose
   * writing open of the store has closed (or whose process died) reads as
   * `"Unknown"` until rewritten.
   * Never stored; ignored on write.
   */
  readonly unconfirmed: boolean;
  /** When the status last changed. */
  readonly transitionedAt: Date;
  /** When the condition was last written. */
  readonly updatedAt: Date;
}

/** An object row without its conditions. */
export interface RawObjectMeta extends ObjectRef {
  /** Unique within its kind and namespace; never empty. */
  readonly name: string;
  /** The namespace (a DNS-1123 label), or `""` for the cluster scope; never changes. */
  readonly namespace: string;
  /** The desired state, as JSON text. */
  readonly spec: string;
  /** The observed state, as JSON text; `undefined` until first written. */
  readonly status: string | undefined;
  /** The migrator schema version the spec was written at (0 = unversioned). */
  readonly specVersion: number;
  /** The migrator schema version the status was written at (0 = unversioned). */
  readonly statusVersion: number;
  /** Starts at 1 and moves only with a real spec change. */
  readonly generation: number;
  /** The generation a controller last settled; `undefined` when never. */
  readonly observedGeneration: number | undefined;
  /** When the generation handshake was last recorded. */
  readonly observedAt: Date | undefined;
  /** The resource version of the last write that touched the row. */
  readonly resourceVersion: number;
  /** Set once deletion is requested; never cleared. */
  readonly deletionRequestedAt: Date | undefined;
  /** The durable count of owed reconcile passes; 0 when none. */
  readonly reconcileOwed: number;
  /** The finalizers holding the row after deletion is requested. */
  readonly finalizers: readonly string[];
  /**
   * The owner, set only on a delete entry's row image (the `owned_by` edge has
   * cascaded away by then); `undefined` on rows read from the live table.
   */
  readonly owner?: ObjectRef;
  /** When the object was created. */
  readonly createdAt: Date;
  /** When the content (spec, status, conditions, finalizers, deletion mark, metadata) last changed. */
  readonly updatedAt: Date;
  /** The labels, frozen, keys sorted; `{}` when none. */
  readonly labels: Readonly<Record<string, string>>;
  /** The annotations, frozen, keys sorted; `{}` when none. */
  readonly annotations: Readonly<Record<string, string>>;
  /**
   * The Kubernetes API's managed fields (which manager set which fields), as
   * JSON text; `"[]"` when none. The store keeps it with the row and never
   * reads it.
   */
  readonly managedFields: string;
}

/** An object row with its conditions, ordered by type. */
export interface RawObject extends RawObjectMeta {
  /** The object's conditions ordered by type; `[]` when none. */
  readonly conditions: readonly RawCondition[];
}

/** Everything {@linkcode Objects.create} accepts. */
export interface ObjectsCreateInput {
  /** Required, non-empty, well-formed UTF-16, unique within the kind and namespace. */
  readonly name: string;
  /**
   * The namespace: a DNS-1123 label of at most 63 characters, or `""` for the
   * cluster scope. The store does not know a kind's scope: the clients decide
   * which objects are namespaced. @default {""}
   */
  readonly namespace?: string;
  /** The spec as JSON text. */
  readonly spec: string;
  /** The migrator schema version `spec` was written at. @default {0} */
  readonly specVersion?: number;
  /** Finalizers to hold the row after deletion is requested. @default {[]} */
  readonly finalizers?: readonly string[];
  /** The labels, under Kubernetes' key and value rules. @default {{}} */
  readonly labels?: Readonly<Record<string, string>>;
  /** The annotations, under Kubernetes' key rules, 256 KiB in all. @default {{}} */
  readonly annotations?: Readonly<Record<string, string>>;
  /** The managed fields as JSON text (see {@linkcode RawObjectMeta.managedFields}). @default {"[]"} */
  readonly managedFields?: string;
}

/** A metadata write: JSON-merge patches of the labels and annotations. */
export interface ObjectsUpdateMetadataInput {
  /** Keys to set (a string) or remove (`null`). @default {undefined} (labels unchanged) */
  readonly labels?: Readonly<Record<string, string | null>>;
  /** Keys to set (a string) or remove (`null`). @default {undefined} (annotations unchanged) */
  readonly annotations?: Readonly<Record<string, string | null>>;
  /**
   * The managed fields to hold, whole, as JSON text; a change is a metadata
   * change. @default {undefined} (unchanged)
   */
  readonly managedFields?: string;
  /**
   * The finalizers to hold, whole (duplicates dropped); a change is a
   * metadata change. A deletion-pending row whose list this empties is
   * collectable. @default {undefined} (unchanged)
   */
  readonly finalizers?: readonly string[];
  /**
   * A precondition as in {@linkcode ObjectsUpdateSpecInput.resourceVersion}.
   * @default {undefined} (no precondition)
   */
  readonly resourceVersion?: number;
}

/** The outcome of a metadata write. */
export interface ObjectsUpdateMetadataResult {
  /** The row after the write (the stored row when nothing changed), with conditions. */
  readonly object: RawObject;
  /** Whether the write changed the row. */
  readonly changed: boolean;
}

/** A label selector requirement's operator, as Kubernetes spells it. */
export type LabelSelectorOperator = "In" | "NotIn" | "Exists" | "DoesNotExist";

/**
 * One requirement of a label selector. `In`: the label is present with one of
 * `values`; `NotIn`: absent, or present with none of them; `Exists`: present;
 * `DoesNotExist`: absent (`values` empty for these two).
 */
export interface LabelRequirement {
  /** The label key. */
  readonly key: string;
  /** How the label is tested. */
  readonly operator: LabelSelectorOperator;
  /** The values `In` and `NotIn` test against (non-empty for them). */
  readonly values: readonly string[];
}

/** A spec write. */
export interface ObjectsUpdateSpecInput {
  /** The new spec as JSON text. */
  readonly spec: string;
  /** The schema version `spec` is written at; 0 keeps the stored tag. @default {0} */
  readonly specVersion?: number;
  /**
   * A precondition: the write applies only while the row's resource version
   * is exactly this, compared inside the write transaction.
   * @default {undefined} (no precondition)
   */
  readonly resourceVersion?: number;
  /**
   * Keys of the labels to set (a string) or remove (`null`), written with the
   * spec as one version and one log entry. @default {undefined} (labels unchanged)
   */
  readonly labels?: Readonly<Record<string, string | null>>;
  /** As `labels`, for the annotations. @default {undefined} (annotations unchanged) */
  readonly annotations?: Readonly<Record<string, string | null>>;
  /** The managed fields to hold, whole, as JSON text, in the same write. @default {undefined} (unchanged) */
  readonly managedFields?: string;
  /** The finalizers to hold, whole, in the same write. @default {undefined} (unchanged) */
  readonly finalizers?: readonly string[];
}

/** One page of an id-ordered listing. */
export interface ObjectsListPage {
  /** Only ids strictly above this (an integer ≥ 0). @default {0} */
  readonly after?: number;
  /** At most this many rows (an integer ≥ 1). @default {undefined} (no bound) */
  readonly limit?: number;
  /**
   * Only rows whose labels meet every requirement (AND). A store answers from
   * an index of the labels: a requirement of `In` or `Exists` reads only the
   * rows carrying that label. @default {undefined} (every row)
   */
  readonly labelSelector?: readonly LabelRequirement[];
  /**
   * Only rows in this namespace (`""` is the cluster scope).
   * @default {undefined} (every namespace)
   */
  readonly namespace?: string;
}

/** The outcome of a spec write. */
export interface ObjectsUpdateSpecResult {
  /** The row after the write (the stored row when nothing changed), with conditions. */
  readonly object: RawObject;
  /** Whether the write changed the row (its spec, labels or annotations). */
  readonly changed: boolean;
  /** Whether the spec changed (the generation moved); callers enqueue a reconcile on it. */
  readonly specChanged: boolean;
}

/** A status write. */
export interface ObjectsUpdateStatusInput {
  /** The new status as JSON text. */
  readonly status: string;
  /** The schema version `status` is written at; 0 keeps the stored tag. @default {0} */
  readonly statusVersion?: number;
}

/** Everything one reconcile pass needs from its opening read. */
export interface ReconcileLoad {
  /** The object, with conditions. */
  readonly object: RawObject;
  /**
   * The store-wide write cursor, sampled **before** the object was read: it may
   * lag a committed write the object reflects, but never leads one.
   */
  readonly cursor: number;
  /** Whether the object had an outgoing `depends_on` edge at load. */
  readonly hasDependencies: boolean;
  /**
   * The generation a permanent failure stalled the object at (see
   * {@linkcode Objects.setStalledGeneration}); `undefined` when none is recorded.
   */
  readonly stalledGeneration: number | undefined;
}

/** Options of {@linkcode Objects.listIds}. */
export interface ObjectsListIdsOptions {
  /**
   * Leaves out objects stalled at their current generation (their stalled
   * generation equals their generation). @default {false}
   */
  readonly excludeStalled?: boolean;
}

/** The objects table. */
export interface Objects {
  /**
   * Inserts an object of kind `gk`: generation 1, no status, owed count 0, and a
   * `"create"` entry in the write log at the row's resource version.
   * @throws {InvalidNameError} `name` is empty or not well-formed UTF-16, or `namespace` is not a DNS-1123 label.
   * @throws {InvalidMetadataError} a label or annotation breaks the rules.
   * @throws {NameTakenError} the name is held within the kind and namespace (deletion-pending rows included).
   */
  create(gk: GroupKind, input: ObjectsCreateInput): Promise<RawObject>;

  /** Loads an object with its conditions. @throws {NotFoundError} no such id. */
  get(id: ObjectId): Promise<RawObject>;

  /**
   * Loads the object holding `ref.name` within its kind and `ref.namespace`.
   * @throws {NotFoundError} the name is not held there.
   * @throws {InvalidNameError} `ref.namespace` is not a DNS-1123 label.
   */
  getByName(ref: ObjectNameRef): Promise<RawObject>;

  /** {@linkcode Objects.get} without the conditions query. @throws {NotFoundError} no such id. */
  getMeta(id: ObjectId): Promise<RawObjectMeta>;

  /**
   * {@linkcode Objects.getByName} without conditions. A name held by another
   * kind or in another namespace is not found (both are part of the key).
   * @throws {NotFoundError} the name is not held within the kind and namespace.
   */
  getMetaByName(ref: ObjectNameRef): Promise<RawObjectMeta>;

  /**
   * The reconcile loop's opening read: the object with conditions, the write
   * cursor sampled before it, and whether it has dependencies.
   * @throws {NotFoundError} the row is gone.
   */
  getForReconcile(id: ObjectId): Promise<ReconcileLoad>;

  /**
   * The objects of kind `gk`, ordered by id, with conditions: every one, or
   * the page `page` bounds (ids above `after`, at most `limit`, matching
   * `labelSelector`, in `namespace`).
   * @throws {TypeError} `after` or `limit` is malformed.
   * @throws {InvalidNameError} `namespace` is not a DNS-1123 label.
   * @throws {InvalidOptionError} `labelSelector` is malformed.
   */
  list(gk: GroupKind, page?: ObjectsListPage): Promise<RawObject[]>;

  /**
   * The objects of kind `gk` among `ids`, ordered by id. Ids naming nothing or
   * another kind are absent: a short result is normal.
   */
  listByIds(gk: GroupKind, ids: readonly ObjectId[]): Promise<RawObject[]>;

  /**
   * The objects of kind `gk` with a `relation` edge to `toId`, ordered by id,
   * with conditions, bounded by `page` as in {@linkcode Objects.list}. No edge
   * reads as `[]`, never an error.
   */
  listByIncomingEdge(
    gk: GroupKind,
    edge: IncomingEdgeQuery,
    page?: ObjectsListPage,
  ): Promise<RawObject[]>;

  /**
   * The ids of every object of kind `gk`, ascending; with `excludeStalled`,
   * without the objects stalled at their current generation.
   */
  listIds(gk: GroupKind, options?: ObjectsListIdsOptions): Promise<ObjectId[]>;

  /**
   * The ids of objects of kind `gk` whose observed generation is behind their
   * generation, ascending, leaving out objects stalled at their current
   * generation (a stall is settled business until the spec moves).
   */
  listUnsettledIds(gk: GroupKind): Promise<ObjectId[]>;

  /**
   * The namespaces holding at least one object of kind `gk`, each once, in
   * ascending code-unit order; the cluster scope (`''`) is left out. Reads the
   * namespace index, not the rows: the cost follows the namespaces, not the
   * objects.
   */
  listNamespaces(gk: GroupKind): Promise<string[]>;

  /**
   * Records that a permanent failure stalled the object at `generation`, or
   * clears the record (`undefined`). Bookkeeping like the owed count: bumps no
   * resource version, touches no `updatedAt` and logs nothing. The record
   * counts only while it equals the row's generation: a spec change lifts the
   * stall without a write here. Resolves to whether the stored value changed.
   * @throws {InvalidObservedGenerationError} `generation` is neither `undefined` nor an integer ≥ 1.
   * @throws {ObservedGenerationFutureError} `generation` exceeds the row's generation.
   * @throws {NotFoundError} no such id.
   * @throws {WrongKindError} the id belongs to another kind.
   */
  setStalledGeneration(ref: ObjectRef, generation: number | undefined): Promise<boolean>;

  /**
   * Replaces the spec, bumping generation and resource version and appending
   * an `"update"` write-log entry. Identical JSON text at the row's own schema
   * version is a no-op (`changed: false`, nothing written). Label and
   * annotation patches given with it land in the same write (one version, one
   * entry); with the spec unchanged they write as {@linkcode Objects.updateMetadata}. A deletion-pending
   * row is refused **before** the schema-version stamp and the byte compare,
   * and nothing is logged. A `resourceVersion` precondition is checked first
   * of all (after the row is found): a mismatch is refused even when the
   * write would be a no-op.
   * @throws {NotFoundError} no such id.
   * @throws {WrongKindError} the id belongs to another kind.
   * @throws {ConflictError} `resourceVersion` is set and the row's differs (carries the row's).
   * @throws {DeletionPendingError} the row's deletion was requested.
   * @throws {SchemaVersionDowngradeError} `specVersion` is non-zero and below the stored one.
   * @throws {InvalidMetadataError} a label or annotation patch breaks the rules; nothing is written.
   */
  updateSpec(ref: ObjectRef, input: ObjectsUpdateSpecInput): Promise<ObjectsUpdateSpecResult>;

  /**
   * {@linkcode Objects.updateSpec} keyed by name (within the kind and
   * `ref.namespace`), resolved and written in one transaction.
   * @throws {NotFoundError} the name is not held within the kind and namespace.
   * @throws {ConflictError} `resourceVersion` is set and the row's differs (carries the row's).
   * @throws {DeletionPendingError} the row's deletion was requested.
   * @throws {SchemaVersionDowngradeError} `specVersion` is non-zero and below the stored one.
   */
  updateSpecByName(
    ref: ObjectNameRef,
    input: ObjectsUpdateSpecInput,
  ): Promise<ObjectsUpdateSpecResult>;

  /**
   * Applies JSON-merge patches to the labels and annotations (a string sets a
   * key, `null` removes it). A change bumps the resource version and
   * `updatedAt` and logs an `"update"`, never the generation; a patch that
   * changes nothing writes nothing. The precondition is checked first, as in
   * {@linkcode Objects.updateSpec}; a deletion-pending row takes metadata writes.
   * @throws {InvalidMetadataError} a key or value breaks the rules, or the merged annotations are above 256 KiB.
   * @throws {NotFoundError} no such id.
   * @throws {WrongKindError} the id belongs to another kind.
   * @throws {ConflictError} `resourceVersion` is set and the row's differs (carries the row's).
   */
  updateMetadata(
    ref: ObjectRef,
    input: ObjectsUpdateMetadataInput,
  ): Promise<ObjectsUpdateMetadataResult>;

  /**
   * Replaces the status. Changed text bumps resource version and `updatedAt`
   * and logs an `"update"`; identical text at the row's schema version writes
   * nothing. Never touches the generation handshake. Resolves to whether it wrote.
   * @throws {NotFoundError} no such id.
   * @throws {WrongKindError} the id belongs to another kind.
   * @throws {SchemaVersionDowngradeError} `statusVersion` is non-zero and below the stored one.
   */
  updateStatus(ref: ObjectRef, input: ObjectsUpdateStatusInput): Promise<boolean>;

  /**
   * Records `generation` as settled. Advancing it bumps `observedAt` and the
   * resource version (not `updatedAt`) and logs an `"update"`; a generation at
   * or below the recorded one writes nothing. Resolves to whether it wrote.
   * @throws {InvalidObservedGenerationError} `generation` is not an integer ≥ 1.
   * @throws {ObservedGenerationFutureError} `generation` exceeds the row's generation.
   * @throws {NotFoundError} no such id.
   * @throws {WrongKindError} the id belongs to another kind.
   */
  setObservedGeneration(ref: ObjectRef, generation: number): Promise<boolean>;

  /**
   * Appends `finalizer` to the row's list; a real addition bumps the resource
   * version and `updatedAt` and logs an `"update"`, one already present writes
   * nothing. Resolves to whether it added.
   * @throws {InvalidOptionError} `finalizer` is empty, or not well-formed UTF-16 without NUL.
   * @throws {NotFoundError} no such id.
   * @throws {WrongKindError} the id belongs to another kind.
   * @throws {DeletionPendingError} the row's deletion was requested (checked before presence).
   */
  addFinalizer(ref: ObjectRef, finalizer: string): Promise<boolean>;

  /**
   * Removes `finalizer` from the row's list; a real removal bumps the resource
   * version and logs an `"update"`. Resolves to `true` when this call removed
   * the last finalizer of a deletion-pending row.
   * @throws {NotFoundError} no such id.
   * @throws {WrongKindError} the id belongs to another kind.
   */
  deleteFinalizer(ref: ObjectRef, finalizer: string): Promise<boolean>;

  /**
   * Physically removes the row (collection): conditions, events, outgoing
   * edges and watermark cascade away, and a `"delete"` entry carrying the full
   * row image (conditions and owner included) is logged at a new resource
   * version. Callers ensure finalizers are empty first.
   * @throws {NotFoundError} no such id (a second delete of one row).
   * @throws {StoreError} something still points at the row (edge RESTRICT).
   */
  delete(id: ObjectId): Promise<void>;
}

/** Selects the sources of edges into one target. */
export interface IncomingEdgeQuery {
  /** The edges' target. */
  readonly toId: ObjectId;
  /** The edges' relation. */
  readonly relation: Relation;
}

/** The per-object condition table. */
export interface Conditions {
  /**
   * Upserts `conditions` together: one resource-version bump and one write-log
   * entry for the batch; a batch whose every member matches what is stored
   * writes nothing, and so does an empty batch. A liveness condition written
   * through another open is never a match, so re-confirming it rewrites it.
   * `transitionedAt` moves only when a status changes.
   * @throws {InvalidConditionError} a bad status, an empty type, or text that is not well-formed UTF-16.
   * @throws {DuplicateConditionTypeError} the batch names one type twice.
   * @throws {NotFoundError} no such id.
   * @throws {WrongKindError} the id belongs to another kind.
   */
  set(ref: ObjectRef, conditions: readonly ConditionInput[]): Promise<void>;

  /**
   * Removes the condition of type `type`; a real removal bumps the resource
   * version and logs an `"update"`, a missing one does nothing.
   * @throws {NotFoundError} no such id.
   * @throws {WrongKindError} the id belongs to another kind.
   */
  delete(ref: ObjectRef, type: string): Promise<void>;
}

/** The kind of an edge. */
export type Relation = "owned_by" | "depends_on";

/** One directed edge. */
export interface EdgeKey {
  /** The source: the owned child, or the dependent. */
  readonly fromId: ObjectId;
  /** The target: the owner, or the dependency. */
  readonly toId: ObjectId;
  /** `"owned_by"` (deleting the target cascades) or `"depends_on"` (a target change requeues the source). */
  readonly relation: Relation;
}

/** What a caller needs to follow up on an edge it declared. */
export interface EdgesAddResult {
  /** The target's kind. */
  readonly to: GroupKind;
  /** Whether the target was deletion-pending when the edge landed. */
  readonly toDeleting: boolean;
  /** Whether this call incremented the source's owed count (a new non-self `depends_on` edge). */
  readonly reconcileOwedStamped: boolean;
}

/** What a caller needs to follow up on an edge it dropped. */
export interface EdgesDeleteResult {
  /** The target's kind; set only when {@linkcode EdgesDeleteResult.unblocked}. */
  readonly to: GroupKind | undefined;
  /** This call removed a `depends_on` edge from a live source to a deletion-pending target. */
  readonly unblocked: boolean;
}

/** The `owned_by` and `depends_on` edge table. */
export interface Edges {
  /**
   * Inserts the edge; idempotent. Bumps no resource version and logs nothing.
   * A new non-self `depends_on` edge increments the source's owed count and
   * clears its dependency watermark, atomically with the insert. An
   * `owned_by` target is in its source's namespace or cluster-scoped (`""`).
   * @throws {NotFoundError} either endpoint does not exist.
   * @throws {InvalidOptionError} an `owned_by` target in another namespace than its source's.
   */
  add(edge: EdgeKey): Promise<EdgesAddResult>;

  /** Removes the edge; a missing one does nothing. */
  delete(edge: EdgeKey): Promise<EdgesDeleteResult>;

  /** Removes the `depends_on` edges into `toId` whose source is itself deletion-pending. */
  deleteFinalizingDependsOn(toId: ObjectId): Promise<void>;

  /**
   * Whether anything with a live claim points at `id`: any `owned_by` edge, or
   * a `depends_on` edge from a source that is not deletion-pending.
   */
  hasIncoming(id: ObjectId): Promise<boolean>;

  /** The sources pointing at `toId` through `relation`, ordered by id. */
  listIncoming(query: IncomingEdgeQuery): Promise<ObjectRef[]>;

  /** The targets `fromId` points at through `relation`, ordered by id. */
  listOutgoing(fromId: ObjectId, relation: Relation): Promise<ObjectRef[]>;

  /** {@linkcode Edges.listIncoming} for many targets, grouped by target id; empty targets are absent. */
  groupIncomingByIds(
    toIds: readonly ObjectId[],
    relation: Relation,
  ): Promise<Map<ObjectId, ObjectRef[]>>;

  /** {@linkcode Edges.listOutgoing} for many sources, grouped by source id; empty sources are absent. */
  groupOutgoingByIds(
    fromIds: readonly ObjectId[],
    relation: Relation,
  ): Promise<Map<ObjectId, ObjectRef[]>>;
}

/** The outcome of a deletion mark. */
export interface DeletionRequestResult {
  /** The row that was marked; meaningful only when `marked`. */
  readonly id: ObjectId | undefined;
  /** Whether this call set the mark; a repeat reports `false`. */
  readonly marked: boolean;
  /**
   * The deletion-pending targets this row points at through `depends_on`,
   * whose block the mark lifted. Empty unless `marked`.
   */
  readonly unblocked: readonly ObjectRef[];
}

/** One owned child of a cascade. */
export interface DeletionCascadeChild {
  /** The child. */
  readonly ref: ObjectRef;
  /** Whether this call marked it (false when it was already deletion-pending). */
  readonly marked: boolean;
}

/** The outcome of a cascade. */
export interface DeletionCascadeResult {
  /** Every owned child, marked by this call or already deleting. */
  readonly children: readonly DeletionCascadeChild[];
  /** The deletion-pending `depends_on` targets of the children this call marked. */
  readonly unblocked: readonly ObjectRef[];
}

/** Options of {@linkcode DeletionRequests.create}. */
export interface DeletionRequestsCreateOptions {
  /**
   * A precondition: mark only while the row's resource version is exactly
   * this, compared inside the write transaction (a repeat on an already
   * marked row is checked too). @default {undefined} (no precondition)
   */
  readonly resourceVersion?: number;
}

/** The deletion-request lifecycle. */
export interface DeletionRequests {
  /**
   * Sets `deletionRequestedAt` (bumping the resource version and logging an
   * `"update"`); a repeat writes nothing and reports `marked: false`.
   * @throws {NotFoundError} no such id.
   * @throws {WrongKindError} the id belongs to another kind.
   * @throws {ConflictError} `resourceVersion` is set and the row's differs (carries the row's).
   */
  create(ref: ObjectRef, options?: DeletionRequestsCreateOptions): Promise<DeletionRequestResult>;

  /** {@linkcode DeletionRequests.create} keyed by name. @throws {NotFoundError} the name is not held. */
  createByName(ref: ObjectNameRef): Promise<DeletionRequestResult>;

  /** Marks every object owned by `ownerId` that is not already deletion-pending, in one transaction. */
  createFromOwner(ownerId: ObjectId): Promise<DeletionCascadeResult>;

  /**
   * Every deletion-pending object of every kind, ordered by id; with
   * `excludeStalled`, without the objects stalled at their current generation.
   */
  list(options?: ObjectsListIdsOptions): Promise<ObjectRef[]>;
}

/** A position in the stale-dependents scan. The zero position starts at the beginning. */
export interface StalePos {
  /** The resource version of the target whose write put the dependent in scope. */
  readonly targetVersion: number;
  /** The target's id. */
  readonly targetId: ObjectId;
  /** The dependent's id. */
  readonly dependentId: ObjectId;
}

/** Bounds one page of {@linkcode Dependencies.listStaleSince}. */
export interface ListStaleSinceOptions {
  /** Resume strictly after this position. */
  readonly after: StalePos;
  /** Consider only targets written at or below this resource version. */
  readonly through: number;
  /** At most this many rows; non-positive reads nothing. */
  readonly limit: number;
}

/** One page of the stale-dependents scan. */
export interface ListStaleSinceResult {
  /** One row per (moved target, dependent) pair, in scan order. */
  readonly dependents: ObjectRef[];
  /** The position of the last row (the `after` position when the page is empty). */
  readonly position: StalePos;
}

/** The dependency watermarks and the staleness scan derived from them. */
export interface Dependencies {
  /**
   * Dependents of the given kinds whose `depends_on` target's resource version
   * is above their watermark (a missing watermark is stale), for targets
   * written above `after` and at or below `through`. The kind filter applies
   * to the dependent only. Self-edges are excluded; no kinds reads nothing.
   */
  listStaleSince(
    kinds: readonly GroupKind[],
    options: ListStaleSinceOptions,
  ): Promise<ListStaleSinceResult>;

  /**
   * Records `cursor` as what `id`'s last successful reconcile observed. Only
   * rises; writes only for an object with an outgoing `depends_on` edge; bumps
   * no resource version.
   */
  watermarkSet(id: ObjectId, cursor: number): Promise<void>;
}

/** Persisted scan positions of periodic drivers. */
export interface DriverCursors {
  /** The cursor last persisted under `name`, or `undefined` when none has been. */
  get(name: string): Promise<number | undefined>;
  /** Persists `cursor` under `name` if it is above the stored one; otherwise writes nothing. */
  set(name: string, cursor: number): Promise<void>;
}

/** An event run as read. */
export interface RawEvent {
  /** The run's id. */
  readonly id: EventId;
  /** The object the run belongs to. */
  readonly objectId: ObjectId;
  /** The timeline; `""` is the default. */
  readonly category: string;
  /** `"Normal"` or `"Warning"`. */
  readonly type: "Normal" | "Warning";
  /** The reason shared by every observation in the run. */
  readonly reason: string;
  /** The latest observation's message, `""` when none. */
  readonly message: string;
  /** The latest observation's detail as JSON text, `undefined` when none. */
  readonly detail: string | undefined;
  /** How many observations the run holds. */
  readonly count: number;
  /** When the run started. */
  readonly firstAt: Date;
  /** When the run was last extended. */
  readonly lastAt: Date;
  /** Re-drawn on every extend. */
  readonly resourceVersion: number;
  /** The namespace of the object the run belongs to (`""` for the cluster scope). */
  readonly namespace: string;
}

/** Everything {@linkcode Events.add} accepts. */
export interface EventsAddInput {
  /** The timeline. @default {""} */
  readonly category?: string;
  /** `"Normal"` or `"Warning"`. */
  readonly type: "Normal" | "Warning";
  /** Non-empty. */
  readonly reason: string;
  /** A human-readable message. @default {""} */
  readonly message?: string;
  /** A JSON payload, as JSON text. @default {undefined} */
  readonly detail?: string;
}

/** Filters one event read. */
export interface EventQuery {
  /** Only this timeline (`""` included); `undefined` reads every timeline. */
  readonly category?: string;
  /** Only this type. */
  readonly type?: "Normal" | "Warning";
  /** Only this reason. */
  readonly reason?: string;
  /** Only runs whose `lastAt` is at or after this instant (millisecond resolution). */
  readonly since?: Date;
  /** Only the newest N runs; 0 = no limit. @default {0} */
  readonly limit?: number;
}

/** One page of an event tail. */
export interface EventsListSinceResult {
  /** Runs above the position, oldest first. */
  readonly events: RawEvent[];
  /** The highest resource version retention removed (0 when none). */
  readonly trimmedThrough: number;
}

/** Bounds one page of {@linkcode Events.listSince}. */
export interface EventsListSinceOptions {
  /** Read runs strictly above this resource version. */
  readonly after: number;
  /** At most this many runs; non-positive reads nothing. */
  readonly limit: number;
  /** Selects which timeline's horizon is reported; `undefined` = the max over timelines. */
  readonly category?: string;
}

/** A listing and the log position it is complete as of. */
export interface Snapshot<T> {
  /** The rows. */
  readonly items: T[];
  /** The position: nothing at or below it is missing from `items`. */
  readonly resourceVersion: number;
}

/** Retention bounds for {@linkcode Events.sweep}. */
export interface EventsSweepOptions {
  /** Keep each timeline's newest N runs; 0 = unbounded. */
  readonly perTimeline: number;
  /** Drop runs whose `lastAt` is older than this many ms; 0 = unbounded. */
  readonly maxAge: number;
  /** At most this many timelines trimmed by the cap per call; ≤ 0 = the store's choice. */
  readonly capBudget?: number;
}

/** The per-object event log, aggregated into runs. */
export interface Events {
  /**
   * Records an observation in the `(id, category)` timeline: extends the
   * timeline's newest run when type and reason match, else starts a run.
   * Draws a resource version; bumps no object row and logs no object write.
   * @throws {InvalidEventError} bad type, empty reason, or text that is not well-formed UTF-16.
   * @throws {NotFoundError} no such id.
   * @throws {WrongKindError} the id belongs to another kind.
   */
  add(ref: ObjectRef, input: EventsAddInput): Promise<void>;

  /** The newest run in `id`'s `category` timeline, or `undefined`. */
  getLatest(id: ObjectId, category: string): Promise<RawEvent | undefined>;

  /** `id`'s runs matching `query`, newest first (by `lastAt`, then id). */
  list(id: ObjectId, query?: EventQuery): Promise<RawEvent[]>;

  /**
   * `id`'s runs above `options.after`, oldest first, across every timeline,
   * read atomically with the retention horizon.
   * @throws {NotFoundError} `id` holds no object (its log went with it).
   */
  listSince(id: ObjectId, options: EventsListSinceOptions): Promise<EventsListSinceResult>;

  /** The highest resource version over `id`'s runs; 0 when none. Not monotonic. */
  maxVersion(id: ObjectId): Promise<number>;

  /** {@linkcode Events.list} and {@linkcode Events.maxVersion} read in one transaction. */
  snapshot(id: ObjectId, query?: EventQuery): Promise<Snapshot<RawEvent>>;

  /** Trims the log to the bounds, raising each timeline's horizon; resolves to the runs deleted. */
  sweep(options: EventsSweepOptions): Promise<number>;
}

/** What a write-log entry recorded. A soft delete is an `"update"`; only collection is `"delete"`. */
export type WriteOp = "create" | "update" | "delete";

/** A write-log entry. */
export interface ObjectWrite {
  /** The object written. */
  readonly id: ObjectId;
  /** The resource version the write gave the row. */
  readonly resourceVersion: number;
  /** The object's group. */
  readonly group: string;
  /** The object's kind. */
  readonly kind: string;
  /** What the write did. */
  readonly op: WriteOp;
  /** The row image at collection; set exactly on `"delete"` entries. */
  readonly final: RawObject | undefined;
  /**
   * Which open of the store committed the write (compare with
   * {@linkcode Store.origin}); set on `listSinceAll` entries, so a process
   * can tell another process's writes from its own.
   */
  readonly origin?: number;
}

/** Bounds one page of a write-log tail. */
export interface ObjectWritesListSinceOptions {
  /** Read entries strictly above this resource version. */
  readonly after: number;
  /** At most this many entries; non-positive reads nothing. */
  readonly limit: number;
}

/** One page of a write-log tail. */
export interface ObjectWritesListSinceResult {
  /** Entries above the position, ascending. */
  readonly writes: ObjectWrite[];
  /**
   * The highest resource version retention removed: a position below it lost
   * entries unread (equality lost nothing).
   */
  readonly trimmedThrough: number;
}

/** The store-wide write-log position. */
export interface ObjectWritesMaxVersionAllResult {
  /** The log's bare maximum; not monotonic. */
  readonly at: number;
  /** The highest version retention removed from any kind; 0 when none. */
  readonly trimmedThrough: number;
}

/** Retention bounds for {@linkcode ObjectWrites.sweep}. */
export interface ObjectWritesSweepOptions {
  /** Keep each kind's newest N entries; 0 = unbounded. */
  readonly perKind: number;
  /** Drop entries written more than this many ms ago; 0 = unbounded. */
  readonly maxAge: number;
}

/** Options of {@linkcode ObjectWrites.snapshot}. */
export interface ObjectWritesSnapshotOptions {
  /** Only rows whose labels meet every requirement. @default {undefined} (every row) */
  readonly labelSelector?: readonly LabelRequirement[];
  /** Only rows in this namespace. @default {undefined} (every namespace) */
  readonly namespace?: string;
}

/** The append-only object write log. */
export interface ObjectWrites {
  /**
   * Kind `gk`'s entries above `after`, ascending, with the horizon and the
   * delete entries' row images read in one transaction.
   */
  listSince(
    gk: GroupKind,
    options: ObjectWritesListSinceOptions,
  ): Promise<ObjectWritesListSinceResult>;

  /**
   * Every kind's entries above `after`, ascending, without row images. An
   * empty page reports a horizon of 0.
   */
  listSinceAll(options: ObjectWritesListSinceOptions): Promise<ObjectWritesListSinceResult>;

  /** Kind `gk`'s log position: max(its newest entry, its horizon). Only rises. */
  maxVersion(gk: GroupKind): Promise<number>;

  /** The store-wide bare maximum and horizon, reported apart. */
  maxVersionAll(): Promise<ObjectWritesMaxVersionAllResult>;

  /**
   * Every object of kind `gk` (or those matching `options.labelSelector`, as
   * in {@linkcode Objects.list}) and the kind's position, read in one transaction.
   * @throws {InvalidOptionError} `labelSelector` is malformed.
   */
  snapshot(gk: GroupKind, options?: ObjectWritesSnapshotOptions): Promise<Snapshot<RawObject>>;

  /** One object (or none, when missing or of another kind) and its kind's position. */
  snapshotById(gk: GroupKind, id: ObjectId): Promise<Snapshot<RawObject>>;

  /** The objects of kind `gk` owned by `ownerId` and the kind's position. */
  snapshotByOwner(gk: GroupKind, ownerId: ObjectId): Promise<Snapshot<RawObject>>;

  /**
   * Trims the log to the bounds, raising each affected kind's horizon in the
   * same transaction; resolves to the entries deleted.
   */
  sweep(options: ObjectWritesSweepOptions): Promise<number>;
}

/** The durable count of reconcile passes an object is owed. */
export interface ReconcileOwed {
  /**
   * Subtracts `observed` (the count a pass loaded) from the owed count,
   * floored at 0. A row that is gone is not an error.
   * @throws {WrongKindError} the id belongs to another kind.
   */
  decrement(ref: ObjectRef, observed: number): Promise<void>;

  /**
   * The ids of objects of kind `gk` with a non-zero owed count, stalled ones
   * included: a stalled pass consumes the count it loaded, so a count left is
   * a wake (a new dependency, a dependency's change) that lifts the stall.
   */
  listIds(gk: GroupKind): Promise<ObjectId[]>;

  /** Increments the owed count once per distinct ref; ids that are gone are skipped. */
  stamp(refs: readonly ObjectRef[]): Promise<void>;

  /** Zeroes the owed count of every object whose kind is not in `keep`; resolves to rows cleared. */
  sweep(keep: readonly GroupKind[]): Promise<number>;
}

/** A named lease as read. */
export interface RawLease {
  /** The lease's name. */
  readonly name: string;
  /** Who holds it, `undefined` when it is free (released, or never taken). */
  readonly holder: string | undefined;
  /**
   * The fencing token: grows by one on every change of holder and never
   * otherwise, and is never reused, across releases and reopens.
   */
  readonly epoch: number;
  /** When the holder took it (Unix ms), `undefined` when free. */
  readonly acquiredAt: number | undefined;
  /**
   * When a timed lease lapses unless renewed (Unix ms). `undefined` when free,
   * and for a held lock (see {@linkcode Leases.hold}), which lasts exactly as
   * long as its holder's process or connection.
   */
  readonly expiresAt: number | undefined;
}

/** What {@linkcode Leases.acquire} takes. */
export interface LeaseAcquireInput {
  /** The lease's name. */
  readonly name: string;
  /** The candidate's identity. */
  readonly holder: string;
  /** How long the lease lasts unless renewed, in ms (> 0). */
  readonly duration: number;
}

/** What {@linkcode Leases.acquire} resolves to. */
export interface LeaseAcquireResult {
  /** Whether `holder` holds the lease now. */
  readonly acquired: boolean;
  /** The lease as it stands after the call. */
  readonly lease: RawLease;
}

/** What {@linkcode Leases.renew} and {@linkcode Leases.release} take. */
export interface LeaseTermInput {
  /** The lease's name. */
  readonly name: string;
  /** The holder's identity. */
  readonly holder: string;
  /** The epoch the holder's term began with. */
  readonly epoch: number;
}

/** What {@linkcode Leases.renew} takes. */
export interface LeaseRenewInput extends LeaseTermInput {
  /** How long the lease lasts from now, in ms (> 0). */
  readonly duration: number;
}

/** A lock taken by {@linkcode Leases.hold}. */
export interface HeldLease {
  /** The lease as it stood when taken. */
  readonly lease: RawLease;
  /** Frees the lease at once. Idempotent. */
  release(): Promise<void>;
  /**
   * Aborts, with the reason, when the store finds the lock lost while held,
   * so that another process can take the lease — on SQLite, its lock file
   * beside the database was deleted or replaced; on PostgreSQL, the
   * connection holding its advisory lock failed — and never on `release`.
   * Absent where the store cannot lose a held lock that way.
   */
  readonly lost?: AbortSignal;
}

/**
 * The lease family: named leases with monotonic fencing epochs. A timed lease
 * (`acquire`/`renew`/`release`) lapses at `expiresAt`; a held lock (`hold`)
 * lasts exactly as long as its holder's process (or connection) and costs no
 * write while held. A name is either kind at one time: a live holder of one
 * kind keeps the other out.
 */
export interface Leases {
  /** The lease `name`, or `undefined` when it was never taken. */
  get(name: string): Promise<RawLease | undefined>;

  /**
   * Takes the timed lease when it is free, lapsed, or already `holder`'s
   * (then it renews, keeping the epoch). A change of holder grows the epoch
   * by one. When another live holder has it, resolves with `acquired: false`.
   * @throws {TypeError} a malformed name, holder or duration.
   */
  acquire(input: LeaseAcquireInput): Promise<LeaseAcquireResult>;

  /**
   * Extends `holder`'s term from now, keeping the epoch; resolves to the
   * lease, or `undefined` when the term is over (another holder, another
   * epoch, or released). A lapsed lease nobody else took renews.
   */
  renew(input: LeaseRenewInput): Promise<RawLease | undefined>;

  /** Frees the lease at once if `holder` still holds it in `epoch`; resolves to whether it did. */
  release(input: LeaseTermInput): Promise<boolean>;

  /**
   * Takes the lease as a lock that lasts exactly as long as this process (or
   * connection): a holder that crashes or is killed frees it at once, with no
   * expiry to wait for. Holding it writes nothing. A timed lease of the same
   * name keeps it out until this open has seen that lease's term unchanged
   * for its duration (as {@linkcode Leases.acquire} judges it), never by
   * comparing the expiry another host wrote with this one's clock.
   * @throws {StoreInUseError} another live holder has the lease; the message names it.
   */
  hold(name: string, holder: string): Promise<HeldLease>;
}

/** A kind's stored definition, as {@linkcode Kinds} reads it. */
export interface RawKind extends GroupKind {
  /** The plural resource name (`"workers"`); non-empty. */
  readonly plural: string;
  /** The singular resource name (`"worker"`); non-empty. */
  readonly singular: string;
  /** Short names (`["wk"]`); `[]` when none. */
  readonly shortNames: readonly string[];
  /** Whether objects of the kind live in namespaces. */
  readonly namespaced: boolean;
  /** The printer columns as JSON text (an array); `"[]"` when none. */
  readonly columns: string;
  /** The spec's JSON Schema as JSON text; `undefined` when none is known. */
  readonly specSchema: string | undefined;
  /** The status's JSON Schema as JSON text; `undefined` when none is known. */
  readonly statusSchema: string | undefined;
  /** When the definition was last written. */
  readonly updatedAt: Date;
}

/** What {@linkcode Kinds.put} writes: a definition without its timestamp. */
export type KindsPutInput = Omit<RawKind, "updatedAt">;

/** Options of {@linkcode Kinds.put}. */
export interface KindsPutOptions {
  /** Whether a stored definition of the kind is replaced; `false` only adds a missing one. @default {true} */
  readonly replace?: boolean;
}

/**
 * The kind family: each kind's definition (names, scope, printer columns and
 * the JSON Schemas of its spec and status), keyed by group and kind. The JSON
 * texts are stored as given, never parsed. A definition is not an object: it
 * takes no resource version and is not in the write log.
 */
export interface Kinds {
  /** The definition of `gk`, or `undefined` when none is stored. */
  get(gk: GroupKind): Promise<RawKind | undefined>;

  /** Every stored definition, ordered by group, then kind. */
  list(): Promise<RawKind[]>;

  /**
   * Stores `input` as the definition of its kind; resolves to whether the
   * stored definition changed (a definition equal to the stored one writes
   * nothing, and neither does one that is kept because `replace` is false).
   * @throws {InvalidOptionError} a malformed group or kind.
   * @throws {TypeError} a malformed name, short name, flag or JSON text.
   */
  put(input: KindsPutInput, options?: KindsPutOptions): Promise<boolean>;
}

/** The lease and epoch a fenced store's writes are checked against. */
export interface Fence {
  /** The lease's name. */
  readonly lease: string;
  /** The epoch the writer's term began with. */
  readonly epoch: number;
}

/**
 * The durable store beehive depends on. A transaction handle handed to
 * {@linkcode Store.within} is itself a `Store` whose calls join the transaction.
 */
export interface Store {
  /** Names this store's database: two stores opened on one path report one identity. Never empty. */
  readonly identity: string;
  /**
   * This open of the store, unique among every open of the database (by any
   * process): the writes it commits carry it as {@linkcode ObjectWrite.origin}.
   */
  readonly origin: number;
  /** The objects table. */
  readonly objects: Objects;
  /** The conditions table. */
  readonly conditions: Conditions;
  /** The edge table. */
  readonly edges: Edges;
  /** The deletion-request lifecycle. */
  readonly deletionRequests: DeletionRequests;
  /** The dependency watermarks. */
  readonly dependencies: Dependencies;
  /** Driver scan positions. */
  readonly driverCursors: DriverCursors;
  /** The event log. */
  readonly events: Events;
  /** The object write log. */
  readonly objectWrites: ObjectWrites;
  /** The owed counts. */
  readonly reconcileOwed: ReconcileOwed;
  /** Named leases with fencing epochs. */
  readonly leases: Leases;
  /** The stored kind definitions. */
  readonly kinds: Kinds;

  /**
   * Runs `fn` in one transaction: commits when it resolves, rolls back when it
   * rejects. Calls through `tx` join the transaction and read its own writes.
   * On a transaction handle, `within` opens a savepoint: a rejection unwinds
   * only that frame's writes and hooks. `afterCommit` hooks run after the
   * outermost commit, in registration order, and are awaited before it resolves.
   * @throws {StaleTxError} `tx` is used after its frame ended, or while a frame nested in it is open.
   * @throws {ConcurrentNestedTxError} a nested frame is opened beside an open sibling, or a frame resolves while one nested in it is still open (everything in it rolls back).
   */
  within<T>(fn: (tx: Store) => Promise<T>): Promise<T>;

  /**
   * Registers `fn` to run once the transaction commits, unless the frame it
   * was registered against unwinds. Outside a transaction it runs at once. A
   * hook that throws is logged and undoes nothing.
   */
  afterCommit(fn: () => void | Promise<void>): void;

  /** The highest resource version a committed write took. Never falls. */
  getLatestResourceVersion(): Promise<number>;

  /** Returns up to `maxPages` free pages to the OS; resolves to how many it released. */
  reclaimSpace(maxPages: number): Promise<number>;

  /**
   * A handle on the same store whose every write transaction first checks,
   * inside that transaction, that `fence.lease`'s epoch is not above
   * `fence.epoch`: a write from a term that is over commits nothing. Reads are
   * not checked. On a transaction handle, the fence of the outermost
   * transaction applies.
   * @throws {FencedError} (from each write) the lease has moved to a later epoch.
   */
  fenced(fence: Fence): Store;

  /**
   * Calls `listener` soon after a commit made through another connection or
   * process (a latency hint: the listener reads to learn what changed). Costs
   * no write while idle. Returns the unsubscribe function; never throws.
   */
  watchCommits(listener: () => void): () => void;

  /** Closes the store, waiting for an in-flight transaction; later calls reject with `StoreClosedError`. */
  close(): Promise<void>;
}
