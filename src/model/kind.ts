/**
 * Typed kinds: {@linkcode defineKind} names a kind once, with its spec and
 * status types and (optionally) the Standard Schema validators that check
 * every write of them.
 *
 * @module
 */
import { checkKind } from "../engine/_engine.ts";
import { InvalidOptionError } from "./errors.ts";
import type { StandardSchema } from "./standard_schema.ts";
import type { KindSchemas } from "../clients/_write_checks.ts";
import type { GroupKind } from "../store.ts";

/** What {@linkcode defineKind} takes. */
export interface KindDefinition<Spec, Status> {
  /** The API group; `""` is the core group. */
  readonly group: string;
  /** The kind within the group; non-empty. */
  readonly kind: string;
  /** Validates (and may transform) every spec write. @default {undefined} (no validation) */
  readonly spec?: StandardSchema<unknown, Spec>;
  /** Validates (and may transform) every status write. @default {undefined} (no validation) */
  readonly status?: StandardSchema<unknown, Status>;
}

/**
 * A kind token: usable wherever `{ group, kind }` is, and carrying the spec
 * and status types into `register`, `client`, `adminClient` and watches.
 */
export interface Kind<Spec, Status> extends GroupKind {
  /** The spec validator, if any. */
  readonly spec: StandardSchema<unknown, Spec> | undefined;
  /** The status validator, if any. */
  readonly status: StandardSchema<unknown, Status> | undefined;
}

/** The tokens `defineKind` made: only these carry validators the engine trusts. */
const tokens = new WeakSet<object>();

function checkSchema(value: unknown, what: string): StandardSchema | undefined {
  if (value === undefined) return undefined;
  const props = (value as { "~standard"?: { version?: unknown; validate?: unknown } } | null)
    ?.["~standard"];
  if (
    (typeof value !== "object" && typeof value !== "function") || value === null ||
    typeof props !== "object" || props === null || props.version !== 1 ||
    typeof props.validate !== "function"
  ) {
    throw new InvalidOptionError(
      `Cannot use ${what}: expected a Standard Schema v1 validator (an object whose "~standard" has version 1 and a validate function)`,
    );
  }
  return value as StandardSchema;
}

/**
 * Defines a kind: a frozen token holding `group`, `kind` and the optional
 * `spec` and `status` validators (any [Standard Schema](https://standardschema.dev)
 * v1 validator — zod, valibot, arktype…). Every spec write (`create`,
 * `update`, `updateByName`, `createOrUpdate`, `getOrCreate`) and every status
 * write through a client, controller or admin client of this token — or of
 * any client of the kind once the token is registered — is validated first:
 * a failure rejects with `InvalidSpecError` / `InvalidStatusError` and writes
 * nothing, and the validator's output is what is stored.
 *
 * @throws {InvalidOptionError} `group`/`kind` are malformed, or a validator is not a Standard Schema v1.
 *
 * @example Types flow from the token
 * ```ts
 * import { Beehive, defineKind, settled } from "@beehive/beehive";
 * import { openSqliteStore } from "@beehive/beehive/sqlite";
 *
 * const Cluster = defineKind<{ replicas: number }, { ready: boolean }>({
 *   group: "kstack.sh",
 *   kind: "Cluster",
 * });
 * const store = await openSqliteStore(":memory:");
 * const bh = new Beehive(store);
 * bh.register(Cluster, async (obj, cc) => {
 *   await cc.updateStatus({ ready: obj.spec.replicas > 0 });
 *   return settled();
 * });
 * const created = await bh.client(Cluster).create("prod", { replicas: 3 });
 * console.assert(created.spec.replicas === 3);
 * await store.close();
 * ```
 */
export function defineKind<Spec = unknown, Status = unknown>(
  definition: KindDefinition<Spec, Status>,
): Kind<Spec, Status> {
  const gk = checkKind(definition);
  const token: Kind<Spec, Status> = Object.freeze({
    group: gk.group,
    kind: gk.kind,
    spec: checkSchema(definition.spec, "spec") as StandardSchema<unknown, Spec> | undefined,
    status: checkSchema(definition.status, "status") as
      | StandardSchema<unknown, Status>
      | undefined,
  });
  tokens.add(token);
  return token;
}

/** The validators of `kind` when it is a `defineKind` token. */
export function schemasOf(kind: unknown): KindSchemas | undefined {
  if (typeof kind !== "object" || kind === null || !tokens.has(kind)) return undefined;
  const k = kind as Kind<unknown, unknown>;
  return { spec: k.spec, status: k.status };
}
