/**
 * The argument checks and refusals every family shares: each runs once, in
 * the shared family, before any statement, whatever the dialect.
 *
 * @module
 */
import {
  ConflictError,
  DuplicateConditionTypeError,
  InvalidConditionError,
  InvalidNameError,
  InvalidOptionError,
  NameTakenError,
  NotFoundError,
  SchemaVersionDowngradeError,
  StoreError,
  WrongKindError,
} from "../../src/model/errors.ts";
import type {
  ConditionInput,
  GroupKind,
  LabelRequirement,
  ObjectId,
  ObjectNameRef,
  ObjectRef,
  Relation,
} from "../../src/store.ts";
import { namespaceProblem } from "../../src/model/namespace.ts";
import { parseLabelSelector } from "../../src/model/label_selector.ts";
import { isStorableText } from "../../src/model/_text.ts";
import { attempt, clip, describe, quote } from "../../src/model/_values.ts";
import { kindName } from "../../src/model/_kind_keys.ts";
import type { Row } from "./_rows.ts";

/** The error for an id that names nothing. */
export function objectNotFound(id: ObjectId): NotFoundError {
  return new NotFoundError(`Cannot find object ${id}: no object has that id`);
}

/** The error for a name not held within a kind. */
export function nameNotFound(gk: GroupKind, name: string, namespace = ""): NotFoundError {
  return new NotFoundError(
    namespace === ""
      ? `Cannot find ${kindOf(gk)} ${quote(name)}: no object of that kind has that name`
      : `Cannot find ${kindOf(gk)} ${quote(name)} in namespace ${
        quote(namespace)
      }: no object of that kind has that name there`,
  );
}

/**
 * Checks that `id` is an object of `ref`'s kind, from a row's kind columns.
 * @throws {NotFoundError} `row` is undefined.
 * @throws {WrongKindError} the row is of another kind.
 */
export function assertKind<R extends Row>(ref: ObjectRef, row: R | undefined): asserts row is R {
  if (row === undefined) throw objectNotFound(ref.id);
  if (row.group !== ref.group || row.kind !== ref.kind) {
    throw new WrongKindError(
      `Cannot use object ${ref.id} as ${kindOf(ref)}: it is a ${
        kindOf({ group: row.group as string, kind: row.kind as string })
      }`,
    );
  }
}

export { isStorableText } from "../../src/model/_text.ts";
export { attempt as rejectWith, describe, quote } from "../../src/model/_values.ts";

/**
 * A kind's name (`Kind.group`) for a store error message, cut like every
 * user-supplied value a message quotes ({@linkcode quote}).
 */
export function kindOf(gk: GroupKind): string {
  return clip(kindName(gk));
}

/** Checks an id argument. @throws {TypeError} not a positive safe integer. */
export function checkId(id: unknown, what = "id"): asserts id is ObjectId {
  if (typeof id !== "number" || !Number.isSafeInteger(id) || id < 1) {
    throw new TypeError(
      `Cannot use ${what}: current value is ${describe(id)}, expected a positive safe integer`,
    );
  }
}

/** Checks a list of ids. @throws {TypeError} */
export function checkIds(ids: unknown, what = "ids"): asserts ids is ObjectId[] {
  if (!Array.isArray(ids)) {
    throw new TypeError(`Cannot use ${what}: current value is ${describe(ids)}, expected an array`);
  }
  for (const id of ids) checkId(id, `an element of ${what}`);
}

/** Checks a kind argument. @throws {InvalidOptionError} */
export function checkGroupKind(gk: unknown): asserts gk is GroupKind {
  const value = gk as GroupKind;
  if (
    typeof value !== "object" || value === null || typeof value.group !== "string" ||
    typeof value.kind !== "string"
  ) {
    throw new InvalidOptionError(
      `Cannot use kind: current value is ${describe(gk)}, expected { group, kind } strings`,
    );
  }
  if (value.kind === "") {
    throw new InvalidOptionError(`Cannot use kind: the kind must not be empty`);
  }
  if (!isStorableText(value.group) || !isStorableText(value.kind)) {
    throw new InvalidOptionError(
      `Cannot use kind ${quote(value.kind)} of group ${
        quote(value.group)
      }: group and kind must be well-formed UTF-16 without NUL`,
    );
  }
}

