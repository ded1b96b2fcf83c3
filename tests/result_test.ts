/**
 * Unit tests for reconcile results and the engine's view of them.
 *
 * @module
 */
import assert from "node:assert/strict";
import { test } from "./_test.ts";
import { fail, ReconcileResult, resultInfo, settled, unsettled } from "../src/model/result.ts";
import { InvalidResultError } from "../src/model/errors.ts";

test("settled reports a settled outcome with no delay and no error", () => {
  const r = settled();
  assert.deepEqual(resultInfo(r), { outcome: "settled", requeueAfter: undefined, err: undefined });
  assert.equal(r.err, undefined);
});

test("unsettled reports an unsettled outcome with no delay and no error", () => {
  const r = unsettled();
  assert.deepEqual(resultInfo(r), {
    outcome: "unsettled",
    requeueAfter: undefined,
    err: undefined,
  });
  assert.equal(r.err, undefined);
});

test("fail reports a failed outcome carrying the very error it was given", () => {
  const cause = new RangeError("disk on fire");
  const r = fail(cause);
  const info = resultInfo(r);
  assert.equal(info?.outcome, "fail");
  assert.equal(info?.requeueAfter, undefined);
  assert.equal(info?.err, cause);
  assert.equal(r.err, cause);
});

test("ReconcileResult.requeueAfter sets the delay and keeps the outcome", () => {
  assert.deepEqual(resultInfo(settled().requeueAfter(5_000)), {
    outcome: "settled",
    requeueAfter: 5_000,
    err: undefined,
  });
  assert.deepEqual(resultInfo(unsettled().requeueAfter(250)), {
    outcome: "unsettled",
    requeueAfter: 250,
    err: undefined,
  });
  const err = new Error("x");
  const failed = resultInfo(fail(err).requeueAfter(10));
  assert.equal(failed?.outcome, "fail");
  assert.equal(failed?.err, err);
});

test("ReconcileResult.requeueAfter(0) is a real schedule, not the absence of one", () => {
  assert.equal(resultInfo(settled().requeueAfter(0))?.requeueAfter, 0);
  assert.equal(resultInfo(unsettled().requeueAfter(-1))?.requeueAfter, -1);
});

test("ReconcileResult.requeueAfter returns a new result and leaves the original unchanged", () => {
  const original = unsettled();
  const later = original.requeueAfter(1_000);
  const again = later.requeueAfter(2_000);
  assert.notEqual(later, original);
  assert.ok(later instanceof ReconcileResult);
  assert.equal(resultInfo(original)?.requeueAfter, undefined);
  assert.equal(resultInfo(later)?.requeueAfter, 1_000);
  assert.equal(resultInfo(again)?.requeueAfter, 2_000);
});

test("ReconcileResult.requeueAfter throws TypeError on a non-finite delay", () => {
  for (
    const ms of [NaN, Infinity, -Infinity, "5" as unknown as number, undefined as unknown as number]
  ) {
    assert.throws(() => settled().requeueAfter(ms), TypeError, String(ms));
  }
});

test("fail(undefined).err is an InvalidResultError", () => {
  const r = fail(undefined);
  assert.ok(r.err instanceof InvalidResultError);
  assert.equal(resultInfo(r)?.outcome, "fail");
  assert.ok(fail(null).err instanceof InvalidResultError);
});

test("fail wraps a non-Error in an Error that keeps it as the cause", () => {
  const r = fail("boom");
  assert.ok(r.err instanceof Error);
  assert.ok(!(r.err instanceof InvalidResultError));
  assert.equal(r.err.message, "boom");
  assert.equal(r.err.cause, "boom");
  const payload = { code: 42 };
  assert.equal(fail(payload).err?.cause, payload);
});

test("resultInfo of anything but a result is undefined", () => {
  const lookalike = { outcome: "settled", requeueAfter: undefined, err: undefined };
  for (const v of [undefined, null, 0, "settled", {}, lookalike, Object.create(settled())]) {
    assert.equal(resultInfo(v), undefined);
  }
});
