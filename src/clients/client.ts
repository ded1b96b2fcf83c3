/**
 * The user-facing client of one kind: create, read, update, delete, graph and
 * event reads, watches, requeue and schedule.
 *
 * @module
 */
import { DecodeError, exceedsBytes, utf8Length } from "../model/_codec.ts";
import {
  checkFinalizerBounds,
  checkFinalizerNames,
  checkKindBounds,
  type KindSchemas,
  prepareValue,
} from "./_write_checks.ts";
import { isKindToken, schemasOf } from "../model/kind.ts";
import { namespaceProblem } from "../model/namespace.ts";
import { checkId, checkKind, type Engine, kindName } from "../engine/_engine.ts";
import { attempt, quote } from "../model/_values.ts";
import { isStorableText } from "../model/_text.ts";
import {
  BeehiveError,
  DeletionPendingError,
  InvalidNameError,
  InvalidOptionError,
  NoControllerError,
  NotFoundError,
  StoreError,
  WrongKindError,
} from "../model/errors.ts";
import {
  type BeehiveObject,
  decodeObject,
  type Event,
  type EventType,
  type LoadKey,
  type Relations,
  toEvent,
} from "../model/object.ts";
import type {
  GroupKind,
  LabelRequirement,
  ObjectId,
  ObjectRef,
  RawObject,
  Store,
} from "../store.ts";
import type { Schedule } from "../engine/work_queue.ts";
import { ScheduleStream } from "../engine/schedule_stream.ts";
import { loadRelations } from "../engine/_relations.ts";
import {
  ObjectListStream,
  ObjectStream,
  openObjectWatch,
  type WatchListOptions,
  type WatchOptions,
} from "../watches/object_watch.ts";
import { type LabelSelector, matchesLabels, parseLabelSelector } from "../model/label_selector.ts";
import {
  checkMetadata,
  checkMetadataUpdate,
  type Labels,
  type MetadataUpdate,
  NO_LABELS,
} from "../model/labels.ts";
import {
  type EventStream,
  type EventWatchOptions,
  openEventWatch,
} from "../watches/event_watch.ts";

/** Options of the create calls. Honoured when a row is created, ignored when one is found. */
export interface CreateOptions extends DryRunOptions {
  /** The owner: deleting it cascades to this object. */
  readonly owner?: ObjectId;
  /** Finalizers holding the object after deletion is requested. Registered kinds only. */
  readonly finalizers?: readonly string[];
  /** Runs once the outermost transaction commits, only if the row was created. */
  readonly onCreate?: () => void | Promise<void>;
  /**
   * The labels, under Kubernetes' key and value rules. `createOrUpdate` also
   * sets them on an object it finds (merged: keys not named are kept).
   * @default {{}}
   */
  readonly labels?: Readonly<Record<string, string>>;
  /**
   * The annotations, under Kubernetes' key rules, 256 KiB in all; merged on an
   * object `createOrUpdate` finds, as `labels`.
   * @default {{}}
   */
  readonly annotations?: Readonly<Record<string, string>>;
}

/** Options of the reads: which relations to load eagerly. */
export interface ReadOptions {
  /** Relations to load; the accessors of the others throw `NotLoadedError`. @default {[]} */
  readonly load?: readonly LoadKey[];
}

/** The outcome of `getOrCreate` and `createOrUpdate`. */
export interface CreateResult<Spec, Status> {
  /** The object as stored after the call. */
  readonly object: BeehiveObject<Spec, Status>;
  /** Whether this call inserted it. Inside a transaction it is provisional until commit. */
  readonly created: boolean;
}

/** Filters of the event reads. */
export interface EventListOptions {
  /** Only this timeline (`""` is the default timeline); omitted = every timeline. */
  readonly category?: string;
  /** Only this type. */
  readonly type?: EventType;
  /** Only this reason. */
  readonly reason?: string;
  /** Only the newest N runs; 0 = all. @default {0} */
  readonly limit?: number;
  /** Only runs active at or after this instant. */
  readonly since?: Date;
}

/** Options of `update`, `updateByName` and `delete`. */
export interface PreconditionOptions {
  /**
   * Write only if the object's `resourceVersion` is still this one (the one
   * read): otherwise reject with `ConflictError`, writing nothing.
   * @default {undefined} (last write wins)
   */
  readonly resourceVersion?: number;
}

/** The option of a write that can be tried without committing it. */
export interface DryRunOptions {
  /**
   * Checks the write and answers the object as it would be, then rolls it
   * back: nothing is written, no watch sees it, no pass is owed.
   * @default {false}
   */
  readonly dryRun?: boolean;
}

/**
 * Options of `update` and `updateByName`: the precondition, label and
 * annotation patches written with the spec as one write (JSON-merge: a string
 * sets a key, `null` removes it, a key not named is kept), and `dryRun`.
 */
export interface UpdateOptions extends PreconditionOptions, MetadataUpdate, DryRunOptions {}

/** Options of `updateMetadata`: the precondition and `dryRun`. */
export interface MetadataWriteOptions extends PreconditionOptions, DryRunOptions {}

/** Options of `list` and `listOwnedObjects`: relations to load, and one page. */
export interface ListOptions extends ReadOptions {
  /** At most this many objects (an integer ≥ 1). @default {undefined} (every one) */
  readonly limit?: number;
  /** Only objects whose id is above this (an integer ≥ 0): the last id of the previous page. @default {0} */
  readonly after?: number;
  /**
   * Only objects whose labels match, in Kubernetes' string syntax (`app=web,tier!=db`)
   * or as `{ matchLabels, matchExpressions }`; answered from the store's label index.
   * @default {undefined} (every object)
   */
  readonly labelSelector?: LabelSelector;
}

/** Options of `bh.client(kind, options)` and `tx.client(kind, options)`. */
export interface ClientOptions {
  /**
   * The namespace the client works in, for a kind defined `namespaced: true`
   * (a DNS-1123 label of at most 63 characters): creates land in it,
   * name-keyed calls and lists act in it, watches see only it, and an id-keyed
   * call finds only its objects. A cluster-scoped kind refuses it.
   * @default {undefined} (reads of a namespaced kind span every namespace; its name-keyed calls reject)
   */
  readonly namespace?: string;
}

/** How a client is scoped: an explicit namespace, or the one a pass's object is in. */
export interface ClientScope {
  /** Given by `{ namespace }`: a cluster-scoped kind refuses it. */
  readonly namespace?: string;
  /** A pass's object's namespace: the default for a namespaced kind, ignored by a cluster-scoped one. */
  readonly inherited?: string;
}

/**
 * Checks `bh.client`'s options; resolves to the explicit namespace.
 * @throws {InvalidOptionError} malformed options or namespace, or a namespace for a cluster-scoped token.
 */
export function checkClientOptions(kind: GroupKind, options: unknown): string | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== "object" || options === null) {
    throw new InvalidOptionError(
      `Cannot make a client of ${kindName(kind)}: options must be an object`,
    );
  }
  const namespace = (options as ClientOptions).namespace;
  if (namespace === undefined) return undefined;
  const problem = namespaceProblem(namespace);
  if (problem !== undefined) {
    throw new InvalidOptionError(`Cannot use option namespace: ${problem}`);
  }
  if (isKindToken(kind) && !kind.namespaced) throw clusterScoped(kind, namespace as string);
  return namespace as string;
}

function clusterScoped(kind: GroupKind, namespace: string): InvalidOptionError {
  return new InvalidOptionError(
    `Cannot use namespace ${quote(namespace)} with ${
      kindName(kind)
    }: the kind is cluster-scoped (define it with namespaced: true to give its objects namespaces)`,
  );
}

