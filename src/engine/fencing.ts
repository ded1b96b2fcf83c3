/**
 * Fencing tokens for a controller's side effects: the term's lease and epoch
 * ({@linkcode Fencing}), and the consumer's repository that checks them
 * ({@linkcode FencedRepository}).
 *
 * @module
 */
import { FencedError, ReconcileReturnedError } from "../model/errors.ts";

/**
 * The fencing token of a pass: the lease the Beehive leads under and the
 * epoch of its term. Epochs only grow: a later term of the lease, in any
 * process, carries a higher one. Without `leaderElection` the epoch is 0.
 */
export interface Fencing {
  /** The lease's name (`leaderElection.leaseName`, or the store lease's). */
  readonly lease: string;
  /** The term's epoch; `0` without `leaderElection`. */
  readonly epoch: number;
}

/** Options `applyFenced` receives. */
export interface ApplyFencedOptions {
  /** The pass's signal: aborts when the Beehive stops or loses its lease. */
  readonly signal: AbortSignal;
}

/**
 * The consumer's store of what a controller changes outside beehive, checked
 * against the pass's fencing epoch (Kleppmann's fencing tokens). Register it
 * with `register(kind, controller, { fencedRepository })`; a pass writes
 * through `cc.fencedWrite(entityId, mutation)`.
 *
 * `applyFenced` must be a monotonic compare-and-set on the entity: apply the
 * mutation, and record the epoch, only when `epoch` is at least the highest
 * epoch it has recorded for `entityId`, atomically; otherwise apply nothing
 * and resolve to `false`. A repository that ignores the epoch is not fenced.
 *
 * @example A repository over a Map (a real one is a table with a `last_epoch` column)
 * ```ts
 * import type { FencedRepository } from "@beehive/beehive";
 *
 * const devices = new Map<string, { lastEpoch: number; power: string }>();
 * const repository: FencedRepository = {
 *   applyFenced(entityId, epoch, mutation) {
 *     const row = devices.get(entityId);
 *     if (row !== undefined && epoch < row.lastEpoch) return Promise.resolve(false);
 *     devices.set(entityId, { lastEpoch: epoch, power: String(mutation) });
 *     return Promise.resolve(true);
 *   },
 * };
 * await repository.applyFenced("lamp", 2, "on", { signal: new AbortController().signal });
 * console.log(await repository.applyFenced("lamp", 1, "off", { signal: AbortSignal.abort() }));
 * // false
 * ```
 */
export interface FencedRepository {
  /**
   * Applies `mutation` to `entityId` when `epoch` ≥ the highest epoch seen
   * for it; resolves to whether it did. A rejection reaches the controller
   * as itself.
   */
  applyFenced(
    entityId: string,
    epoch: number,
    mutation: unknown,
    options: ApplyFencedOptions,
  ): Promise<boolean>;
}

/** The longest entity id `fencedWrite` accepts, in UTF-16 code units. */
export const MAX_ENTITY_ID = 1_024;

/** What a pass knows to write through the kind's repository. */
export interface FencedTarget {
  readonly repository: FencedRepository | undefined;
  readonly fencing: Fencing;
  readonly signal: AbortSignal;
  /** The kind, for messages. */
  readonly kind: string;
  /** Whether the pass has returned. */
  ended(): boolean;
}

/**
 * One fenced write of a pass: checks its arguments, calls the repository
 * with the term's epoch and the pass's signal, and turns a refusal into
 * {@linkcode FencedError}.
 */
export async function fencedWrite(
  target: FencedTarget,
  entityId: string,
  mutation: unknown,
): Promise<void> {
  if (target.ended()) {
    throw new ReconcileReturnedError(
      "Cannot use the ControllerClient: its reconcile has already returned",
    );
  }
  if (typeof entityId !== "string" || entityId === "" || entityId.length > MAX_ENTITY_ID) {
    throw new TypeError(
      `Cannot write fenced: entityId is ${
        typeof entityId === "string" ? `${entityId.length} characters long` : typeof entityId
      }, expected a non-empty string of at most ${MAX_ENTITY_ID} characters`,
    );
  }
  const repository = target.repository;
  if (repository === undefined) {
    throw new TypeError(
      `Cannot write fenced: ${target.kind} was registered without a fencedRepository`,
    );
  }
  const { lease, epoch } = target.fencing;
  const applied = await repository.applyFenced(entityId, epoch, mutation, {
    signal: target.signal,
  });
  if (applied === true) return;
  if (applied === false) {
    throw new FencedError(
      `The fenced write to ${JSON.stringify(entityId)} was refused: lease ${
        JSON.stringify(lease)
      } has moved past epoch ${epoch}`,
    );
  }
  throw new TypeError(
    `Cannot write fenced: applyFenced resolved to ${typeof applied}, expected a boolean`,
  );
}
