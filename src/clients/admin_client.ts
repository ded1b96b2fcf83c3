/**
 * Writes only a reconcile pass can otherwise make, from outside a pass: for
 * test fixtures and maintenance on a stopped Beehive.
 *
 * @module
 */
import { checkId, checkKind, type Engine, kindName } from "../engine/_engine.ts";
import { attempt } from "../model/_values.ts";
import { checkKindBounds } from "./_write_checks.ts";
import { PassWriter } from "./controller_client.ts";
import { InvalidOptionError, WrongKindError } from "../model/errors.ts";
import { schemasOf, type StoredKind, storedKindOf } from "../model/kind.ts";
import type { KindSchemas } from "./_write_checks.ts";
import type { ConditionWrite, EventWrite } from "../model/object.ts";
import type { GroupKind, ObjectId } from "../store.ts";
import { deleteNow } from "../engine/_delete_now.ts";

/** Options of {@linkcode AdminClient.deleteNow}. */
export interface DeleteNowOptions {
  /** Delete only while the object is at this version. @default {undefined: any version} */
  readonly resourceVersion?: number;
  /**
   * `"Orphan"` detaches the owned children, which stay; `"Background"` and
   * `"Foreground"` delete them with the object (an owner stays until its
   * children are gone). @default {"Background"}
   */
  readonly propagationPolicy?: "Background" | "Foreground" | "Orphan";
  /** Run the deletion and roll it back: the answer as it would be, nothing written. @default {false} */
  readonly dryRun?: boolean;
}

const POLICIES: ReadonlySet<unknown> = new Set(["Background", "Foreground", "Orphan"]);

/**
 * Id-keyed twins of the ControllerClient's writes, scoped to one kind (another
 * kind's id is `WrongKindError`). It never records the generation handshake,
 * so an object written here stays unsettled until a pass settles it. Run it
 * with the Beehive stopped: a write while it runs races the object's own pass.
 *
 * @example A test fixture: park a status a controller would write
 * ```ts
 * import { Beehive } from "@beehive/beehive";
 * import { openSqliteStore } from "@beehive/beehive/sqlite";
 *
 * const store = await openSqliteStore(":memory:");
 * const bh = new Beehive(store);
 * const Server = { group: "example.com", kind: "Server" };
 * const web = await bh.client(Server).create("web", {});
 * await bh.adminClient<{ uid: string }>(Server).updateStatus(web.id, { uid: "server-1" });
 * console.assert((await bh.client(Server).get(web.id)).status !== undefined);
 * await store.close();
 * ```
 */
export class AdminClient<Status> {
  readonly #engine: Engine;
  readonly #gk: GroupKind;
  readonly #schemas: KindSchemas | undefined;

