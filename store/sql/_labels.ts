/**
 * The label index both SQL stores keep beside the objects table: one
 * `object_labels` row per (object, label), keyed by (kind, key, value,
 * object id), so a selector's `In`/`Exists` requirement reads one key range
 * holding exactly the matching objects of the kind, in id order
 * (docs/adr/2026-12-02-labels.md). The objects row's `labels` column stays
 * the source a read decodes and the other requirements test; this table is
 * written in the same transaction and only ever drives selections.
 *
 * @module
 */
import type { GroupKind, LabelRequirement, ObjectId } from "../../src/store.ts";
import type { Labels } from "../../src/model/labels.ts";
import type { Dialect } from "./_dialect.ts";
import { type Q, q } from "./_query.ts";

const INSERT_ONE =
  `INSERT INTO object_labels ("group", kind, key, value, object_id) VALUES (?, ?, ?, ?, ?)`;
const DELETE_ONE = `DELETE FROM object_labels
  WHERE "group" = ? AND kind = ? AND key = ? AND value = ? AND object_id = ?`;

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
    yield* q.run(INSERT_ONE, gk.group, gk.kind, keys[0], labels[keys[0]], id);
    return;
  }
  const subset = text ?? JSON.stringify(Object.fromEntries(keys.map((k) => [k, labels[k]])));
  yield* q.run(
    `INSERT INTO object_labels ("group", kind, key, value, object_id)
     SELECT ?, ?, key, value, ?${d.jsonEntries}`,
    gk.group,
    gk.kind,
    id,
    subset,
  );
}

/** Removes the index rows of `keys` (with their values in `labels`) of row `id`. */
export function* deleteLabels(
  id: ObjectId,
  gk: GroupKind,
  labels: Labels,
  keys: readonly string[] = Object.keys(labels),
): Q<void> {
  // Each by its whole primary key: the table has no other index to find a row's entries by.
  for (const key of keys) yield* q.run(DELETE_ONE, gk.group, gk.kind, key, labels[key], id);
}

/** Brings the index of row `id` from `before` to `after`. */
export function* syncLabels(
  d: Dialect,
  id: ObjectId,
  gk: GroupKind,
  before: Labels,
  after: Labels,
): Q<void> {
  yield* deleteLabels(id, gk, before, Object.keys(before).filter((k) => after[k] !== before[k]));
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
    return " = ?";
  }
  params.push(d.texts(values));
  return d.inTexts;
}

/**
 * The requirement that drives a listing: the first `In` with the fewest
 * values (an equality first of all), else the first `Exists`; -1 when every
 * requirement is negative (the listing then reads the kind).
 */
export function drivingRequirement(reqs: readonly LabelRequirement[]): number {
  const rank = (r: LabelRequirement) =>
    r.operator === "In" ? r.values.length : r.operator === "Exists" ? Infinity : -1;
  let best = -1;
  for (let i = 0; i < reqs.length; i++) {
    const r = rank(reqs[i]);
    if (r >= 0 && (best < 0 || r < rank(reqs[best]))) best = i;
  }
  return best;
}

/**
 * ` AND …` per requirement (but `skip`), each testing the row's `labels`
 * column (`column`): a requirement on a row already read costs no lookup.
 */
export function labelFilters(
  d: Dialect,
  reqs: readonly LabelRequirement[],
  column: string,
  skip = -1,
): Fragment {
  let sql = "";
  const params: unknown[] = [];
  for (let i = 0; i < reqs.length; i++) {
    if (i === skip) continue;
    const r = reqs[i];
    const value = d.labelValue(column);
    params.push(d.labelKey(r.key));
    switch (r.operator) {
      case "In":
        sql += ` AND ${value}${valueTest(d, r.values, params)}`;
        break;
      case "NotIn": {
        // The key is bound twice: absent, or present with none of the values.
        params.push(d.labelKey(r.key));
        sql += ` AND (${value} IS NULL OR NOT (${value}${valueTest(d, r.values, params)}))`;
        break;
      }
      case "Exists":
        sql += ` AND ${value} IS NOT NULL`;
        break;
      case "DoesNotExist":
        sql += ` AND ${value} IS NULL`;
        break;
    }
  }
  return { sql, params };
}

/**
 * The `WHERE` clause (without the keyword) and parameters selecting kind
 * `gk`'s rows of `objects` that meet `reqs`: driven by the index where a
 * requirement is positive (`id IN (…)` over one key range of
 * `object_labels`), else by the kind. The caller appends its bounds and order.
 */
export function selectRows(d: Dialect, gk: GroupKind, reqs: readonly LabelRequirement[]): Fragment {
  const driver = drivingRequirement(reqs);
  const rest = labelFilters(d, reqs, "objects.labels", driver);
  if (driver < 0) {
    return {
      sql: `"group" = ? AND kind = ?${rest.sql}`,
      params: [gk.group, gk.kind, ...rest.params],
    };
  }
  const r = reqs[driver];
  const params: unknown[] = [gk.group, gk.kind, r.key];
  const value = r.operator === "In" ? ` AND value${valueTest(d, r.values, params)}` : "";
  return {
    sql: `id IN (SELECT object_id FROM object_labels
      WHERE "group" = ? AND kind = ? AND key = ?${value})${rest.sql}`,
    params: [...params, ...rest.params],
  };
}
