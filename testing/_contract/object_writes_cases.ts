/**
 * Store contract cases: object writes.
 *
 * @module
 */
import assert from "node:assert/strict";
import { InvalidOptionError } from "../../src/model/errors.ts";
import type { ObjectWritesSweepOptions, Store } from "../../src/store.ts";
import {
  type ContractCase,
  Core,
  Gadget,
  logCount,
  make,
  ref,
  Widget,
  withFakeDate,
} from "./harness.ts";

/** Kind `gk`'s whole log: [op, id, resourceVersion] per entry. */
async function entries(store: Store, gk = Widget) {
  const page = await store.objectWrites.listSince(gk, { after: 0, limit: 1_000_000 });
  return page.writes.map((w) => [w.op, w.id, w.resourceVersion] as const);
}

/** Writes `n` status updates to `a`, returning each resource version. */
async function bump(store: Store, gk: typeof Widget, id: number, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    await store.objects.updateStatus(ref(gk, id), {
      status: `${Date.now()}-${i}-${Math.random()}`,
    });
    out.push((await store.objects.get(id)).resourceVersion);
  }
  return out;
}

export const objectWritesCases: ContractCase[] = [
  {
    name: "listSince reads one kind's entries ascending, strictly above the position",
    async fn(h) {
      const s = await h.open();
      const a = await s.objects.create(Widget, { name: "a", spec: "{}" });
      const g = await s.objects.create(Gadget, { name: "g", spec: "{}" });
      const rvs = [a.resourceVersion, ...await bump(s, Widget, a.id, 3)];
      await bump(s, Gadget, g.id, 2);
      const page = await s.objectWrites.listSince(Widget, { after: 0, limit: 100 });
      assert.deepEqual(page.writes.map((w) => w.resourceVersion), rvs);
      assert.deepEqual(page.writes.map((w) => w.op), ["create", "update", "update", "update"]);
      for (const w of page.writes) {
        assert.equal(w.id, a.id);
        assert.equal(w.group, Widget.group);
        assert.equal(w.kind, Widget.kind);
        assert.equal(w.final, undefined);
      }
      assert.equal(page.trimmedThrough, 0);
      const tail = await s.objectWrites.listSince(Widget, { after: rvs[1], limit: 100 });
      assert.deepEqual(tail.writes.map((w) => w.resourceVersion), rvs.slice(2));
      const none = await s.objectWrites.listSince(Widget, { after: rvs[3], limit: 100 });
      assert.deepEqual(none.writes, []);
      // A kind never written reads empty.
      assert.deepEqual((await s.objectWrites.listSince(Core, { after: 0, limit: 10 })).writes, []);
    },
  },
  {
    name: "listSince honours the limit, and a non-positive limit reads nothing",
    async fn(h) {
      const s = await h.open();
      const a = await s.objects.create(Widget, { name: "a", spec: "{}" });
      const rvs = [a.resourceVersion, ...await bump(s, Widget, a.id, 4)];
      const first = await s.objectWrites.listSince(Widget, { after: 0, limit: 2 });
      assert.deepEqual(first.writes.map((w) => w.resourceVersion), rvs.slice(0, 2));
      const next = await s.objectWrites.listSince(Widget, {
        after: first.writes[1].resourceVersion,
        limit: 2,
      });
      assert.deepEqual(next.writes.map((w) => w.resourceVersion), rvs.slice(2, 4));
      for (const limit of [0, -1]) {
        assert.deepEqual((await s.objectWrites.listSince(Widget, { after: 0, limit })).writes, []);
        assert.deepEqual((await s.objectWrites.listSinceAll({ after: 0, limit })).writes, []);
      }
    },
  },
  {
    name: "listSince refuses a malformed position or limit with TypeError",
    async fn(h) {
      const s = await h.open();
      await make(s, Widget, "a");
      for (
        const bad of [{ after: -1, limit: 1 }, { after: 1.5, limit: 1 }, { after: 0, limit: 0.5 }, {
          after: 0,
          limit: Number.NaN,
        }, null]
      ) {
        await assert.rejects(
          s.objectWrites.listSince(Widget, bad as { after: number; limit: number }),
          TypeError,
        );
        await assert.rejects(
          s.objectWrites.listSinceAll(bad as { after: number; limit: number }),
          TypeError,
        );
      }
      await assert.rejects(
        s.objectWrites.listSince({ group: "g", kind: "" }, { after: 0, limit: 1 }),
        InvalidOptionError,
      );
    },
  },
  {
    name: "a delete entry carries the full row image at its own resource version",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a", { x: 1 }, ["f/one"]);
      await s.objects.updateStatus(a, { status: '{"ok":true}', statusVersion: 2 });
      await s.objects.setObservedGeneration(a, 1);
      await s.conditions.set(a, [
        { type: "Ready", status: "True", reason: "Done", message: "m" },
        { type: "Alive", status: "False", liveness: true },
      ]);
      await s.deletionRequests.create(a);
      await s.reconcileOwed.stamp([a]);
      const before = await s.objects.get(a.id);
      await s.objects.delete(a.id);
      const last =
        (await s.objectWrites.listSince(Widget, { after: before.resourceVersion, limit: 10 }))
          .writes;
      assert.equal(last.length, 1);
      const [w] = last;
      assert.equal(w.op, "delete");
      assert.equal(w.id, a.id);
      assert.ok(w.resourceVersion > before.resourceVersion);
      assert.ok(w.final !== undefined);
      assert.deepEqual(w.final, { ...before, resourceVersion: w.resourceVersion });
      assert.equal(w.final.owner, undefined);
      assert.equal("owner" in w.final, false);
      assert.deepEqual(w.final.finalizers, ["f/one"]);
      assert.equal(w.final.conditions.length, 2);
      assert.ok(w.final.deletionRequestedAt instanceof Date);
    },
  },
  {
    name: "an owned child's delete image names its owner, and the owner edge goes with the row",
    async fn(h) {
      const s = await h.open();
      const owner = await make(s, Gadget, "owner");
      const child = await make(s, Widget, "child");
      await s.edges.add({ fromId: child.id, toId: owner.id, relation: "owned_by" });
      assert.equal(await s.edges.hasIncoming(owner.id), true);
      const before = await s.objects.get(child.id);
      // The owner is still alive: a child may be collected first.
      await s.objects.delete(child.id);
      const [w] =
        (await s.objectWrites.listSince(Widget, { after: before.resourceVersion, limit: 5 }))
          .writes;
      assert.equal(w.op, "delete");
      assert.deepEqual(w.final, {
        ...before,
        resourceVersion: w.resourceVersion,
        owner: ref(Gadget, owner.id),
      });
      assert.equal(await s.edges.hasIncoming(owner.id), false);
      assert.deepEqual(
        await s.edges.listIncoming({ toId: owner.id, relation: "owned_by" }),
        [],
      );
      assert.equal((await s.objects.get(owner.id)).name, "owner");
      // Nothing points at the owner any more, so it can be collected too.
      await s.objects.delete(owner.id);
      const [ow] = (await s.objectWrites.listSince(Gadget, { after: w.resourceVersion, limit: 5 }))
        .writes;
      assert.equal(ow.op, "delete");
      assert.equal(ow.final?.owner, undefined);
    },
  },
  {
    name: "listSinceAll spans kinds in version order without row images",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const g = await make(s, Gadget, "g");
      const c = await make(s, Core, "c");
      await s.objects.updateStatus(a, { status: "1" });
      await s.objects.delete(g.id);
      const page = await s.objectWrites.listSinceAll({ after: 0, limit: 100 });
      assert.deepEqual(
        page.writes.map((w) => [w.op, w.kind, w.id]),
        [
          ["create", "Widget", a.id],
          ["create", "Gadget", g.id],
          ["create", "Thing", c.id],
          ["update", "Widget", a.id],
          ["delete", "Gadget", g.id],
        ],
      );
      const versions = page.writes.map((w) => w.resourceVersion);
      assert.deepEqual(versions, [...versions].sort((x, y) => x - y));
      assert.ok(page.writes.every((w) => w.final === undefined));
      assert.equal(page.writes[2].group, "");
      assert.equal(page.trimmedThrough, 0);
      const tail = await s.objectWrites.listSinceAll({ after: versions[1], limit: 2 });
      assert.deepEqual(tail.writes.map((w) => w.resourceVersion), versions.slice(2, 4));
    },
  },
  {
    name: "listSinceAll reports the highest horizon with a page, and 0 on an empty page",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const rvs = await bump(s, Widget, a.id, 3);
      const g = await make(s, Gadget, "g");
      assert.equal(await s.objectWrites.sweep({ perKind: 1, maxAge: 0 }), 3);
      const page = await s.objectWrites.listSinceAll({ after: 0, limit: 100 });
      assert.deepEqual(page.writes.map((w) => w.id), [a.id, g.id]);
      assert.equal(page.trimmedThrough, rvs[1]);
      const head = (await s.objectWrites.maxVersionAll()).at;
      const empty = await s.objectWrites.listSinceAll({ after: head, limit: 100 });
      assert.deepEqual(empty, { writes: [], trimmedThrough: 0 });
    },
  },
  {
    name: "maxVersion is per kind, 0 on an empty store, and rises on collection",
    async fn(h) {
      const s = await h.open();
      assert.equal(await s.objectWrites.maxVersion(Widget), 0);
      assert.deepEqual(await s.objectWrites.maxVersionAll(), { at: 0, trimmedThrough: 0 });
      const a = await s.objects.create(Widget, { name: "a", spec: "{}" });
      const g = await s.objects.create(Gadget, { name: "g", spec: "{}" });
      assert.equal(await s.objectWrites.maxVersion(Widget), a.resourceVersion);
      assert.equal(await s.objectWrites.maxVersion(Gadget), g.resourceVersion);
      assert.equal(await s.objectWrites.maxVersion(Core), 0);
      await s.objects.delete(a.id);
      const afterDelete = await s.objectWrites.maxVersion(Widget);
      assert.ok(afterDelete > g.resourceVersion);
      assert.equal(afterDelete, await s.getLatestResourceVersion());
      assert.equal(await s.objectWrites.maxVersion(Gadget), g.resourceVersion);
      assert.deepEqual(await s.objectWrites.maxVersionAll(), {
        at: afterDelete,
        trimmedThrough: 0,
      });
    },
  },
  {
    name: "maxVersion ignores event writes",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const before = await s.objectWrites.maxVersion(Widget);
      const beforeAll = await s.objectWrites.maxVersionAll();
      await s.events.add(a, { type: "Normal", reason: "R" });
      await s.events.add(a, { type: "Normal", reason: "R" });
      assert.ok(await s.getLatestResourceVersion() > before);
      assert.equal(await s.objectWrites.maxVersion(Widget), before);
      assert.deepEqual(await s.objectWrites.maxVersionAll(), beforeAll);
      assert.equal(await logCount(s, Widget), 1);
    },
  },
  {
    name: "a kind whose log aged out keeps its position through the horizon",
    async fn(h) {
      const s = await h.open();
      await withFakeDate(async (clock) => {
        const a = await make(s, Widget, "a");
        const rvs = await bump(s, Widget, a.id, 2);
        clock.tick(10 * 60_000);
        const g = await s.objects.create(Gadget, { name: "g", spec: "{}" });
        assert.equal(await s.objectWrites.sweep({ perKind: 0, maxAge: 60_000 }), 3);
        assert.deepEqual(await entries(s, Widget), []);
        assert.equal(await s.objectWrites.maxVersion(Widget), rvs[1]);
        assert.equal(await s.objectWrites.maxVersion(Gadget), g.resourceVersion);
        const page = await s.objectWrites.listSince(Widget, { after: 0, limit: 10 });
        assert.deepEqual(page, { writes: [], trimmedThrough: rvs[1] });
        assert.deepEqual(await s.objectWrites.maxVersionAll(), {
          at: g.resourceVersion,
          trimmedThrough: rvs[1],
        });
        const snap = await s.objectWrites.snapshot(Widget);
        assert.equal(snap.resourceVersion, rvs[1]);
        assert.deepEqual(snap.items.map((o) => o.id), [a.id]);
      });
    },
  },
  {
    name: "maxVersionAll reports the bare maximum and the horizon apart",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const rvs = await bump(s, Widget, a.id, 4);
      const g = await s.objects.create(Gadget, { name: "g", spec: "{}" });
      await s.objectWrites.sweep({ perKind: 2, maxAge: 0 });
      assert.deepEqual(await s.objectWrites.maxVersionAll(), {
        at: g.resourceVersion,
        trimmedThrough: rvs[1],
      });
      // The bare maximum falls when the newest entry goes; the horizon does not.
      await withFakeDate(async (clock) => {
        clock.tick(10 * 60_000);
        await s.objectWrites.sweep({ perKind: 0, maxAge: 60_000 });
      });
      assert.deepEqual(await s.objectWrites.maxVersionAll(), {
        at: 0,
        trimmedThrough: g.resourceVersion,
      });
      assert.equal(await s.objectWrites.maxVersion(Widget), rvs[3]);
    },
  },
  {
    name: "snapshot lists a kind's rows with conditions at the kind's position",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Widget, "b");
      const g = await make(s, Gadget, "g");
      await s.conditions.set(a, [{ type: "Ready", status: "True" }]);
      await s.objects.updateStatus(g, { status: "1" });
      const snap = await s.objectWrites.snapshot(Widget);
      assert.deepEqual(snap.items, await s.objects.list(Widget));
      assert.deepEqual(snap.items.map((o) => o.id), [a.id, b.id]);
      assert.deepEqual(snap.items[0].conditions.map((c) => c.type), ["Ready"]);
      assert.equal(snap.resourceVersion, await s.objectWrites.maxVersion(Widget));
      assert.ok(snap.resourceVersion < await s.getLatestResourceVersion());
      // The tail above the position holds nothing the snapshot already has.
      assert.deepEqual(
        (await s.objectWrites.listSince(Widget, { after: snap.resourceVersion, limit: 10 })).writes,
        [],
      );
      assert.deepEqual(await s.objectWrites.snapshot(Core), { items: [], resourceVersion: 0 });
    },
  },
  {
    name: "snapshotById reads one row at its kind's position; missing or foreign reads empty",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Widget, "b");
      const g = await make(s, Gadget, "g");
      await s.conditions.set(a, [{ type: "Ready", status: "False", reason: "R" }]);
      await s.objects.updateStatus(b, { status: "1" });
      const position = await s.objectWrites.maxVersion(Widget);
      const one = await s.objectWrites.snapshotById(Widget, a.id);
      assert.deepEqual(one.items, [await s.objects.get(a.id)]);
      assert.equal(one.items[0].conditions[0].reason, "R");
      // The kind's position, not the row's own version.
      assert.equal(one.resourceVersion, position);
      assert.ok(one.items[0].resourceVersion < position);
      assert.deepEqual(await s.objectWrites.snapshotById(Widget, 999), {
        items: [],
        resourceVersion: position,
      });
      assert.deepEqual(await s.objectWrites.snapshotById(Widget, g.id), {
        items: [],
        resourceVersion: position,
      });
      await assert.rejects(s.objectWrites.snapshotById(Widget, 0), TypeError);
    },
  },
  {
    name: "snapshotByOwner reads a kind's owned children; a childless owner reads empty",
    async fn(h) {
      const s = await h.open();
      const owner = await make(s, Gadget, "owner");
      const other = await make(s, Gadget, "other");
      const c1 = await make(s, Widget, "c1");
      const c2 = await make(s, Widget, "c2");
      const g1 = await make(s, Gadget, "g1");
      const dep = await make(s, Widget, "dep");
      const stranger = await make(s, Widget, "stranger");
      await s.edges.add({ fromId: c2.id, toId: owner.id, relation: "owned_by" });
      await s.edges.add({ fromId: c1.id, toId: owner.id, relation: "owned_by" });
      await s.edges.add({ fromId: g1.id, toId: owner.id, relation: "owned_by" });
      await s.edges.add({ fromId: dep.id, toId: owner.id, relation: "depends_on" });
      await s.edges.add({ fromId: stranger.id, toId: other.id, relation: "owned_by" });
      await s.conditions.set(c1, [{ type: "Ready", status: "True" }]);
      const snap = await s.objectWrites.snapshotByOwner(Widget, owner.id);
      assert.deepEqual(snap.items, await s.objects.listByIds(Widget, [c1.id, c2.id]));
      assert.deepEqual(snap.items[0].conditions.map((c) => c.type), ["Ready"]);
      assert.equal(snap.resourceVersion, await s.objectWrites.maxVersion(Widget));
      assert.deepEqual(
        (await s.objectWrites.snapshotByOwner(Gadget, owner.id)).items.map((o) => o.id),
        [g1.id],
      );
      assert.deepEqual(await s.objectWrites.snapshotByOwner(Widget, c1.id), {
        items: [],
        resourceVersion: snap.resourceVersion,
      });
      assert.deepEqual((await s.objectWrites.snapshotByOwner(Widget, 999)).items, []);
    },
  },
  {
    name: "sweep caps each kind to its newest entries, so a hot kind cannot evict a quiet one",
    async fn(h) {
      const s = await h.open();
      const hot = await s.objects.create(Widget, { name: "hot", spec: "{}" });
      const quiet = await s.objects.create(Gadget, { name: "quiet", spec: "{}" });
      const hotRvs = [hot.resourceVersion, ...await bump(s, Widget, hot.id, 9)];
      const quietRvs = [quiet.resourceVersion, ...await bump(s, Gadget, quiet.id, 1)];
      assert.equal(await s.objectWrites.sweep({ perKind: 3, maxAge: 0 }), 7);
      assert.deepEqual((await entries(s, Widget)).map((e) => e[2]), hotRvs.slice(7));
      assert.deepEqual((await entries(s, Gadget)).map((e) => e[2]), quietRvs);
      // Already within bounds: a repeat removes nothing.
      assert.equal(await s.objectWrites.sweep({ perKind: 3, maxAge: 0 }), 0);
      assert.equal(
        (await s.objectWrites.listSince(Gadget, { after: 0, limit: 10 })).trimmedThrough,
        0,
      );
    },
  },
  {
    name: "a sweep raises the kind's horizon, so a cursor below it can tell it lost entries",
    async fn(h) {
      const s = await h.open();
      const a = await s.objects.create(Widget, { name: "a", spec: "{}" });
      const rvs = [a.resourceVersion, ...await bump(s, Widget, a.id, 5)];
      await s.objectWrites.sweep({ perKind: 2, maxAge: 0 });
      const horizon = rvs[3];
      // A reader parked below the horizon sees trimmedThrough above its cursor.
      const behind = await s.objectWrites.listSince(Widget, { after: rvs[1], limit: 10 });
      assert.equal(behind.trimmedThrough, horizon);
      assert.ok(rvs[1] < behind.trimmedThrough);
      assert.deepEqual(behind.writes.map((w) => w.resourceVersion), rvs.slice(4));
      // A cursor at the horizon lost nothing.
      const at = await s.objectWrites.listSince(Widget, { after: horizon, limit: 10 });
      assert.equal(at.trimmedThrough, horizon);
      assert.deepEqual(at.writes.map((w) => w.resourceVersion), rvs.slice(4));
      // The horizon only rises.
      await s.objectWrites.sweep({ perKind: 5, maxAge: 0 });
      assert.equal(
        (await s.objectWrites.listSince(Widget, { after: 0, limit: 1 })).trimmedThrough,
        horizon,
      );
      await s.objectWrites.sweep({ perKind: 1, maxAge: 0 });
      assert.equal(
        (await s.objectWrites.listSince(Widget, { after: 0, limit: 1 })).trimmedThrough,
        rvs[4],
      );
    },
  },
  {
    name: "sweep drops entries older than maxAge and resolves to how many it removed",
    async fn(h) {
      const s = await h.open();
      await withFakeDate(async (clock) => {
        const a = await s.objects.create(Widget, { name: "a", spec: "{}" });
        const g = await s.objects.create(Gadget, { name: "g", spec: "{}" });
        clock.tick(2 * 60_000);
        const fresh = await bump(s, Widget, a.id, 2);
        clock.tick(1000);
        assert.equal(await s.objectWrites.sweep({ perKind: 0, maxAge: 60_000 }), 2);
        assert.deepEqual((await entries(s, Widget)).map((e) => e[2]), fresh);
        assert.deepEqual(await entries(s, Gadget), []);
        assert.equal(
          (await s.objectWrites.listSince(Widget, { after: 0, limit: 10 })).trimmedThrough,
          a.resourceVersion,
        );
        assert.equal(
          (await s.objectWrites.listSince(Gadget, { after: 0, limit: 10 })).trimmedThrough,
          g.resourceVersion,
        );
        assert.equal(await s.objectWrites.maxVersion(Gadget), g.resourceVersion);
        // Nothing is old enough any more.
        assert.equal(await s.objectWrites.sweep({ perKind: 0, maxAge: 60_000 }), 0);
        // Both bounds in one call add up.
        await bump(s, Widget, a.id, 3);
        clock.tick(5 * 60_000);
        await bump(s, Widget, a.id, 1);
        assert.equal(await s.objectWrites.sweep({ perKind: 2, maxAge: 60_000 }), 5);
        assert.equal(await logCount(s, Widget), 1);
      });
    },
  },
  {
    name: "a sweep with no bounds removes nothing",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await bump(s, Widget, a.id, 3);
      assert.equal(await s.objectWrites.sweep({ perKind: 0, maxAge: 0 }), 0);
      assert.equal(await logCount(s, Widget), 4);
    },
  },
  {
    name: "sweep refuses bounds out of range and writes nothing",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await bump(s, Widget, a.id, 3);
      const bad: unknown[] = [
        { perKind: -1, maxAge: 0 },
        { perKind: 0, maxAge: -1 },
        { perKind: Number.NaN, maxAge: 0 },
        { perKind: 0, maxAge: Number.POSITIVE_INFINITY },
        { perKind: "2", maxAge: 0 },
        { perKind: 1.5, maxAge: 0 },
      ];
      for (const options of bad) {
        await assert.rejects(
          s.objectWrites.sweep(options as ObjectWritesSweepOptions),
          InvalidOptionError,
          JSON.stringify(options),
        );
      }
      for (const options of [null, undefined, 5]) {
        await assert.rejects(
          s.objectWrites.sweep(options as unknown as ObjectWritesSweepOptions),
          TypeError,
        );
      }
      assert.equal(await logCount(s, Widget), 4);
      assert.equal(
        (await s.objectWrites.listSince(Widget, { after: 0, limit: 1 })).trimmedThrough,
        0,
      );
    },
  },
  {
    name: "a sweep inside a transaction rolls back with it, horizon included",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await bump(s, Widget, a.id, 3);
      await assert.rejects(
        s.within(async (tx) => {
          assert.equal(await tx.objectWrites.sweep({ perKind: 1, maxAge: 0 }), 3);
          assert.equal(await logCount(tx, Widget), 1);
          throw new Error("rollback");
        }),
        /rollback/,
      );
      assert.equal(await logCount(s, Widget), 4);
      assert.equal(
        (await s.objectWrites.listSince(Widget, { after: 0, limit: 1 })).trimmedThrough,
        0,
      );
    },
  },
];
