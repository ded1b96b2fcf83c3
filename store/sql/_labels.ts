/**
 * The label index both SQL stores keep beside the objects table: one
 * `object_labels` row per (object, key) carrying the object's kind, so a
 * selector's `In`/`Exists` requirement reads only the rows holding that label
 * (docs/adr/2026-12-02-labels.md). The objects row's `labels` column stays
 * the source a read decodes; this table is written in the same statement
 * group and only ever answers selectors.
 *
 * @module
 */
import type { GroupKind, LabelRequirement, ObjectId } from "../../src/store.ts";
import type { Labels } from "../../src/model/labels.ts";
import type { Dialect } from "./_dialect.ts";
import { type Q, q } from "./_query.ts";

const INSERT_ONE =
  `INSERT INTO object_labels (object_id, "group", kind, key, value) VALUES (?, ?, ?, ?, ?)`;

/**
 * Indexes `labels` for a new row (or `keys`, the changed keys of an existing
 * one): one statement whatever the count. `text` is `labels` as JSON, when the
 * caller has it.
 */
export function* insertLabels(
  d: Dialect,
  id: ObjectId,
  gk: GroupKind,
  labels: Labels,
  keys: readonly string[] = Object.keys(labels),
  text?: string,
): Q<void> {
  if (keys.length === 0) return;
  if (keys.length === 1) {
    yield* q.run(INSERT_ONE, id, gk.group, gk.kind, keys[0], labels[keys[0]]);
    return;
  }
  const subset = text ?? JSON.stringify(Object.fromEntries(keys.map((k) => [k, labels[k]])));
  yield* q.run(
    `INSERT INTO object_labels (object_id, "group", kind, key, value)
     SELECT ?, ?, ?, key, value${d.jsonEntries}`,
    id,
    gk.group,
    gk.kind,
    subset,
  );
}

/** Brings the index of row `id` from `before` to `after`. */
export function* syncLabels(
  d: Dialect,
  id: ObjectId,
  gk: GroupKind,
  before: Labels,
  after: Labels,
): Q<void> {
  const gone = Object.keys(before).filter((k) => after[k] !== before[k]);
  if (gone.length > 0) {
    yield* q.run(
      `DELETE FROM object_labels WHERE object_id = ? AND key${d.inTexts}`,
      id,
      d.texts(gone),
    );
  }
  const set = Object.keys(after).filter((k) => after[k] !== before[k]);
  yield* insertLabels(d, id, gk, after, set);
}

/** A fragment of SQL and its parameters, in order. */
export interface Fragment {
  readonly sql: string;
  readonly params: unknown[];
}

function valueTest(d: Dialect, values: readonly string[], params: unknown[]): string {
  if (values.length === 1) {
    params.push(values[0]);
    return " AND value = ?";
  }
  params.push(d.texts(values));
  return ` AND value${d.inTexts}`;
}

/** Whether a requirement can drive a listing from the index: it names a label rows must carry. */
function positive(r: LabelRequirement): boolean {
  return r.operator === "In" || r.operator === "Exists";
}

/**
 * The requirement that drives a listing: the first `In` with the fewest
 * values (an equality first of all), else the first `Exists`; `undefined`
 * when every requirement is negative (the listing then reads the kind).
 */
export function drivingRequirement(reqs: readonly LabelRequirement[]): number {
  let best = -1;
  for (let i = 0; i < reqs.length; i++) {
    const r = reqs[i];
    if (!positive(r)) continue;
    if (best < 0) {
      best = i;
      continue;
    }
    const b = reqs[best];
    const rank = (x: LabelRequirement) => x.operator === "Exists" ? Infinity : x.values.length;
    if (rank(r) < rank(b)) best = i;
  }
  return best;
}

/**
 * `objects.id IN (…)` over the index for the driving requirement: the ids of
 * kind `gk` carrying the label, read from `idx_object_labels_select`.
 */
export function drivingIds(d: Dialect, gk: GroupKind, r: LabelRequirement): Fragment {
  const params: unknown[] = [gk.group, gk.kind, r.key];
  const sql = `SELECT object_id FROM object_labels WHERE "group" = ? AND kind = ? AND key = ?${
    r.operator === "In" ? valueTest(d, r.values, params) : ""
  }`;
  return { sql, params };
}

/**
 * ` AND [NOT] EXISTS (…)` per requirement (but `skip`), each a point lookup on
 * `object_labels`' primary key (object_id, key) correlated with `idColumn`.
 */
export function labelFilters(
  d: Dialect,
  reqs: readonly LabelRequirement[],
  idColumn: string,
  skip = -1,
): Fragment {
  let sql = "";
  const params: unknown[] = [];
  for (let i = 0; i < reqs.length; i++) {
    if (i === skip) continue;
    const r = reqs[i];
    const negate = r.operator === "NotIn" || r.operator === "DoesNotExist";
    params.push(r.key);
    let test = `SELECT 1 FROM object_labels WHERE object_id = ${idColumn} AND key = ?`;
    if (r.operator === "In" || r.operator === "NotIn") test += valueTest(d, r.values, params);
    sql += ` AND ${negate ? "NOT " : ""}EXISTS (${test})`;
  }
  return { sql, params };
}

/**
 * The `WHERE` clause (without the keyword) and parameters selecting kind
 * `gk`'s rows that meet `reqs`: driven by the index where a requirement is
 * positive, else by the kind. The caller appends its own bounds and order.
 */
export function selectRows(d: Dialect, gk: GroupKind, reqs: readonly LabelRequirement[]): Fragment {
  const driver = drivingRequirement(reqs);
  const rest = labelFilters(d, reqs, "objects.id", driver);
  if (driver < 0) {
    return {
      sql: `"group" = ? AND kind = ?${rest.sql}`,
      params: [gk.group, gk.kind, ...rest.params],
    };
  }
  const ids = drivingIds(d, gk, reqs[driver]);
  return { sql: `id IN (${ids.sql})${rest.sql}`, params: [...ids.params, ...rest.params] };
}