/** Options of `requeue`. */
export interface RequeueOptions {
  /** Clear the retry ladder first (only when the failure is known to be over). @default {false} */
  readonly resetBackoff?: boolean;
}

const LOAD_KEYS = new Set<string>(["owner", "dependencies", "dependents", "owned", "events"]);

function checkName(name: unknown): asserts name is string {
  if (typeof name !== "string") {
    throw new TypeError(`Cannot use name: current value is ${typeof name}, expected a string`);
  }
  if (name === "") throw new InvalidNameError("Cannot use name: it must not be empty");
  if (!isStorableText(name)) {
    throw new InvalidNameError(
      `Cannot use name ${quote(name)}: it must be well-formed UTF-16 without NUL`,
    );
  }
}

/** Checks that an options argument is an object (or omitted). @throws {TypeError} */
function checkOptions(options: unknown, call: string): void {
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    throw new TypeError(`Cannot ${call}: options must be an object`);
  }
}

function checkLoads(options: ReadOptions | undefined): readonly LoadKey[] {
  if (options === undefined) return [];
  if (typeof options !== "object" || options === null) {
    throw new TypeError("Cannot read: options must be an object like { load: [...] }");
  }
  const load = options.load ?? [];
  if (!Array.isArray(load) || !load.every((k) => LOAD_KEYS.has(k))) {
    throw new TypeError(
      `Cannot load ${
        JSON.stringify(load)
      }: expected an array of "owner", "dependencies", "dependents", "owned", "events"`,
    );
  }
  return load;
}

/** A kind's scope as a client sees it, and the namespace its lists read. */
interface KindScope {
  readonly namespaced: boolean;
  readonly namespace: string | undefined;
}

/** A watch call's options, checked. */
interface CheckedWatch {
  readonly load: readonly LoadKey[];
  readonly resumeFrom: number | undefined;
  readonly signal: AbortSignal | undefined;
  readonly selector: readonly LabelRequirement[] | undefined;
}

function checkResumeFrom(value: unknown, call: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new TypeError(
      `Cannot ${call}: resumeFrom is ${
        String(value)
      }, expected an integer >= 0 (a resourceVersion)`,
    );
  }
  return value;
}

function checkSignal(value: unknown, call: string): AbortSignal | undefined {
  if (value !== undefined && !(value instanceof AbortSignal)) {
    throw new TypeError(`Cannot ${call}: signal must be an AbortSignal`);
  }
  return value;
}

function checkEventFilters(o: EventWatchOptions): void {
  const bad = (what: string, expected: string) =>
    new TypeError(`Cannot watch events: ${what} is malformed, expected ${expected}`);
  if (o.category !== undefined && typeof o.category !== "string") {
    throw bad("category", "a string");
  }
  if (o.type !== undefined && o.type !== "Normal" && o.type !== "Warning") {
    throw bad("type", `"Normal" or "Warning"`);
  }
  if (o.reason !== undefined && typeof o.reason !== "string") throw bad("reason", "a string");
  if (
    o.limit !== undefined &&
    (typeof o.limit !== "number" || !Number.isSafeInteger(o.limit) || o.limit < 0)
  ) throw bad("limit", "an integer >= 0");
  if (o.since !== undefined && (!(o.since instanceof Date) || Number.isNaN(o.since.getTime()))) {
    throw bad("since", "a valid Date");
  }
}

/** The error a decode failure surfaces as on a single read. */
/** An update's checked options: the precondition and the metadata patches. */
interface CheckedUpdate {
  readonly resourceVersion: number | undefined;
  readonly managedFields?: string;
  readonly labels?: Readonly<Record<string, string | null>>;
  readonly annotations?: Readonly<Record<string, string | null>>;
}

/** `options.dryRun`, checked. @throws {TypeError} not a boolean. */
function checkDryRun(options: DryRunOptions | undefined, call: string): boolean {
  const dryRun = options?.dryRun;
  if (dryRun === undefined) return false;
  if (typeof dryRun !== "boolean") {
    throw new TypeError(
      `Cannot ${call}: dryRun must be a boolean, current value is ${typeof dryRun}`,
    );
  }
  return dryRun;
}

/**
 * A create option the package's Kubernetes API sets and the package does not
 * export: `finalizers` are then accepted as the API server accepts them, with
 * no controller registered in this process (whoever set them clears them, or
 * a write through the API does).
 */
export const API_FINALIZERS: unique symbol = Symbol("beehive.apiFinalizers");

/**
 * A write option the package's Kubernetes API sets and the package does not
 * export: the object's managed fields (`metadata.managedFields`) as JSON
 * text, written whole with the rest of the write. The library's own writes
 * leave them as they are.
 */
export const API_MANAGED_FIELDS: unique symbol = Symbol("beehive.apiManagedFields");

/**
 * An update option the package's Kubernetes API sets and the package does
 * not export: the finalizers the object is to hold, whole, written with the
 * rest of the write (`kubectl patch` removing a finalizer). The library's
 * own clients add and remove finalizers one by one, from a controller.
 */
export const API_SET_FINALIZERS: unique symbol = Symbol("beehive.apiSetFinalizers");

/** {@linkcode CreateOptions} as the Kubernetes API passes them. */
export interface ApiCreateOptions extends CreateOptions {
  /** Accept `finalizers` with no controller registered in this process. */
  readonly [API_FINALIZERS]?: boolean;
  /** The managed fields to create the object with. */
  readonly [API_MANAGED_FIELDS]?: string;
}

/** {@linkcode UpdateOptions} as the Kubernetes API passes them. */
export interface ApiUpdateOptions extends UpdateOptions {
  /** The managed fields the object is to hold. */
  readonly [API_MANAGED_FIELDS]?: string;
  /** The finalizers the object is to hold. */
  readonly [API_SET_FINALIZERS]?: readonly string[];
}

/** {@linkcode MetadataWriteOptions} as the Kubernetes API passes them. */
export interface ApiMetadataWriteOptions extends MetadataWriteOptions {
  /** The managed fields the object is to hold. */
  readonly [API_MANAGED_FIELDS]?: string;
  /** The finalizers the object is to hold. */
  readonly [API_SET_FINALIZERS]?: readonly string[];
}

/** The managed fields an API write carries, checked. @throws {TypeError} not a string. */
function checkManagedFields(options: object | undefined, call: string): string | undefined {
  const text = (options as ApiUpdateOptions | undefined)?.[API_MANAGED_FIELDS];
  if (text !== undefined && typeof text !== "string") {
    throw new TypeError(`Cannot ${call}: managed fields must be JSON text`);
  }
  return text;
}

/** Thrown inside a dry run's transaction to roll it back; never escapes {@linkcode Client}. */
const DRY_RUN = Symbol("dry run");

/**
 * Checks the options of `update`/`updateByName`.
 * @throws {TypeError} malformed options; {@linkcode InvalidMetadataError} a bad key or value.
 */
function checkUpdate(options: UpdateOptions | undefined, call: string): CheckedUpdate {
  const resourceVersion = checkPrecondition(options, call);
  const managedFields = checkManagedFields(options, call);
  const managed = managedFields === undefined ? {} : { managedFields };
  if (options?.labels === undefined && options?.annotations === undefined) {
    return { resourceVersion, ...managed };
  }
  const patch = checkMetadataUpdate(options, call);
  return {
    resourceVersion,
    ...managed,
    ...(patch.labels === undefined ? {} : { labels: patch.labels }),
    ...(patch.annotations === undefined ? {} : { annotations: patch.annotations }),
  };
}

export function undecodable(raw: RawObject, error: unknown): StoreError {
  return new StoreError(
    `Cannot decode ${kindName(raw)} "${raw.name}" (id ${raw.id}): ${
      error instanceof Error ? error.message : String(error)
    }`,
    { cause: error },
  );
}