/** Checks an id-keyed, kind-scoped reference. */
export function checkRef(ref: unknown): asserts ref is ObjectRef {
  checkGroupKind(ref);
  checkId((ref as ObjectRef).id);
}

/** Checks a name. @throws {InvalidNameError} empty or not well-formed UTF-16. */
export function checkName(name: unknown): asserts name is string {
  if (typeof name !== "string") {
    throw new TypeError(`Cannot use name: current value is ${describe(name)}, expected a string`);
  }
  if (name === "") throw new InvalidNameError("Cannot use name: it must not be empty");
  if (!isStorableText(name)) {
    throw new InvalidNameError(
      `Cannot use name ${quote(name)}: it must be well-formed UTF-16 without NUL`,
    );
  }
}

/**
 * Checks a namespace argument: `undefined` and `""` are the cluster scope,
 * anything else a DNS-1123 label. Resolves to the namespace to store.
 * @throws {InvalidNameError}
 */
export function checkNamespace(namespace: unknown): string {
  if (namespace === undefined || namespace === "") return "";
  const problem = namespaceProblem(namespace);
  if (problem !== undefined) throw new InvalidNameError(`Cannot use namespace: ${problem}`);
  return namespace as string;
}

/** Checks a name-keyed ref: a kind, a name and an optional namespace. Resolves to the namespace. @throws {TypeError} @throws {InvalidNameError} */
export function checkNameRef(ref: unknown): string {
  checkGroupKind(ref);
  checkName((ref as ObjectNameRef).name);
  return checkNamespace((ref as ObjectNameRef).namespace);
}

/** Checks a JSON text argument. @throws {TypeError} */
export function checkJsonText(text: unknown, what: string): asserts text is string {
  if (typeof text !== "string") {
    throw new TypeError(
      `Cannot write ${what}: current value is ${describe(text)}, expected JSON text`,
    );
  }
}

/** Checks a schema version. @throws {TypeError} */
export function checkSchemaVersion(v: unknown, what: string): number {
  if (v === undefined) return 0;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) {
    throw new TypeError(
      `Cannot use ${what}: current value is ${describe(v)}, expected an integer >= 0`,
    );
  }
  return v;
}

/** Checks a list of finalizers. @throws {InvalidOptionError} */
export function checkFinalizers(finalizers: unknown): string[] {
  if (finalizers === undefined) return [];
  if (!Array.isArray(finalizers)) {
    throw new InvalidOptionError(
      `Cannot use finalizers: current value is ${describe(finalizers)}, expected an array`,
    );
  }
  for (const f of finalizers) {
    if (typeof f !== "string" || f === "" || !isStorableText(f)) {
      throw new InvalidOptionError(
        `Cannot use finalizer ${
          describe(f)
        }: expected a non-empty string, well-formed UTF-16 without NUL`,
      );
    }
  }
  return [...new Set(finalizers as string[])];
}

function checkInteger(value: unknown, what: string, min: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
    throw new TypeError(
      `Cannot use ${what}: current value is ${describe(value)}, expected an integer >= ${min}`,
    );
  }
  return value;
}

/** Checks a tail page's bounds: a position >= 0 and an integer limit. */
export function checkPage(options: unknown): { after: number; limit: number } {
  const o = options as { after?: unknown; limit?: unknown } | undefined;
  if (typeof o !== "object" || o === null) {
    throw new TypeError(
      `Cannot read a page: current options are ${describe(options)}, expected { after, limit }`,
    );
  }
  return {
    after: checkInteger(o.after, "after", 0),
    limit: checkInteger(o.limit, "limit", Number.MIN_SAFE_INTEGER),
  };
}

