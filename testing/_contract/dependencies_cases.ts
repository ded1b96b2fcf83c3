/**
 * Store contract cases: dependencies.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { GroupKind, ObjectRef, StalePos, Store } from "../../src/store.ts";
import { type ContractCase, Core, Gadget, make, Widget } from "./harness.ts";

const START: StalePos = { targetVersion: 0, targetId: 0, dependentId: 0 };

/** One page of the scan from `after` through the latest version. */
async function page(
  s: Store,
  kinds: readonly GroupKind[],
  after: StalePos = START,
  limit = 1_000,
): Promise<{ dependents: ObjectRef[]; position: StalePos }> {
  const through = await s.getLatestResourceVersion();
  return s.dependencies.listStaleSince(kinds, { after, through, limit });
}

/** The ids of every stale dependent of `kinds`, one per (target, dependent) pair. */
async function staleIds(s: Store, kinds: readonly GroupKind[] = [Widget]): Promise<number[]> {
  return (await page(s, kinds)).dependents.map((d) => d.id);
}

/** Declares `from` depends on `to`. */
async function dependsOn(s: Store, from: ObjectRef, to: ObjectRef): Promise<void> {
  await s.edges.add({ fromId: from.id, toId: to.id, relation: "depends_on" });
}

/** The resource version of `r`'s row. */
async function rvOf(s: Store, r: ObjectRef): Promise<number> {
  return (await s.objects.get(r.id)).resourceVersion;
}

