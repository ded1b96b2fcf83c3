/**
 * Server-side printing: the `meta.k8s.io/v1` `Table` kubectl asks for with
 * `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` — NAME, the kind's
 * printer columns, READY (the `Ready` condition) and AGE, each row carrying
 * its object as metadata, whole, or not at all (`includeObject`). The
 * printer columns' cells are read here for every surface: the CLI's `get`
 * and the console's kind page print them too.
 *
 * @module
 */
import type { GroupKind, KindColumn } from "@beehive/beehive";
import type { Store } from "@beehive/beehive/store";
import { storedKindOf } from "../src/model/kind.ts";
import { age, readySummary } from "../cli/_inspect.ts";
import type { KubeContext } from "./_context.ts";
import { parseJsonPath, readJsonPath } from "./_json_path.ts";
import { readDefinition, type ServedKind } from "./_kinds.ts";
import { type Answered, type ResourceSource, toPartialMetadata, toResource } from "./_objects.ts";

/** What a row's `object` holds: `?includeObject=None|Metadata|Object`. */
export type IncludeObject = "None" | "Metadata" | "Object";

/** One column definition of a Table. */
export interface Column {
  readonly name: string;
  readonly type: string;
  readonly format: string;
  readonly description: string;
  readonly priority: number;
}

const NAME: Column = {
  name: "Name",
  type: "string",
  format: "name",
  description: "The object's name, unique within its kind.",
  priority: 0,
};
const READY: Column = {
  name: "Ready",
  type: "string",
  format: "",
  description: "The status of the object's Ready condition; - when it has none.",
  priority: 0,
};
const AGE: Column = {
  name: "Age",
  type: "string",
  format: "",
  description: "Time since the object was created.",
  priority: 0,
};

/** How rows are drawn: what their `object` holds, and the instant AGE counts to. */
export interface RowOptions {
  readonly include: IncludeObject;
  readonly now: number;
}

/** How one kind's objects print: its column definitions and one row per object. */
export interface Printer {
  readonly columns: readonly Column[];
  row(answered: Answered & RowOptions): Record<string, unknown>;
}

/** A kind's printer column, compiled: its path parsed once. */
export interface ColumnReader {
  readonly column: KindColumn;
  /** The column's cell for `resource` (the object as the API answers it), at `now`. */
  cell(resource: unknown, now: number): unknown;
}

/**
 * A cell as Kubernetes prints a custom resource's column: numbers and
 * booleans as they are, a `date` column as an age, objects and arrays as
 * JSON, a missing value as `null` (kubectl prints a blank).
 */
function cell(value: unknown, type: KindColumn["type"], now: number): unknown {
  if (value === undefined || value === null) return null;
  if (type === "date" && typeof value === "string") {
    const at = new Date(value);
    return Number.isNaN(at.getTime()) ? value : age(at, now);
  }
  if (typeof value === "object") return JSON.stringify(value);
  return value;
}

/**
 * Compiles a kind's printer columns: each path is parsed once. An entry that
 * is not a column (a definition another tool stored) is left out.
 */
export function columnReaders(columns: readonly KindColumn[]): ColumnReader[] {
  const wellFormed = columns.filter((c) =>
    typeof c === "object" && c !== null && typeof c.name === "string" &&
    typeof c.jsonPath === "string"
  );
  return wellFormed.map((column) => {
    const steps = parseJsonPath(column.jsonPath);
    return {
      column,
      cell: (resource, now) =>
        cell(steps === undefined ? undefined : readJsonPath(resource, steps), column.type, now),
    };
  });
}

/**
 * The printer columns' cells of one object as text, for the CLI's and the
 * console's tables: read from the resource the API would answer with, so
 * every surface prints the same value (`-` where kubectl prints a blank).
 */
export function columnTexts(
  readers: readonly ColumnReader[],
  gk: GroupKind,
  obj: ResourceSource,
  now: number,
): string[] {
  if (readers.length === 0) return [];
  const kind = { apiVersion: gk.group === "" ? "v1" : `${gk.group}/v1`, kind: gk.kind };
  const resource = toResource(kind, { obj });
  return readers.map((r) => {
    const value = r.cell(resource, now);
    return value === null ? "-" : String(value);
  });
}

/**
 * The printer columns of `gk` as its stored definition declares them, read
 * now from the store: none when no definition is stored, or when it does not
 * read (a damaged definition costs the columns, not the listing).
 */
export async function storedColumns(store: Store, gk: GroupKind): Promise<ColumnReader[]> {
  const raw = await store.kinds.get(gk);
  if (raw === undefined) return [];
  try {
    return columnReaders(storedKindOf(raw).columns);
  } catch {
    return [];
  }
}

/** The printer of `kind` with printer columns `columns`. */
export function printer(kind: ServedKind, columns: readonly KindColumn[] = []): Printer {
  const compiled = columnReaders(columns);
  const own: Column[] = compiled.map(({ column }) => ({
    name: column.name,
    type: column.type ?? "string",
    format: "",
    description: `The value at ${column.jsonPath}.`,
    priority: 0,
  }));
  return {
    columns: [NAME, ...own, READY, AGE],
    row(row) {
      const { obj, include, now } = row;
      const resource = compiled.length > 0 || include === "Object"
        ? toResource(kind, row)
        : undefined;
      const cells = compiled.map((reader) => reader.cell(resource, now));
      const ready = readySummary(obj.conditions);
      return {
        cells: [
          obj.name,
          ...cells,
          ready === "Unknown?" ? "Unknown" : ready,
          age(obj.createdAt, now),
        ],
        ...(include === "None" ? {} : {
          object: resource !== undefined && include === "Object"
            ? resource
            : toPartialMetadata(row),
        }),
      };
    },
  };
}

/** The printer of `kind` as its stored definition describes it, read afresh. */
export async function printerOf(ctx: KubeContext, kind: ServedKind): Promise<Printer> {
  return printer(kind, (await readDefinition(ctx.bh, kind))?.columns ?? []);
}

/** The media type of a Table answer at `version` (`v1` or `v1beta1`). */
export function tableType(version: string): string {
  return `application/json;as=Table;v=${version};g=meta.k8s.io`;
}

/** A Table of `rows` with list metadata `metadata`, at `meta.k8s.io/<version>`. */
export function table(
  version: string,
  rows: readonly Record<string, unknown>[],
  metadata: Record<string, unknown>,
  columns: readonly Column[],
): Record<string, unknown> {
  return {
    kind: "Table",
    apiVersion: `meta.k8s.io/${version}`,
    metadata,
    columnDefinitions: columns,
    rows,
  };
}