/** Checks retention bounds: each a finite number >= 0. */
export function checkRetention<K extends string>(
  options: unknown,
  keys: readonly K[],
): Record<K, number> {
  const o = options as Record<string, unknown> | undefined;
  if (typeof o !== "object" || o === null) {
    throw new TypeError(
      `Cannot sweep: current options are ${describe(options)}, expected an object`,
    );
  }
  const out = {} as Record<K, number>;
  for (const k of keys) {
    const v = o[k] ?? 0;
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) {
      throw new InvalidOptionError(
        `Cannot sweep with ${k}: current value is ${describe(v)}, expected a finite number >= 0`,
      );
    }
    out[k] = v;
  }
  return out;
}

/** Checks a `resourceVersion` precondition: omitted, or an integer >= 1. @throws {TypeError} */
export function checkPrecondition(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  return checkInteger(value, "resourceVersion", 1);
}

/**
 * Refuses a write whose precondition names another resource version than the row's.
 * @throws {ConflictError}
 */
export function assertVersion(id: ObjectId, stored: number, expected: number | undefined): void {
  if (expected === undefined || expected === stored) return;
  throw new ConflictError(
    `Cannot write object ${id} at resource version ${expected}: it has moved on to ${stored}`,
    { resourceVersion: stored },
  );
}

/** A checked listing page; `selector` is `undefined` when it selects every row. */
export interface CheckedPage {
  readonly after: number;
  readonly limit: number | undefined;
  readonly selector: readonly LabelRequirement[] | undefined;
  /** One namespace, or `undefined` for every one. */
  readonly namespace: string | undefined;
}

/**
 * Checks label requirements (the object form's expressions); `[]` and
 * `undefined` read as no selector.
 * @throws {InvalidOptionError}
 */
export function checkSelector(value: unknown): readonly LabelRequirement[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) {
    throw new InvalidOptionError(
      `Cannot use labelSelector: current value is ${
        describe(value)
      }, expected an array of requirements`,
    );
  }
  const reqs = parseLabelSelector({ matchExpressions: value })!;
  return reqs.length === 0 ? undefined : reqs;
}

/** Checks an id-ordered page: `after` >= 0 (default 0), `limit` >= 1 or omitted. @throws {TypeError} */
export function checkListPage(page: unknown): CheckedPage {
  if (page === undefined) {
    return { after: 0, limit: undefined, selector: undefined, namespace: undefined };
  }
  const o = page as {
    after?: unknown;
    limit?: unknown;
    labelSelector?: unknown;
    namespace?: unknown;
  };
  if (typeof o !== "object" || o === null) {
    throw new TypeError(
      `Cannot list a page: current options are ${describe(page)}, expected { after, limit }`,
    );
  }
  return {
    after: o.after === undefined ? 0 : checkInteger(o.after, "after", 0),
    limit: o.limit === undefined ? undefined : checkInteger(o.limit, "limit", 1),
    selector: checkSelector(o.labelSelector),
    namespace: o.namespace === undefined ? undefined : checkNamespace(o.namespace),
  };
}

/** Checks options carrying `excludeStalled`; resolves it. @throws {TypeError} */
export function checkExcludeStalled(
  options: { readonly excludeStalled?: boolean } | undefined,
  what: string,
): boolean {
  if (options === undefined) return false;
  if (typeof options !== "object" || options === null) {
    throw new TypeError(
      `Cannot ${what}: current value of options is ${describe(options)}, expected an object`,
    );
  }
  const v = options.excludeStalled;
  if (v !== undefined && typeof v !== "boolean") {
    throw new TypeError(
      `Cannot ${what}: current value of excludeStalled is ${describe(v)}, expected a boolean`,
    );
  }
  return v === true;
}

/** Timelines trimmed by the cap per sweep when the caller leaves it to the store. */
export const EVENT_CAP_BUDGET = 256;

/** The stamp a write leaves: 0 keeps the stored tag, and the tag never goes down. */
export function stampVersion(stored: number, incoming: number, what: string, id: ObjectId) {
  if (incoming === 0) return stored;
  if (incoming < stored) {
    throw new SchemaVersionDowngradeError(
      `Cannot write the ${what} of object ${id} at schema version ${incoming}: it is stored at version ${stored}, and versions never go down`,
    );
  }
  return incoming;
}

