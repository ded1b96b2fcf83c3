/**
 * The kind family: stored kind definitions (names, scope, printer columns,
 * JSON Schemas), one row per group and kind.
 *
 * @module
 */
import { StoreError } from "../../src/model/errors.ts";
import type { GroupKind, Kinds, KindsPutInput, KindsPutOptions, RawKind } from "../../src/store.ts";
import { checkGroupKind, describe, isStorableText, rejectWith } from "./_checks.ts";
import { q } from "./_query.ts";
import type { Row } from "./_rows.ts";
import type { SqlSession, WriteScope } from "./_session.ts";

const COLUMNS =
  `"group", kind, plural, singular, short_names, namespaced, columns, spec_schema, status_schema, updated_at`;

function checkText(value: unknown, what: string, gk: GroupKind): asserts value is string {
  if (typeof value !== "string" || value === "" || !isStorableText(value)) {
    throw new TypeError(
      `Cannot store kind ${gk.kind}: its ${what} is ${
        describe(value)
      }, expected a non-empty, well-formed string`,
    );
  }
}

function checkJson(value: unknown, what: string, gk: GroupKind, optional: boolean): void {
  if (optional && value === undefined) return;
  if (typeof value !== "string" || !isStorableText(value)) {
    throw new TypeError(
      `Cannot store kind ${gk.kind}: its ${what} is ${describe(value)}, expected JSON text${
        optional ? " or undefined" : ""
      }`,
    );
  }
}

/** Checks a definition; resolves its short names to a plain array. */
function checkInput(input: unknown): KindsPutInput {
  if (typeof input !== "object" || input === null) {
    throw new TypeError(
      `Cannot store a kind: current value is ${describe(input)}, expected a definition object`,
    );
  }
  checkGroupKind(input);
  const k = input as KindsPutInput;
  checkText(k.plural, "plural", k);
  checkText(k.singular, "singular", k);
  if (!Array.isArray(k.shortNames)) {
    throw new TypeError(
      `Cannot store kind ${k.kind}: its shortNames are ${
        describe(k.shortNames)
      }, expected an array`,
    );
  }
  for (const s of k.shortNames) checkText(s, "short name", k);
  if (typeof k.namespaced !== "boolean") {
    throw new TypeError(
      `Cannot store kind ${k.kind}: namespaced is ${describe(k.namespaced)}, expected a boolean`,
    );
  }
  checkJson(k.columns, "columns", k, false);
  checkJson(k.specSchema, "spec schema", k, true);
  checkJson(k.statusSchema, "status schema", k, true);
  return {
    group: k.group,
    kind: k.kind,
    plural: k.plural,
    singular: k.singular,
    shortNames: [...k.shortNames],
    namespaced: k.namespaced,
    columns: k.columns,
    specSchema: k.specSchema,
    statusSchema: k.statusSchema,
  };
}

function decode(row: Row): RawKind {
  const gk = { group: String(row.group), kind: String(row.kind) };
  let shortNames: unknown;
  try {
    shortNames = JSON.parse(String(row.short_names));
  } catch (cause) {
    throw new StoreError(`Cannot read kind ${gk.kind}: its short_names column is not JSON`, {
      cause,
    });
  }
  if (!Array.isArray(shortNames) || !shortNames.every((s) => typeof s === "string")) {
    throw new StoreError(
      `Cannot read kind ${gk.kind}: its short_names column is not an array of strings`,
    );
  }
  return {
    ...gk,
    plural: String(row.plural),
    singular: String(row.singular),
    shortNames,
    namespaced: Number(row.namespaced) !== 0,
    columns: String(row.columns),
    specSchema: row.spec_schema === null ? undefined : String(row.spec_schema),
    statusSchema: row.status_schema === null ? undefined : String(row.status_schema),
    updatedAt: new Date(Number(row.updated_at)),
  };
}

function same(stored: RawKind, input: KindsPutInput): boolean {
  return stored.plural === input.plural && stored.singular === input.singular &&
    stored.namespaced === input.namespaced && stored.columns === input.columns &&
    stored.specSchema === input.specSchema && stored.statusSchema === input.statusSchema &&
    stored.shortNames.length === input.shortNames.length &&
    stored.shortNames.every((s, i) => s === input.shortNames[i]);
}

export class SqlKinds implements Kinds {
  readonly #s: SqlSession;

  constructor(session: SqlSession) {
    this.#s = session;
  }

  get(gk: GroupKind): Promise<RawKind | undefined> {
    return rejectWith(() => {
      checkGroupKind(gk);
      return this.#s.read(() => getBody(gk));
    });
  }

  list(): Promise<RawKind[]> {
    return rejectWith(() => this.#s.read(() => listBody()));
  }

  put(input: KindsPutInput, options?: KindsPutOptions): Promise<boolean> {
    return rejectWith(() => {
      const k = checkInput(input);
      const replace = options?.replace;
      if (replace !== undefined && typeof replace !== "boolean") {
        throw new TypeError(
          `Cannot store kind ${k.kind}: replace is ${describe(replace)}, expected a boolean`,
        );
      }
      return this.#s.write((scope) => putBody(scope, k, replace ?? true));
    });
  }
}

function* getBody(gk: GroupKind) {
  const row = yield* q.get(
    `SELECT ${COLUMNS} FROM kinds WHERE "group" = ? AND kind = ?`,
    gk.group,
    gk.kind,
  );
  return row === undefined ? undefined : decode(row);
}

function* listBody() {
  const rows = yield* q.all(`SELECT ${COLUMNS} FROM kinds ORDER BY "group", kind`);
  return rows.map(decode);
}

function* putBody({ now }: WriteScope, k: KindsPutInput, replace: boolean) {
  const stored = yield* getBody(k);
  if (stored !== undefined && (!replace || same(stored, k))) return false;
  const changed = yield* q.run(
    `INSERT INTO kinds (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT ("group", kind) DO ${
      replace
        ? `UPDATE SET plural = excluded.plural, singular = excluded.singular,
       short_names = excluded.short_names, namespaced = excluded.namespaced,
       columns = excluded.columns, spec_schema = excluded.spec_schema,
       status_schema = excluded.status_schema, updated_at = excluded.updated_at`
        : "NOTHING"
    }`,
    k.group,
    k.kind,
    k.plural,
    k.singular,
    JSON.stringify(k.shortNames),
    k.namespaced ? 1 : 0,
    k.columns,
    k.specSchema ?? null,
    k.statusSchema ?? null,
    now,
  );
  return changed > 0;
}
