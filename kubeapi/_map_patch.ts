/**
 * The change between two string maps (labels, annotations) as a merge patch of
 * one map, reading own members only.
 *
 * @module
 */

/** A map of labels or annotations. */
export type StringMap = Readonly<Record<string, string>>;

/**
 * The merge patch that takes `from` to `to` (`null` removes a key), or
 * `undefined` when they hold the same members. Only own members count, so a key
 * such as `constructor` or `__proto__` is a key like any other.
 */
export function diffMap(from: StringMap, to: StringMap): Record<string, string | null> | undefined {
  const at = (map: StringMap, key: string) => Object.hasOwn(map, key) ? map[key] : undefined;
  const entries: [string, string | null][] = [
    ...Object.keys(from).filter((key) => !Object.hasOwn(to, key)).map((key) => [key, null]),
    ...Object.entries(to).filter(([key, value]) => at(from, key) !== value),
  ] as [string, string | null][];
  // fromEntries defines own members: a key "__proto__" reaches the library's check.
  return entries.length === 0 ? undefined : Object.fromEntries(entries);
}
