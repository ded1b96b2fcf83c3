/**
 * Statements that find objects by their key, written so the key is a
 * planner's only sensible way in, on an empty, never analyzed table as on a
 * large one. PostgreSQL plans a named prepared statement once for all calls
 * (its generic plan), from the statistics of the moment: on a new, tiny
 * `objects` table, `WHERE id = $1 AND "group" = $2 AND kind = $3` read the
 * name index on `("group", kind, …)` and filtered `id` row by row, and kept
 * that plan as the kind grew, each call reading the whole kind.
 *
 * @module
 */

/**
 * The kind check on a row its key found, `("group" = ? AND kind = ?) IS TRUE`
 * (binds group then kind): true exactly where both columns equal, and not an
 * index condition to any planner, so it filters the one row the key reads
 * and never competes with the key for the plan. `alias` qualifies the columns.
 */
export function kindOfRow(alias?: string): string {
  const p = alias === undefined ? "" : `${alias}.`;
  return `(${p}"group" = ? AND ${p}kind = ?) IS TRUE`;
}
