/**
 * The typed object a client reads and a controller reconciles, with its
 * conditions and events, and the relation accessors.
 *
 * @module
 */
import type { KindCodec } from "./_codec.ts";
import { NotLoadedError } from "./errors.ts";
import type {
  ConditionInput,
  EventId,
  ObjectId,
  ObjectRef,
  RawCondition,
  RawEvent,
  RawObject,
} from "../store.ts";

export type { ConditionStatus, GroupKind, ObjectId, ObjectRef } from "../store.ts";

/** A condition as written: `status` is `"True"`, `"False"` or `"Unknown"`. */
export type ConditionWrite = ConditionInput;

/**
 * A condition as read: `unconfirmed` marks a liveness condition whose
 * writing process is gone (closed the store or died), read as `"Unknown"`
 * until a controller confirms it again; `transitionedAt` moves when the status flips,
 * `updatedAt` on any change.
 */
export type Condition = RawCondition;

/** An event type. */
export type EventType = "Normal" | "Warning";

/** An event as written by a controller. */
export interface EventWrite {
  /** An independent timeline of the object. @default {""} */
  readonly category?: string;
  /** `"Normal"` or `"Warning"`. */
  readonly type: EventType;
  /** A machine-readable token; with category and type, it keys the run. */
  readonly reason: string;
  /** A human-readable message, sampled (latest wins). @default {""} */
  readonly message?: string;
  /** A JSON-encodable payload, sampled (latest wins). @default {undefined} */
  readonly detail?: unknown;
}

/** An event run as read: consecutive observations sharing (category, type, reason). */
export interface Event {
  /** The run's id. */
  readonly id: EventId;
  /** The object the run is about. */
  readonly objectId: ObjectId;
  /** The namespace of the object the run is about (`""` when it is cluster-scoped). */
  readonly namespace: string;
  /** The timeline; `""` is the default. */
  readonly category: string;
  /** `"Normal"` or `"Warning"`. */
  readonly type: EventType;
  /** The reason shared by the run. */
  readonly reason: string;
  /** The latest observation's message; `""` when none. */
  readonly message: string;
  /** The latest observation's payload, parsed; `undefined` when none. */
  readonly detail: unknown;
  /** Observations in the run (≥ 1). */
  readonly count: number;
  /** When the run started. */
  readonly firstAt: Date;
  /** When the run was last extended. */
  readonly lastAt: Date;
  /** Re-drawn on every extend. */
  readonly resourceVersion: number;
}

/** Returns an event's parsed detail payload, or `undefined` when it has none. */
export function eventDetail<T = unknown>(event: Event): T | undefined {
  return event.detail as T | undefined;
}

/** Converts a stored run. */
export function toEvent(raw: RawEvent): Event {
  let detail: unknown;
  if (raw.detail !== undefined) {
    try {
      detail = JSON.parse(raw.detail);
    } catch {
      detail = undefined;
    }
  }
  return {
    id: raw.id,
    objectId: raw.objectId,
    namespace: raw.namespace,
    category: raw.category,
    type: raw.type,
    reason: raw.reason,
    message: raw.message,
    detail,
    count: raw.count,
    firstAt: raw.firstAt,
    lastAt: raw.lastAt,
    resourceVersion: raw.resourceVersion,
  };
}

/** A relation a read can load eagerly. */
export type LoadKey = "owner" | "dependencies" | "dependents" | "owned" | "events";

/** The loaded relations of one object. */
export interface Relations {
  owner?: ObjectRef | null;
  dependencies?: ObjectRef[];
  dependents?: ObjectRef[];
  owned?: ObjectRef[];
  events?: Event[];
}

const relations = new WeakMap<object, Relations>();

function loaded<K extends keyof Relations>(
  obj: BeehiveObject<unknown, unknown>,
  key: K,
): NonNullable<Relations[K]> | null {
  const rel = relations.get(obj);
  const value = rel?.[key];
  if (value === undefined) {
    throw new NotLoadedError(
      `Cannot read ${key} of object ${obj.id}: the read did not load it; pass { load: ["${key}"] }`,
    );
  }
  return value as NonNullable<Relations[K]> | null;
}

/**
 * One object, decoded. Its own enumerable properties are exactly its data, so
 * `JSON.stringify(obj)` gives the data; relations are read through the
 * accessors, which throw `NotLoadedError` unless the read asked for them.
 */