function checkPrecondition(options: unknown, call: string): number | undefined {
  checkOptions(options, call);
  const rv = (options as PreconditionOptions | undefined)?.resourceVersion;
  if (rv === undefined) return undefined;
  if (typeof rv !== "number" || !Number.isSafeInteger(rv) || rv < 1) {
    throw new TypeError(
      `Cannot ${call}: resourceVersion is ${
        typeof rv === "string" ? JSON.stringify(rv) : String(rv)
      }, expected a positive safe integer (an object's resourceVersion)`,
    );
  }
  return rv;
}

function checkPage(options: ListOptions | undefined, call: string) {
  checkOptions(options, call);
  const load = checkLoads(options === undefined ? undefined : { load: options.load });
  const { limit, after } = options ?? {};
  if (
    limit !== undefined && (typeof limit !== "number" || !Number.isSafeInteger(limit) || limit < 1)
  ) {
    throw new RangeError(`Cannot ${call}: limit is ${String(limit)}, expected an integer >= 1`);
  }
  if (
    after !== undefined && (typeof after !== "number" || !Number.isSafeInteger(after) || after < 0)
  ) {
    throw new RangeError(
      `Cannot ${call}: after is ${String(after)}, expected an integer >= 0 (an object id)`,
    );
  }
  const selector = parseLabelSelector(options?.labelSelector);
  return {
    load,
    limit,
    after: after ?? 0,
    labelSelector: selector === undefined || selector.length === 0 ? undefined : selector,
  };
}

/** A create call's arguments, checked. */
interface CheckedCreate {
  readonly text: string;
  readonly owner: ObjectId | undefined;
  readonly finalizers: string[] | undefined;
  readonly onCreate: (() => void | Promise<void>) | undefined;
  readonly labels: Labels;
  readonly annotations: Labels;
  /** The namespace the object is created in (`""` for a cluster-scoped kind). */
  readonly namespace: string;
  readonly dryRun: boolean;
  readonly managedFields: string | undefined;
}

/**
 * The client of one kind. Id-keyed calls act on one incarnation or reject with
 * `NotFoundError`; name-keyed calls act on whatever holds the name now. It
 * works on a Beehive that never started or has stopped, while the store is open.
 * For a kind defined `namespaced: true`, a client made with `{ namespace }`
 * works in that namespace; without one, its reads span every namespace and
 * its name-keyed calls reject with `InvalidOptionError` (so does every call
 * of a cluster-scoped kind's client given a namespace).
 *
 * @example Create, read back, update by id
 * ```ts
 * import { Beehive, NameTakenError } from "@beehive/beehive";
 * import { openSqliteStore } from "@beehive/beehive/sqlite";
 *
 * const store = await openSqliteStore(":memory:");
 * const clusters = new Beehive(store).client<{ replicas: number }>({
 *   group: "kstack.sh",
 *   kind: "Cluster",
 * });
 * const prod = await clusters.create("prod", { replicas: 3 });
 * const read = await clusters.getByName("prod");
 * await clusters.update(read.id, { ...read.spec, replicas: 5 });
 * console.assert((await clusters.get(prod.id)).generation === 2);
 * await clusters.create("prod", { replicas: 1 }).catch((e) => {
 *   console.assert(e instanceof NameTakenError);
 * });
 * await store.close();
 * ```
 */
export class Client<Spec, Status> {
  readonly #engine: Engine;
  readonly #store: Store;
  readonly #gk: GroupKind;
  /** Set on a client obtained through a transaction: it has no watches. */
  readonly #inTransaction: boolean;
  /** The validators of the token this client was made from, if it was one. */
  readonly #schemas: KindSchemas | undefined;
  /** The token's scope, if it was one; else the registered token's or the stored definition's. */
  readonly #tokenNamespaced: boolean | undefined;
  /** The namespace given by `{ namespace }`. */
  readonly #namespace: string | undefined;
  /** A pass's object's namespace: the default for a namespaced kind. */
  readonly #inherited: string | undefined;