export const dependenciesCases: ContractCase[] = [
  {
    name: "listStaleSince finds a target whose latest write the log no longer holds",
    async fn(h) {
      const s = await h.open();
      const old = await make(s, Gadget, "old");
      const d1 = await make(s, Widget, "d1");
      await dependsOn(s, d1, old);
      const fresh = await make(s, Gadget, "fresh");
      const d2 = await make(s, Widget, "d2");
      await dependsOn(s, d2, fresh);
      // Keep one Gadget entry: old's only write leaves the log, below the kind's horizon.
      await s.objectWrites.sweep({ perKind: 1, maxAge: 0 });
      const log = await s.objectWrites.listSince(Gadget, { after: 0, limit: 10 });
      assert.deepEqual(log.writes.map((w) => w.id), [fresh.id]);
      assert.ok(log.trimmedThrough >= (await rvOf(s, old)));
      assert.deepEqual(await staleIds(s), [d1.id, d2.id]);
      // One row a page crosses from below the horizon to above it, in order, once each.
      const through = await s.getLatestResourceVersion();
      const seen: number[] = [];
      let after = START;
      for (;;) {
        const p = await s.dependencies.listStaleSince([Widget], { after, through, limit: 1 });
        if (p.dependents.length === 0) break;
        seen.push(...p.dependents.map((d) => d.id));
        after = p.position;
      }
      assert.deepEqual(seen, [d1.id, d2.id]);
      await s.dependencies.watermarkSet(d1.id, through);
      assert.deepEqual(await staleIds(s), [d2.id]);
    },
  },
  {
    name: "listStaleSince finds dependents whose target moved past their watermark",
    async fn(h) {
      const s = await h.open();
      const t = await make(s, Gadget, "t");
      const fresh = await make(s, Widget, "fresh");
      const behind = await make(s, Widget, "behind");
      const never = await make(s, Widget, "never");
      for (const d of [fresh, behind, never]) await dependsOn(s, d, t);
      const tv = await rvOf(s, t);
      await s.dependencies.watermarkSet(fresh.id, tv);
      await s.dependencies.watermarkSet(behind.id, tv - 1);
      // A missing watermark counts as stale; one at the target's version does not.
      const p = await page(s, [Widget]);
      assert.deepEqual(p.dependents, [behind, never]);
      assert.deepEqual(p.position, { targetVersion: tv, targetId: t.id, dependentId: never.id });
    },
  },
  {
    name: "listStaleSince returns one row per (target, dependent) pair",
    async fn(h) {
      const s = await h.open();
      const t1 = await make(s, Gadget, "t1");
      const t2 = await make(s, Gadget, "t2");
      const a = await make(s, Widget, "a");
      const b = await make(s, Widget, "b");
      await dependsOn(s, a, t1);
      await dependsOn(s, a, t2);
      await dependsOn(s, b, t1);
      // Ordered by target version, then target, then dependent.
      assert.deepEqual(await staleIds(s), [a.id, b.id, a.id]);
    },
  },
  {
    name: "listStaleSince pages inside one target's fan-out without losing or repeating a row",
    async fn(h) {
      const s = await h.open();
      const t = await make(s, Gadget, "t");
      const deps: ObjectRef[] = [];
      for (let i = 0; i < 5; i++) {
        const d = await make(s, Widget, `d${i}`);
        await dependsOn(s, d, t);
        deps.push(d);
      }
      const tv = await rvOf(s, t);
      const seen: ObjectRef[] = [];
      let after = START;
      const sizes: number[] = [];
      for (let i = 0; i < 10; i++) {
        const p = await page(s, [Widget], after, 2);
        sizes.push(p.dependents.length);
        if (p.dependents.length === 0) {
          assert.deepEqual(p.position, after);
          break;
        }
        const last = p.dependents[p.dependents.length - 1];
        assert.deepEqual(p.position, { targetVersion: tv, targetId: t.id, dependentId: last.id });
        seen.push(...p.dependents);
        after = p.position;
      }
      assert.deepEqual(sizes, [2, 2, 1, 0]);
      assert.deepEqual(seen, deps);
    },
  },
  {
    name: "listStaleSince considers only targets written above after and at or below through",
    async fn(h) {
      const s = await h.open();
      const t1 = await make(s, Gadget, "t1");
      const t2 = await make(s, Gadget, "t2");
      const t3 = await make(s, Gadget, "t3");
      const a = await make(s, Widget, "a");
      const b = await make(s, Widget, "b");
      const c = await make(s, Widget, "c");
      await dependsOn(s, a, t1);
      await dependsOn(s, b, t2);
      await dependsOn(s, c, t3);
      const [v1, v2] = [await rvOf(s, t1), await rvOf(s, t2)];
      const p = await s.dependencies.listStaleSince([Widget], {
        after: START,
        through: v2,
        limit: 100,
      });
      assert.deepEqual(p.dependents, [a, b]);
      const rest = await page(s, [Widget], {
        targetVersion: v1,
        targetId: t1.id,
        dependentId: a.id,
      });
      assert.deepEqual(rest.dependents, [b, c]);
      const none = await s.dependencies.listStaleSince([Widget], {
        after: START,
        through: v1 - 1,
        limit: 100,
      });
      assert.deepEqual(none, { dependents: [], position: START });
    },
  },
  {
    name: "listStaleSince reads nothing for no kinds or a non-positive limit, leaving the position",
    async fn(h) {
      const s = await h.open();
      const t = await make(s, Gadget, "t");
      const a = await make(s, Widget, "a");
      await dependsOn(s, a, t);
      const through = await s.getLatestResourceVersion();
      const after: StalePos = { targetVersion: 1, targetId: 0, dependentId: 0 };
      assert.deepEqual((await page(s, [Widget], after)).dependents, [a]);
      for (
        const [kinds, limit] of [[[], 10], [[Widget], 0], [[Widget], -1]] as [GroupKind[], number][]
      ) {
        const p = await s.dependencies.listStaleSince(kinds, { after, through, limit });
        assert.deepEqual(p, { dependents: [], position: after });
      }
    },
  },
  {
    name: "listStaleSince excludes self-edges",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const t = await make(s, Gadget, "t");
      await dependsOn(s, a, a);
      assert.deepEqual(await staleIds(s), []);
      await dependsOn(s, a, t);
      assert.deepEqual(await staleIds(s), [a.id]);
      // Writing the object itself does not put it in scope through its self-edge.
      await s.dependencies.watermarkSet(a.id, await s.getLatestResourceVersion());
      await s.objects.updateSpec(a, { spec: '{"v":2}' });
      assert.deepEqual(await staleIds(s), []);
    },
  },
  {
    name: "listStaleSince filters by the dependent's kind only",
    async fn(h) {
      const s = await h.open();
      const g = await make(s, Gadget, "g");
      const w = await make(s, Widget, "w");
      const w2 = await make(s, Widget, "w2");
      const g2 = await make(s, Gadget, "g2");
      const c = await make(s, Core, "c");
      // A Widget depending on a Gadget and on a core object.
      await dependsOn(s, w, g);
      await dependsOn(s, w, c);
      // A Gadget depending on a Widget.
      await dependsOn(s, g2, w2);
      assert.deepEqual((await page(s, [Widget])).dependents, [w, w]);
      assert.deepEqual((await page(s, [Gadget])).dependents, [g2]);
      assert.deepEqual((await page(s, [Core])).dependents, []);
      const both = (await page(s, [Gadget, Widget])).dependents;
      assert.deepEqual(both.map((d) => d.id).sort((x, y) => x - y), [w.id, w.id, g2.id]);
    },
  },
  {
    name: "watermarkSet clears staleness until the target is written again",
    async fn(h) {
      const s = await h.open();
      const t = await make(s, Gadget, "t");
      const a = await make(s, Widget, "a");
      await dependsOn(s, a, t);
      const mark = await s.getLatestResourceVersion();
      await s.dependencies.watermarkSet(a.id, mark);
      assert.deepEqual(await staleIds(s), []);
      await s.objects.updateSpec(t, { spec: '{"v":2}' });
      const p = await page(s, [Widget], {
        targetVersion: mark,
        targetId: Number.MAX_SAFE_INTEGER,
        dependentId: 0,
      });
      assert.deepEqual(p.dependents, [a]);
      assert.equal(p.position.targetVersion, await rvOf(s, t));
      // A status write moves the target too.
      await s.dependencies.watermarkSet(a.id, await s.getLatestResourceVersion());
      assert.deepEqual(await staleIds(s), []);
      await s.objects.updateStatus(t, { status: "{}" });
      assert.deepEqual(await staleIds(s), [a.id]);
    },
  },
  {
    name: "watermarkSet upserts and never regresses",
    async fn(h) {
      const s = await h.open();
      const t = await make(s, Gadget, "t");
      const a = await make(s, Widget, "a");
      await dependsOn(s, a, t);
      const tv = await rvOf(s, t);
      await s.dependencies.watermarkSet(a.id, tv - 1);
      assert.deepEqual(await staleIds(s), [a.id]);
      await s.dependencies.watermarkSet(a.id, tv);
      assert.deepEqual(await staleIds(s), []);
      await s.dependencies.watermarkSet(a.id, tv - 1);
      await s.dependencies.watermarkSet(a.id, 0);
      assert.deepEqual(await staleIds(s), []);
    },
  },
  {
    name: "watermarkSet bumps no resource version and touches no row",
    async fn(h) {
      const s = await h.open();
      const t = await make(s, Gadget, "t");
      const a = await make(s, Widget, "a");
      await dependsOn(s, a, t);
      const row = await s.objects.get(a.id);
      const rv = await s.getLatestResourceVersion();
      await s.dependencies.watermarkSet(a.id, rv);
      assert.equal(await s.getLatestResourceVersion(), rv);
      assert.deepEqual(await s.objects.get(a.id), row);
      assert.equal(
        (await s.objectWrites.listSince(Widget, { after: 0, limit: 100 })).writes.length,
        1,
      );
    },
  },
  {
    name:
      "watermarkSet writes only for an object with an outgoing depends_on edge, else is a no-op",
    async fn(h) {
      const s = await h.open();
      const owner = await make(s, Gadget, "owner");
      const child = await make(s, Widget, "child");
      const loner = await make(s, Widget, "loner");
      const gone = await make(s, Widget, "gone");
      await s.edges.add({ fromId: child.id, toId: owner.id, relation: "owned_by" });
      await dependsOn(s, gone, owner);
      await s.objects.delete(gone.id);
      const rv = await s.getLatestResourceVersion();
      // Neither an owned_by edge, no edge, a collected object, nor an id that never
      // existed is an error; none of them writes.
      await s.dependencies.watermarkSet(child.id, rv);
      await s.dependencies.watermarkSet(loner.id, rv);
      await s.dependencies.watermarkSet(gone.id, rv);
      await s.dependencies.watermarkSet(999, rv);
      assert.equal(await s.getLatestResourceVersion(), rv);
      await assert.rejects(s.dependencies.watermarkSet(0, rv), TypeError);
      await assert.rejects(s.dependencies.watermarkSet(child.id, -1), TypeError);
      await assert.rejects(s.dependencies.watermarkSet(child.id, 1.5), TypeError);
    },
  },
  {
    name: "a watermark goes with its object: a recreated dependent starts stale",
    async fn(h) {
      const s = await h.open();
      const t = await make(s, Gadget, "t");
      const a = await make(s, Widget, "a");
      await dependsOn(s, a, t);
      await s.dependencies.watermarkSet(a.id, await s.getLatestResourceVersion());
      assert.deepEqual(await staleIds(s), []);
      await s.objects.delete(a.id);
      assert.deepEqual(await staleIds(s), []);
      const again = await make(s, Widget, "a");
      await dependsOn(s, again, t);
      assert.deepEqual(await staleIds(s), [again.id]);
      await s.dependencies.watermarkSet(again.id, await s.getLatestResourceVersion());
      assert.deepEqual(await staleIds(s), []);
    },
  },
  {
    name: "listStaleSince refuses malformed arguments with TypeError",
    async fn(h) {
      const s = await h.open();
      const ok = { after: START, through: 10, limit: 10 };
      await assert.rejects(
        s.dependencies.listStaleSince(Widget as unknown as GroupKind[], ok),
        TypeError,
      );
      await assert.rejects(
        s.dependencies.listStaleSince([Widget], { ...ok, through: -1 }),
        TypeError,
      );
      await assert.rejects(
        s.dependencies.listStaleSince([Widget], { ...ok, limit: 1.5 }),
        TypeError,
      );
      await assert.rejects(
        s.dependencies.listStaleSince([Widget], {
          ...ok,
          after: undefined as unknown as StalePos,
        }),
        TypeError,
      );
    },
  },
];