  /** @internal Use `bh.adminClient(kind)`. */
  constructor(engine: Engine, kind: GroupKind) {
    this.#engine = engine;
    this.#gk = checkKind(kind);
    checkKindBounds(this.#gk, engine.options.limits);
    this.#schemas = schemasOf(kind);
  }

  #writer(id: ObjectId): PassWriter<Status> {
    checkId(id);
    return new PassWriter<Status>(this.#engine, this.#engine.store, { ...this.#gk, id }, {
      ended: false,
      baseline: undefined,
      signal: this.#engine.shutdown.signal,
      schemas: this.#schemas,
    });
  }

  async #checkSource(fromId: ObjectId): Promise<void> {
    const meta = await this.#engine.store.objects.getMeta(fromId);
    if (meta.group !== this.#gk.group || meta.kind !== this.#gk.kind) {
      throw new WrongKindError(
        `Cannot use object ${fromId} as ${kindName(this.#gk)}: it is a ${kindName(meta)}`,
      );
    }
  }

  /**
   * Writes object `id`'s status, validated by the kind's status schema.
   * @throws {NotFoundError} @throws {WrongKindError} @throws {InvalidStatusError} @throws {TooLargeError}
   */
  updateStatus(id: ObjectId, status: Status): Promise<void> {
    return attempt(() => this.#writer(id).updateStatus(status));
  }

  /** Writes one condition. @throws {InvalidConditionError} @throws {WrongKindError} */
  setCondition(id: ObjectId, condition: ConditionWrite): Promise<void> {
    return attempt(() => this.#writer(id).setCondition(condition));
  }

  /** Writes several conditions as one write. @throws {DuplicateConditionTypeError} @throws {WrongKindError} */
  setConditions(id: ObjectId, conditions: readonly ConditionWrite[]): Promise<void> {
    return attempt(() => this.#writer(id).setConditions(conditions));
  }

  /** Removes a condition. @throws {WrongKindError} */
  deleteCondition(id: ObjectId, type: string): Promise<void> {
    return attempt(() => this.#writer(id).deleteCondition(type));
  }

  /** Records an event on object `id`. @throws {InvalidEventError} @throws {WrongKindError} */
  addEvent(id: ObjectId, event: EventWrite): Promise<void> {
    return attempt(() => this.#writer(id).addEvent(event));
  }

  /**
   * Adds a finalizer to object `id` (a no-op when present): how an object
   * created before its controller claimed it gains the claim. Only a kind with
   * a controller registered in this process, which can clear it again.
   * @throws {DeletionPendingError} the object's deletion was requested.
   * @throws {InvalidOptionError} a malformed finalizer, or no controller is registered for the kind.
   * @throws {WrongKindError} @throws {NotFoundError}
   */
  addFinalizer(id: ObjectId, finalizer: string): Promise<void> {
    return attempt(() => {
      const w = this.#writer(id);
      if (this.#engine.registration(this.#gk) === undefined) {
        throw new InvalidOptionError(
          `Cannot add a finalizer to ${
            kindName(this.#gk)
          } ${id}: only a kind with a controller registered in this process can clear it`,
        );
      }
      return w.addFinalizer(finalizer);
    });
  }

  /** Removes a finalizer: how a wedged object is unstuck. @throws {WrongKindError} */
  deleteFinalizer(id: ObjectId, finalizer: string): Promise<void> {
    return attempt(() => this.#writer(id).deleteFinalizer(finalizer));
  }

  /**
   * Deletes object `id` as the Kubernetes API server does, in one transaction:
   * marks it, marks its owned subtree (or detaches its children under
   * `"Orphan"`), and removes at once every marked object that no finalizer and
   * no live claim holds, children before their owners. Resolves to whether `id`
   * itself is gone; when it stays, it is deletion-pending and garbage
   * collection removes it once what holds it lets go. `Client.delete` only
   * requests deletion; this is the API's delete.
   * @throws {TypeError} an option is malformed.
   * @throws {NotFoundError} @throws {WrongKindError}
   * @throws {ConflictError} the object moved on from `resourceVersion`; nothing is written.
   */
  deleteNow(id: ObjectId, options?: DeleteNowOptions): Promise<boolean> {
    return attempt(() => {
      checkId(id);
      if (options !== undefined && (typeof options !== "object" || options === null)) {
        throw new TypeError("Cannot delete now: options must be an object");
      }
      const rv = options?.resourceVersion;
      if (rv !== undefined && (typeof rv !== "number" || !Number.isSafeInteger(rv) || rv < 1)) {
        throw new TypeError(
          `Cannot delete now: resourceVersion is ${String(rv)}, expected a positive safe integer`,
        );
      }
      const policy = options?.propagationPolicy;
      if (policy !== undefined && !POLICIES.has(policy)) {
        throw new TypeError(
          `Cannot delete now: propagationPolicy is ${
            JSON.stringify(policy)
          }, expected "Background", "Foreground" or "Orphan"`,
        );
      }
      const dryRun = options?.dryRun ?? false;
      if (typeof dryRun !== "boolean") {
        throw new TypeError(`Cannot delete now: dryRun is ${typeof dryRun}, expected a boolean`);
      }
      return deleteNow(this.#engine, this.#engine.store, { ...this.#gk, id }, {
        resourceVersion: rv,
        propagationPolicy: policy,
        dryRun,
      });
    });
  }

  /** Declares that `fromId` (this kind) depends on `toId` (any kind). @throws {WrongKindError} */
  addDependency(fromId: ObjectId, toId: ObjectId): Promise<void> {
    return attempt(async () => {
      const w = this.#writer(fromId);
      checkId(toId, "toId");
      await this.#checkSource(fromId);
      return w.addDependency(toId);
    });
  }

  /** Drops the `fromId` → `toId` dependency. @throws {WrongKindError} */
  deleteDependency(fromId: ObjectId, toId: ObjectId): Promise<void> {
    return attempt(async () => {
      const w = this.#writer(fromId);
      checkId(toId, "toId");
      await this.#checkSource(fromId);
      return w.deleteDependency(toId);
    });
  }

  /**
   * Every kind definition the store holds (stored by `start()` of the Beehives
   * that registered or listed them), ordered by group, then kind; not only
   * this client's kind.
   * @throws {StoreError} a stored definition is unreadable.
   */
  listKinds(): Promise<StoredKind[]> {
    return attempt(async () => (await this.#engine.store.kinds.list()).map(storedKindOf));
  }

  /**
   * The stored definition of `kind`, or `undefined` when none is stored.
   * @throws {InvalidOptionError} `kind` is malformed.
   * @throws {StoreError} the stored definition is unreadable.
   */
  getKind(kind: GroupKind): Promise<StoredKind | undefined> {
    return attempt(async () => {
      const raw = await this.#engine.store.kinds.get(checkKind(kind));
      return raw === undefined ? undefined : storedKindOf(raw);
    });
  }
}
