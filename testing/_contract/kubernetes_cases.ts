/**
 * Store contract cases: what issue 15 added to the port — `resourceVersion`
 * preconditions on spec writes and deletion marks, paged listings, and
 * `objects.addFinalizer`.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  ConflictError,
  DeletionPendingError,
  InvalidOptionError,
  NotFoundError,
  WrongKindError,
} from "../../src/model/errors.ts";
import { type ContractCase, footprint, Gadget, logCount, make, Widget } from "./harness.ts";

function conflictAt(rv: number) {
  return (e: unknown) => e instanceof ConflictError && e.resourceVersion === rv;
}

export const kubernetesCases: ContractCase[] = [
  {
    name:
      "updateSpec with the row's resourceVersion writes; a stale one is ConflictError carrying the row's",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a", { n: 1 });
      const rv0 = (await s.objects.get(a.id)).resourceVersion;
      const r = await s.objects.updateSpec(a, { spec: '{"n":2}', resourceVersion: rv0 });
      assert.equal(r.changed, true);
      const rv1 = r.object.resourceVersion;
      const before = await footprint(s, a);
      await assert.rejects(
        s.objects.updateSpec(a, { spec: '{"n":3}', resourceVersion: rv0 }),
        conflictAt(rv1),
      );
      // A stale precondition conflicts even where the write would be a no-op.
      await assert.rejects(
        s.objects.updateSpec(a, { spec: '{"n":2}', resourceVersion: rv0 }),
        conflictAt(rv1),
      );
      await assert.rejects(
        s.objects.updateSpecByName({ ...Widget, name: "a" }, { spec: "{}", resourceVersion: rv0 }),
        conflictAt(rv1),
      );
      assert.deepEqual(await footprint(s, a), before);
      const byName = await s.objects.updateSpecByName({ ...Widget, name: "a" }, {
        spec: '{"n":4}',
        resourceVersion: rv1,
      });
      assert.equal(byName.changed, true);
    },
  },
  {
    name:
      "updateSpec checks NotFound and WrongKind before the precondition, and it before DeletionPending",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a", {}, ["f"]);
      const g = await make(s, Gadget, "g");
      await assert.rejects(
        s.objects.updateSpec({ ...Widget, id: 9_999 }, { spec: "{}", resourceVersion: 1 }),
        NotFoundError,
      );
      await assert.rejects(
        s.objects.updateSpec({ ...Widget, id: g.id }, { spec: "{}", resourceVersion: 1 }),
        WrongKindError,
      );
      await s.deletionRequests.create(a);
      const rv = (await s.objects.get(a.id)).resourceVersion;
      await assert.rejects(
        s.objects.updateSpec(a, { spec: "{}", resourceVersion: rv - 1 }),
        ConflictError,
      );
      await assert.rejects(
        s.objects.updateSpec(a, { spec: "{}", resourceVersion: rv }),
        DeletionPendingError,
      );
    },
  },
  {
    name: "a malformed resourceVersion precondition is a TypeError",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      for (const bad of [0, -1, 1.5, NaN, "1", null]) {
        await assert.rejects(
          s.objects.updateSpec(a, { spec: "{}", resourceVersion: bad as number }),
          TypeError,
        );
        await assert.rejects(
          s.deletionRequests.create(a, { resourceVersion: bad as number }),
          TypeError,
        );
      }
    },
  },
  {
    name: "deletionRequests.create with a stale resourceVersion is ConflictError and marks nothing",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const rv0 = (await s.objects.get(a.id)).resourceVersion;
      await s.objects.updateSpec(a, { spec: '{"n":1}' });
      const before = await footprint(s, a);
      await assert.rejects(
        s.deletionRequests.create(a, { resourceVersion: rv0 }),
        conflictAt(before.object.resourceVersion),
      );
      assert.deepEqual(await footprint(s, a), before);
      const r = await s.deletionRequests.create(a, {
        resourceVersion: before.object.resourceVersion,
      });
      assert.equal(r.marked, true);
    },
  },
  {
    name: "of racing spec writes holding one resourceVersion, exactly one commits",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const rv = (await s.objects.get(a.id)).resourceVersion;
      const results = await Promise.allSettled(
        Array.from(
          { length: 6 },
          (_, i) => s.objects.updateSpec(a, { spec: `{"n":${i}}`, resourceVersion: rv }),
        ),
      );
      assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
      for (const r of results) {
        if (r.status === "rejected") assert.ok(r.reason instanceof ConflictError);
      }
      assert.equal((await s.objects.get(a.id)).generation, 2);
    },
  },
  {
    name: "list pages a kind in id order: ids above after, at most limit",
    async fn(h) {
      const s = await h.open();
      const ids: number[] = [];
      for (let i = 0; i < 5; i++) {
        ids.push((await make(s, Widget, `w${i}`)).id);
        await make(s, Gadget, `g${i}`);
      }
      await s.conditions.set({ ...Widget, id: ids[3] }, [{ type: "Ready", status: "True" }]);
      const page = await s.objects.list(Widget, { after: ids[1], limit: 2 });
      assert.deepEqual(page.map((o) => o.id), [ids[2], ids[3]]);
      assert.equal(page[1].conditions[0].type, "Ready");
      assert.deepEqual((await s.objects.list(Widget, { limit: 1 })).map((o) => o.id), [ids[0]]);
      assert.deepEqual(await s.objects.list(Widget, { after: ids[4] }), []);
      assert.deepEqual((await s.objects.list(Widget, {})).map((o) => o.id), ids);
      for (const bad of [{ limit: 0 }, { limit: 1.5 }, { after: -1 }, { after: "1" }, 5]) {
        await assert.rejects(s.objects.list(Widget, bad as never), TypeError);
      }
    },
  },
  {
    name: "listByIncomingEdge pages the sources of one target",
    async fn(h) {
      const s = await h.open();
      const owner = await make(s, Gadget, "owner");
      const ids: number[] = [];
      for (let i = 0; i < 4; i++) {
        const c = await make(s, Widget, `c${i}`);
        await s.edges.add({ fromId: c.id, toId: owner.id, relation: "owned_by" });
        ids.push(c.id);
      }
      const edge = { toId: owner.id, relation: "owned_by" } as const;
      const page = await s.objects.listByIncomingEdge(Widget, edge, { after: ids[0], limit: 2 });
      assert.deepEqual(page.map((o) => o.id), ids.slice(1, 3));
      assert.deepEqual((await s.objects.listByIncomingEdge(Widget, edge)).map((o) => o.id), ids);
    },
  },
  {
    name: "addFinalizer appends once, bumping the resource version and logging one update",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a", {}, ["f/one"]);
      const before = await s.objects.get(a.id);
      const logBefore = await logCount(s, Widget);
      assert.equal(await s.objects.addFinalizer(a, "f/two"), true);
      const after = await s.objects.get(a.id);
      assert.deepEqual(after.finalizers, ["f/one", "f/two"]);
      assert.ok(after.resourceVersion > before.resourceVersion);
      assert.equal(after.generation, before.generation);
      assert.equal(await logCount(s, Widget), logBefore + 1);
      const snapshot = await footprint(s, a);
      assert.equal(await s.objects.addFinalizer(a, "f/two"), false);
      assert.equal(await s.objects.addFinalizer(a, "f/one"), false);
      assert.deepEqual(await footprint(s, a), snapshot);
    },
  },
  {
    name: "addFinalizer refuses a deletion-pending row, another kind, a missing id and a bad name",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a", {}, ["f"]);
      const g = await make(s, Gadget, "g");
      await s.deletionRequests.create(a);
      const before = await footprint(s, a);
      await assert.rejects(s.objects.addFinalizer(a, "f2"), DeletionPendingError);
      await assert.rejects(s.objects.addFinalizer(a, "f"), DeletionPendingError);
      await assert.rejects(s.objects.addFinalizer({ ...Widget, id: g.id }, "f"), WrongKindError);
      await assert.rejects(s.objects.addFinalizer({ ...Widget, id: 9_999 }, "f"), NotFoundError);
      for (const bad of ["", "a\u0000", "\ud800", 5]) {
        await assert.rejects(s.objects.addFinalizer(g, bad as string), InvalidOptionError);
      }
      assert.deepEqual(await footprint(s, a), before);
      assert.deepEqual((await s.objects.get(g.id)).finalizers, []);
    },
  },
];
