/**
 * The change an object watch delivers.
 *
 * @module
 */
import type { BeehiveObject } from "../model/object.ts";
import type { ObjectId } from "../store.ts";

/** What a change reports: `"Deleted"` means collected, not requested. */
export type ChangeType = "Added" | "Modified" | "Deleted";

/**
 * One change delivered by an object watch. Frozen, like its `object`: every
 * stream of the kind may be handed the same change.
 */
export interface ObjectChange<Spec, Status> {
  /**
   * `"Added"` for an object not known to be in your view (it may repeat for
   * one your snapshot held), `"Modified"` for a write (a deletion request
   * included), `"Deleted"` for a collected object.
   */
  readonly type: ChangeType;
  /** The object's id; set even when `object` is `undefined`. */
  readonly id: ObjectId;
  /** The log position this change was reported at: what `resumeFrom` takes to continue after it. */
  readonly resourceVersion: number;
  /**
   * The object's current state (its final state on `"Deleted"`), or
   * `undefined` on a `"Deleted"` whose final state does not decode. Deeply
   * frozen: every stream of the kind may be handed the same instance.
   */
  readonly object: BeehiveObject<Spec, Status> | undefined;
}
