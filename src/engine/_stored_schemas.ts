/**
 * The stored JSON Schemas of kinds, compiled once per schema: what checks the
 * writes of a process that lacks a kind's own validator (a second process,
 * the CLI, an API server).
 *
 * @module
 */
import { type KindSchemas, NO_SCHEMAS } from "../clients/_write_checks.ts";
import { compileJsonSchema, JsonSchemaProblem } from "../model/_json_schema.ts";
import { kindKey, kindName } from "../model/_kind_keys.ts";
import { StoreError } from "../model/errors.ts";
import type { StandardSchema } from "../model/standard_schema.ts";
import type { GroupKind, Store } from "../store.ts";

interface Compiled {
  /** When the definition was read (`Date.now()`). */
  at: number;
  readonly spec: string | undefined;
  readonly status: string | undefined;
  readonly schemas: KindSchemas;
  /** Whether the stored definition declares the kind namespaced (`false` when none is stored). */
  readonly namespaced: boolean;
}

/**
 * How long a read definition is trusted, in ms: a writer sees a schema stored
 * by another process within this long, and reads the kinds table at most once
 * per kind per interval rather than once per write.
 */
export const STORED_SCHEMA_TTL = 1_000;
/** How many kinds' definitions are kept; past it the cache starts over. */
const MAX_CACHED_KINDS = 1_024;

function unusable(gk: GroupKind, what: string, detail: string, cause?: unknown): StoreError {
  return new StoreError(
    `Cannot check the ${what} of ${
      kindName(gk)
    } against its stored JSON Schema: it is not valid JSON Schema (draft 2020-12): ${detail}`,
    { cause },
  );
}

/**
 * `text` compiled to a validator; a schema that is not usable compiles to a
 * validator that refuses every write with a clear `StoreError` (the other of
 * the kind's two schemas keeps working, and the failure is not recompiled).
 */
function compile(
  text: string | undefined,
  what: "spec" | "status",
  gk: GroupKind,
): StandardSchema | undefined {
  if (text === undefined) return undefined;
  let check: (value: unknown) => ReturnType<StandardSchema["~standard"]["validate"]>;
  try {
    const inner = compileJsonSchema(JSON.parse(text))["~standard"];
    check = (value) => {
      try {
        return inner.validate(value);
      } catch (cause) {
        if (cause instanceof JsonSchemaProblem) throw unusable(gk, what, cause.message, cause);
        throw cause;
      }
    };
  } catch (cause) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    check = () => {
      throw unusable(gk, what, detail, cause);
    };
  }
  return { "~standard": { version: 1, vendor: "beehive-stored-schema", validate: check } };
}

/** The compiled stored schemas of one Beehive's kinds. */
export class StoredSchemas {
  readonly #compiled = new Map<string, Compiled>();

  /**
   * The validators of `gk`'s stored JSON Schemas: none when no definition (or
   * no schema) is stored. The definition is read again once
   * {@linkcode STORED_SCHEMA_TTL} has passed since the last read; a schema is
   * compiled once, and again only when the stored text changes. One that is
   * not valid JSON Schema refuses each write it checks with a `StoreError`.
   */
  of(store: Store, gk: GroupKind): KindSchemas | Promise<KindSchemas> {
    const hit = this.#trusted(gk);
    return hit !== undefined ? hit.schemas : this.#definition(store, gk).then((d) => d.schemas);
  }

  /**
   * Whether `gk`'s stored definition declares it namespaced (`false` when
   * none is stored), read and trusted as {@linkcode StoredSchemas.of}'s;
   * with `fresh`, read now whatever was read before.
   */
  namespaced(store: Store, gk: GroupKind, fresh = false): boolean | Promise<boolean> {
    const hit = fresh ? undefined : this.#trusted(gk);
    return hit !== undefined
      ? hit.namespaced
      : this.#definition(store, gk, fresh).then((d) => d.namespaced);
  }

  /**
   * The definition read within the last {@linkcode STORED_SCHEMA_TTL}, if
   * any: answered without a promise, since every write of a kind with no
   * validator of its own asks, some several times.
   */
  #trusted(gk: GroupKind): Compiled | undefined {
    const hit = this.#compiled.get(kindKey(gk));
    if (hit === undefined) return undefined;
    const now = Date.now();
    return now >= hit.at && now - hit.at < STORED_SCHEMA_TTL ? hit : undefined;
  }

  async #definition(store: Store, gk: GroupKind, fresh = false): Promise<Compiled> {
    if (!fresh) {
      const trusted = this.#trusted(gk);
      if (trusted !== undefined) return trusted;
    }
    const key = kindKey(gk);
    const now = Date.now();
    const hit = this.#compiled.get(key);
    const raw = await store.kinds.get(gk);
    const spec = raw?.specSchema;
    const status = raw?.statusSchema;
    const namespaced = raw?.namespaced ?? false;
    if (
      hit !== undefined && hit.spec === spec && hit.status === status &&
      hit.namespaced === namespaced
    ) {
      hit.at = now;
      return hit;
    }
    const schemas: KindSchemas = spec === undefined && status === undefined ? NO_SCHEMAS : {
      spec: compile(spec, "spec", gk),
      status: compile(status, "status", gk),
    };
    if (this.#compiled.size >= MAX_CACHED_KINDS) this.#compiled.clear();
    const entry = { at: now, spec, status, schemas, namespaced };
    this.#compiled.set(key, entry);
    return entry;
  }

  /** Forgets every definition read: the next write of each kind reads its definition again. */
  forget(): void {
    this.#compiled.clear();
  }
}
