/**
 * Server-side printing: the `meta.k8s.io/v1` `Table` kubectl asks for with
 * `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` — NAME, READY (the
 * `Ready` condition) and AGE, each row carrying its object as metadata, whole,
 * or not at all (`includeObject`).
 *
 * @module
 */
import { age, readySummary } from "../cli/_inspect.ts";
import type { ServedKind } from "./_kinds.ts";
import { type Answered, toPartialMetadata, toResource } from "./_objects.ts";

/** What a row's `object` holds: `?includeObject=None|Metadata|Object`. */
export type IncludeObject = "None" | "Metadata" | "Object";

const COLUMNS = [
  {
    name: "Name",
    type: "string",
    format: "name",
    description: "The object's name, unique within its kind.",
    priority: 0,
  },
  {
    name: "Ready",
    type: "string",
    format: "",
    description: "The status of the object's Ready condition; - when it has none.",
    priority: 0,
  },
  {
    name: "Age",
    type: "string",
    format: "",
    description: "Time since the object was created.",
    priority: 0,
  },
];

/** How rows are drawn: what their `object` holds, and the instant AGE counts to. */
export interface RowOptions {
  readonly include: IncludeObject;
  readonly now: number;
}

/** One row. */
export function tableRow(
  kind: ServedKind,
  row: Answered & RowOptions,
): Record<string, unknown> {
  const { obj, include, now } = row;
  const ready = readySummary(obj.conditions);
  return {
    cells: [obj.name, ready === "Unknown?" ? "Unknown" : ready, age(obj.createdAt, now)],
    ...(include === "None" ? {} : {
      object: include === "Object" ? toResource(kind, row) : toPartialMetadata(row),
    }),
  };
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
): Record<string, unknown> {
  return {
    kind: "Table",
    apiVersion: `meta.k8s.io/${version}`,
    metadata,
    columnDefinitions: COLUMNS,
    rows,
  };
}
