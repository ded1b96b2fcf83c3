/**
 * The client a controller receives with each pass: it writes status,
 * conditions, events, finalizers and dependency edges of the object it was
 * handed, and dies when the pass returns.
 *
 * @module
 */
import { checkId, type Engine, kindName, type Term } from "../engine/_engine.ts";
import { checkClientOptions, Client, type ClientOptions } from "./client.ts";
import {
  InvalidConditionError,
  InvalidOptionError,
  ReconcileReturnedError,
  StaleTxError,
} from "../model/errors.ts";
import {
  checkConditionBounds,
  checkEventBounds,
  checkFinalizerBounds,
  encodeBounded,
  type KindSchemas,
  prepareValue,
} from "./_write_checks.ts";
import { isStorableText } from "../model/_text.ts";
import { describe } from "../model/_values.ts";
import type { Kind } from "../model/kind.ts";
import type { ConditionWrite, EventWrite } from "../model/object.ts";
import { checkMetadataUpdate, type MetadataUpdate } from "../model/labels.ts";
import type { GroupKind, ObjectRef, Store } from "../store.ts";
import {
  type FencedRepository,
  type FencedTarget,
  fencedWrite,
  type Fencing,
} from "../engine/fencing.ts";

/** The stored status as the pass knows it, so an unchanged report costs no store call. */
export class StatusBaseline {
  #text: string | undefined;
  #version: number;
  #outstanding = 0;

  constructor(text: string | undefined, version: number) {
    this.#text = text;
    this.#version = version;
  }