/** Checks a relation. @throws {TypeError} */
export function checkRelation(relation: unknown): asserts relation is Relation {
  if (relation !== "owned_by" && relation !== "depends_on") {
    throw new TypeError(
      `Cannot use relation: current value is ${
        describe(relation)
      }, expected "owned_by" or "depends_on"`,
    );
  }
}

/** Builds the error a create reports for a name held within its kind. */
export function nameTaken(
  group: string,
  kind: string,
  name: string,
  namespace: string,
  cause: unknown,
) {
  return new NameTakenError(
    namespace === ""
      ? `Cannot create ${kindOf({ group, kind })} ${
        quote(name)
      }: the name is already in use for this kind`
      : `Cannot create ${kindOf({ group, kind })} ${quote(name)} in namespace ${
        quote(namespace)
      }: the name is already in use there for this kind`,
    { cause },
  );
}

const STATUSES = new Set(["True", "False", "Unknown"]);

/** A condition as checked, ready to store. */
export interface NormalCondition {
  type: string;
  status: string;
  reason: string;
  message: string;
  liveness: number;
}

/** Validates a batch before any store work. */
export function normalizeConditions(conditions: unknown): NormalCondition[] {
  if (!Array.isArray(conditions)) {
    throw new TypeError(
      `Cannot set conditions: current value is ${describe(conditions)}, expected an array`,
    );
  }
  const seen = new Set<string>();
  return conditions.map((c: ConditionInput) => {
    if (typeof c !== "object" || c === null) {
      throw new InvalidConditionError(
        `Cannot set condition ${describe(c)}: expected an object with type and status`,
      );
    }
    const text = (field: "type" | "reason" | "message", value: unknown): string => {
      if (value === undefined && field !== "type") return "";
      if (typeof value !== "string") {
        throw new InvalidConditionError(
          `Cannot set condition: its ${field} is ${describe(value)}, expected a string`,
        );
      }
      if (!isStorableText(value)) {
        throw new InvalidConditionError(
          `Cannot set condition: its ${field} ${
            quote(value)
          } is not well-formed UTF-16 without NUL`,
        );
      }
      return value;
    };
    const type = text("type", c.type);
    if (type === "") throw new InvalidConditionError("Cannot set condition: its type is empty");
    if (typeof c.status !== "string" || !STATUSES.has(c.status)) {
      throw new InvalidConditionError(
        `Cannot set condition ${quote(type)}: its status is ${
          describe(c.status)
        }, expected "True", "False" or "Unknown"`,
      );
    }
    if (c.liveness !== undefined && typeof c.liveness !== "boolean") {
      throw new InvalidConditionError(
        `Cannot set condition ${quote(type)}: liveness is ${
          describe(c.liveness)
        }, expected a boolean`,
      );
    }
    if (seen.has(type)) {
      throw new DuplicateConditionTypeError(
        `Cannot set conditions: type ${quote(type)} appears twice in one write`,
      );
    }
    seen.add(type);
    return {
      type,
      status: c.status,
      reason: text("reason", c.reason),
      message: text("message", c.message),
      liveness: c.liveness ? 1 : 0,
    };
  });
}

/** Checks a transaction body. @throws {TypeError} */
export function checkTransactionFn(fn: unknown): asserts fn is (...args: never[]) => unknown {
  if (typeof fn !== "function") {
    throw new TypeError(`Cannot run a transaction: ${describe(fn)} is not a function`);
  }
}

/** Checks an afterCommit hook. @throws {TypeError} */
export function checkHook(fn: unknown): asserts fn is () => void | Promise<void> {
  if (typeof fn !== "function") {
    throw new TypeError(`Cannot register afterCommit hook: ${describe(fn)} is not a function`);
  }
}

/** Checks a fence to write under. @throws {TypeError} */
export function checkFenceOption(fence: unknown): void {
  const f = fence as { lease?: unknown; epoch?: unknown } | null;
  if (
    typeof f !== "object" || f === null || typeof f.lease !== "string" ||
    f.lease === "" || !Number.isSafeInteger(f.epoch) || (f.epoch as number) < 0
  ) {
    throw new TypeError(
      `Cannot fence the store: fence is ${
        describe(fence)
      }, expected { lease: string, epoch: integer >= 0 }`,
    );
  }
}

