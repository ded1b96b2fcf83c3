/**
 * One garbage-collection step for one deletion-pending object: cascade the
 * mark to its owned children, and remove the row once its finalizers are
 * clear and nothing with a live claim points at it.
 *
 * @module
 */
import { type Engine, kindKey } from "./_engine.ts";
import type { ObjectId, ObjectRef, RawObjectMeta, Store } from "../store.ts";

/**
 * Removes the deletion-pending row `meta` describes through `tx` when it is
 * free (no finalizers, nothing with a live claim pointing at it): resolves to
 * the owners it was pointing at, or `undefined` when it stays.
 */
export async function removeIfFree(
  tx: Store,
  meta: RawObjectMeta,
): Promise<ObjectRef[] | undefined> {
  if (meta.finalizers.length > 0) return undefined;
  // Mutually dependent deleting objects would otherwise block each other forever.
  await tx.edges.deleteFinalizingDependsOn(meta.id);
  if (await tx.edges.hasIncoming(meta.id)) return undefined;
  // Read before the delete: the row's owned_by edges go with it.
  const ownedBy = await tx.edges.listOutgoing(meta.id, "owned_by");
  await tx.objects.delete(meta.id);
  return ownedBy;
}

/**
 * Runs one collection step for `id` in one transaction through `store` (the
 * term's); resolves to whether the row was removed. A row that is not
 * deletion-pending is left alone.
 * @throws {NotFoundError} `id` holds no object.
 * @throws {FencedError} the term is over.
 */
export function collect(engine: Engine, store: Store, id: ObjectId): Promise<boolean> {
  return store.within(async (tx) => {
    const meta = await tx.objects.getMeta(id);
    if (meta.deletionRequestedAt === undefined) return false;
    const cascade = await tx.deletionRequests.createFromOwner(id);
    const pushes: ObjectRef[] = [
      ...cascade.children.filter((c) => c.marked).map((c) => c.ref),
      ...cascade.unblocked,
    ];
    const childKinds = new Map(cascade.children.map((c) => [kindKey(c.ref), c.ref]));
    if (pushes.length > 0 || childKinds.size > 0) {
      tx.afterCommit(() => {
        for (const gk of childKinds.values()) engine.writes.kindWritten(gk);
        pushes.forEach((r) => engine.pushNow(r));
      });
    }
    const ownedBy = await removeIfFree(tx, meta);
    if (ownedBy === undefined) return false;
    const owners: ObjectRef[] = [];
    for (const owner of ownedBy) {
      // Only a deleting owner is waiting on this row; pushing a live one would spin. And
      // only once nothing else holds it: a push per child would cost an owner of N children
      // N passes, each re-reading the children left (quadratic in N).
      const m = await tx.objects.getMeta(owner.id);
      if (m.deletionRequestedAt !== undefined && !await tx.edges.hasIncoming(owner.id)) {
        owners.push(owner);
      }
    }
    tx.afterCommit(() => {
      engine.writes.kindWritten(meta);
      // The event log went with the row: its readers end promptly with NotFoundError.
      engine.writes.eventsWritten(id);
      owners.forEach((r) => engine.pushNow(r));
    });
    return true;
  });
}
