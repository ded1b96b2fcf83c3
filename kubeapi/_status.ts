/**
 * Kubernetes `Status` answers: the failure reasons and codes kubectl renders
 * as `Error from server (<Reason>): <message>`, the success of a delete, and
 * the JSON response they travel in.
 *
 * @module
 */
import {
  ConflictError,
  DeletionPendingError,
  InvalidMetadataError,
  InvalidNameError,
  InvalidSpecError,
  NameTakenError,
  NotFoundError,
  StoreClosedError,
  TooLargeError,
  WatchTooNewError,
  WatchTooOldError,
} from "@beehive/beehive";

/** A Kubernetes `StatusReason` this server answers with, and its HTTP code. */
export const REASONS = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  MethodNotAllowed: 405,
  NotAcceptable: 406,
  Conflict: 409,
  AlreadyExists: 409,
  Expired: 410,
  RequestEntityTooLarge: 413,
  UnsupportedMediaType: 415,
  Invalid: 422,
  TooManyRequests: 429,
  InternalError: 500,
  ServiceUnavailable: 503,
  Timeout: 504,
} as const;

/** One of {@linkcode REASONS}' keys. */
export type Reason = keyof typeof REASONS;

/** What a `Status` names: the object a failure is about. */
export interface StatusDetails {
  readonly name?: string;
  readonly group?: string;
  readonly kind?: string;
  readonly uid?: string;
  readonly causes?: readonly { field?: string; message: string; reason?: string }[];
  /** How long the client should wait before it tries again (also sent as `Retry-After`). */
  readonly retryAfterSeconds?: number;
}

/** A failure the router answers as a `Status`: thrown inside the handler, never out of it. */
export class KubeApiFailure extends Error {
  readonly reason: Reason;
  readonly details: StatusDetails | undefined;
  constructor(reason: Reason, message: string, details?: StatusDetails) {
    super(message);
    this.name = "KubeApiFailure";
    this.reason = reason;
    this.details = details;
  }
}

/** The failure `Status` object (a JSON value). */
export function failureStatus(
  reason: Reason,
  message: string,
  details?: StatusDetails,
): Record<string, unknown> {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    ...(details === undefined ? {} : { details }),
    code: REASONS[reason],
  };
}

/** The `Status` a delete answers when the object is already gone. */
export function successStatus(details: StatusDetails): Record<string, unknown> {
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", details };
}

/** A JSON response with `content-type` `type`. */
export function jsonResponse(
  status: number,
  body: unknown,
  type = "application/json",
  extra: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": type, "cache-control": "no-store", ...extra },
  });
}

/** A failure as its `Status` response. */
export function failureResponse(failure: KubeApiFailure): Response {
  const retry = failure.details?.retryAfterSeconds;
  return jsonResponse(
    REASONS[failure.reason],
    failureStatus(failure.reason, failure.message, failure.details),
    "application/json",
    retry === undefined ? {} : { "retry-after": String(retry) },
  );
}

/**
 * Translates what a handler threw into a failure: the library's conditions to
 * their Kubernetes reasons, anything unexpected to a bare `InternalError`
 * whose message reveals nothing of the server. `details` name the resource;
 * an `Invalid` failure names the object's `kind` instead, when given, as
 * Kubernetes does.
 */
export function toFailure(
  error: unknown,
  details?: StatusDetails,
  kind?: string,
): KubeApiFailure {
  if (error instanceof KubeApiFailure) return error;
  if (error instanceof NotFoundError) {
    return new KubeApiFailure("NotFound", notFoundMessage(details), details);
  }
  if (error instanceof ConflictError) {
    return new KubeApiFailure(
      "Conflict",
      `Operation cannot be fulfilled on ${describe(details)}: ` +
        "the object has been modified; please apply your changes to the latest version and try again",
      details,
    );
  }
  if (error instanceof NameTakenError) {
    return new KubeApiFailure("AlreadyExists", `${describe(details)} already exists`, details);
  }
  if (error instanceof DeletionPendingError) {
    return new KubeApiFailure(
      "Conflict",
      `Operation cannot be fulfilled on ${describe(details)}: its deletion is pending`,
      details,
    );
  }
  // Kubernetes names the kind, not the resource, in Invalid: `Cluster.kstack.sh "prod" is invalid`.
  const invalidOf = kind === undefined ? details : { ...details, kind };
  if (error instanceof InvalidSpecError) {
    return invalidFailure(
      invalidOf,
      error.issues.slice(0, 32).map((issue) => ({
        field: [
          "spec",
          ...(issue.path ?? []).map((p) => String(typeof p === "object" && p !== null ? p.key : p)),
        ].join("."),
        message: issue.message,
      })),
    );
  }
  if (error instanceof InvalidMetadataError) {
    return invalidFailure(invalidOf, [{
      field: `metadata.${error.field}`,
      message: error.message,
    }]);
  }
  if (error instanceof TooLargeError) {
    return new KubeApiFailure("RequestEntityTooLarge", `the object is too large: ${error.message}`);
  }
  if (error instanceof InvalidNameError) {
    return invalidFailure(invalidOf, [{ field: "metadata.name", message: error.message }]);
  }
  if (error instanceof WatchTooOldError) {
    return new KubeApiFailure("Expired", `too old resource version: ${error.message}`);
  }
  if (error instanceof WatchTooNewError) {
    // As the API server words it: a client relists on ResourceVersionTooLarge.
    return new KubeApiFailure("Timeout", `Too large resource version: ${error.message}`, {
      causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }],
      retryAfterSeconds: 1,
    });
  }
  if (error instanceof StoreClosedError) {
    return new KubeApiFailure("ServiceUnavailable", "the store is closed");
  }
  return new KubeApiFailure("InternalError", "an internal error occurred");
}

/**
 * The 422 `Invalid` failure for `causes`, worded as Kubernetes words it:
 * `<what> is invalid: <field>: <message>, …`.
 */
export function invalidFailure(
  details: StatusDetails | undefined,
  causes: readonly { field: string; message: string }[],
): KubeApiFailure {
  const listed = causes.map((c) => ({ ...c, reason: "FieldValueInvalid" }));
  return new KubeApiFailure(
    "Invalid",
    `${describe(details)} is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(", ")}`,
    { ...details, causes: listed },
  );
}

function describe(details: StatusDetails | undefined): string {
  if (details?.kind === undefined) return "the resource";
  const what = details.group === undefined || details.group === ""
    ? details.kind
    : `${details.kind}.${details.group}`;
  return details.name === undefined ? what : `${what} "${details.name}"`;
}

/** Kubernetes' wording: `<plural>.<group> "<name>" not found`. */
export function notFoundMessage(details: StatusDetails | undefined): string {
  return `${describe(details)} not found`;
}
