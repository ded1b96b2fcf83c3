/**
 * The filter on a namespace's rows both stores' reads spell alike.
 *
 * @module
 */

/**
 * ` AND column = ?` for namespace `namespace`'s rows. The namespace index
 * holds only namespaced rows (migration 9), and a bound parameter cannot tell
 * a planner the value is not `''`, so a non-empty namespace also says
 * `column <> ''`: both databases then read the index.
 */
export function namespaceFilter(namespace: string, column: string): string {
  return namespace === "" ? ` AND ${column} = ?` : ` AND ${column} = ? AND ${column} <> ''`;
}
