/**
 * Store contract cases: reconcile owed.
 *
 * @module
 */
import assert from "node:assert/strict";
import { WrongKindError } from "../../src/model/errors.ts";
import type { ObjectRef, Store } from "../../src/store.ts";
import { type ContractCase, Core, Gadget, logCount, make, ref, Widget } from "./harness.ts";

/** The owed count of `r`. */
async function owed(s: Store, r: ObjectRef): Promise<number> {
  return (await s.objects.get(r.id)).reconcileOwed;
}

export const reconcileOwedCases: ContractCase[] = [
  {
    name: "the owed count starts at 0 and a stamp increments it once per distinct ref",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Gadget, "b");
      const c = await make(s, Widget, "c");
      assert.equal(await owed(s, a), 0);
      // Not kind-scoped: one call spans kinds, and repeats fold.
      await s.reconcileOwed.stamp([a, b, a, a]);
      assert.equal(await owed(s, a), 1);
      assert.equal(await owed(s, b), 1);
      assert.equal(await owed(s, c), 0);
      await s.reconcileOwed.stamp([a]);
      await s.reconcileOwed.stamp([a]);
      assert.equal(await owed(s, a), 3);
    },
  },
  {
    name: "stamp skips ids that are gone",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const gone = await make(s, Widget, "gone");
      await s.objects.delete(gone.id);
      await s.reconcileOwed.stamp([gone, a, ref(Widget, 999)]);
      assert.equal(await owed(s, a), 1);
      assert.deepEqual(await s.reconcileOwed.listIds(Widget), [a.id]);
    },
  },
  {
    name: "stamp bumps no resource version and logs nothing; an empty stamp writes nothing",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const before = await s.objects.get(a.id);
      const rv = await s.getLatestResourceVersion();
      await s.reconcileOwed.stamp([]);
      assert.deepEqual(await s.objects.get(a.id), before);
      await s.reconcileOwed.stamp([a]);
      const after = await s.objects.get(a.id);
      assert.equal(after.reconcileOwed, 1);
      assert.equal(after.resourceVersion, before.resourceVersion);
      assert.deepEqual(after.updatedAt, before.updatedAt);
      assert.equal(await s.getLatestResourceVersion(), rv);
      assert.equal(await logCount(s, Widget), 1);
      await assert.rejects(s.reconcileOwed.stamp([ref(Widget, 0)]), TypeError);
      await assert.rejects(s.reconcileOwed.stamp(a as unknown as ObjectRef[]), TypeError);
      assert.equal(await owed(s, a), 1);
    },
  },
  {
    name: "decrement subtracts the observed count, so increments after the load survive",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.reconcileOwed.stamp([a]);
      await s.reconcileOwed.stamp([a]);
      // A pass loads 2; a wake lands mid-pass.
      await s.reconcileOwed.stamp([a]);
      const rv = await s.getLatestResourceVersion();
      await s.reconcileOwed.decrement(a, 2);
      assert.equal(await owed(s, a), 1);
      await s.reconcileOwed.decrement(a, 0);
      assert.equal(await owed(s, a), 1);
      assert.equal(await s.getLatestResourceVersion(), rv);
      assert.equal(await logCount(s, Widget), 1);
    },
  },
  {
    name: "decrement floors the count at 0",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.reconcileOwed.stamp([a]);
      await s.reconcileOwed.decrement(a, 5);
      assert.equal(await owed(s, a), 0);
      await s.reconcileOwed.decrement(a, 1);
      assert.equal(await owed(s, a), 0);
      await s.reconcileOwed.stamp([a]);
      assert.equal(await owed(s, a), 1);
    },
  },
  {
    name: "decrement is kind-scoped and tolerates a vanished row",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.reconcileOwed.stamp([a]);
      await assert.rejects(s.reconcileOwed.decrement(ref(Gadget, a.id), 1), WrongKindError);
      assert.equal(await owed(s, a), 1);
      await s.reconcileOwed.decrement(ref(Widget, 999), 1);
      const gone = await make(s, Widget, "gone");
      await s.reconcileOwed.stamp([gone]);
      await s.objects.delete(gone.id);
      await s.reconcileOwed.decrement(gone, 1);
      await assert.rejects(s.reconcileOwed.decrement(a, -1), TypeError);
      await assert.rejects(s.reconcileOwed.decrement(a, 1.5), TypeError);
      assert.equal(await owed(s, a), 1);
    },
  },
  {
    name: "listIds lists a kind's objects with a non-zero count, ascending",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Widget, "b");
      const c = await make(s, Widget, "c");
      const g = await make(s, Gadget, "g");
      assert.deepEqual(await s.reconcileOwed.listIds(Widget), []);
      await s.reconcileOwed.stamp([c, g, a]);
      assert.deepEqual(await s.reconcileOwed.listIds(Widget), [a.id, c.id]);
      assert.deepEqual(await s.reconcileOwed.listIds(Gadget), [g.id]);
      assert.deepEqual(await s.reconcileOwed.listIds(Core), []);
      await s.reconcileOwed.decrement(c, 1);
      assert.deepEqual(await s.reconcileOwed.listIds(Widget), [a.id]);
      // A settled object can still owe a pass.
      await s.objects.setObservedGeneration(a, 1);
      assert.deepEqual(await s.reconcileOwed.listIds(Widget), [a.id]);
      assert.equal(await owed(s, b), 0);
    },
  },
  {
    reopens: true,
    name: "an owed count survives a restart",
    async fn(h) {
      const path = h.tempPath("owed.db");
      const first = await h.openPath(path);
      const a = await make(first, Widget, "a");
      await first.reconcileOwed.stamp([a]);
      await first.reconcileOwed.stamp([a]);
      await first.close();
      const second = await h.openPath(path);
      assert.equal(await owed(second, a), 2);
      assert.deepEqual(await second.reconcileOwed.listIds(Widget), [a.id]);
    },
  },
  {
    name: "sweep zeroes the counts of kinds not kept and resolves to the rows cleared",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Widget, "b");
      const g = await make(s, Gadget, "g");
      const c = await make(s, Core, "c");
      await make(s, Gadget, "idle");
      await s.reconcileOwed.stamp([a, g, c]);
      await s.reconcileOwed.stamp([a, c]);
      const rows = await Promise.all([a, b, g, c].map((r) => s.objects.get(r.id)));
      const rv = await s.getLatestResourceVersion();
      assert.equal(await s.reconcileOwed.sweep([Widget, { group: "other", kind: "Thing" }]), 2);
      assert.equal(await owed(s, a), 2);
      assert.equal(await owed(s, g), 0);
      assert.equal(await owed(s, c), 0);
      assert.deepEqual(await s.reconcileOwed.listIds(Gadget), []);
      assert.deepEqual(await s.reconcileOwed.listIds(Core), []);
      assert.equal(await s.reconcileOwed.sweep([Widget]), 0);
      // No version, no log entry, no other column.
      assert.equal(await s.getLatestResourceVersion(), rv);
      const after = await Promise.all([a, b, g, c].map((r) => s.objects.get(r.id)));
      after.forEach((row, i) => {
        assert.deepEqual({ ...row, reconcileOwed: 0 }, { ...rows[i], reconcileOwed: 0 });
      });
      assert.equal(await logCount(s, Widget), 2);
      assert.equal(await logCount(s, Gadget), 2);
    },
  },
  {
    name: "sweep with an empty keep list clears every non-zero count",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const g = await make(s, Gadget, "g");
      const c = await make(s, Core, "c");
      await make(s, Widget, "idle");
      await s.reconcileOwed.stamp([a, g, c]);
      const rv = await s.getLatestResourceVersion();
      assert.equal(await s.reconcileOwed.sweep([]), 3);
      for (const r of [a, g, c]) assert.equal(await owed(s, r), 0);
      assert.equal(await s.reconcileOwed.sweep([]), 0);
      assert.equal(await s.getLatestResourceVersion(), rv);
    },
  },
];
