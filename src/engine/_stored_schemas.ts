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
  readonly spec: string | undefined;
  readonly status: string | undefined;
  readonly schemas: KindSchemas;
}

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
   * The validators of `gk`'s stored JSON Schemas as `store` holds them now;
   * none when no definition (or no schema) is stored. A schema is compiled
   * once, and again only when the stored text changes; one that is not valid
   * JSON Schema refuses each write it checks with a `StoreError`.
   */
  async of(store: Store, gk: GroupKind): Promise<KindSchemas> {
    const raw = await store.kinds.get(gk);
    if (raw === undefined || (raw.specSchema === undefined && raw.statusSchema === undefined)) {
      return NO_SCHEMAS;
    }
    const key = kindKey(gk);
    const hit = this.#compiled.get(key);
    if (hit !== undefined && hit.spec === raw.specSchema && hit.status === raw.statusSchema) {
      return hit.schemas;
    }
    const schemas: KindSchemas = {
      spec: compile(raw.specSchema, "spec", gk),
      status: compile(raw.statusSchema, "status", gk),
    };
    this.#compiled.set(key, { spec: raw.specSchema, status: raw.statusSchema, schemas });
    return schemas;
  }
}
