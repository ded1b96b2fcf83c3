/**
 * Keys and labels of kinds.
 *
 * @module
 */
import type { GroupKind } from "../store.ts";

/** The key of a kind in maps. */
export function kindKey(gk: GroupKind): string {
  return `${gk.group}\u0000${gk.kind}`;
}

/** `Kind.group` (or `Kind` for the core group), for messages. */
export function kindName(gk: GroupKind): string {
  return gk.group === "" ? gk.kind : `${gk.kind}.${gk.group}`;
}