  /** Whether the write must reach the store; claims it if so. */
  claim(text: string, writeVersion: number): boolean {
    const version = writeVersion === 0 ? this.#version : writeVersion;
    if (this.#outstanding === 0 && version === this.#version && text === this.#text) return false;
    this.#outstanding++;
    return true;
  }

  /** A claimed write committed and changed the row. */
  promote(text: string, writeVersion: number): void {
    this.#text = text;
    if (writeVersion !== 0) this.#version = writeVersion;
    this.#outstanding--;
  }
}

/** One pass's shared state. */
interface PassState {
  ended: boolean;
  /** The namespace of the object the pass is about (`""` when cluster-scoped or unknown). */
  readonly namespace?: string;
  readonly baseline: StatusBaseline | undefined;
  readonly signal: AbortSignal;
  /** The validators of the token the surface was made from; else the registered kind's. */
  readonly schemas?: KindSchemas;
  /**
   * The object's conditions as this pass read them at its start; their types,
   * kept up to date with its commits, are built on the first condition write.
   */
  readonly conditions?: {
    readonly read: readonly { readonly type: string }[];
    types?: Set<string>;
  };
}

/** The write and read surface shared by a ControllerClient and its transaction handles. */
export interface ControllerWrites<Status> {
  /**
   * Writes the object's status; an unchanged status writes nothing (no store
   * call in a pass). The kind's status schema runs first; its output is stored.
   * @throws {InvalidStatusError} the kind's status schema refused `status`.
   * @throws {TooLargeError} the status's JSON is above `limits.objectBytes`.
   * @throws {TypeError} `status` is not JSON-encodable, or holds a non-finite number.
   */
  updateStatus(status: Status): Promise<void>;
  /** Writes one condition. @throws {InvalidConditionError} (a message above `limits.messageBytes` too) */
  setCondition(condition: ConditionWrite): Promise<void>;
  /**
   * Writes several conditions as one write (one version bump); unchanged ones
   * keep their stamps, and an all-unchanged batch writes nothing.
   * @throws {InvalidConditionError} bad status, empty type, or text that is not well-formed UTF-16.
   * @throws {DuplicateConditionTypeError} a type appears twice.
   */
  setConditions(conditions: readonly ConditionWrite[]): Promise<void>;
  /** Removes the condition of `type`; absent is a no-op. */
  deleteCondition(type: string): Promise<void>;
  /**
   * Updates the object's labels and annotations with JSON-merge semantics (a
   * string sets a key, `null` removes it). Bumps `resourceVersion` (watches
   * see it), never `generation`: it owes the object no pass. A patch that
   * changes nothing writes nothing.
   * @throws {InvalidMetadataError} a key or value breaks Kubernetes' rules, or the annotations would exceed 256 KiB.
   * @throws {TypeError} `update` is not an object.
   */
  updateMetadata(update: MetadataUpdate): Promise<void>;
  /**
   * Records an observation: extends the timeline's latest run when category,
   * type and reason match, else starts a run.
   * @throws {InvalidEventError} bad type, empty reason, or text that is not well-formed UTF-16.
   * @throws {TypeError} `detail` is not JSON-encodable.
   */
  addEvent(event: EventWrite): Promise<void>;
  /**
   * Adds a finalizer to the object (the Kubernetes pattern: a controller
   * claims the objects it must clean up after); a no-op when present.
   * @throws {DeletionPendingError} the object's deletion was requested.
   * @throws {InvalidOptionError} `finalizer` is empty, or not well-formed UTF-16 without NUL.
   */
  addFinalizer(finalizer: string): Promise<void>;
  /** Removes a finalizer; clearing the last one of a deleting object lets it be collected. */
  deleteFinalizer(finalizer: string): Promise<void>;
  /**
   * Declares that the object depends on `toId` (any kind): a change to the
   * target reconciles it again. A new edge records one owed pass, atomically.
   * @throws {NotFoundError} `toId` names no object.
   */
  addDependency(toId: number): Promise<void>;
  /** Drops the dependency on `toId`; absent is a no-op. */
  deleteDependency(toId: number): Promise<void>;
  /** Whether anything with a live claim points at the object (an owned child, a live dependent). */
  hasIncomingEdges(): Promise<boolean>;
  /** The object's owner, or `undefined`. */
  getOwner(): Promise<ObjectRef | undefined>;
  /** What the object depends on. */
  listDependencies(): Promise<ObjectRef[]>;
  /** What depends on the object. */
  listDependents(): Promise<ObjectRef[]>;
  /** The objects the object owns. */
  listOwned(): Promise<ObjectRef[]>;
}

/** A transaction opened by `cc.within`: the same surface, joined to one transaction. */
export interface ControllerTx<Status> extends ControllerWrites<Status> {
  /** Opens a nested frame (a savepoint): a rejection unwinds only its writes and hooks. */
  within<T>(fn: (tx: ControllerTx<Status>) => Promise<T>): Promise<T>;
  /**
   * A client of `kind` whose calls join this transaction (no watches); a token
   * brings its types. A namespaced kind's client works in the pass's object's
   * namespace unless `options.namespace` names another.
   * @throws {InvalidOptionError} `options` or its namespace is malformed, or a cluster-scoped token was given a namespace.
   */
  client<S, T>(kind: Kind<S, T>, options?: ClientOptions): Client<S, T>;
  /** A client of a plain `{ group, kind }` whose calls join this transaction (no watches). */
  client<S = unknown, T = unknown>(kind: GroupKind, options?: ClientOptions): Client<S, T>;
  /** Runs `fn` once the outermost transaction commits; never if this frame unwinds. */
  afterCommit(fn: () => void | Promise<void>): void;
}

/**
 * The client bound to one pass: every member rejects with
 * `ReconcileReturnedError` once the pass returns.
 */
export interface ControllerClient<Status> extends ControllerWrites<Status> {
  /** Aborts when the Beehive stops, or when it loses the leader lease mid-pass. */
  readonly signal: AbortSignal;
  /**
   * The pass's fencing token: the lease and the epoch of the leadership term
   * it runs in (epoch `0` without `leaderElection`).
   */
  readonly fencing: Fencing;
  /**
   * Writes `mutation` to `entityId` through the kind's `fencedRepository`,
   * with the term's epoch and this pass's signal: a write from a term that
   * is over is refused once a later term has written the entity.
   * @throws {FencedError} the repository refused the write (it returned `false`).
   * @throws {TypeError} no `fencedRepository` was registered for the kind, or `entityId` is not a non-empty string of at most 1,024 characters.
   * @throws {ReconcileReturnedError} the pass has returned.
   * @throws {unknown} what the repository's `applyFenced` rejected with, as itself.
   */
  fencedWrite(entityId: string, mutation: unknown): Promise<void>;
  /**
   * Runs `fn` in one transaction: it commits when `fn` resolves and rolls back
   * when it rejects. Write through `tx` inside; a write through this client
   * while the transaction is open rejects with `StaleTxError`.
   */
  within<T>(fn: (tx: ControllerTx<Status>) => Promise<T>): Promise<T>;
}

/** The one implementation of every controller write, over a root store or a transaction. */
export class PassWriter<Status> implements ControllerTx<Status> {
  readonly #engine: Engine;
  readonly #store: Store;
  readonly #ref: ObjectRef;
  readonly #state: PassState;
  /** Set while a `within` opened through this handle is running. */
  #open = 0;
  /** Set once the transaction frame this handle belongs to has ended. */
  #frameEnded = false;

