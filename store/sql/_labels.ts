/**
 * The label index both SQL stores keep beside the objects table, by label set
 * (docs/adr/2026-12-03-label-sets.md): every distinct set of labels a kind's
 * objects carry is one `label_sets` row, listed by key and value in
 * `label_set_entries`, and a labelled object's row names its set
 * (`objects.label_set`, indexed). A create whose labels another object of the
 * kind already carries finds the set and writes no index row; a selector's
 * `In`/`Exists` requirement reads the entries of one key (a few sets) and then
 * those sets' objects. The objects row's `labels` column stays the source a
 * read decodes and the other requirements test.
 *
 * Where a dialect keeps the ids of sets its writer knows
 * (`_label_set_ids.ts`), a create finds a known set without a statement.
 *
 * Writes serialize on both stores (SQLite's write lock; PostgreSQL's counter
 * row, locked first by every write transaction), so finding a set, making one
 * and removing one no object uses race nothing.
 *
 * @module
 */
import type { GroupKind, LabelRequirement } from "../../src/store.ts";
import type { Labels } from "../../src/model/labels.ts";
import type { Dialect } from "./_dialect.ts";
import { type Q, q } from "./_query.ts";

const FIND_SET = `SELECT id FROM label_sets WHERE "group" = ? AND kind = ? AND labels = ?`;
const MAKE_SET = `INSERT INTO label_sets ("group", kind, labels, id) VALUES (?, ?, ?, ?)`;
const SET_USED = "SELECT 1 FROM objects WHERE label_set = ? LIMIT 1";
const DROP_SET = `DELETE FROM label_sets WHERE "group" = ? AND kind = ? AND labels = ?`;
const DROP_ENTRY = `DELETE FROM label_set_entries
  WHERE "group" = ? AND kind = ? AND key = ? AND value = ? AND set_id = ?`;

/**
 * A set of labels as its set's key: JSON with the keys in code-unit order (as
 * migration 9 wrote the sets it made; label keys and values are ASCII, so the
 * databases' byte order agrees).
 */
export function canonicalLabels(labels: Labels, json?: string): string {
  const keys = Object.keys(labels);
  let ordered = true;
  for (let i = 1; i < keys.length && ordered; i++) ordered = keys[i - 1] < keys[i];
  // Keys already in order (as checkMetadata leaves them) serialize as they stand: as `json`, the
  // caller's `JSON.stringify(labels)`, where it has one.
  if (ordered) return json ?? JSON.stringify(labels);
  keys.sort();
  let text = "{";
  for (let i = 0; i < keys.length; i++) {
    if (i > 0) text += ",";
    text += `${JSON.stringify(keys[i])}:${JSON.stringify(labels[keys[i]])}`;
  }
  return `${text}}`;
}

/**
 * The id of the set `labels` make in kind `gk` (`null` for none), made with
 * its entries, numbered `rv` (the resource version of the write that makes
 * it), when no object of the kind carries them yet. `json` is the caller's
 * `JSON.stringify(labels)`, where it has one.
 */
export function* labelSetOf(
  d: Dialect,
  gk: GroupKind,
  labels: Labels,
  rv: number,
  json?: string,
): Q<number | null> {
  if (Object.keys(labels).length === 0) return null;
  const text = canonicalLabels(labels, json);
  const known = d.labelSetIds;
  const id = known?.get(gk, text);
  if (id !== undefined) return id;
  const found = yield* q.row(FIND_SET, gk.group, gk.kind, text);
  if (found !== undefined) {
    const id = Number(found[0]);
    known?.set(gk, text, id);
    return id;
  }
  yield* q.run(MAKE_SET, gk.group, gk.kind, text, rv);
  yield* q.run(
    `INSERT INTO label_set_entries ("group", kind, key, value, set_id)
     SELECT ?, ?, key, value, ?${d.jsonEntries}`,
    gk.group,
    gk.kind,
    rv,
    text,
  );
  known?.set(gk, text, rv);
  return rv;
}

/**
 * Removes set `id` (of kind `gk`, whose labels are `labels`) and its entries
 * once no object refers to it: a write that moved or deleted its last object
 * calls this after the row changed.
 */
export function* releaseLabelSet(
  d: Dialect,
  gk: GroupKind,
  id: number | null,
  labels: Labels,
): Q<void> {
  if (id === null) return;
  if ((yield* q.row(SET_USED, id)) !== undefined) return;
  const text = canonicalLabels(labels);
  yield* q.run(DROP_SET, gk.group, gk.kind, text);
  d.labelSetIds?.delete(gk, text);
  // Each entry by its whole key: the table has no other index to find a set's entries by.
  for (const key of Object.keys(labels)) {
    yield* q.run(DROP_ENTRY, gk.group, gk.kind, key, labels[key], id);
  }
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
 * `gk`'s rows of `objects` that meet `reqs`: driven by the label-set index
 * where a requirement is positive (`label_set IN (…)` over one key range of
 * `label_set_entries`), else by the kind. The caller appends its bounds and
 * order.
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
    sql: `label_set IN (SELECT set_id FROM label_set_entries
      WHERE "group" = ? AND kind = ? AND key = ?${value})${rest.sql}`,
    params: [...params, ...rest.params],
  };
}
