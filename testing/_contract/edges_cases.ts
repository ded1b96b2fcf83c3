/**
 * Store contract cases: edges.
 *
 * @module
 */
import assert from "node:assert/strict";
import { NotFoundError } from "../../src/model/errors.ts";
import type { GroupKind, ObjectId, ObjectRef, Relation, Store } from "../../src/store.ts";
import { type ContractCase, Core, Gadget, logCount, make, Widget } from "./harness.ts";

/** The ids of every stale dependent of `kinds`, one per (target, dependent) pair, in scan order. */
async function staleIds(s: Store, kinds: readonly GroupKind[] = [Widget]): Promise<ObjectId[]> {
  const page = await s.dependencies.listStaleSince(kinds, {
    after: { targetVersion: 0, targetId: 0, dependentId: 0 },
    through: await s.getLatestResourceVersion(),
    limit: 1_000,
  });
  return page.dependents.map((d) => d.id);
}

/** The owed count of `ref`. */
async function owed(s: Store, ref: ObjectRef): Promise<number> {
  return (await s.objects.get(ref.id)).reconcileOwed;
}

/** `from` depends on `to`, with `from`'s watermark at the latest version: `from` is not stale. */
async function settledDependent(s: Store, from: ObjectRef, to: ObjectRef): Promise<void> {
  await s.edges.add({ fromId: from.id, toId: to.id, relation: "depends_on" });
  await s.dependencies.watermarkSet(from.id, await s.getLatestResourceVersion());
  assert.deepEqual(await staleIds(s), []);
}