  /** @internal Use `bh.client(kind)` or `tx.client(kind)`. */
  constructor(
    engine: Engine,
    store: Store,
    kind: GroupKind,
    inTransaction = false,
    scope: ClientScope = {},
  ) {
    this.#engine = engine;
    this.#store = store;
    this.#gk = checkKind(kind);
    checkKindBounds(this.#gk, engine.options.limits);
    this.#schemas = schemasOf(kind);
    this.#tokenNamespaced = isKindToken(kind) ? kind.namespaced : undefined;
    this.#namespace = scope.namespace;
    this.#inherited = scope.inherited === "" ? undefined : scope.inherited;
    this.#inTransaction = inTransaction;
  }

  /**
   * The namespace given to this client, else (for a pass's transaction
   * client) the namespace of the pass's object; `undefined` when neither. A
   * cluster-scoped kind ignores an inherited one.
   */
  get namespace(): string | undefined {
    return this.#namespace ?? this.#inherited;
  }

  /**
   * The kind's scope and the namespace this client's lists read: at once
   * when the scope is known without a read (a token's, a registered kind's,
   * or a stored definition read a moment ago), as most writes find it.
   * @throws {InvalidOptionError} a namespace was given for a cluster-scoped kind.
   */
  #scope(): KindScope | Promise<KindScope> {
    const namespaced = this.#namespaced();
    return typeof namespaced === "boolean"
      ? this.#scopeOf(namespaced)
      : namespaced.then((n) => this.#scopeOf(n));
  }

  /** {@linkcode Client.#scope} once the kind's scope as trusted is known. */
  #scopeOf(namespaced: boolean): KindScope | Promise<KindScope> {
    // A refusal is never made on a definition read a moment ago: the scope may have changed since.
    if (!namespaced && this.#namespace !== undefined) {
      return Promise.resolve(this.#namespaced(true)).then((fresh) => this.#scoped(fresh));
    }
    return this.#scoped(namespaced);
  }

  #scoped(namespaced: boolean): KindScope {
    if (!namespaced) {
      if (this.#namespace !== undefined) throw clusterScoped(this.#gk, this.#namespace);
      return { namespaced, namespace: undefined };
    }
    return { namespaced, namespace: this.#namespace ?? this.#inherited };
  }

  /** The kind's scope: see {@linkcode Engine.namespaced} (`fresh`: the stored definition read now). */
  #namespaced(fresh = false): boolean | Promise<boolean> {
    return this.#engine.namespaced(this.#gk, this.#tokenNamespaced, this.#store, fresh);
  }

  /**
   * The namespace a name-keyed call acts in: `""` for a cluster-scoped kind.
   * @throws {InvalidOptionError} a namespaced kind and no namespace, or a namespace for a cluster-scoped kind.
   */
  #nameScope(call: string): string | Promise<string> {
    const s = this.#scope();
    return s instanceof Promise ? s.then((v) => this.#nameIn(v, call)) : this.#nameIn(s, call);
  }

  /** {@linkcode Client.#nameScope} once the scope is known. */
  #nameIn(s: KindScope, call: string): string | Promise<string> {
    if (!s.namespaced) return "";
    if (s.namespace !== undefined) return s.namespace;
    // Refused only on the definition as stored now: it may have become cluster-scoped.
    return Promise.resolve(this.#namespaced(true)).then((fresh) => {
      if (!fresh) return "";
      throw new InvalidOptionError(
        `Cannot ${call} ${
          kindName(this.#gk)
        } by name without a namespace: the kind is namespaced, so a name is unique only within one; use bh.client(kind, { namespace })`,
      );
    });
  }

  /** Refuses a row outside this client's explicit namespace, as if it did not exist. @throws {NotFoundError} */
  #inNamespace(raw: { id: ObjectId; namespace: string }): void {
    const ns = this.#namespace;
    if (ns === undefined || raw.namespace === ns) return;
    throw new NotFoundError(
      `Cannot find ${kindName(this.#gk)} ${raw.id} in namespace ${quote(ns)}: it is in ${
        raw.namespace === "" ? "the cluster scope" : `namespace ${quote(raw.namespace)}`
      }`,
    );
  }

  /**
   * Checks that `id` is in this client's explicit namespace (a namespace never
   * changes). A missing id is not found, or passes when `missingPasses` (the
   * schedule reads, whose id need not exist).
   */
  async #assertInNamespace(id: ObjectId, missingPasses = false): Promise<void> {
    if (this.#namespace === undefined) return;
    const meta = await this.#store.objects.getMeta(id).catch((error: unknown) => {
      if (missingPasses && error instanceof NotFoundError) return undefined;
      throw error;
    });
    if (meta?.group === this.#gk.group && meta.kind === this.#gk.kind) this.#inNamespace(meta);
  }

  /**
   * Validates, encodes and bounds a spec: the text to store (at once when
   * the kind's validators are known without a read, else once read).
   */
  #prepareSpec(spec: unknown): string | Promise<string> {
    const schemas = this.#engine.schemas(this.#gk, this.#schemas, this.#store);
    return prepareValue(schemas, spec, "spec", this.#gk, this.#engine.options.limits);
  }

  /** The kind this client acts on. */
  get kind(): GroupKind {
    return { ...this.#gk };
  }

  #ref(id: ObjectId): ObjectRef {
    return { ...this.#gk, id };
  }

  #decode(raw: RawObject, rel?: Relations): BeehiveObject<Spec, Status> {
    try {
      return decodeObject<Spec, Status>(raw, this.#engine.codec(this.#gk), rel);
    } catch (error) {
      throw undecodable(raw, error);
    }
  }

  async #checkCreate(
    name: unknown,
    spec: unknown,
    options: CreateOptions | undefined,
  ): Promise<CheckedCreate> {
    checkName(name);
    const limit = this.#engine.options.limits.nameBytes;
    if (exceedsBytes(name, limit)) {
      throw new InvalidNameError(
        `Cannot use name: it is ${utf8Length(name)} UTF-8 bytes, above limits.nameBytes (${limit})`,
      );
    }
    const o = options ?? {};
    if (typeof o !== "object" || o === null) {
      throw new TypeError("Cannot create: options must be an object");
    }
    if (o.owner !== undefined) checkId(o.owner, "owner");
    if (o.onCreate !== undefined && typeof o.onCreate !== "function") {
      throw new TypeError("Cannot create: onCreate must be a function");
    }
    let finalizers: string[] | undefined;
    if (o.finalizers !== undefined) {
      checkFinalizerNames(o.finalizers, "option finalizers");
      if (
        o.finalizers.length > 0 && this.#engine.registration(this.#gk) === undefined &&
        (o as ApiCreateOptions)[API_FINALIZERS] !== true
      ) {
        throw new InvalidOptionError(
          `Cannot use option finalizers on ${
            kindName(this.#gk)
          }: only a kind with a controller registered in this process can clear them`,
        );
      }
      checkFinalizerBounds(o.finalizers, this.#engine.options.limits);
      finalizers = [...o.finalizers];
    }
    const labels = checkMetadata(o.labels, "labels");
    const annotations = checkMetadata(o.annotations, "annotations");
    const dryRun = checkDryRun(o, "create");
    const managedFields = checkManagedFields(o, "create");
    // Both are most often known at once: awaited only when they are not.
    const scope = this.#nameScope("create");
    const namespace = typeof scope === "string" ? scope : await scope;
    // Validated last: a schema sees only calls whose other arguments are sound.
    const prepared = this.#prepareSpec(spec);
    const text = typeof prepared === "string" ? prepared : await prepared;
    return {
      text,
      owner: o.owner,
      finalizers,
      onCreate: o.onCreate,
      labels,
      annotations,
      namespace,
      dryRun,
      managedFields,
    };
  }

  /**
   * The whole finalizer list an API write sets, checked as a create's
   * `finalizers` are; `{}` when it sets none.
   * @throws {InvalidOptionError} a malformed finalizer, or more than `limits.finalizersPerObject`.
   */
  #setFinalizers(options: object | undefined): { finalizers?: string[] } {
    const list = (options as ApiUpdateOptions | undefined)?.[API_SET_FINALIZERS];
    if (list === undefined) return {};
    checkFinalizerNames(list, "finalizers");
    checkFinalizerBounds(list, this.#engine.options.limits);
    return { finalizers: [...list] };
  }

  /**
   * Runs `fn` in a transaction; under `dryRun`, rolls it back once `fn` has
   * answered (its after-commit hooks then never run) and resolves to that answer.
   */
  async #commit<T>(dryRun: boolean, fn: (tx: Store) => Promise<T>): Promise<T> {
    if (!dryRun) return await this.#store.within(fn);
    let answer: T | undefined;
    try {
      await this.#store.within(async (tx) => {
        answer = await fn(tx);
        throw DRY_RUN;
      });
    } catch (error) {
      if (error !== DRY_RUN) throw error;
    }
    return answer as T;
  }

  /**
   * The create tail: inside a transaction, or on the client's own store for
   * a create with no owner and no `onCreate` (one write; its hooks then run
   * at once).
   */
  async #insert(
    tx: Store,
    name: string,
    c: CheckedCreate,
  ): Promise<BeehiveObject<Spec, Status>> {
    const raw = await tx.objects.create(this.#gk, {
      name,
      namespace: c.namespace,
      spec: c.text,
      specVersion: this.#engine.codec(this.#gk).specVersion,
      finalizers: c.finalizers,
      labels: c.labels,
      annotations: c.annotations,
      ...(c.managedFields === undefined ? {} : { managedFields: c.managedFields }),
    });
    if (c.owner !== undefined) {
      const edge = await tx.edges.add({ fromId: raw.id, toId: c.owner, relation: "owned_by" });
      if (edge.toDeleting) {
        const owner = { ...edge.to, id: c.owner };
        tx.afterCommit(() => this.#engine.pushNow(owner));
      }
    }
    // Decoded inside the transaction: a row this process cannot read never commits. (A row
    // written alone always decodes: this client encoded its spec at the codec's version.)
    const object = this.#decode(raw);
    const ref = this.#ref(raw.id);
    tx.afterCommit(() => {
      this.#engine.pushNow(ref);
      this.#engine.writes.kindWritten(ref);
    });
    if (c.onCreate !== undefined) tx.afterCommit(c.onCreate);
    return object;
  }

  /**
   * Creates an object under `name`, unsettled and owed its first reconcile.
   * @throws {InvalidNameError} `name` is empty, not well-formed UTF-16, or contains NUL.
   * @throws {InvalidMetadataError} a label or annotation breaks Kubernetes' rules.
   * @throws {NameTakenError} the name is held within the kind (deletion-pending rows included).
   * @throws {InvalidOptionError} `finalizers` on a kind with no controller registered here.
   * @throws {NotFoundError} `owner` names no object.
   * @throws {InvalidSpecError} the kind's spec schema refused `spec`.
   * @throws {TooLargeError} the spec's JSON is above `limits.objectBytes` (a name above `limits.nameBytes` is `InvalidNameError`).
   * @throws {TypeError} `spec` is not JSON-encodable (or holds a non-finite number), or an argument is malformed.
   */
  create(name: string, spec: Spec, options?: CreateOptions): Promise<BeehiveObject<Spec, Status>> {
    return attempt(async () => {
      const c = await this.#checkCreate(name, spec, options);
      // With no owner edge and no hook of the caller's, the row is one store write, atomic on
      // its own: no transaction around it.
      if (c.owner === undefined && c.onCreate === undefined && !c.dryRun) {
        return await this.#insert(this.#store, name, c);
      }
      return await this.#commit(c.dryRun, (tx) => this.#insert(tx, name, c));
    });
  }

  /**
   * Returns the object holding `name`, untouched (deletion-pending included,
   * options ignored), or creates it. Atomic: concurrent calls create one row.
   * Options are validated even when the row exists.
   * @throws {InvalidNameError} `name` is empty, not well-formed UTF-16, or contains NUL.
   * @throws {InvalidMetadataError} a label or annotation breaks Kubernetes' rules.
   * @throws {InvalidOptionError} `finalizers` on a kind with no controller registered here.
   * @throws {InvalidSpecError} the kind's spec schema refused `spec` (checked even when the name is held).
   * @throws {TooLargeError} the spec's JSON is above `limits.objectBytes`.
   * @throws {TypeError} `spec` is not JSON-encodable, or holds a non-finite number.
   */
  getOrCreate(
    name: string,
    spec: Spec,
    options?: CreateOptions,
  ): Promise<CreateResult<Spec, Status>> {
    return attempt(async () => {
      const c = await this.#checkCreate(name, spec, options);
      return this.#commit(c.dryRun, async (tx) => {
        try {
          const raw = await tx.objects.getByName({ ...this.#gk, name, namespace: c.namespace });
          return { object: this.#decode(raw), created: false };
        } catch (error) {
          if (!(error instanceof NotFoundError)) throw error;
        }
        return { object: await this.#insert(tx, name, c), created: true };
      });
    });
  }

  /**
   * Makes whatever holds `name` hold `spec`, creating it when absent; options
   * apply only on create, but `labels` and `annotations`, which are also
   * merged into an object found. A byte-identical spec writes nothing.
   * @throws {InvalidMetadataError} a label or annotation breaks Kubernetes' rules.
   * @throws {DeletionPendingError} the row holding the name is deletion-pending.
   * @throws {InvalidNameError} `name` is empty, not well-formed UTF-16, or contains NUL.
   * @throws {InvalidSpecError} the kind's spec schema refused `spec`.
   * @throws {TooLargeError} the spec's JSON is above `limits.objectBytes`.
   * @throws {TypeError} `spec` is not JSON-encodable, or holds a non-finite number.
   */
  createOrUpdate(
    name: string,
    spec: Spec,
    options?: CreateOptions,
  ): Promise<CreateResult<Spec, Status>> {
    return attempt(async () => {
      const c = await this.#checkCreate(name, spec, options);
      return this.#commit(c.dryRun, async (tx) => {
        try {
          const r = await tx.objects.updateSpecByName(
            { ...this.#gk, name, namespace: c.namespace },
            {
              spec: c.text,
              specVersion: this.#engine.codec(this.#gk).specVersion,
              ...(c.labels === NO_LABELS ? {} : { labels: c.labels }),
              ...(c.annotations === NO_LABELS ? {} : { annotations: c.annotations }),
            },
          );
          this.#written(tx, r.object.id, r);
          return { object: this.#decode(r.object), created: false };
        } catch (error) {
          if (!(error instanceof NotFoundError)) throw error;
        }
        return { object: await this.#insert(tx, name, c), created: true };
      });
    });
  }

  /** After a metadata-only write: wakes the kind's watchers, never a pass. */
  #wakeWatchers(tx: Store, id: ObjectId): void {
    const ref = this.#ref(id);
    tx.afterCommit(() => this.#engine.writes.kindWritten(ref));
  }

  #pushSelf(tx: Store, id: ObjectId): void {
    const ref = this.#ref(id);
    tx.afterCommit(() => {
      this.#engine.pushNow(ref);
      this.#engine.writes.kindWritten(ref);
    });
  }

  /**
   * Replaces the spec of object `id`, and with `labels`/`annotations` patches
   * those in the same write. A byte-identical spec writes nothing.
   * With `resourceVersion`, writes only if the object is still at that
   * version (checked inside the write transaction).
   * @throws {NotFoundError} `id` holds no object of this kind.
   * @throws {ConflictError} the object has moved on from `resourceVersion`; nothing is written.
   * @throws {DeletionPendingError} its deletion is pending.
   * @throws {InvalidSpecError} the kind's spec schema refused `spec`.
   * @throws {TooLargeError} the spec's JSON is above `limits.objectBytes`.
   * @throws {TypeError} `spec` is not JSON-encodable (or holds a non-finite number), or `id` is malformed.
   * @throws {InvalidMetadataError} a label or annotation in the options breaks Kubernetes' rules; nothing is written.
   */
  update(
    id: ObjectId,
    spec: Spec,
    options?: UpdateOptions,
  ): Promise<BeehiveObject<Spec, Status>> {
    return attempt(async () => {
      checkId(id);
      const write = { ...checkUpdate(options, "update"), ...this.#setFinalizers(options) };
      const dryRun = checkDryRun(options, "update");
      const prepared = this.#prepareSpec(spec);
      const text = typeof prepared === "string" ? prepared : await prepared;
      // Nothing after the write can refuse it with no namespace to check and no status
      // conversion (the spec is this client's own, at the codec's version): one write then.
      if (
        this.#namespace === undefined && this.#engine.codec(this.#gk).statusVersion === 0 && !dryRun
      ) {
        return await this.#updateSpec(this.#store, id, text, write);
      }
      return await this.#commit(dryRun, (tx) => this.#updateSpec(tx, id, text, write));
    });
  }

  /** The spec write of {@linkcode Client.update}, in a transaction or as one write. */
  async #updateSpec(
    tx: Store,
    id: ObjectId,
    text: string,
    write: CheckedUpdate,
  ): Promise<BeehiveObject<Spec, Status>> {
    let r;
    try {
      r = await tx.objects.updateSpec(this.#ref(id), {
        spec: text,
        specVersion: this.#engine.codec(this.#gk).specVersion,
        ...write,
      });
    } catch (error) {
      throw this.#hideWrongKind(error, id);
    }
    // A namespace never changes: a write outside it is refused and rolled back.
    this.#inNamespace(r.object);
    const object = this.#decode(r.object);
    this.#written(tx, id, r);
    return object;
  }

  /** After a spec write: a changed spec owes a pass, changed metadata only wakes watchers. */
  #written(tx: Store, id: ObjectId, r: { changed: boolean; specChanged: boolean }): void {
    if (r.specChanged) this.#pushSelf(tx, id);
    else if (r.changed) this.#wakeWatchers(tx, id);
  }

  /**
   * Replaces the spec of whatever holds `name`, resolved and written in one
   * transaction; `resourceVersion` as in {@linkcode Client.update}.
   * @throws {NotFoundError} no object of this kind holds `name`.
   * @throws {ConflictError} the object has moved on from `resourceVersion`; nothing is written.
   * @throws {DeletionPendingError} its deletion is pending.
   * @throws {InvalidSpecError} the kind's spec schema refused `spec`.
   * @throws {TooLargeError} the spec's JSON is above `limits.objectBytes`.
   * @throws {InvalidMetadataError} a label or annotation in the options breaks Kubernetes' rules; nothing is written.
   */
  updateByName(
    name: string,
    spec: Spec,
    options?: UpdateOptions,
  ): Promise<BeehiveObject<Spec, Status>> {
    return attempt(async () => {
      checkName(name);
      const write = { ...checkUpdate(options, "update by name"), ...this.#setFinalizers(options) };
      const dryRun = checkDryRun(options, "update by name");
      const namespace = await this.#nameScope("update");
      const text = await this.#prepareSpec(spec);
      return await this.#commit(dryRun, async (tx) => {
        const r = await tx.objects.updateSpecByName({ ...this.#gk, name, namespace }, {
          spec: text,
          specVersion: this.#engine.codec(this.#gk).specVersion,
          ...write,
        });
        const object = this.#decode(r.object);
        this.#written(tx, r.object.id, r);
        return object;
      });
    });
  }

  /**
   * Updates the labels and annotations of object `id` with JSON-merge
   * semantics: a string sets a key, `null` removes it, a key not named is
   * kept. A change bumps `resourceVersion` (watches see it), never
   * `generation`: it owes no reconcile pass. A patch that changes nothing
   * writes nothing. With `resourceVersion`, writes only if the object is
   * still at that version.
   * @throws {InvalidMetadataError} a key or value breaks Kubernetes' rules, or the annotations would exceed 256 KiB; nothing is written.
   * @throws {NotFoundError} `id` holds no object of this kind.
   * @throws {ConflictError} the object has moved on from `resourceVersion`; nothing is written.
   * @throws {TypeError} `id` or an argument is malformed.
   */
  updateMetadata(
    id: ObjectId,
    update: MetadataUpdate,
    options?: MetadataWriteOptions,
  ): Promise<BeehiveObject<Spec, Status>> {
    return attempt(() => {
      checkId(id);
      const resourceVersion = checkPrecondition(options, "update metadata");
      const dryRun = checkDryRun(options, "update metadata");
      const managedFields = checkManagedFields(options, "update metadata");
      const patch = {
        ...checkMetadataUpdate(update, "update metadata"),
        ...(managedFields === undefined ? {} : { managedFields }),
        ...this.#setFinalizers(options),
      };
      return this.#commit(dryRun, async (tx) => {
        let r;
        try {
          r = await tx.objects.updateMetadata(this.#ref(id), { ...patch, resourceVersion });
        } catch (error) {
          throw this.#hideWrongKind(error, id);
        }
        this.#inNamespace(r.object);
        if (r.changed) this.#wakeWatchers(tx, id);
        return this.#decode(r.object);
      });
    });
  }

  /** Rejects with StoreClosedError once the store is closed (for calls that read only memory). */
  async #assertStoreOpen(): Promise<void> {
    await this.#store.getLatestResourceVersion();
  }

  #hideWrongKind(error: unknown, id: ObjectId): unknown {
    if (error instanceof WrongKindError) {
      return new NotFoundError(
        `Cannot find ${kindName(this.#gk)} ${id}: the id belongs to another kind`,
        { cause: error },
      );
    }
    return error;
  }

  async #one(raw: RawObject, load: readonly LoadKey[]): Promise<BeehiveObject<Spec, Status>> {
    const rel = load.length === 0
      ? undefined
      : (await loadRelations(this.#store, [raw.id], load)).get(raw.id);
    return this.#decode(raw, rel);
  }

  /**
   * Reads object `id`.
   * @throws {NotFoundError} `id` holds no object of this kind.
   * @throws {StoreError} the stored spec or status does not decode.
   */
  get(id: ObjectId, options?: ReadOptions): Promise<BeehiveObject<Spec, Status>> {
    return attempt(async () => {
      checkId(id);
      const load = checkLoads(options);
      const raw = await this.#store.objects.get(id);
      if (raw.group !== this.#gk.group || raw.kind !== this.#gk.kind) {
        throw new NotFoundError(
          `Cannot find ${kindName(this.#gk)} ${id}: the id belongs to a ${kindName(raw)}`,
        );
      }
      this.#inNamespace(raw);
      return this.#one(raw, load);
    });
  }

  /**
   * Reads whatever holds `name`.
   * @throws {NotFoundError} no object of this kind holds `name`.
   * @throws {InvalidNameError} `name` is empty, not well-formed UTF-16, or contains NUL.
   */
  getByName(name: string, options?: ReadOptions): Promise<BeehiveObject<Spec, Status>> {
    return attempt(async () => {
      checkName(name);
      const load = checkLoads(options);
      const namespace = await this.#nameScope("get");
      return this.#one(
        await this.#store.objects.getByName({ ...this.#gk, name, namespace }),
        load,
      );
    });
  }

  async #many(raws: RawObject[], load: readonly LoadKey[]) {
    const rels = await loadRelations(this.#store, raws.map((r) => r.id), load);
    const out: BeehiveObject<Spec, Status>[] = [];
    for (const raw of raws) {
      try {
        out.push(decodeObject<Spec, Status>(raw, this.#engine.codec(this.#gk), rels.get(raw.id)));
      } catch (error) {
        if (!(error instanceof DecodeError)) throw error;
        this.#engine.log.warn(`beehive: skipping an object that does not decode`, {
          kind: kindName(raw),
          id: raw.id,
          name: raw.name,
          error,
        });
      }
    }
    return out;
  }

  /**
   * Reads one page: rows after `after`, `limit` at a time, until `limit`
   * objects decode or the rows run out (a row that does not decode is skipped,
   * never the end of the listing).
   */
  async #page(
    read: (page: { after: number; limit?: number }) => Promise<RawObject[]>,
    p: { load: readonly LoadKey[]; limit: number | undefined; after: number },
  ): Promise<BeehiveObject<Spec, Status>[]> {
    if (p.limit === undefined) return this.#many(await read({ after: p.after }), p.load);
    const out: BeehiveObject<Spec, Status>[] = [];
    let after = p.after;
    while (out.length < p.limit) {
      const want = p.limit - out.length;
      const raws = await read({ after, limit: want });
      out.push(...await this.#many(raws, p.load));
      if (raws.length < want) break;
      after = raws[raws.length - 1].id;
    }
    return out;
  }

  /**
   * The objects of the kind, ordered by id: every one, or one page — at most
   * `limit` with ids above `after` (pass the last id read to get the next).
   * Rows that do not decode are skipped and logged.
   * @throws {RangeError} `limit` or `after` is out of range.
   */
  list(options?: ListOptions): Promise<BeehiveObject<Spec, Status>[]> {
    return attempt(async () => {
      const p = checkPage(options, "list");
      const labelSelector = p.labelSelector;
      const { namespace } = await this.#scope();
      return this.#page(
        (page) => this.#store.objects.list(this.#gk, { ...page, labelSelector, namespace }),
        p,
      );
    });
  }

  /**
   * This kind's objects owned by `ownerId` (any kind), ordered by id; paged
   * by `limit` and `after` as in {@linkcode Client.list}.
   * @throws {RangeError} `limit` or `after` is out of range.
   */
  listOwnedObjects(
    ownerId: ObjectId,
    options?: ListOptions,
  ): Promise<BeehiveObject<Spec, Status>[]> {
    return attempt(async () => {
      checkId(ownerId, "ownerId");
      const p = checkPage(options, "list owned objects");
      const edge = { toId: ownerId, relation: "owned_by" } as const;
      const labelSelector = p.labelSelector;
      const { namespace } = await this.#scope();
      return this.#page(
        (page) =>
          this.#store.objects.listByIncomingEdge(this.#gk, edge, {
            ...page,
            labelSelector,
            namespace,
          }),
        p,
      );
    });
  }

  /**
   * Requests deletion of object `id`: sets `deletionRequestedAt`; the row stays
   * readable until its finalizers clear and nothing points at it. Idempotent.
   * With `resourceVersion`, marks only if the object is still at that version;
   * with `dryRun`, checks the request and marks nothing.
   * @throws {NotFoundError} `id` holds no object of this kind.
   * @throws {ConflictError} the object has moved on from `resourceVersion`; nothing is written.
   */
  delete(id: ObjectId, options?: MetadataWriteOptions): Promise<undefined> {
    return attempt(async () => {
      checkId(id);
      const resourceVersion = checkPrecondition(options, "delete");
      const dryRun = checkDryRun(options, "delete");
      try {
        await this.#assertInNamespace(id);
        const mark = (tx: Store) =>
          tx.deletionRequests.create(
            this.#ref(id),
            resourceVersion === undefined ? undefined : { resourceVersion },
          );
        if (dryRun) {
          await this.#commit(true, mark);
          return undefined;
        }
        // The mark commits on its own (or joins the caller's transaction), so the
        // idempotent answers need no write lock: the store probes without one.
        const r = await mark(this.#store);
        if (r.marked) this.#afterMark(id, r.unblocked);
      } catch (error) {
        throw this.#hideWrongKind(error, id);
      }
      return undefined;
    });
  }

  /** Requests deletion of whatever holds `name`; absence is success. */
  deleteByName(name: string): Promise<undefined> {
    return attempt(async () => {
      checkName(name);
      const namespace = await this.#nameScope("delete");
      try {
        const r = await this.#store.deletionRequests.createByName({
          ...this.#gk,
          name,
          namespace,
        });
        if (r.marked) this.#afterMark(r.id!, r.unblocked);
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
      }
      return undefined;
    });
  }

  /** Pushes after the mark's commit: at once at the root, after the outermost commit in a tx. */
  #afterMark(id: ObjectId, unblocked: readonly ObjectRef[]): void {
    const self = this.#ref(id);
    this.#store.afterCommit(() => {
      this.#engine.writes.kindWritten(self);
      this.#engine.pushNow(self);
      for (const t of unblocked) this.#engine.pushNow(t);
    });
  }

  /** The owner of `id`, or `undefined`. Not kind-checked; a missing id reads as none. */
  getOwner(id: ObjectId): Promise<ObjectRef | undefined> {
    return attempt(async () => {
      checkId(id);
      await this.#assertInNamespace(id);
      return (await this.#store.edges.listOutgoing(id, "owned_by"))[0];
    });
  }

  /** What `id` depends on. Not kind-checked. */
  listDependencies(id: ObjectId): Promise<ObjectRef[]> {
    return attempt(async () => {
      checkId(id);
      await this.#assertInNamespace(id);
      return await this.#store.edges.listOutgoing(id, "depends_on");
    });
  }

  /** What depends on `id`. Not kind-checked. */
  listDependents(id: ObjectId): Promise<ObjectRef[]> {
    return attempt(async () => {
      checkId(id);
      await this.#assertInNamespace(id);
      return await this.#store.edges.listIncoming({ toId: id, relation: "depends_on" });
    });
  }

  /** The objects `id` owns, of any kind. Not kind-checked. */
  listOwned(id: ObjectId): Promise<ObjectRef[]> {
    return attempt(async () => {
      checkId(id);
      await this.#assertInNamespace(id);
      return await this.#store.edges.listIncoming({ toId: id, relation: "owned_by" });
    });
  }

  /**
   * `id`'s event runs, newest first (any kind's id).
   * @throws {NotFoundError} no object holds `id` (e.g. it was collected, and its log with it),
   * as `watchEvents` ends.
   */
  listEvents(id: ObjectId, options?: EventListOptions): Promise<Event[]> {
    return attempt(async () => {
      checkId(id);
      checkOptions(options, "list events");
      await this.#assertInNamespace(id);
      const runs = await this.#store.events.list(id, options);
      if (runs.length === 0) {
        try {
          await this.#store.objects.getMeta(id);
        } catch (error) {
          if (!(error instanceof NotFoundError)) throw error;
          throw new NotFoundError(
            `Cannot list the events of ${id}: no object holds the id (it may have been collected, and its log with it)`,
            { cause: error },
          );
        }
      }
      return runs.map(toEvent);
    });
  }

  /** The newest run in `id`'s `category` timeline, or `undefined`. */
  getLatestEvent(id: ObjectId, category: string): Promise<Event | undefined> {
    return attempt(async () => {
      checkId(id);
      await this.#assertInNamespace(id);
      const raw = await this.#store.events.getLatest(id, category);
      return raw === undefined ? undefined : toEvent(raw);
    });
  }

  /** Checks a watch call's options. @throws {BeehiveError} inside a transaction. */
  #checkWatch(options: WatchListOptions | undefined, call: string): CheckedWatch {
    if (this.#inTransaction) {
      throw new BeehiveError(
        `Cannot ${call} through a transaction's client: a watch outlives the transaction and would miss its writes; use a client from bh.client(kind)`,
      );
    }
    checkOptions(options, call);
    const selector = parseLabelSelector((options as WatchListOptions | undefined)?.labelSelector);
    return {
      load: checkLoads(options === undefined ? undefined : { load: options.load }),
      resumeFrom: checkResumeFrom(options?.resumeFrom, call),
      signal: checkSignal(options?.signal, call),
      selector: selector === undefined || selector.length === 0 ? undefined : selector,
    };
  }

  #watchSnapshot(
    scope: {
      id?: ObjectId;
      owner?: ObjectId;
      selector?: readonly LabelRequirement[];
      namespace?: string;
    },
    o: CheckedWatch,
    snapshot: () => Promise<{ items: RawObject[]; resourceVersion: number }>,
  ) {
    return openObjectWatch({
      engine: this.#engine,
      gk: this.#gk,
      scope,
      load: o.load,
      resumeFrom: o.resumeFrom,
      signal: o.signal,
      snapshot,
      decode: (rows) => this.#many(rows, o.load),
    });
  }

  /**
   * Watches object `id`: resolves once its current state is read, then
   * streams every change above that position — a creation as `"Added"`, each
   * write (the deletion request included) as `"Modified"`, its collection as
   * `"Deleted"`. Kind-scoped, no controller needed; the id need not exist yet
   * (`object` is then `undefined`). Changes collapse to the latest state.
   * Subscribe, then act: a change made after the call resolves is always
   * streamed. Watch objects are deeply frozen (streams share them).
   * @throws {BeehiveError} called through a transaction's client.
   * @throws {TypeError} `id` or an option is malformed.
   */
  watch(id: ObjectId, options?: WatchOptions): Promise<ObjectStream<Spec, Status>> {
    return attempt(async () => {
      checkId(id);
      const o = this.#checkWatch(options, "watch");
      await this.#scope();
      const namespace = this.#namespace;
      const w = await this.#watchSnapshot(
        { id, namespace },
        o,
        async () => {
          const snap = await this.#engine.store.objectWrites.snapshotById(this.#gk, id);
          if (namespace === undefined) return snap;
          return { ...snap, items: snap.items.filter((r) => r.namespace === namespace) };
        },
      );
      return new ObjectStream<Spec, Status>(
        w.objects[0] as BeehiveObject<Spec, Status> | undefined,
        w.resourceVersion,
        w.feed,
      );
    });
  }

  /**
   * Watches every object of the kind: resolves once the snapshot (`objects`
   * and its `resourceVersion`) is read, then streams every change strictly
   * above it, ascending — no gap, no overlap. One shared reader per kind
   * however many watches it has; a slow consumer stalls only itself. With
   * `labelSelector`, the snapshot holds the matching objects, an object that
   * comes to match is streamed as `"Added"` and one that stops matching as
   * `"Deleted"`.
   * @throws {BeehiveError} called through a transaction's client.
   * @throws {InvalidOptionError} `labelSelector` is malformed.
   * @throws {TypeError} an option is malformed.
   */
  watchList(options?: WatchListOptions): Promise<ObjectListStream<Spec, Status>> {
    return attempt(async () => {
      const o = this.#checkWatch(options, "watch the list");
      const labelSelector = o.selector;
      const { namespace } = await this.#scope();
      const w = await this.#watchSnapshot(
        { selector: labelSelector, namespace },
        o,
        () => this.#engine.store.objectWrites.snapshot(this.#gk, { labelSelector, namespace }),
      );
      return new ObjectListStream<Spec, Status>(
        w.objects as BeehiveObject<Spec, Status>[],
        w.resourceVersion,
        w.feed,
      );
    });
  }

  /**
   * {@linkcode Client.listOwnedObjects} as a watch: this kind's children of
   * `ownerId`, then every change to one of them — a child created later as
   * `"Added"`, its collection as `"Deleted"`. Same contract as `watchList`,
   * `labelSelector` included.
   * @throws {BeehiveError} called through a transaction's client.
   * @throws {InvalidOptionError} `labelSelector` is malformed.
   * @throws {TypeError} `ownerId` or an option is malformed.
   */
  watchOwnedObjects(
    ownerId: ObjectId,
    options?: WatchListOptions,
  ): Promise<ObjectListStream<Spec, Status>> {
    return attempt(async () => {
      checkId(ownerId, "ownerId");
      const o = this.#checkWatch(options, "watch owned objects");
      const selector = o.selector;
      const { namespace } = await this.#scope();
      const w = await this.#watchSnapshot(
        { owner: ownerId, selector, namespace },
        o,
        async () => {
          const snap = await this.#engine.store.objectWrites.snapshotByOwner(this.#gk, ownerId);
          if (selector === undefined && namespace === undefined) return snap;
          // An owner's children are few: the selector and namespace filter them here.
          const items = snap.items.filter((r) =>
            (namespace === undefined || r.namespace === namespace) &&
            (selector === undefined || matchesLabels(selector, r.labels))
          );
          return { ...snap, items };
        },
      );
      return new ObjectListStream<Spec, Status>(
        w.objects as BeehiveObject<Spec, Status>[],
        w.resourceVersion,
        w.feed,
      );
    });
  }

  /**
   * Watches `id`'s event log (any kind's id): resolves once the snapshot
   * (`runs`, newest first, and its `resourceVersion`) is read, then streams
   * the runs above it oldest first; an extended run comes again with a higher
   * `resourceVersion` and `count`. `limit` bounds only the snapshot; the other
   * filters apply to deliveries too. `retention` reports `eventRetention`.
   * The stream ends with `NotFoundError` once the object is collected.
   * @throws {NoControllerError} no controller is registered here for this client's kind.
   * @throws {BeehiveError} called through a transaction's client.
   * @throws {TypeError} `id` or an option is malformed.
   */
  watchEvents(id: ObjectId, options?: EventWatchOptions): Promise<EventStream> {
    return attempt(() => {
      checkId(id);
      if (this.#inTransaction) {
        throw new BeehiveError(
          "Cannot watch events through a transaction's client: a watch outlives the transaction; use a client from bh.client(kind)",
        );
      }
      checkOptions(options, "watch events");
      const o = options ?? {};
      checkEventFilters(o);
      const resumeFrom = checkResumeFrom(o.resumeFrom, "watch events");
      const signal = checkSignal(o.signal, "watch events");
      if (this.#engine.registration(this.#gk) === undefined) {
        throw new NoControllerError(
          `Cannot watch events through a ${
            kindName(this.#gk)
          } client: no controller is registered for the kind`,
        );
      }
      const open = () => openEventWatch(this.#engine, this.#gk, id, { ...o, resumeFrom, signal });
      return this.#namespace === undefined ? open() : this.#assertInNamespace(id).then(open);
    });
  }

  /**
   * Queues object `id` for a pass now. Keeps the retry ladder unless
   * `resetBackoff`. In a Beehive that leads, the pass is queued in memory;
   * in one that does not lead now (a standby, or one not started or
   * stopped), the object is stamped owed a pass in the store, which the
   * leader hears as another process's commit and queues within the
   * cross-process wake bound, and which a later leader runs at start. The
   * leader keeps the wait of a pending retry, and `resetBackoff` applies
   * only in the leading process.
   * @throws {NotFoundError} `id` holds no object of this kind.
   * @throws {NoControllerError} the kind has no controller registered here.
   */
  requeue(id: ObjectId, options?: RequeueOptions): Promise<void> {
    return attempt(async () => {
      checkId(id);
      checkOptions(options, "requeue");
      const meta = await this.#store.objects.getMeta(id);
      if (meta.group !== this.#gk.group || meta.kind !== this.#gk.kind) {
        throw new NotFoundError(
          `Cannot requeue ${kindName(this.#gk)} ${id}: the id belongs to a ${kindName(meta)}`,
        );
      }
      this.#inNamespace(meta);
      const reg = this.#engine.registration(this.#gk);
      if (reg === undefined) {
        throw new NoControllerError(
          `Cannot requeue ${kindName(this.#gk)} ${id}: no controller is registered for the kind`,
        );
      }
      const engine = this.#engine;
      if (engine.state !== "running" || engine.term === undefined) {
        // Not leading here: a durable stamp the leader, now or next, runs.
        await this.#store.reconcileOwed.stamp([{ ...this.#gk, id }]);
        return;
      }
      if (options?.resetBackoff) reg.reconciler.resetBackoff(id);
      reg.reconciler.queue.requeueNow(id);
    });
  }

  /**
   * When object `id` is next scheduled to be requeued (a retry, a requeue
   * delay, a floor holding a wake; now when queued), from memory; a missing id
   * or a kind with no controller reads as nothing scheduled. A client with a
   * namespace treats an object of another namespace as not found.
   * @throws {NotFoundError} `id` is an object of this kind in another namespace.
   */
  getSchedule(id: ObjectId): Promise<Schedule> {
    return attempt(async () => {
      checkId(id);
      await this.#assertStoreOpen();
      await this.#assertInNamespace(id, true);
      const reg = this.#engine.registration(this.#gk);
      return reg?.reconciler.queue.schedule(id) ?? { nextRequeueAt: undefined };
    });
  }

  /**
   * Streams object `id`'s schedule: the current value, then each change (a
   * gauge: a slow reader gets the latest). The id need not exist. Ends quietly
   * on `close()`, on `signal`, and when the Beehive stops. A client with a
   * namespace treats an object of another namespace as not found.
   * @throws {NoControllerError} the kind has no controller registered here.
   * @throws {NotFoundError} `id` is an object of this kind in another namespace.
   */
  watchSchedule(id: ObjectId, options?: { signal?: AbortSignal }): Promise<ScheduleStream> {
    return attempt(async () => {
      checkId(id);
      const signal = options?.signal;
      if (signal !== undefined && !(signal instanceof AbortSignal)) {
        throw new TypeError("Cannot watch the schedule: signal must be an AbortSignal");
      }
      await this.#assertStoreOpen();
      const reg = this.#engine.registration(this.#gk);
      if (reg === undefined) {
        throw new NoControllerError(
          `Cannot watch the schedule of ${
            kindName(this.#gk)
          } ${id}: no controller is registered for the kind`,
        );
      }
      await this.#assertInNamespace(id, true);
      const signals = [this.#engine.shutdown.signal, ...(signal === undefined ? [] : [signal])];
      return Promise.resolve(new ScheduleStream(reg.reconciler.queue, id, signals));
    });
  }
}

/** Re-exported for the error-mapping tests. */
export { BeehiveError, DeletionPendingError };
