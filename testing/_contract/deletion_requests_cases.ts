/**
 * Store contract cases: deletion requests.
 *
 * @module
 */
import assert from "node:assert/strict";
import { InvalidNameError, NotFoundError, WrongKindError } from "../../src/model/errors.ts";
import type { GroupKind, ObjectRef, ObjectWrite, Store } from "../../src/store.ts";
import { type ContractCase, Core, Gadget, logCount, make, ref, Widget } from "./harness.ts";

/** Every write-log entry of `gk`. */
async function writes(s: Store, gk: GroupKind): Promise<ObjectWrite[]> {
  return (await s.objectWrites.listSince(gk, { after: 0, limit: 1_000 })).writes;
}

const UNMARKED = { id: undefined, marked: false, unblocked: [] };

export const deletionRequestsCases: ContractCase[] = [
  {
    name: "create sets deletionRequestedAt, bumps the resource version once and logs one update",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a", {}, ["f"]);
      const before = await s.objects.get(a.id);
      assert.equal(before.deletionRequestedAt, undefined);
      const r = await s.deletionRequests.create(a);
      assert.deepEqual(r, { id: a.id, marked: true, unblocked: [] });
      const after = await s.objects.get(a.id);
      assert.ok(after.deletionRequestedAt instanceof Date);
      assert.deepEqual(after.updatedAt, after.deletionRequestedAt);
      assert.ok(after.resourceVersion > before.resourceVersion);
      assert.equal(await s.getLatestResourceVersion(), after.resourceVersion);
      const log = await writes(s, Widget);
      assert.equal(log.length, 2);
      assert.equal(log[1].op, "update");
      assert.equal(log[1].id, a.id);
      assert.equal(log[1].resourceVersion, after.resourceVersion);
      // Everything else about the row is untouched.
      assert.equal(after.generation, before.generation);
      assert.equal(after.spec, before.spec);
      assert.deepEqual(after.finalizers, ["f"]);
    },
  },
  {
    name: "a repeated create reports marked false and writes nothing",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.deletionRequests.create(a);
      const first = await s.objects.get(a.id);
      const rv = await s.getLatestResourceVersion();
      assert.deepEqual(await s.deletionRequests.create(a), UNMARKED);
      assert.deepEqual(await s.objects.get(a.id), first);
      assert.equal(await s.getLatestResourceVersion(), rv);
      assert.equal(await logCount(s, Widget), 2);
    },
  },
  {
    name: "of several concurrent creates on one row, exactly one reports that it marked",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const results = await Promise.all([
        s.deletionRequests.create(a),
        s.deletionRequests.createByName({ ...Widget, name: "a" }),
        s.deletionRequests.create(a),
      ]);
      assert.equal(results.filter((r) => r.marked).length, 1);
      assert.equal(await logCount(s, Widget), 2);
    },
  },
  {
    name: "create is kind-scoped: WrongKindError for a foreign kind, NotFoundError for none",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const rv = await s.getLatestResourceVersion();
      await assert.rejects(s.deletionRequests.create(ref(Gadget, a.id)), WrongKindError);
      await assert.rejects(s.deletionRequests.create(ref(Widget, 999)), NotFoundError);
      assert.equal((await s.objects.get(a.id)).deletionRequestedAt, undefined);
      assert.equal(await s.getLatestResourceVersion(), rv);
      assert.deepEqual(await s.deletionRequests.list(), []);
      await assert.rejects(s.deletionRequests.create(ref(Widget, 0)), TypeError);
    },
  },
  {
    name: "createByName marks by name and returns the id only when it marked",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const rv = await s.getLatestResourceVersion();
      const r = await s.deletionRequests.createByName({ ...Widget, name: "a" });
      assert.deepEqual(r, { id: a.id, marked: true, unblocked: [] });
      const row = await s.objects.get(a.id);
      assert.ok(row.deletionRequestedAt instanceof Date);
      assert.ok(row.resourceVersion > rv);
      assert.equal(await logCount(s, Widget), 2);
      assert.deepEqual(await s.deletionRequests.createByName({ ...Widget, name: "a" }), UNMARKED);
      assert.deepEqual(await s.objects.get(a.id), row);
      assert.equal(await logCount(s, Widget), 2);
    },
  },
  {
    name:
      "createByName is kind-scoped: a foreign kind's name is NotFoundError, never WrongKindError",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await assert.rejects(
        s.deletionRequests.createByName({ ...Gadget, name: "a" }),
        (e) => e instanceof NotFoundError && !(e instanceof WrongKindError),
      );
      await assert.rejects(
        s.deletionRequests.createByName({ ...Widget, name: "nope" }),
        NotFoundError,
      );
      await assert.rejects(
        s.deletionRequests.createByName({ ...Widget, name: "" }),
        InvalidNameError,
      );
      assert.equal((await s.objects.get(a.id)).deletionRequestedAt, undefined);
      assert.equal(await logCount(s, Widget), 1);
    },
  },
  {
    name: "a mark reports the deletion-pending depends_on targets it unblocked, never itself",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const t1 = await make(s, Gadget, "t1", {}, ["f"]);
      const t2 = await make(s, Core, "t2", {}, ["f"]);
      const live = await make(s, Gadget, "live");
      const owner = await make(s, Gadget, "owner", {}, ["f"]);
      await s.deletionRequests.create(t2);
      await s.deletionRequests.create(t1);
      await s.deletionRequests.create(owner);
      await s.edges.add({ fromId: a.id, toId: t2.id, relation: "depends_on" });
      await s.edges.add({ fromId: a.id, toId: t1.id, relation: "depends_on" });
      await s.edges.add({ fromId: a.id, toId: live.id, relation: "depends_on" });
      await s.edges.add({ fromId: a.id, toId: owner.id, relation: "owned_by" });
      await s.edges.add({ fromId: a.id, toId: a.id, relation: "depends_on" });
      const r = await s.deletionRequests.create(a);
      assert.equal(r.marked, true);
      assert.deepEqual(r.unblocked, [t1, t2]);
      // A repeat unblocks nothing.
      assert.deepEqual(await s.deletionRequests.create(a), UNMARKED);
    },
  },
  {
    name: "createByName reports unblocked targets too",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const t = await make(s, Gadget, "t", {}, ["f"]);
      await s.edges.add({ fromId: a.id, toId: t.id, relation: "depends_on" });
      await s.deletionRequests.create(t);
      const r = await s.deletionRequests.createByName({ ...Widget, name: "a" });
      assert.deepEqual(r, { id: a.id, marked: true, unblocked: [t] });
    },
  },
  {
    name: "createFromOwner marks every owned child across kinds and returns them in id order",
    async fn(h) {
      const s = await h.open();
      const owner = await make(s, Core, "owner");
      const c1 = await make(s, Widget, "c1");
      const c2 = await make(s, Gadget, "c2");
      const c3 = await make(s, Widget, "c3");
      const dependent = await make(s, Widget, "dependent");
      const stranger = await make(s, Widget, "stranger");
      for (const c of [c3, c1, c2]) {
        await s.edges.add({ fromId: c.id, toId: owner.id, relation: "owned_by" });
      }
      await s.edges.add({ fromId: dependent.id, toId: owner.id, relation: "depends_on" });
      const rv = await s.getLatestResourceVersion();
      const r = await s.deletionRequests.createFromOwner(owner.id);
      assert.deepEqual(r.children, [
        { ref: c1, marked: true },
        { ref: c2, marked: true },
        { ref: c3, marked: true },
      ]);
      assert.deepEqual(r.unblocked, []);
      const rows = await Promise.all([c1, c2, c3].map((c) => s.objects.get(c.id)));
      for (const row of rows) assert.ok(row.deletionRequestedAt instanceof Date);
      // Each child its own version, consecutive in cascade order.
      assert.ok(rows[0].resourceVersion > rv);
      assert.equal(rows[1].resourceVersion, rows[0].resourceVersion + 1);
      assert.equal(rows[2].resourceVersion, rows[1].resourceVersion + 1);
      assert.equal(await s.getLatestResourceVersion(), rows[2].resourceVersion);
      // One update entry per child, at the child's version.
      const logged = [...await writes(s, Widget), ...await writes(s, Gadget)]
        .filter((w) => w.resourceVersion > rv)
        .sort((x, y) => x.resourceVersion - y.resourceVersion)
        .map((w) => [w.id, w.op, w.resourceVersion]);
      assert.deepEqual(logged, rows.map((row) => [row.id, "update", row.resourceVersion]));
      // Neither the owner, a dependent nor a stranger is marked.
      for (const o of [owner, dependent, stranger]) {
        assert.equal((await s.objects.get(o.id)).deletionRequestedAt, undefined);
      }
    },
  },
  {
    name: "a large cascade gives every child its own consecutive version",
    async fn(h) {
      const s = await h.open();
      const owner = await make(s, Gadget, "owner");
      const kids: ObjectRef[] = [];
      for (let i = 0; i < 300; i++) {
        const c = await make(s, i % 2 === 0 ? Widget : Core, `c${i}`);
        await s.edges.add({ fromId: c.id, toId: owner.id, relation: "owned_by" });
        kids.push(c);
      }
      const r = await s.deletionRequests.createFromOwner(owner.id);
      assert.deepEqual(r.children.map((c) => c.ref), kids);
      assert.ok(r.children.every((c) => c.marked));
      const versions = await Promise.all(
        kids.map(async (c) => (await s.objects.get(c.id)).resourceVersion),
      );
      versions.forEach((v, i) => assert.equal(v, versions[0] + i));
      assert.equal(await s.getLatestResourceVersion(), versions[299]);
    },
  },
  {
    name: "a re-cascade writes nothing but still returns every child",
    async fn(h) {
      const s = await h.open();
      const owner = await make(s, Gadget, "owner");
      const c1 = await make(s, Widget, "c1");
      const c2 = await make(s, Widget, "c2");
      for (const c of [c1, c2]) {
        await s.edges.add({ fromId: c.id, toId: owner.id, relation: "owned_by" });
      }
      await s.deletionRequests.createFromOwner(owner.id);
      const rows = await Promise.all([c1, c2].map((c) => s.objects.get(c.id)));
      const rv = await s.getLatestResourceVersion();
      const r = await s.deletionRequests.createFromOwner(owner.id);
      assert.deepEqual(r, {
        children: [{ ref: c1, marked: false }, { ref: c2, marked: false }],
        unblocked: [],
      });
      assert.equal(await s.getLatestResourceVersion(), rv);
      assert.deepEqual(await Promise.all([c1, c2].map((c) => s.objects.get(c.id))), rows);
      assert.equal(await logCount(s, Widget), 4);
    },
  },
  {
    name: "createFromOwner marks only the children not already pending",
    async fn(h) {
      const s = await h.open();
      const owner = await make(s, Gadget, "owner");
      const c1 = await make(s, Widget, "c1");
      const c2 = await make(s, Widget, "c2");
      const c3 = await make(s, Widget, "c3");
      for (const c of [c1, c2, c3]) {
        await s.edges.add({ fromId: c.id, toId: owner.id, relation: "owned_by" });
      }
      await s.deletionRequests.create(c2);
      const pending = await s.objects.get(c2.id);
      const rv = await s.getLatestResourceVersion();
      const r = await s.deletionRequests.createFromOwner(owner.id);
      assert.deepEqual(r.children, [
        { ref: c1, marked: true },
        { ref: c2, marked: false },
        { ref: c3, marked: true },
      ]);
      assert.deepEqual(await s.objects.get(c2.id), pending);
      const v1 = (await s.objects.get(c1.id)).resourceVersion;
      const v3 = (await s.objects.get(c3.id)).resourceVersion;
      assert.ok(rv < v1 && v1 < v3);
      assert.equal(await logCount(s, Widget), 3 + 1 + 2);
    },
  },
  {
    name: "createFromOwner with no children returns nothing and draws no version",
    async fn(h) {
      const s = await h.open();
      const owner = await make(s, Gadget, "owner");
      const dep = await make(s, Widget, "dep");
      await s.edges.add({ fromId: dep.id, toId: owner.id, relation: "depends_on" });
      const rv = await s.getLatestResourceVersion();
      assert.deepEqual(await s.deletionRequests.createFromOwner(owner.id), {
        children: [],
        unblocked: [],
      });
      assert.deepEqual(await s.deletionRequests.createFromOwner(999), {
        children: [],
        unblocked: [],
      });
      assert.equal(await s.getLatestResourceVersion(), rv);
      assert.equal((await s.objects.get(dep.id)).deletionRequestedAt, undefined);
      await assert.rejects(s.deletionRequests.createFromOwner(0), TypeError);
    },
  },
  {
    name: "createFromOwner reports the pending depends_on targets of the children it marked",
    async fn(h) {
      const s = await h.open();
      const owner = await make(s, Gadget, "owner");
      const c1 = await make(s, Widget, "c1");
      const c2 = await make(s, Widget, "c2");
      const t = await make(s, Core, "t", {}, ["f"]);
      const u = await make(s, Core, "u", {}, ["f"]);
      const live = await make(s, Core, "live");
      for (const c of [c1, c2]) {
        await s.edges.add({ fromId: c.id, toId: owner.id, relation: "owned_by" });
        await s.edges.add({ fromId: c.id, toId: t.id, relation: "depends_on" });
        await s.edges.add({ fromId: c.id, toId: c.id, relation: "depends_on" });
      }
      await s.edges.add({ fromId: c2.id, toId: u.id, relation: "depends_on" });
      await s.edges.add({ fromId: c1.id, toId: live.id, relation: "depends_on" });
      await s.deletionRequests.create(t);
      await s.deletionRequests.create(u);
      const r = await s.deletionRequests.createFromOwner(owner.id);
      assert.deepEqual(r.unblocked, [t, u]);
      assert.deepEqual((await s.deletionRequests.createFromOwner(owner.id)).unblocked, []);
    },
  },
  {
    name: "list returns every deletion-pending row of every kind, ordered by id",
    async fn(h) {
      const s = await h.open();
      assert.deepEqual(await s.deletionRequests.list(), []);
      const a = await make(s, Widget, "a", {}, ["f"]);
      const b = await make(s, Gadget, "b");
      const c = await make(s, Core, "c", {}, ["f"]);
      await make(s, Widget, "live");
      await s.deletionRequests.create(c);
      await s.deletionRequests.create(a);
      await s.deletionRequests.createByName({ ...Gadget, name: "b" });
      assert.deepEqual(await s.deletionRequests.list(), [a, b, c]);
      await s.objects.delete(b.id);
      assert.deepEqual(await s.deletionRequests.list(), [a, c]);
    },
  },
];
