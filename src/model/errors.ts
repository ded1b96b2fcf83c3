/**
 * The error classes beehive raises. Every condition a caller may branch on is a
 * {@linkcode BeehiveError} subclass with a stable `name`; programming errors
 * (a malformed id, a value JSON cannot encode) are plain `TypeError`s.
 *
 * @module
 */

/** Options every beehive error accepts. */
export interface BeehiveErrorOptions {
  /** The underlying error, e.g. a driver error a store adapter translated. */
  cause?: unknown;
}

/**
 * The base class of every error beehive raises for a condition a caller can
 * branch on. Use `instanceof` on the subclasses, or compare `name`.
 */
export class BeehiveError extends Error {
  /** Creates an error with the given message. */
  constructor(message: string, options?: BeehiveErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** No object matches the id or name asked for (or it was collected). */
export class NotFoundError extends BeehiveError {}

/** A create names an object already held within its kind, deletion-pending rows included. */
export class NameTakenError extends BeehiveError {}

/**
 * A spec write targets an object whose deletion was requested. Distinct from
 * {@linkcode NotFoundError}: the row still exists and still holds its name.
 */
export class DeletionPendingError extends BeehiveError {}

/** A name is empty or not well-formed UTF-16. */
export class InvalidNameError extends BeehiveError {}

/**
 * A label or annotation breaks Kubernetes' rules: a malformed key, a label
 * value that is not a short name, or annotations above 256 KiB in all.
 * `field` says which map, `key` which entry (`""` when the whole map is at fault).
 */
export class InvalidMetadataError extends BeehiveError {
  /** `"labels"` or `"annotations"`. */
  readonly field: "labels" | "annotations";
  /** The offending key; `""` when the map as a whole is at fault (its type or its size). */
  readonly key: string;
  /** Creates the error for `key` of `field`. */
  constructor(
    message: string,
    field: "labels" | "annotations",
    key: string,
    options?: BeehiveErrorOptions,
  ) {
    super(message, options);
    this.field = field;
    this.key = key;
  }
}

/** An id-keyed call names an object of a different kind than the one it is scoped to. */
export class WrongKindError extends BeehiveError {}

/** An option or argument value is out of its documented range. */
export class InvalidOptionError extends BeehiveError {}

/** A reconcile returned something that is not a reconcile result. */
export class InvalidResultError extends BeehiveError {}

/** The call needs a controller registered for the kind, and none is. */
export class NoControllerError extends BeehiveError {}

/** A relation accessor was read on an object whose read did not load it. */
export class NotLoadedError extends BeehiveError {}

/** A ControllerClient was used after the pass it was bound to returned. */
export class ReconcileReturnedError extends BeehiveError {}

/**
 * Another live holder has the store's lease: a started Beehive in this or
 * another process uses the same database. The message names the holder.
 */
export class StoreInUseError extends BeehiveError {}

/**
 * A write carried the epoch of a leadership term that is over: the lease it
 * was fenced on has moved to a later epoch, so the store committed nothing;
 * or the kind's `fencedRepository` refused a `cc.fencedWrite` (a later term
 * has written the entity).
 */
export class FencedError extends BeehiveError {}

/** Options of {@linkcode PermanentError}. */
export interface PermanentErrorOptions extends BeehiveErrorOptions {
  /**
   * The machine-readable reason the `Stalled` condition and the `Warning`
   * event carry: non-empty, well-formed UTF-16. @default {"PermanentError"}
   */
  reason?: string;
}

/**
 * A failure retrying cannot fix. A reconcile that throws one, or returns
 * `fail(permanentError)`, **stalls** its object instead of taking the retry
 * ladder: the object gets condition `Stalled` = `True` with this `reason` and
 * message and a `Warning` event with the same reason, its generation is not
 * recorded, and no periodic pass (owed, full, individual, startup) runs it
 * again while its generation stays the one it stalled at, across restarts. A
 * spec change, `client.requeue`, a trigger, a dependency wake or a push from
 * an owned object runs it again; a later pass that settles sets `Stalled` to
 * `False` with reason `"Recovered"`.
 *
 * @example
 * ```ts
 * import { fail, PermanentError } from "@beehive/beehive";
 * const result = fail(new PermanentError("image tag does not exist", { reason: "BadImage" }));
 * console.assert((result.err as PermanentError).reason === "BadImage");
 * ```
 */
export class PermanentError extends BeehiveError {
  /** The reason the `Stalled` condition and the `Warning` event carry. */
  readonly reason: string;

  /**
   * Creates a permanent failure.
   * @throws {TypeError} `reason` is given but is not a non-empty, well-formed string.
   */
  constructor(message: string, options?: PermanentErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    const reason = options?.reason ?? "PermanentError";
    if (typeof reason !== "string" || reason === "" || !reason.isWellFormed()) {
      throw new TypeError(
        `Cannot create a PermanentError: current value of reason is ${
          typeof reason === "string" ? JSON.stringify(reason) : String(reason)
        }, expected a non-empty, well-formed string`,
      );
    }
    this.reason = reason;
  }
}

/** A store reported an identity that cannot key the in-process claim (e.g. empty). */
export class InvalidStoreIdentityError extends BeehiveError {}

/** The Beehive stopped, so the stream or call cannot go on. */
export class StoppedError extends BeehiveError {}

/** A watch position is below what retention kept: changes were trimmed unread. */
export class WatchTooOldError extends BeehiveError {}

/** A watch position is above anything this store has issued. */
export class WatchTooNewError extends BeehiveError {}

/** A condition is malformed: bad status, empty type, or text that is not well-formed UTF-16. */
export class InvalidConditionError extends BeehiveError {}

/** An event is malformed: bad type, empty reason, or text that is not well-formed UTF-16. */
export class InvalidEventError extends BeehiveError {}

/** The store was closed; nothing more can be read or written through it. */
export class StoreClosedError extends BeehiveError {}

/** One condition write names the same type twice. */
export class DuplicateConditionTypeError extends BeehiveError {}

/** A write's schema version is below the version the stored value was written at. */
export class SchemaVersionDowngradeError extends BeehiveError {}

/**
 * A transaction handle was used after its frame ended, or while a deeper frame
 * it opened is still open.
 */
export class StaleTxError extends BeehiveError {}

/**
 * A nested transaction frame was opened while a sibling frame is still open, or
 * a frame was asked to commit while a frame nested in it is still open.
 */
export class ConcurrentNestedTxError extends BeehiveError {}

/** An observed generation is above the object's current generation. */
export class ObservedGenerationFutureError extends BeehiveError {}

/** An observed generation is not a generation (below 1, or not an integer). */
export class InvalidObservedGenerationError extends BeehiveError {}

/**
 * A store failure no other class describes (an I/O error, a full disk, a
 * corrupt row). `cause` holds the driver's error.
 */
export class StoreError extends BeehiveError {}

/** Options of {@linkcode ConflictError}. */
export interface ConflictErrorOptions extends BeehiveErrorOptions {
  /** The object's resource version as the store has it now. */
  resourceVersion: number;
}

/**
 * A write's `resourceVersion` precondition failed: the object has moved on
 * since the caller read it, so nothing was written. Read it again, then retry.
 */
export class ConflictError extends BeehiveError {
  /** The object's current resource version. */
  readonly resourceVersion: number;

  /** Creates the error with the object's current resource version. */
  constructor(message: string, options: ConflictErrorOptions) {
    super(message, options);
    this.resourceVersion = options.resourceVersion;
  }
}

/** Options of {@linkcode TooLargeError}. */
export interface TooLargeErrorOptions extends BeehiveErrorOptions {
  /** The value's size, in UTF-8 bytes of its JSON. */
  bytes: number;
  /** The limit it exceeded, in bytes. */
  limit: number;
  /** The `limits` field exceeded. @default {"objectBytes"} */
  field?: "objectBytes" | "nestingDepth";
}

/**
 * A spec, status or event detail is larger than the Beehive's
 * `limits.objectBytes`, or nests objects and arrays deeper than
 * `limits.nestingDepth` (then `field` is `"nestingDepth"`, `limit` the depth
 * allowed, and `bytes` 0: the value was refused before it was encoded).
 */
export class TooLargeError extends BeehiveError {
  /** The value's size, in UTF-8 bytes of its JSON (0 for a nesting refusal). */
  readonly bytes: number;
  /** The limit it exceeded, in bytes (or in nested levels, for `nestingDepth`). */
  readonly limit: number;
  /** The `limits` field exceeded. */
  readonly field: "objectBytes" | "nestingDepth";

  /** Creates the error with the offending size and the limit. */
  constructor(message: string, options: TooLargeErrorOptions) {
    super(message, options);
    this.bytes = options.bytes;
    this.limit = options.limit;
    this.field = options.field ?? "objectBytes";
  }
}

/** One problem a validator found (a Standard Schema v1 issue). */
export interface ValidationIssue {
  /** What is wrong. */
  readonly message: string;
  /** Where: property keys (or `{ key }` segments) from the value's root. */
  readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
}

/** Options of {@linkcode InvalidSpecError} and {@linkcode InvalidStatusError}. */
export interface ValidationErrorOptions extends BeehiveErrorOptions {
  /** The validator's issue list, as it returned it. */
  issues: readonly ValidationIssue[];
}

/** A spec failed its kind's `spec` schema; nothing was written. */
export class InvalidSpecError extends BeehiveError {
  /** The validator's issues. */
  readonly issues: readonly ValidationIssue[];

  /** Creates the error with the validator's issues. */
  constructor(message: string, options: ValidationErrorOptions) {
    super(message, options);
    this.issues = options.issues;
  }
}

/** A status failed its kind's `status` schema; nothing was written. */
export class InvalidStatusError extends BeehiveError {
  /** The validator's issues. */
  readonly issues: readonly ValidationIssue[];

  /** Creates the error with the validator's issues. */
  constructor(message: string, options: ValidationErrorOptions) {
    super(message, options);
    this.issues = options.issues;
  }
}
