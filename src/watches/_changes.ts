/**
 * Changes as the tailer reads them: one page of write-log entries collapsed to the
 * latest state per object, and the deep freeze every delivered object gets.
 *
 * @module
 */
import { kindName } from "../engine/_engine.ts";
import type { GroupKind, ObjectId, RawObject, Store, WriteOp } from "../store.ts";
import type { BeehiveObject } from "../model/object.ts";
import type { TailWrite } from "./kind_tail.ts";
import type { ChangeType } from "./object_change.ts";
/** One object's collapsed change, as read from the log (undecoded). */
export interface RawChange {
  readonly id: ObjectId;
  /** The log position of the last entry folded in. */
  readonly rv: number;
  readonly op: WriteOp;
  /** The live row (the delete entry's image for a delete). */
  readonly row: RawObject;
  /** The owner's id, `null` for none, `undefined` when not resolved. */
  readonly owner: ObjectId | null | undefined;
}

/** A run that began with a create and did not end in a delete is still a create. */
export function coalesceOp(first: WriteOp, last: WriteOp): WriteOp {
  return first === "create" && last !== "delete" ? "create" : last;
}

/** Folds a newer change into a pending one; never annihilates a create+delete pair. */
export function mergeChange(pending: RawChange | undefined, next: RawChange): RawChange {
  if (pending === undefined) return next;
  if (next.rv <= pending.rv) return pending;
  return { ...next, op: coalesceOp(pending.op, next.op) };
}

/** How a change's type reads. */
export function changeType(op: WriteOp): ChangeType {
  return op === "create" ? "Added" : op === "delete" ? "Deleted" : "Modified";
}

/**
 * Collapses one page of write-log entries (ascending) to the latest state per
 * object: one batched row read for the live objects the entries carry no row
 * for (and one edge read when owners are asked for), delete entries from
 * their row image. Ascending by position.
 */
export async function collectChanges(
  store: Store,
  gk: GroupKind,
  writes: readonly TailWrite[],
  options: { readonly owners: boolean; readonly only?: ObjectId },
  warn: (message: string, attrs: Record<string, unknown>) => void,
): Promise<RawChange[]> {
  // Walking back from the end meets each object's newest entry first, in descending order, so
  // that list reversed is ascending; the last op met for an object on the way is its first.
  const newest: TailWrite[] = [];
  const firstOp = new Map<ObjectId, WriteOp>();
  for (let i = writes.length - 1; i >= 0; i--) {
    const w = writes[i];
    if (options.only !== undefined && w.id !== options.only) continue;
    if (!firstOp.has(w.id)) newest.push(w);
    firstOp.set(w.id, w.op);
  }
  if (newest.length === 0) return [];
  newest.reverse();
  const liveIds: ObjectId[] = [];
  const unread: ObjectId[] = [];
  for (const w of newest) {
    if (w.op === "delete") continue;
    liveIds.push(w.id);
    // The row the object's latest write left, when the tail carries it; else the live row.
    if (w.row === undefined) unread.push(w.id);
  }
  let read: Map<ObjectId, RawObject> | undefined;
  if (unread.length > 0) {
    read = new Map();
    for (const raw of await store.objects.listByIds(gk, unread)) read.set(raw.id, raw);
  }
  let owners: Map<ObjectId, { id: ObjectId }[]> | undefined;
  if (liveIds.length > 0 && options.owners) {
    owners = await store.edges.groupOutgoingByIds(liveIds, "owned_by");
  }
  const out: RawChange[] = [];
  for (const w of newest) {
    const op = coalesceOp(firstOp.get(w.id)!, w.op);
    if (w.op === "delete") {
      if (w.final === undefined) {
        warn("beehive: a delete entry carries no row image; skipping it", {
          kind: kindName(gk),
          id: w.id,
          resourceVersion: w.resourceVersion,
        });
        continue;
      }
      out.push({
        id: w.id,
        rv: w.resourceVersion,
        op,
        row: w.final,
        owner: w.final.owner?.id ?? null,
      });
      continue;
    }
    const row = w.row ?? read?.get(w.id);
    // Collected between the page and the row read: its delete entry is later in the log.
    if (row === undefined) continue;
    const owner = owners === undefined ? undefined : owners.get(w.id)?.[0]?.id ?? null;
    out.push({ id: w.id, rv: w.resourceVersion, op, row, owner });
  }
  return out;
}

/** Freezes a value and everything it holds. */
function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}

/**
 * Freezes a decoded object and everything it holds: the same as
 * `deepFreeze`, walking only the fields that can hold objects (a third of
 * its cost, paid once per change per drain).
 */
export function freezeObject<Spec, Status>(
  o: BeehiveObject<Spec, Status>,
): BeehiveObject<Spec, Status> {
  deepFreeze(o.spec);
  deepFreeze(o.status);
  Object.freeze(o.finalizers);
  for (const c of o.conditions) deepFreeze(c);
  Object.freeze(o.conditions);
  Object.freeze(o.createdAt);
  Object.freeze(o.updatedAt);
  if (o.observedAt !== undefined) Object.freeze(o.observedAt);
  if (o.deletionRequestedAt !== undefined) Object.freeze(o.deletionRequestedAt);
  return Object.freeze(o);
}
