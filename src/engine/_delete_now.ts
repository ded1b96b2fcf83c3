/**
 * Deletion as the Kubernetes API server performs it: the object and, unless
 * orphaned, its owned subtree are marked and every row that nothing holds is
 * removed in the same transaction; what finalizers or live claims hold stays
 * deletion-pending for garbage collection.
 *
 * @module
 */
import { removeIfFree } from "./_collect.ts";
import { type Engine, kindKey } from "./_engine.ts";
import type { GroupKind, ObjectId, ObjectRef, Store } from "../store.ts";

/** How a deletion treats the object's owned children, as Kubernetes' `propagationPolicy` names it. */
export type PropagationPolicy = "Background" | "Foreground" | "Orphan";

/** The most objects of a subtree one deletion walks; deeper ones are left to garbage collection. */
export const MAX_SUBTREE = 10_000;

/** Options of {@linkcode deleteNow}. */
export interface DeleteNowInput {
  /** Delete only while the object is at this version. */
  readonly resourceVersion: number | undefined;
  /** `Orphan` detaches the children first; the others delete them with their owner. */
  readonly propagationPolicy: PropagationPolicy | undefined;
  /** Roll the transaction back once the answer is known: nothing is written, no hook runs. */
  readonly dryRun: boolean;
}

/** Thrown inside a dry run's transaction to roll it back. */
const DRY_RUN = Symbol("dry run");

/**
 * Deletes `ref` in one transaction through `store`: marks it (at
 * `resourceVersion` when given), detaches its children under `Orphan` or
 * marks its owned subtree under the other policies (up to
 * {@linkcode MAX_SUBTREE} objects), then removes every marked row nothing
 * holds, children before their owners. Resolves to whether `ref` itself was
 * removed; an object already deletion-pending is collected as far as it can be.
 * A dry run answers the same and rolls back.
 * @throws {NotFoundError} no such id.
 * @throws {WrongKindError} the id belongs to another kind.
 * @throws {ConflictError} the object moved on from `resourceVersion`; nothing is written.
 */
export async function deleteNow(
  engine: Engine,
  store: Store,
  ref: ObjectRef,
  options: DeleteNowInput,
): Promise<boolean> {
  let answer = false;
  const run = async (tx: Store): Promise<boolean> => {
    const touched = new Map<string, GroupKind>();
    const removed: ObjectId[] = [];
    const remaining: ObjectRef[] = [];
    const precondition = options.resourceVersion === undefined
      ? undefined
      : { resourceVersion: options.resourceVersion };
    const mark = await tx.deletionRequests.create(ref, precondition);
    remaining.push(...mark.unblocked);
    if (options.propagationPolicy === "Orphan") {
      const owned = await tx.edges.listIncoming({ toId: ref.id, relation: "owned_by" });
      for (const child of owned) {
        await tx.edges.delete({ fromId: child.id, toId: ref.id, relation: "owned_by" });
      }
    }
    // Breadth first, so that walking the order backwards meets children before their owners.
    const order: ObjectRef[] = [ref];
    const seen = new Set<ObjectId>([ref.id]);
    for (let i = 0; i < order.length && order.length < MAX_SUBTREE; i++) {
      const cascade = await tx.deletionRequests.createFromOwner(order[i].id);
      remaining.push(...cascade.unblocked);
      for (const child of cascade.children) {
        if (seen.has(child.ref.id)) continue;
        seen.add(child.ref.id);
        order.push(child.ref);
      }
    }
    for (let i = order.length - 1; i >= 0; i--) {
      touched.set(kindKey(order[i]), order[i]);
      const meta = await tx.objects.getMeta(order[i].id);
      if (await removeIfFree(tx, meta) === undefined) remaining.push(order[i]);
      else removed.push(order[i].id);
    }
    tx.afterCommit(() => {
      for (const gk of touched.values()) engine.writes.kindWritten(gk);
      // An event log went with its row: its readers end promptly with NotFoundError.
      for (const id of removed) engine.writes.eventsWritten(id);
      for (const r of remaining) engine.pushNow(r);
    });
    answer = removed.includes(ref.id);
    if (options.dryRun) throw DRY_RUN;
    return answer;
  };
  try {
    return await store.within(run);
  } catch (error) {
    if (error === DRY_RUN) return answer;
    throw error;
  }
}