export const edgesCases: ContractCase[] = [
  {
    name: "add inserts the edge, and adding it again changes nothing",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Gadget, "b");
      const e = { fromId: a.id, toId: b.id, relation: "owned_by" as const };
      await s.edges.add(e);
      await s.edges.add(e);
      assert.deepEqual(await s.edges.listOutgoing(a.id, "owned_by"), [b]);
      assert.deepEqual(await s.edges.listIncoming({ toId: b.id, relation: "owned_by" }), [a]);
      assert.deepEqual(await s.edges.listOutgoing(a.id, "depends_on"), []);
      const d = { fromId: a.id, toId: b.id, relation: "depends_on" as const };
      await s.edges.add(d);
      await s.edges.add(d);
      assert.deepEqual(await s.edges.listOutgoing(a.id, "depends_on"), [b]);
      assert.deepEqual(await s.edges.listOutgoing(a.id, "owned_by"), [b]);
    },
  },
  {
    name: "add with a missing endpoint is NotFoundError and writes nothing",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await assert.rejects(
        s.edges.add({ fromId: a.id, toId: 999, relation: "depends_on" }),
        NotFoundError,
      );
      await assert.rejects(
        s.edges.add({ fromId: 999, toId: a.id, relation: "depends_on" }),
        NotFoundError,
      );
      await assert.rejects(
        s.edges.add({ fromId: 998, toId: 999, relation: "owned_by" }),
        NotFoundError,
      );
      assert.equal(await owed(s, a), 0);
      assert.deepEqual(await s.edges.listOutgoing(a.id, "depends_on"), []);
      assert.deepEqual(await s.edges.listIncoming({ toId: a.id, relation: "depends_on" }), []);
      assert.equal(await s.edges.hasIncoming(a.id), false);
    },
  },
  {
    name: "add reports the target's kind and whether it is deletion-pending",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Gadget, "b", {}, ["f"]);
      const c = await make(s, Core, "c");
      const r1 = await s.edges.add({ fromId: a.id, toId: b.id, relation: "owned_by" });
      assert.deepEqual(r1.to, Gadget);
      assert.equal(r1.toDeleting, false);
      assert.equal(r1.reconcileOwedStamped, false);
      await s.deletionRequests.create(b);
      const r2 = await s.edges.add({ fromId: a.id, toId: b.id, relation: "depends_on" });
      assert.deepEqual(r2.to, Gadget);
      assert.equal(r2.toDeleting, true);
      const r3 = await s.edges.add({ fromId: a.id, toId: c.id, relation: "depends_on" });
      assert.deepEqual(r3.to, { group: "", kind: "Thing" });
      assert.equal(r3.toDeleting, false);
    },
  },
  {
    name: "add bumps no resource version and logs no write",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Widget, "b");
      const rv = await s.getLatestResourceVersion();
      const rowA = (await s.objects.get(a.id)).resourceVersion;
      const rowB = (await s.objects.get(b.id)).resourceVersion;
      await s.edges.add({ fromId: a.id, toId: b.id, relation: "depends_on" });
      await s.edges.add({ fromId: a.id, toId: b.id, relation: "owned_by" });
      await s.edges.add({ fromId: a.id, toId: a.id, relation: "depends_on" });
      assert.equal(await s.getLatestResourceVersion(), rv);
      assert.equal((await s.objects.get(a.id)).resourceVersion, rowA);
      assert.equal((await s.objects.get(b.id)).resourceVersion, rowB);
      assert.equal(await logCount(s, Widget), 2);
    },
  },
  {
    name: "a new depends_on edge stamps the source once and clears its watermark",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Gadget, "b");
      const c = await make(s, Gadget, "c");
      const r1 = await s.edges.add({ fromId: a.id, toId: b.id, relation: "depends_on" });
      assert.equal(r1.reconcileOwedStamped, true);
      assert.equal(await owed(s, a), 1);
      await s.dependencies.watermarkSet(a.id, await s.getLatestResourceVersion());
      assert.deepEqual(await staleIds(s), []);
      const r2 = await s.edges.add({ fromId: a.id, toId: c.id, relation: "depends_on" });
      assert.equal(r2.reconcileOwedStamped, true);
      assert.equal(await owed(s, a), 2);
      // The target is never stamped.
      assert.equal(await owed(s, b), 0);
      assert.equal(await owed(s, c), 0);
      // The watermark is gone: a is stale against both targets again.
      assert.deepEqual(await staleIds(s), [a.id, a.id]);
    },
  },
  {
    name: "re-declaring, owned_by and self-edges stamp nothing and keep the watermark",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Gadget, "b");
      await settledDependent(s, a, b);
      assert.equal(await owed(s, a), 1);
      const again = await s.edges.add({ fromId: a.id, toId: b.id, relation: "depends_on" });
      const owner = await s.edges.add({ fromId: a.id, toId: b.id, relation: "owned_by" });
      const self = await s.edges.add({ fromId: a.id, toId: a.id, relation: "depends_on" });
      assert.equal(again.reconcileOwedStamped, false);
      assert.equal(owner.reconcileOwedStamped, false);
      assert.equal(self.reconcileOwedStamped, false);
      assert.equal(await owed(s, a), 1);
      assert.deepEqual(await staleIds(s), []);
    },
  },
  {
    name: "the stamp and the edge are atomic: a rolled-back add leaves neither",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Gadget, "b");
      const c = await make(s, Gadget, "c");
      await settledDependent(s, a, b);
      const boom = new Error("boom");
      await assert.rejects(
        s.within(async (tx) => {
          const r = await tx.edges.add({ fromId: a.id, toId: c.id, relation: "depends_on" });
          assert.equal(r.reconcileOwedStamped, true);
          assert.equal(await owed(tx, a), 2);
          throw boom;
        }),
        (e) => e === boom,
      );
      assert.deepEqual(await s.edges.listOutgoing(a.id, "depends_on"), [b]);
      assert.equal(await owed(s, a), 1);
      // The watermark the rolled-back add cleared is back.
      assert.deepEqual(await staleIds(s), []);
    },
  },
  {
    name: "delete removes the edge; a missing edge is a no-op",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Widget, "b");
      await s.edges.add({ fromId: a.id, toId: b.id, relation: "owned_by" });
      await s.edges.add({ fromId: a.id, toId: b.id, relation: "depends_on" });
      const rv = await s.getLatestResourceVersion();
      const r = await s.edges.delete({ fromId: a.id, toId: b.id, relation: "owned_by" });
      assert.deepEqual(r, { to: undefined, unblocked: false });
      assert.deepEqual(await s.edges.listOutgoing(a.id, "owned_by"), []);
      // The other relation on the same pair stays.
      assert.deepEqual(await s.edges.listOutgoing(a.id, "depends_on"), [b]);
      const again = await s.edges.delete({ fromId: a.id, toId: b.id, relation: "owned_by" });
      assert.deepEqual(again, { to: undefined, unblocked: false });
      assert.deepEqual(
        await s.edges.delete({ fromId: 998, toId: 999, relation: "depends_on" }),
        { to: undefined, unblocked: false },
      );
      assert.equal(await s.getLatestResourceVersion(), rv);
      assert.equal(await logCount(s, Widget), 2);
    },
  },
  {
    name: "delete reports unblocked for a depends_on edge from a live source to a pending target",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const t = await make(s, Gadget, "t", {}, ["f"]);
      await s.edges.add({ fromId: a.id, toId: t.id, relation: "depends_on" });
      await s.deletionRequests.create(t);
      const r = await s.edges.delete({ fromId: a.id, toId: t.id, relation: "depends_on" });
      assert.deepEqual(r, { to: Gadget, unblocked: true });
    },
  },
  {
    name:
      "delete does not report unblocked for owned_by, a pending source, a live target or no edge",
    async fn(h) {
      const s = await h.open();
      const live = await make(s, Widget, "live");
      const gone = await make(s, Widget, "gone", {}, ["f"]);
      const t = await make(s, Gadget, "t", {}, ["f"]);
      const u = await make(s, Gadget, "u");
      await s.edges.add({ fromId: live.id, toId: t.id, relation: "owned_by" });
      await s.edges.add({ fromId: gone.id, toId: t.id, relation: "depends_on" });
      await s.edges.add({ fromId: live.id, toId: u.id, relation: "depends_on" });
      await s.deletionRequests.create(t);
      await s.deletionRequests.create(gone);
      const none = { to: undefined, unblocked: false };
      assert.deepEqual(
        await s.edges.delete({ fromId: live.id, toId: t.id, relation: "owned_by" }),
        none,
      );
      assert.deepEqual(
        await s.edges.delete({ fromId: gone.id, toId: t.id, relation: "depends_on" }),
        none,
      );
      assert.deepEqual(
        await s.edges.delete({ fromId: live.id, toId: u.id, relation: "depends_on" }),
        none,
      );
      assert.deepEqual(
        await s.edges.delete({ fromId: live.id, toId: t.id, relation: "depends_on" }),
        none,
      );
      assert.deepEqual(await s.edges.listIncoming({ toId: t.id, relation: "depends_on" }), []);
      assert.deepEqual(await s.edges.listIncoming({ toId: t.id, relation: "owned_by" }), []);
    },
  },
  {
    name: "delete joins a transaction and rolls back with it",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const t = await make(s, Gadget, "t", {}, ["f"]);
      await s.edges.add({ fromId: a.id, toId: t.id, relation: "depends_on" });
      await s.deletionRequests.create(t);
      const boom = new Error("boom");
      await assert.rejects(
        s.within(async (tx) => {
          const r = await tx.edges.delete({ fromId: a.id, toId: t.id, relation: "depends_on" });
          assert.equal(r.unblocked, true);
          assert.deepEqual(await tx.edges.listOutgoing(a.id, "depends_on"), []);
          assert.equal(await tx.edges.hasIncoming(t.id), false);
          throw boom;
        }),
        (e) => e === boom,
      );
      assert.deepEqual(await s.edges.listOutgoing(a.id, "depends_on"), [t]);
      assert.equal(await s.edges.hasIncoming(t.id), true);
    },
  },
  {
    name: "hasIncoming counts owned children and live dependents, not pending dependents",
    async fn(h) {
      const s = await h.open();
      const t = await make(s, Gadget, "t");
      assert.equal(await s.edges.hasIncoming(t.id), false);
      const dep = await make(s, Widget, "dep", {}, ["f"]);
      await s.edges.add({ fromId: dep.id, toId: t.id, relation: "depends_on" });
      assert.equal(await s.edges.hasIncoming(t.id), true);
      await s.deletionRequests.create(dep);
      assert.equal(await s.edges.hasIncoming(t.id), false);
      const child = await make(s, Widget, "child", {}, ["f"]);
      await s.edges.add({ fromId: child.id, toId: t.id, relation: "owned_by" });
      assert.equal(await s.edges.hasIncoming(t.id), true);
      // An owned child that is itself deleting still blocks.
      await s.deletionRequests.create(child);
      assert.equal(await s.edges.hasIncoming(t.id), true);
      // Outgoing edges are not incoming ones.
      assert.equal(await s.edges.hasIncoming(dep.id), false);
      assert.equal(await s.edges.hasIncoming(999), false);
    },
  },
  {
    name: "deleteFinalizingDependsOn drops only depends_on edges from deleting sources",
    async fn(h) {
      const s = await h.open();
      const t = await make(s, Gadget, "t");
      const other = await make(s, Gadget, "other");
      const pending = await make(s, Widget, "pending", {}, ["f"]);
      const live = await make(s, Widget, "live");
      const child = await make(s, Widget, "child", {}, ["f"]);
      await s.edges.add({ fromId: pending.id, toId: t.id, relation: "depends_on" });
      await s.edges.add({ fromId: pending.id, toId: other.id, relation: "depends_on" });
      await s.edges.add({ fromId: live.id, toId: t.id, relation: "depends_on" });
      await s.edges.add({ fromId: child.id, toId: t.id, relation: "owned_by" });
      await s.deletionRequests.create(pending);
      await s.deletionRequests.create(child);
      const rv = await s.getLatestResourceVersion();
      await s.edges.deleteFinalizingDependsOn(t.id);
      assert.deepEqual(await s.edges.listIncoming({ toId: t.id, relation: "depends_on" }), [live]);
      assert.deepEqual(await s.edges.listIncoming({ toId: t.id, relation: "owned_by" }), [child]);
      // Only edges into the named target go.
      assert.deepEqual(await s.edges.listOutgoing(pending.id, "depends_on"), [other]);
      assert.equal(await s.getLatestResourceVersion(), rv);
      await s.edges.deleteFinalizingDependsOn(999);
    },
  },
  {
    name:
      "listIncoming and listOutgoing are ordered by id, relation-filtered, and empty not an error",
    async fn(h) {
      const s = await h.open();
      const hub = await make(s, Widget, "hub");
      const x = await make(s, Gadget, "x");
      const y = await make(s, Widget, "y");
      const z = await make(s, Core, "z");
      for (const n of [z, x, y]) {
        await s.edges.add({ fromId: n.id, toId: hub.id, relation: "depends_on" });
        await s.edges.add({ fromId: hub.id, toId: n.id, relation: "depends_on" });
      }
      await s.edges.add({ fromId: y.id, toId: hub.id, relation: "owned_by" });
      assert.deepEqual(await s.edges.listIncoming({ toId: hub.id, relation: "depends_on" }), [
        x,
        y,
        z,
      ]);
      assert.deepEqual(await s.edges.listOutgoing(hub.id, "depends_on"), [x, y, z]);
      assert.deepEqual(await s.edges.listIncoming({ toId: hub.id, relation: "owned_by" }), [y]);
      assert.deepEqual(await s.edges.listOutgoing(hub.id, "owned_by"), []);
      assert.deepEqual(await s.edges.listIncoming({ toId: 999, relation: "owned_by" }), []);
      assert.deepEqual(await s.edges.listOutgoing(999, "depends_on"), []);
    },
  },
  {
    name: "groupIncomingByIds and groupOutgoingByIds group by id and leave empty ids absent",
    async fn(h) {
      const s = await h.open();
      const t1 = await make(s, Gadget, "t1");
      const t2 = await make(s, Gadget, "t2");
      const lonely = await make(s, Gadget, "lonely");
      const a = await make(s, Widget, "a");
      const b = await make(s, Core, "b");
      await s.edges.add({ fromId: b.id, toId: t1.id, relation: "depends_on" });
      await s.edges.add({ fromId: a.id, toId: t1.id, relation: "depends_on" });
      await s.edges.add({ fromId: a.id, toId: t2.id, relation: "depends_on" });
      await s.edges.add({ fromId: b.id, toId: t2.id, relation: "owned_by" });
      const inc = await s.edges.groupIncomingByIds(
        [t2.id, t1.id, lonely.id, 999],
        "depends_on",
      );
      assert.deepEqual(
        new Map([...inc].sort(([x], [y]) => x - y)),
        new Map([[t1.id, [a, b]], [t2.id, [a]]]),
      );
      const out = await s.edges.groupOutgoingByIds([a.id, b.id, lonely.id], "depends_on");
      assert.deepEqual(
        new Map([...out].sort(([x], [y]) => x - y)),
        new Map([[a.id, [t1, t2]], [b.id, [t1]]]),
      );
      const owned = await s.edges.groupIncomingByIds([t1.id, t2.id], "owned_by");
      assert.deepEqual(owned, new Map([[t2.id, [b]]]));
      assert.deepEqual(await s.edges.groupIncomingByIds([], "owned_by"), new Map());
      assert.deepEqual(await s.edges.groupOutgoingByIds([], "depends_on"), new Map());
    },
  },
  {
    name: "the grouped listings handle an id list larger than one statement's chunk",
    async fn(h) {
      const s = await h.open();
      const t1 = await make(s, Gadget, "t1");
      const t2 = await make(s, Gadget, "t2");
      const a = await make(s, Widget, "a");
      const b = await make(s, Widget, "b");
      await s.edges.add({ fromId: a.id, toId: t1.id, relation: "depends_on" });
      await s.edges.add({ fromId: b.id, toId: t1.id, relation: "depends_on" });
      await s.edges.add({ fromId: b.id, toId: t2.id, relation: "depends_on" });
      const filler = Array.from({ length: 40_000 }, (_, i) => 1_000_000 + i);
      // t1 leads the list, t2 trails it: the two land in different chunks. t1 is
      // named again at the end, and is still reported once.
      const toIds = [t1.id, ...filler, t2.id, t1.id];
      const inc = await s.edges.groupIncomingByIds(toIds, "depends_on");
      assert.equal(inc.size, 2);
      assert.deepEqual(inc.get(t1.id), [a, b]);
      assert.deepEqual(inc.get(t2.id), [b]);
      const fromIds = [a.id, ...filler, b.id, a.id];
      const out = await s.edges.groupOutgoingByIds(fromIds, "depends_on");
      assert.equal(out.size, 2);
      assert.deepEqual(out.get(a.id), [t1]);
      assert.deepEqual(out.get(b.id), [t1, t2]);
    },
  },
  {
    name: "a bad relation or id is a TypeError",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Widget, "b");
      const bad = "parent_of" as Relation;
      await assert.rejects(s.edges.add({ fromId: a.id, toId: b.id, relation: bad }), TypeError);
      await assert.rejects(
        s.edges.add({ fromId: 0, toId: b.id, relation: "owned_by" }),
        TypeError,
      );
      await assert.rejects(
        s.edges.add({ fromId: a.id, toId: 1.5, relation: "owned_by" }),
        TypeError,
      );
      await assert.rejects(
        s.edges.add(undefined as unknown as { fromId: number; toId: number; relation: Relation }),
        TypeError,
      );
      await assert.rejects(s.edges.delete({ fromId: a.id, toId: b.id, relation: bad }), TypeError);
      await assert.rejects(
        s.edges.delete({ fromId: a.id, toId: -1, relation: "owned_by" }),
        TypeError,
      );
      await assert.rejects(s.edges.deleteFinalizingDependsOn(0), TypeError);
      await assert.rejects(s.edges.hasIncoming("1" as unknown as number), TypeError);
      await assert.rejects(s.edges.listIncoming({ toId: a.id, relation: bad }), TypeError);
      await assert.rejects(s.edges.listIncoming({ toId: 0, relation: "owned_by" }), TypeError);
      await assert.rejects(s.edges.listOutgoing(a.id, bad), TypeError);
      await assert.rejects(s.edges.listOutgoing(Number.NaN, "owned_by"), TypeError);
      await assert.rejects(s.edges.groupIncomingByIds([a.id], bad), TypeError);
      await assert.rejects(s.edges.groupIncomingByIds([a.id, 0], "owned_by"), TypeError);
      await assert.rejects(s.edges.groupOutgoingByIds([a.id], bad), TypeError);
      await assert.rejects(
        s.edges.groupOutgoingByIds("1" as unknown as number[], "owned_by"),
        TypeError,
      );
      assert.deepEqual(await s.edges.listOutgoing(a.id, "owned_by"), []);
      assert.equal(await owed(s, a), 0);
    },
  },
];