/** Checks a reclaim bound. @throws {TypeError} */
export function checkMaxPages(maxPages: unknown): asserts maxPages is number {
  if (typeof maxPages !== "number" || !Number.isSafeInteger(maxPages)) {
    throw new TypeError(
      `Cannot reclaim space: maxPages is ${describe(maxPages)}, expected an integer`,
    );
  }
}

/**
 * Runs a space reclaim after its checks: `maxPages` is an integer, a read-only
 * open refuses, and a bound of 0 or less reclaims nothing. Rejects, never throws.
 */
export function checkedReclaim(
  core: { readOnlyRefusal(): StoreError | undefined },
  maxPages: unknown,
  reclaim: (maxPages: number) => Promise<number>,
): Promise<number> {
  return attempt(() => {
    checkMaxPages(maxPages);
    const refused = core.readOnlyRefusal();
    if (refused !== undefined) throw refused;
    return maxPages <= 0 ? Promise.resolve(0) : reclaim(maxPages);
  });
}

/**
 * Checks an open's arguments: what it names (`target`: a file path, a url) is
 * a non-empty string, and its options an object whose `readOnly`, the option
 * every SQL store has, is a boolean.
 * @throws {TypeError} the target is not a non-empty string.
 * @throws {InvalidOptionError} the options are not an object, or `readOnly` not a boolean.
 */
export function checkOpenArguments(
  store: string,
  target: readonly [name: string, value: unknown, expected: string],
  options: unknown,
): void {
  const [name, value, expected] = target;
  if (typeof value !== "string" || value === "") {
    throw new TypeError(
      `Cannot open ${store} store: ${name} is ${describe(value)}, expected ${expected}`,
    );
  }
  if (typeof options !== "object" || options === null) {
    throw new InvalidOptionError(`Cannot open ${store} store: options are ${describe(options)}`);
  }
  checkBooleanOption(store, "readOnly", (options as { readOnly?: unknown }).readOnly);
}

/**
 * Checks a database's schema version against this build's `latest`: a newer
 * one is refused, and so is an older one when `readOnlyStore` names a
 * read-only open's store (it cannot bring the schema forward).
 * @throws {SchemaVersionDowngradeError} the schema is newer.
 * @throws {StoreError} the schema is older, on a read-only open.
 */
export function checkStoredVersion(current: number, latest: number, readOnlyStore?: string): void {
  if (current > latest) throw schemaTooNew(current, latest);
  if (readOnlyStore !== undefined && current < latest) {
    throw schemaTooOld(readOnlyStore, current, latest);
  }
}

/** The refusal of a database written by a newer build. */
function schemaTooNew(current: number, latest: number): SchemaVersionDowngradeError {
  return new SchemaVersionDowngradeError(
    `Cannot open the database: its schema version ${current} is newer than this build's ${latest}`,
  );
}

/** A read-only open's refusal of a schema it cannot bring forward; `store` names the store. */
function schemaTooOld(store: string, current: number, latest: number): StoreError {
  return new StoreError(
    `Cannot open ${store} read-only: its schema version ${current} is older than this build's ${latest}; open it writable once to bring it forward`,
  );
}

/**
 * Checks an optional boolean option of an open.
 * @throws {InvalidOptionError} naming the store and the option.
 */
function checkBooleanOption(store: string, name: string, value: unknown): void {
  if (value !== undefined && typeof value !== "boolean") {
    throw new InvalidOptionError(
      `Cannot open ${store} store with ${name}: current value is ${
        describe(value)
      }, expected a boolean`,
    );
  }
}

/**
 * Checks an optional integer option of an open is at least `min`.
 * @throws {InvalidOptionError} naming the store, the option and `expected`.
 */
export function checkIntegerOption(
  store: string,
  name: string,
  value: unknown,
  min: number,
  expected: string,
): void {
  if (
    value !== undefined &&
    (typeof value !== "number" || !Number.isSafeInteger(value) || value < min)
  ) {
    throw new InvalidOptionError(
      `Cannot open ${store} store with ${name}: current value is ${
        describe(value)
      }, expected ${expected}`,
    );
  }
}