  constructor(engine: Engine, store: Store, ref: ObjectRef, state: PassState) {
    this.#engine = engine;
    this.#store = store;
    this.#ref = ref;
    this.#state = state;
  }

  /** Aborts when the Beehive stops. */
  get signal(): AbortSignal {
    return this.#state.signal;
  }

  #gate(): void {
    if (this.#state.ended) {
      throw new ReconcileReturnedError(
        `Cannot use the ControllerClient of ${
          kindName(this.#ref)
        } ${this.#ref.id}: its pass has returned`,
      );
    }
    if (this.#frameEnded) {
      // Checked here, not left to the store: an unchanged status never reaches it.
      throw new StaleTxError(
        `Cannot write ${
          kindName(this.#ref)
        } ${this.#ref.id} through this transaction handle: its within has ended`,
      );
    }
    if (this.#open > 0) {
      throw new StaleTxError(
        `Cannot write ${
          kindName(this.#ref)
        } ${this.#ref.id} through this handle: a transaction it opened is still running; use that transaction's tx`,
      );
    }
  }

  #run<T>(fn: () => Promise<T>): Promise<T> {
    try {
      this.#gate();
      return fn();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  updateStatus(status: Status): Promise<void> {
    return this.#run(async () => {
      // The validators and the encoded text are most often at hand: awaited only when not.
      const schemas = this.#engine.schemas(this.#ref, this.#state.schemas, this.#store);
      const limits = this.#engine.options.limits;
      const prepared = prepareValue(schemas, status, "status", this.#ref, limits);
      const text = typeof prepared === "string" ? prepared : await prepared;
      // Validation may have awaited: the pass may have returned meanwhile.
      this.#gate();
      const version = this.#engine.codec(this.#ref).statusVersion;
      const baseline = this.#state.baseline;
      if (baseline !== undefined && !baseline.claim(text, version)) return;
      // One write, no transaction of its own: on the pass's store it has committed when the
      // call resolves (the hook runs at once); inside a within, the hook waits for its commit.
      const changed = await this.#store.objects.updateStatus(this.#ref, {
        status: text,
        statusVersion: version,
      });
      if (changed) {
        this.#store.afterCommit(() => {
          baseline?.promote(text, version);
          this.#engine.writes.kindWritten(this.#ref);
        });
      }
    });
  }

  setCondition(condition: ConditionWrite): Promise<void> {
    return this.setConditions([condition]);
  }

  setConditions(conditions: readonly ConditionWrite[]): Promise<void> {
    return this.#run(async () => {
      const limits = this.#engine.options.limits;
      checkConditionBounds(conditions, limits);
      if (Array.isArray(conditions) && conditions.length > 0) {
        await this.#checkConditionCount(conditions, limits.conditionsPerObject);
      }
      await this.#store.conditions.set(this.#ref, conditions);
      const known = this.#knownTypes();
      if (known !== undefined) {
        this.#store.afterCommit(() => {
          for (const c of conditions) known.add(c.type);
        });
      }
      this.#wake();
    });
  }

  /** The condition types the pass knows the object holds; `undefined` outside a pass. */
  #knownTypes(): Set<string> | undefined {
    const c = this.#state.conditions;
    if (c === undefined) return undefined;
    return c.types ??= new Set(c.read.map((x) => x.type));
  }

  /**
   * Refuses a write that would leave the object holding more than `max`
   * conditions, counted against the stored ones (a read only when the write
   * could cross it). @throws {InvalidConditionError}
   */
  async #checkConditionCount(conditions: readonly unknown[], max: number): Promise<void> {
    let known = this.#knownTypes();
    if (known === undefined) {
      // A read that fails (no such id) leaves the write to report it after its own checks.
      const stored = await this.#store.objects.get(this.#ref.id).catch(() => undefined);
      if (stored === undefined) return;
      known = new Set(stored.conditions.map((c) => c.type));
    }
    if (known.size + conditions.length <= max) return;
    const types = new Set(known);
    for (const c of conditions) {
      if (typeof c === "object" && c !== null) types.add((c as { type?: string }).type as string);
    }
    if (types.size > max) {
      throw new InvalidConditionError(
        `Cannot set conditions on ${
          kindName(this.#ref)
        } ${this.#ref.id}: it would hold ${types.size}, above limits.conditionsPerObject (${max})`,
      );
    }
  }

  deleteCondition(type: string): Promise<void> {
    return this.#run(async () => {
      await this.#store.conditions.delete(this.#ref, type);
      const known = this.#knownTypes();
      if (known !== undefined) this.#store.afterCommit(() => void known.delete(type));
      this.#wake();
    });
  }

  updateMetadata(update: MetadataUpdate): Promise<void> {
    return this.#run(async () => {
      const patch = checkMetadataUpdate(update, "update metadata");
      const r = await this.#store.objects.updateMetadata(this.#ref, patch);
      if (r.changed) this.#wake();
    });
  }

  /** After a logged write: wake the kind's watchers and the waker once it commits. */
  #wake(): void {
    this.#store.afterCommit(() => this.#engine.writes.kindWritten(this.#ref));
  }

  addEvent(event: EventWrite): Promise<void> {
    return this.#run(() => {
      if (typeof event !== "object" || event === null) {
        throw new TypeError("Cannot add event: expected an object { type, reason, ... }");
      }
      const limits = this.#engine.options.limits;
      checkEventBounds(event as unknown as Record<string, unknown>, limits);
      const detail = event.detail === undefined
        ? undefined
        : encodeBounded(event.detail, "detail", this.#ref, limits);
      return this.#store.events.add(this.#ref, {
        category: event.category,
        type: event.type,
        reason: event.reason,
        message: event.message,
        detail,
      }).then(() => {
        // Events bump no object version: only this object's event readers care.
        this.#store.afterCommit(() => this.#engine.writes.eventsWritten(this.#ref.id));
      });
    });
  }

  addFinalizer(finalizer: string): Promise<void> {
    return this.#run(() => {
      if (typeof finalizer !== "string" || finalizer === "" || !isStorableText(finalizer)) {
        throw new InvalidOptionError(
          `Cannot add finalizer: current value is ${
            describe(finalizer)
          }, expected a non-empty string, well-formed UTF-16 without NUL`,
        );
      }
      const limits = this.#engine.options.limits;
      checkFinalizerBounds([finalizer], limits);
      return this.#store.within(async (tx) => {
        const { finalizers } = await tx.objects.getMeta(this.#ref.id);
        if (!finalizers.includes(finalizer)) {
          checkFinalizerBounds([finalizer], limits, finalizers.length);
        }
        const added = await tx.objects.addFinalizer(this.#ref, finalizer);
        if (added) tx.afterCommit(() => this.#engine.writes.kindWritten(this.#ref));
      });
    });
  }

  deleteFinalizer(finalizer: string): Promise<void> {
    return this.#run(() =>
      this.#store.within(async (tx) => {
        const clearedLast = await tx.objects.deleteFinalizer(this.#ref, finalizer);
        const self = this.#ref;
        tx.afterCommit(() => {
          this.#engine.writes.kindWritten(self);
          if (clearedLast) this.#engine.pushNow(self);
        });
      })
    );
  }

  addDependency(toId: number): Promise<void> {
    return this.#run(() => {
      checkId(toId, "toId");
      return this.#store.within(async (tx) => {
        const r = await tx.edges.add({ fromId: this.#ref.id, toId, relation: "depends_on" });
        // Throttled: controllers re-declare their edges on every pass.
        if (r.reconcileOwedStamped) tx.afterCommit(() => this.#engine.pushThrottled(this.#ref));
      });
    });
  }

  deleteDependency(toId: number): Promise<void> {
    return this.#run(() => {
      checkId(toId, "toId");
      return this.#store.within(async (tx) => {
        const r = await tx.edges.delete({ fromId: this.#ref.id, toId, relation: "depends_on" });
        if (r.unblocked && r.to !== undefined) {
          const target = { ...r.to, id: toId };
          tx.afterCommit(() => this.#engine.pushNow(target));
        }
      });
    });
  }

  hasIncomingEdges(): Promise<boolean> {
    return this.#run(() => this.#store.edges.hasIncoming(this.#ref.id));
  }

  getOwner(): Promise<ObjectRef | undefined> {
    return this.#run(async () =>
      (await this.#store.edges.listOutgoing(this.#ref.id, "owned_by"))[0]
    );
  }

  listDependencies(): Promise<ObjectRef[]> {
    return this.#run(() => this.#store.edges.listOutgoing(this.#ref.id, "depends_on"));
  }

  listDependents(): Promise<ObjectRef[]> {
    return this.#run(() =>
      this.#store.edges.listIncoming({ toId: this.#ref.id, relation: "depends_on" })
    );
  }

  listOwned(): Promise<ObjectRef[]> {
    return this.#run(() =>
      this.#store.edges.listIncoming({ toId: this.#ref.id, relation: "owned_by" })
    );
  }

  within<T>(fn: (tx: ControllerTx<Status>) => Promise<T>): Promise<T> {
    return this.#run(async () => {
      if (typeof fn !== "function") {
        throw new TypeError("Cannot run a transaction: fn is not a function");
      }
      this.#open++;
      const handles: PassWriter<Status>[] = [];
      try {
        return await this.#store.within((tx) => {
          const handle = new PassWriter<Status>(this.#engine, tx, this.#ref, this.#state);
          handles.push(handle);
          return fn(handle);
        });
      } finally {
        this.#open--;
        for (const handle of handles) handle.#frameEnded = true;
      }
    });
  }

  client<S, T>(kind: Kind<S, T>, options?: ClientOptions): Client<S, T>;
  client<S = unknown, T = unknown>(kind: GroupKind, options?: ClientOptions): Client<S, T>;
  client<S = unknown, T = unknown>(kind: GroupKind, options?: ClientOptions): Client<S, T> {
    this.#gate();
    const namespace = checkClientOptions(kind, options);
    return new Client<S, T>(this.#engine, this.#store, kind, true, {
      namespace,
      inherited: this.#state.namespace,
    });
  }

  afterCommit(fn: () => void | Promise<void>): void {
    this.#gate();
    this.#store.afterCommit(fn);
  }
}