export class BeehiveObject<Spec, Status> {
  /** The id: the key of this incarnation. */
  readonly id: ObjectId;
  /** The API group; `""` is the core group. */
  readonly group: string;
  /** The kind. */
  readonly kind: string;
  /** Unique within the kind and namespace, and immutable. */
  readonly name: string;
  /** The namespace (a DNS-1123 label), or `""` for a cluster-scoped kind; immutable. */
  readonly namespace: string;
  /** The desired state. */
  readonly spec: Spec;
  /** The observed state; `undefined` until a controller first writes it. */
  readonly status: Status | undefined;
  /** Starts at 1 and moves with every real spec change. */
  readonly generation: number;
  /** The generation a controller last settled; `undefined` when never. */
  readonly observedGeneration: number | undefined;
  /** When the object settled at `observedGeneration` (not a heartbeat). */
  readonly observedAt: Date | undefined;
  /** The resource version of the last write to the object. */
  readonly resourceVersion: number;
  /** Set once deletion is requested; the object is then finalizing. */
  readonly deletionRequestedAt: Date | undefined;
  /** What must be cleared before the object can be collected. */
  readonly finalizers: string[];
  /** The controller's per-type observations, ordered by type. */
  readonly conditions: Condition[];
  /** When the object was created. */
  readonly createdAt: Date;
  /** When its content last changed. */
  readonly updatedAt: Date;
  /** The labels (frozen, keys sorted; `{}` when none): what label selectors match. */
  readonly labels: Readonly<Record<string, string>>;
  /** The annotations (frozen, keys sorted; `{}` when none): free-form notes for tools. */
  readonly annotations: Readonly<Record<string, string>>;

  /** @internal Objects come from clients and passes. */
  constructor(raw: RawObject, spec: Spec, status: Status | undefined, rel?: Relations) {
    this.id = raw.id;
    this.group = raw.group;
    this.kind = raw.kind;
    this.name = raw.name;
    this.namespace = raw.namespace;
    this.spec = spec;
    this.status = status;
    this.generation = raw.generation;
    this.observedGeneration = raw.observedGeneration;
    this.observedAt = raw.observedAt === undefined ? undefined : new Date(raw.observedAt.getTime());
    this.resourceVersion = raw.resourceVersion;
    this.deletionRequestedAt = raw.deletionRequestedAt === undefined
      ? undefined
      : new Date(raw.deletionRequestedAt.getTime());
    this.finalizers = [...raw.finalizers];
    this.conditions = raw.conditions.map((c) => ({
      ...c,
      transitionedAt: new Date(c.transitionedAt.getTime()),
      updatedAt: new Date(c.updatedAt.getTime()),
    }));
    // Its own dates, as its own arrays: one row can be decoded into several objects (the
    // object a write returns and the frozen change a watch hands out of it), and a Date is
    // changed in place.
    this.createdAt = new Date(raw.createdAt.getTime());
    this.updatedAt = new Date(raw.updatedAt.getTime());
    this.labels = raw.labels;
    this.annotations = raw.annotations;
    if (rel !== undefined) relations.set(this, rel);
  }

  /** The owner, or `undefined` when it has none. @throws {NotLoadedError} not loaded. */
  owner(): ObjectRef | undefined {
    return loaded(this, "owner") ?? undefined;
  }

  /** What this object depends on. @throws {NotLoadedError} not loaded. */
  dependencies(): ObjectRef[] {
    return [...loaded(this, "dependencies")!];
  }

  /** What depends on this object. @throws {NotLoadedError} not loaded. */
  dependents(): ObjectRef[] {
    return [...loaded(this, "dependents")!];
  }

  /** The objects this one owns. @throws {NotLoadedError} not loaded. */
  owned(): ObjectRef[] {
    return [...loaded(this, "owned")!];
  }

  /** The most recent event runs, newest first. @throws {NotLoadedError} not loaded. */
  events(): Event[] {
    return [...loaded(this, "events")!];
  }
}

/**
 * Decodes a raw row with a kind's codec.
 * @throws {DecodeError} the spec or status does not decode.
 */
export function decodeObject<Spec, Status>(
  raw: RawObject,
  codec: KindCodec,
  rel?: Relations,
): BeehiveObject<Spec, Status> {
  const spec = codec.decodeSpec(raw.spec, raw.specVersion) as Spec;
  const status = raw.status === undefined
    ? undefined
    : codec.decodeStatus(raw.status, raw.statusVersion) as Status;
  return new BeehiveObject<Spec, Status>(raw, spec, status, rel);
}
