/**
 * What a reconcile returns: {@linkcode settled}, {@linkcode unsettled} or
 * {@linkcode fail}, optionally with {@linkcode ReconcileResult.requeueAfter}.
 *
 * @module
 */
import { InvalidResultError } from "./errors.ts";

type Outcome = "settled" | "unsettled" | "fail";

/** How a pass concluded, as the engine reads it. */
export interface ResultInfo {
  readonly outcome: Outcome;
  /** The requested delay in ms (≤ 0 = at the per-object floor), or `undefined` for none. */
  readonly requeueAfter: number | undefined;
  readonly err: Error | undefined;
}

const infos = new WeakMap<ReconcileResult, ResultInfo>();

/**
 * The outcome of one reconcile pass. Build it with {@linkcode settled},
 * {@linkcode unsettled} or {@linkcode fail}; it has no public constructor.
 *
 * | result | records the generation | next pass |
 * | --- | --- | --- |
 * | `settled()` | yes | none scheduled |
 * | `unsettled()` | no | after the owed-pass interval |
 * | `….requeueAfter(ms)` | as above | after `ms` (≤ 0: at the per-object floor) |
 * | `fail(err)` | no | the retry ladder (`requeueAfter` ignored) |
 */
export class ReconcileResult {
  /** Use {@linkcode settled}, {@linkcode unsettled} or {@linkcode fail}. */
  private constructor(info: ResultInfo) {
    infos.set(this, info);
  }

  /** @internal */
  static make(info: ResultInfo): ReconcileResult {
    return new ReconcileResult(info);
  }

  /** The failure, or `undefined` for a success. `fail(undefined).err` is an `InvalidResultError`. */
  get err(): Error | undefined {
    return infos.get(this)!.err;
  }

  /**
   * A copy of this result that schedules the next pass `ms` milliseconds from
   * now; `ms ≤ 0` means as soon as the per-object floor (1 s) allows. Ignored
   * on a failure, which takes the retry ladder.
   * @throws {TypeError} `ms` is not a finite number.
   */
  requeueAfter(ms: number): ReconcileResult {
    if (typeof ms !== "number" || !Number.isFinite(ms)) {
      throw new TypeError(
        `Cannot requeue after ${String(ms)}: expected a finite number of milliseconds`,
      );
    }
    return new ReconcileResult({ ...infos.get(this)!, requeueAfter: ms });
  }
}

/** The engine's view of a result; `undefined` for anything that is not one. */
export function resultInfo(value: unknown): ResultInfo | undefined {
  return value instanceof ReconcileResult ? infos.get(value) : undefined;
}

/**
 * The pass observed the object's current generation: beehive records it, and
 * schedules nothing. It claims nothing about health.
 *
 * @example
 * ```ts
 * import { settled } from "@beehive/beehive";
 * console.assert(settled().err === undefined);
 * ```
 */
export function settled(): ReconcileResult {
  return ReconcileResult.make({ outcome: "settled", requeueAfter: undefined, err: undefined });
}

/**
 * Real work was done but the object has not caught up: nothing is recorded,
 * and the object comes back after the owed-pass interval (30 s by default).
 */
export function unsettled(): ReconcileResult {
  return ReconcileResult.make({ outcome: "unsettled", requeueAfter: undefined, err: undefined });
}

/**
 * The pass failed: nothing is recorded, and the object is retried on the
 * ladder (1 s doubling to `maxRetryInterval`). `fail(undefined)` fails the pass
 * with an `InvalidResultError`; a thrown non-Error is wrapped in an `Error`.
 */
export function fail(err: unknown): ReconcileResult {
  let error: Error;
  if (err === undefined || err === null) {
    error = new InvalidResultError("fail() was given no error: a failed pass needs its cause");
  } else if (err instanceof Error) {
    error = err;
  } else {
    error = new Error(String(err), { cause: err });
  }
  return ReconcileResult.make({ outcome: "fail", requeueAfter: undefined, err: error });
}
