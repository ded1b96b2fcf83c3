/**
 * Store contract cases: the stalled generation a permanent failure records,
 * and the listings that leave stalled objects out.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  InvalidObservedGenerationError,
  NotFoundError,
  ObservedGenerationFutureError,
  WrongKindError,
} from "../../src/model/errors.ts";
import { type ContractCase, Gadget, logCount, make, ref, Widget } from "./harness.ts";

export const stalledCases: ContractCase[] = [
  {
    name: "getForReconcile reads no stalled generation until one is recorded, then reads it back",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      assert.equal((await s.objects.getForReconcile(a.id)).stalledGeneration, undefined);
      assert.equal(await s.objects.setStalledGeneration(a, 1), true);
      assert.equal((await s.objects.getForReconcile(a.id)).stalledGeneration, 1);
      assert.equal(await s.objects.setStalledGeneration(a, 1), false);
      assert.equal(await s.objects.setStalledGeneration(a, undefined), true);
      assert.equal((await s.objects.getForReconcile(a.id)).stalledGeneration, undefined);
      assert.equal(await s.objects.setStalledGeneration(a, undefined), false);
    },
  },
  {
    name: "setStalledGeneration bumps no resource version, touches no updatedAt and logs nothing",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const before = await s.objects.get(a.id);
      const rv = await s.getLatestResourceVersion();
      const logged = await logCount(s, Widget);
      await s.objects.setStalledGeneration(a, 1);
      const after = await s.objects.get(a.id);
      assert.deepEqual(after, before);
      assert.equal(await s.getLatestResourceVersion(), rv);
      assert.equal(await logCount(s, Widget), logged);
    },
  },
  {
    name:
      "listUnsettledIds leaves out an object stalled at its generation and lists it after a spec change",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a", { v: 1 });
      const b = await make(s, Widget, "b", { v: 1 });
      await s.objects.setStalledGeneration(a, 1);
      assert.deepEqual(await s.objects.listUnsettledIds(Widget), [b.id]);
      await s.objects.updateSpec(a, { spec: JSON.stringify({ v: 2 }) });
      // The record says generation 1; the row is at 2: the stall no longer counts.
      assert.deepEqual(await s.objects.listUnsettledIds(Widget), [a.id, b.id]);
      assert.equal((await s.objects.getForReconcile(a.id)).stalledGeneration, 1);
    },
  },
  {
    name:
      "listIds with excludeStalled leaves out objects stalled at their generation; without it lists all",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a", { v: 1 });
      const b = await make(s, Widget, "b");
      const c = await make(s, Widget, "c");
      await make(s, Gadget, "g");
      await s.objects.setStalledGeneration(a, 1);
      await s.objects.setStalledGeneration(c, 1);
      assert.deepEqual(await s.objects.listIds(Widget), [a.id, b.id, c.id]);
      assert.deepEqual(await s.objects.listIds(Widget, { excludeStalled: true }), [b.id]);
      assert.deepEqual(await s.objects.listIds(Widget, { excludeStalled: false }), [
        a.id,
        b.id,
        c.id,
      ]);
      await s.objects.updateSpec(a, { spec: JSON.stringify({ v: 2 }) });
      await s.objects.setStalledGeneration(c, undefined);
      assert.deepEqual(await s.objects.listIds(Widget, { excludeStalled: true }), [
        a.id,
        b.id,
        c.id,
      ]);
    },
  },
  {
    name:
      "a settled object that stalled stays out of listUnsettledIds; the owed listing still lists its owed count",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.objects.setStalledGeneration(a, 1);
      await s.reconcileOwed.stamp([a]);
      assert.deepEqual(await s.objects.listUnsettledIds(Widget), []);
      assert.deepEqual(await s.reconcileOwed.listIds(Widget), [a.id]);
    },
  },
  {
    reopens: true,
    name: "the stalled generation survives a reopen",
    async fn(h) {
      const path = h.tempPath("stalled.db");
      const s = await h.openPath(path);
      const a = await make(s, Widget, "a");
      await s.objects.setStalledGeneration(a, 1);
      await s.close();
      const again = await h.openPath(path);
      assert.equal((await again.objects.getForReconcile(a.id)).stalledGeneration, 1);
      assert.deepEqual(await again.objects.listUnsettledIds(Widget), []);
    },
  },
  {
    name:
      "setStalledGeneration refuses a malformed or future generation, a missing id and another kind",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      for (const bad of [0, -1, 1.5, Number.NaN, "1", null]) {
        await assert.rejects(
          s.objects.setStalledGeneration(a, bad as unknown as number),
          InvalidObservedGenerationError,
        );
      }
      await assert.rejects(s.objects.setStalledGeneration(a, 2), ObservedGenerationFutureError);
      await assert.rejects(s.objects.setStalledGeneration(ref(Widget, 999), 1), NotFoundError);
      await assert.rejects(s.objects.setStalledGeneration(ref(Gadget, a.id), 1), WrongKindError);
      assert.equal((await s.objects.getForReconcile(a.id)).stalledGeneration, undefined);
    },
  },
  {
    name:
      "listIds refuses options that are not an object or an excludeStalled that is not a boolean",
    async fn(h) {
      const s = await h.open();
      await assert.rejects(s.objects.listIds(Widget, 1 as never), TypeError);
      await assert.rejects(
        s.objects.listIds(Widget, { excludeStalled: "yes" as never }),
        TypeError,
      );
    },
  },
  {
    name: "setStalledGeneration inside a transaction rolls back with it",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await assert.rejects(
        s.within(async (tx) => {
          await tx.objects.setStalledGeneration(a, 1);
          assert.equal((await tx.objects.getForReconcile(a.id)).stalledGeneration, 1);
          throw new Error("roll back");
        }),
        /roll back/,
      );
      assert.equal((await s.objects.getForReconcile(a.id)).stalledGeneration, undefined);
    },
  },
  {
    name:
      "deletionRequests.list with excludeStalled leaves out deletion-pending objects stalled at their generation",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a", {}, ["f"]);
      const b = await make(s, Gadget, "b", {}, ["f"]);
      await s.deletionRequests.create(a);
      await s.deletionRequests.create(b);
      await s.objects.setStalledGeneration(a, 1);
      assert.deepEqual((await s.deletionRequests.list()).map((r) => r.id), [a.id, b.id]);
      assert.deepEqual(
        (await s.deletionRequests.list({ excludeStalled: true })).map((r) => r.id),
        [b.id],
      );
      await assert.rejects(s.deletionRequests.list(5 as never), TypeError);
    },
  },
];