/** The client of one pass: the writes, plus the pass's fencing token and fenced writes. */
class PassClient<Status> extends PassWriter<Status> implements ControllerClient<Status> {
  readonly #target: FencedTarget;

  constructor(
    engine: Engine,
    store: Store,
    ref: ObjectRef,
    state: PassState,
    target: FencedTarget,
  ) {
    super(engine, store, ref, state);
    this.#target = target;
  }

  get fencing(): Fencing {
    return this.#target.fencing;
  }

  fencedWrite(entityId: string, mutation: unknown): Promise<void> {
    return fencedWrite(this.#target, entityId, mutation);
  }
}

/** Creates the client of one pass, and the function that ends it. */
export function passClient<Status>(
  engine: Engine,
  term: Term,
  ref: ObjectRef,
  baseline: StatusBaseline | undefined,
  options: {
    readonly repository: FencedRepository | undefined;
    /** The object's conditions as the pass read them at its start. */
    readonly conditions?: readonly { readonly type: string }[];
    /** The object's namespace: its transactions' clients work in it. */
    readonly namespace?: string;
  },
): { client: ControllerClient<Status>; end: () => void } {
  const { repository, conditions, namespace } = options;
  const state: PassState = {
    ended: false,
    namespace,
    baseline,
    signal: term.signal,
    conditions: conditions === undefined ? undefined : { read: conditions },
  };
  const client = new PassClient<Status>(engine, term.store, ref, state, {
    repository,
    fencing: term.fencing,
    signal: term.signal,
    kind: kindName(ref),
    ended: () => state.ended,
  });
  return { client, end: () => (state.ended = true) };
}
