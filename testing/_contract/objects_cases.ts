/**
 * Store contract cases: objects.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  DeletionPendingError,
  InvalidNameError,
  InvalidObservedGenerationError,
  InvalidOptionError,
  NameTakenError,
  NotFoundError,
  ObservedGenerationFutureError,
  SchemaVersionDowngradeError,
  StoreError,
  WrongKindError,
} from "../../src/model/errors.ts";
import { type ContractCase, footprint, Gadget, logCount, make, ref, Widget } from "./harness.ts";

export const objectsCases: ContractCase[] = [
  {
    reopens: true,
    name: "create never reuses an id, even after the highest one is deleted, across a reopen",
    async fn(h) {
      const path = h.tempPath("ids.db");
      const first = await h.openPath(path);
      const a = await make(first, Widget, "a");
      const b = await make(first, Widget, "b");
      await first.objects.delete(b.id);
      const c = await make(first, Gadget, "c");
      assert.ok(c.id > b.id, `id ${c.id} reused at or below the deleted ${b.id}`);
      await first.objects.delete(c.id);
      await first.close();
      const s = await h.openPath(path);
      const d = await make(s, Widget, "d");
      assert.ok(d.id > c.id, `id ${d.id} reused at or below the deleted ${c.id}`);
      // A name freed by a delete takes a new id too.
      const b2 = await make(s, Widget, "b");
      assert.ok(b2.id > d.id);
      assert.deepEqual((await s.objects.list(Widget)).map((o) => o.id), [a.id, d.id, b2.id]);
    },
  },
  {
    name: "create and a changed updateSpec return exactly the row a get reads back",
    async fn(h) {
      const s = await h.open();
      const o = await s.objects.create(Widget, {
        name: "a",
        spec: '{"x":1}',
        specVersion: 3,
        finalizers: ["f/one", "f/one", "f/two"],
      });
      assert.deepEqual(o, await s.objects.get(o.id));
      await s.conditions.set(ref(Widget, o.id), [{ type: "Ready", status: "True" }]);
      const updated = await s.objects.updateSpec(ref(Widget, o.id), { spec: '{"x":2}' });
      assert.equal(updated.changed, true);
      assert.deepEqual(updated.object, await s.objects.get(o.id));
      assert.equal(updated.object.generation, 2);
      await assert.rejects(make(s, Widget, "a"), NameTakenError);
      const b = await s.objects.create(Widget, { name: "b", spec: "{}" });
      assert.ok(b.id > o.id);
      assert.deepEqual(b, await s.objects.get(b.id));
    },
  },
  {
    name: "create assigns an id, generation 1, no status, and persists finalizers",
    async fn(h) {
      const s = await h.open();
      const o = await s.objects.create(Widget, {
        name: "a",
        spec: '{"x":1}',
        finalizers: ["f/one", "f/two"],
      });
      assert.ok(Number.isSafeInteger(o.id) && o.id > 0);
      assert.equal(o.generation, 1);
      assert.equal(o.status, undefined);
      assert.equal(o.observedGeneration, undefined);
      assert.equal(o.reconcileOwed, 0);
      assert.deepEqual(o.finalizers, ["f/one", "f/two"]);
      assert.deepEqual(o.conditions, []);
      assert.equal(o.spec, '{"x":1}');
      assert.ok(o.resourceVersion > 0);
      assert.deepEqual(await s.objects.get(o.id), o);
    },
  },
  {
    name: "create refuses an empty or malformed name with InvalidNameError and writes nothing",
    async fn(h) {
      const s = await h.open();
      await assert.rejects(s.objects.create(Widget, { name: "", spec: "{}" }), InvalidNameError);
      await assert.rejects(
        s.objects.create(Widget, { name: "bad\uD800", spec: "{}" }),
        InvalidNameError,
      );
      assert.deepEqual(await s.objects.list(Widget), []);
      assert.equal(await logCount(s, Widget), 0);
    },
  },
  {
    name: "text with NUL is refused, since it would read back cut short at the NUL",
    async fn(h) {
      const s = await h.open();
      await assert.rejects(
        s.objects.create(Widget, { name: "a\u0000b", spec: "{}" }),
        InvalidNameError,
      );
      await assert.rejects(
        s.objects.create(Widget, { name: "a", spec: "{}", finalizers: ["f\u0000"] }),
        InvalidOptionError,
      );
      await assert.rejects(
        s.objects.create({ group: "g\u0000", kind: "K" }, { name: "a", spec: "{}" }),
        InvalidOptionError,
      );
      assert.deepEqual(await s.objects.list(Widget), []);
    },
  },
  {
    name: "create refuses a duplicate name in the kind with NameTakenError and lands nothing",
    async fn(h) {
      const s = await h.open();
      await make(s, Widget, "a");
      const before = await s.getLatestResourceVersion();
      await assert.rejects(s.objects.create(Widget, { name: "a", spec: "{}" }), NameTakenError);
      assert.equal((await s.objects.list(Widget)).length, 1);
      assert.equal(await logCount(s, Widget), 1);
      assert.equal(await s.getLatestResourceVersion(), before);
    },
  },
  {
    name: "names are unique per kind, so one name may live in two kinds",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "same");
      const b = await make(s, Gadget, "same");
      assert.notEqual(a.id, b.id);
      assert.equal((await s.objects.getByName({ ...Gadget, name: "same" })).id, b.id);
    },
  },
  {
    name: "a deletion-pending row still holds its name",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a", {}, ["f"]);
      await s.deletionRequests.create(a);
      await assert.rejects(s.objects.create(Widget, { name: "a", spec: "{}" }), NameTakenError);
    },
  },
  {
    name: "create refuses malformed arguments without writing",
    async fn(h) {
      const s = await h.open();
      await assert.rejects(
        s.objects.create(Widget, { name: "a", spec: 5 as unknown as string }),
        TypeError,
      );
      await assert.rejects(
        s.objects.create(Widget, { name: "a", spec: "{}", finalizers: ["\uDC00"] }),
        InvalidOptionError,
      );
      await assert.rejects(
        s.objects.create({ group: "g", kind: "" }, { name: "a", spec: "{}" }),
        InvalidOptionError,
      );
      assert.deepEqual(await s.objects.list(Widget), []);
    },
  },
  {
    name: "get and getByName read the row; a missing one is NotFoundError",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      assert.equal((await s.objects.get(a.id)).name, "a");
      assert.equal((await s.objects.getByName({ ...Widget, name: "a" })).id, a.id);
      await assert.rejects(s.objects.get(a.id + 100), NotFoundError);
      await assert.rejects(s.objects.getByName({ ...Widget, name: "nope" }), NotFoundError);
      await assert.rejects(s.objects.getByName({ ...Gadget, name: "a" }), NotFoundError);
    },
  },
  {
    name: "ids must be positive safe integers: anything else is a TypeError",
    async fn(h) {
      const s = await h.open();
      for (const bad of [0, -1, 1.5, Number.NaN, 2 ** 53, "1", undefined]) {
        await assert.rejects(s.objects.get(bad as number), TypeError);
      }
    },
  },
  {
    name: "getMeta and getMetaByName skip conditions; a foreign kind's name is not found",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.conditions.set(a, [{ type: "Ready", status: "True" }]);
      const meta = await s.objects.getMeta(a.id);
      assert.equal("conditions" in meta, false);
      assert.equal((await s.objects.getMetaByName({ ...Widget, name: "a" })).id, a.id);
      await assert.rejects(s.objects.getMetaByName({ ...Gadget, name: "a" }), NotFoundError);
      await assert.rejects(s.objects.getMeta(999), NotFoundError);
    },
  },
  {
    name: "list returns a kind's objects ordered by id, with conditions",
    async fn(h) {
      const s = await h.open();
      const b = await make(s, Widget, "b");
      const a = await make(s, Widget, "a");
      await make(s, Gadget, "c");
      await s.conditions.set(a, [{ type: "Ready", status: "True" }]);
      const list = await s.objects.list(Widget);
      assert.deepEqual(list.map((o) => o.id), [b.id, a.id]);
      assert.deepEqual(list[1].conditions.map((c) => c.type), ["Ready"]);
      assert.deepEqual(list[0].conditions, []);
      assert.deepEqual(await s.objects.listIds(Widget), [b.id, a.id]);
    },
  },
  {
    name: "listByIds is kind-scoped and skips ids that name nothing",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const g = await make(s, Gadget, "g");
      const b = await make(s, Widget, "b");
      const got = await s.objects.listByIds(Widget, [b.id, 999, g.id, a.id]);
      assert.deepEqual(got.map((o) => o.id), [a.id, b.id]);
      assert.deepEqual(await s.objects.listByIds(Widget, []), []);
    },
  },
  {
    name: "listByIncomingEdge filters by kind and relation and reads empty for no owner",
    async fn(h) {
      const s = await h.open();
      const owner = await make(s, Gadget, "owner");
      const c1 = await make(s, Widget, "c1");
      const c2 = await make(s, Gadget, "c2");
      const dep = await make(s, Widget, "dep");
      await s.edges.add({ fromId: c1.id, toId: owner.id, relation: "owned_by" });
      await s.edges.add({ fromId: c2.id, toId: owner.id, relation: "owned_by" });
      await s.edges.add({ fromId: dep.id, toId: owner.id, relation: "depends_on" });
      const owned = await s.objects.listByIncomingEdge(Widget, {
        toId: owner.id,
        relation: "owned_by",
      });
      assert.deepEqual(owned.map((o) => o.id), [c1.id]);
      assert.deepEqual(
        await s.objects.listByIncomingEdge(Widget, { toId: 999, relation: "owned_by" }),
        [],
      );
    },
  },
  {
    name: "listUnsettledIds lists rows whose observed generation is behind",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Widget, "b");
      assert.deepEqual(await s.objects.listUnsettledIds(Widget), [a.id, b.id]);
      await s.objects.setObservedGeneration(a, 1);
      assert.deepEqual(await s.objects.listUnsettledIds(Widget), [b.id]);
      await s.objects.updateSpec(a, { spec: '{"v":2}' });
      assert.deepEqual(await s.objects.listUnsettledIds(Widget), [a.id, b.id]);
    },
  },
  {
    name: "updateSpec bumps generation and resource version and logs an update",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const before = await s.objects.get(a.id);
      const r = await s.objects.updateSpec(a, { spec: '{"v":2}' });
      assert.equal(r.changed, true);
      assert.equal(r.object.generation, 2);
      assert.equal(r.object.spec, '{"v":2}');
      assert.ok(r.object.resourceVersion > before.resourceVersion);
      assert.equal(await logCount(s, Widget), 2);
    },
  },
  {
    name: "updateSpec with identical text is a no-op: no bump, no log entry, still settled",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a", { v: 1 });
      await s.objects.setObservedGeneration(a, 1);
      const before = await s.objects.get(a.id);
      const r = await s.objects.updateSpec(a, { spec: '{"v":1}' });
      assert.equal(r.changed, false);
      assert.deepEqual(r.object, before);
      assert.equal(await logCount(s, Widget), 2);
      assert.deepEqual(await s.objects.listUnsettledIds(Widget), []);
    },
  },
  {
    name: "updateSpec returns the row's conditions assembled",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.conditions.set(a, [{ type: "Ready", status: "False", reason: "Init" }]);
      const r = await s.objects.updateSpec(a, { spec: '{"v":2}' });
      assert.equal(r.object.conditions[0].reason, "Init");
    },
  },
  {
    name: "updateSpec refuses a deletion-pending row, even with identical text, logging nothing",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a", {}, ["f"]);
      await s.deletionRequests.create(a);
      const n = await logCount(s, Widget);
      await assert.rejects(s.objects.updateSpec(a, { spec: "{}" }), DeletionPendingError);
      await assert.rejects(s.objects.updateSpec(a, { spec: '{"x":1}' }), DeletionPendingError);
      // Refused before the schema-version check too.
      await assert.rejects(
        s.objects.updateSpecByName({ ...Widget, name: "a" }, { spec: "{}", specVersion: 3 }),
        DeletionPendingError,
      );
      assert.equal(await logCount(s, Widget), n);
    },
  },
  {
    name: "updateSpec is kind-scoped: WrongKindError for a foreign kind, NotFoundError for none",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await assert.rejects(s.objects.updateSpec(ref(Gadget, a.id), { spec: "1" }), WrongKindError);
      await assert.rejects(s.objects.updateSpec(ref(Widget, 999), { spec: "1" }), NotFoundError);
      assert.equal((await s.objects.get(a.id)).generation, 1);
    },
  },
  {
    name: "updateSpecByName writes by name with the same no-op rule and kind scoping",
    async fn(h) {
      const s = await h.open();
      await make(s, Widget, "a", { v: 1 });
      const r1 = await s.objects.updateSpecByName({ ...Widget, name: "a" }, { spec: '{"v":1}' });
      assert.equal(r1.changed, false);
      const r2 = await s.objects.updateSpecByName({ ...Widget, name: "a" }, { spec: '{"v":2}' });
      assert.equal(r2.changed, true);
      assert.equal(r2.object.generation, 2);
      await assert.rejects(
        s.objects.updateSpecByName({ ...Gadget, name: "a" }, { spec: "{}" }),
        NotFoundError,
      );
    },
  },
  {
    name: "schema versions default to 0, persist, and stamp each column independently",
    async fn(h) {
      const s = await h.open();
      const o = await s.objects.create(Widget, { name: "a", spec: "{}", specVersion: 2 });
      assert.equal(o.specVersion, 2);
      assert.equal(o.statusVersion, 0);
      const a = ref(Widget, o.id);
      await s.objects.updateStatus(a, { status: "{}", statusVersion: 5 });
      const got = await s.objects.get(o.id);
      assert.equal(got.specVersion, 2);
      assert.equal(got.statusVersion, 5);
    },
  },
  {
    name: "identical text at a higher schema version is a write that unsettles the object",
    async fn(h) {
      const s = await h.open();
      const o = await s.objects.create(Widget, { name: "a", spec: "{}", specVersion: 1 });
      const a = ref(Widget, o.id);
      await s.objects.setObservedGeneration(a, 1);
      const r = await s.objects.updateSpec(a, { spec: "{}", specVersion: 2 });
      assert.equal(r.changed, true);
      assert.equal(r.object.specVersion, 2);
      assert.deepEqual(await s.objects.listUnsettledIds(Widget), [o.id]);
    },
  },
  {
    name: "version 0 keeps the stored tag, and a lower version is SchemaVersionDowngradeError",
    async fn(h) {
      const s = await h.open();
      const o = await s.objects.create(Widget, { name: "a", spec: "{}", specVersion: 3 });
      const a = ref(Widget, o.id);
      const r = await s.objects.updateSpec(a, { spec: '{"x":1}' });
      assert.equal(r.object.specVersion, 3);
      assert.equal((await s.objects.updateSpec(a, { spec: '{"x":1}' })).changed, false);
      await assert.rejects(
        s.objects.updateSpec(a, { spec: '{"x":2}', specVersion: 2 }),
        SchemaVersionDowngradeError,
      );
      await s.objects.updateStatus(a, { status: "1", statusVersion: 4 });
      await assert.rejects(
        s.objects.updateStatus(a, { status: "1", statusVersion: 1 }),
        SchemaVersionDowngradeError,
      );
      assert.equal((await s.objects.get(o.id)).spec, '{"x":1}');
    },
  },
  {
    name: "updateStatus writes status only, reports whether it wrote, and leaves the handshake",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.objects.setObservedGeneration(a, 1);
      const before = await s.objects.get(a.id);
      assert.equal(await s.objects.updateStatus(a, { status: '{"ready":true}' }), true);
      const after = await s.objects.get(a.id);
      assert.equal(after.status, '{"ready":true}');
      assert.equal(after.generation, before.generation);
      assert.equal(after.observedGeneration, 1);
      assert.deepEqual(after.observedAt, before.observedAt);
      assert.ok(after.resourceVersion > before.resourceVersion);
      assert.equal(await s.objects.updateStatus(a, { status: '{"ready":true}' }), false);
      assert.deepEqual(await s.objects.get(a.id), after);
    },
  },
  {
    name:
      "updateStatus by version: identical text at a higher version writes, at the same version or version 0 does not, and a refused or idle call leaves row and log as they were",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      assert.equal(await s.objects.updateStatus(a, { status: '"up"', statusVersion: 2 }), true);
      const written = await footprint(s, a);
      assert.equal(written.object.statusVersion, 2);
      assert.equal(await s.objects.updateStatus(a, { status: '"up"', statusVersion: 2 }), false);
      assert.equal(await s.objects.updateStatus(a, { status: '"up"' }), false);
      await assert.rejects(
        s.objects.updateStatus(a, { status: '"down"', statusVersion: 1 }),
        SchemaVersionDowngradeError,
      );
      assert.deepEqual(await footprint(s, a), written);
      assert.equal(await s.objects.updateStatus(a, { status: '"up"', statusVersion: 3 }), true);
      const bumped = await s.objects.get(a.id);
      assert.equal(bumped.statusVersion, 3);
      assert.equal(bumped.status, '"up"');
      assert.equal(await logCount(s, Widget), written.log + 1);
      // Version 0 keeps the stored tag on a write that changes the text.
      assert.equal(await s.objects.updateStatus(a, { status: '"down"' }), true);
      const kept = await s.objects.get(a.id);
      assert.equal(kept.statusVersion, 3);
      assert.equal(kept.status, '"down"');
      assert.equal(kept.resourceVersion, await s.objectWrites.maxVersion(Widget));
    },
  },
  {
    name: "updateStatus is kind-scoped on both branches",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await assert.rejects(
        s.objects.updateStatus(ref(Gadget, a.id), { status: "1" }),
        WrongKindError,
      );
      await assert.rejects(
        s.objects.updateStatus(ref(Widget, 404), { status: "1" }),
        NotFoundError,
      );
    },
  },
  {
    name: "setObservedGeneration settles without touching updatedAt, once per generation",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const before = await s.objects.get(a.id);
      assert.equal(await s.objects.setObservedGeneration(a, 1), true);
      const after = await s.objects.get(a.id);
      assert.equal(after.observedGeneration, 1);
      assert.ok(after.observedAt instanceof Date);
      assert.deepEqual(after.updatedAt, before.updatedAt);
      assert.ok(after.resourceVersion > before.resourceVersion);
      assert.equal(await s.objects.setObservedGeneration(a, 1), false);
      assert.deepEqual(await s.objects.get(a.id), after);
    },
  },
  {
    name: "setObservedGeneration drops a stale report instead of rolling back",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.objects.updateSpec(a, { spec: "2" });
      await s.objects.setObservedGeneration(a, 2);
      assert.equal(await s.objects.setObservedGeneration(a, 1), false);
      assert.equal((await s.objects.get(a.id)).observedGeneration, 2);
    },
  },
  {
    name: "setObservedGeneration refuses future, invalid and foreign-kind generations",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await assert.rejects(s.objects.setObservedGeneration(a, 2), ObservedGenerationFutureError);
      await assert.rejects(s.objects.setObservedGeneration(a, 0), InvalidObservedGenerationError);
      await assert.rejects(s.objects.setObservedGeneration(a, 1.5), InvalidObservedGenerationError);
      await assert.rejects(s.objects.setObservedGeneration(ref(Gadget, a.id), 1), WrongKindError);
      await assert.rejects(s.objects.setObservedGeneration(ref(Widget, 77), 1), NotFoundError);
      assert.equal((await s.objects.get(a.id)).observedGeneration, undefined);
    },
  },
  {
    name: "setObservedGeneration leaves the owed count alone",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.reconcileOwed.stamp([a]);
      await s.objects.setObservedGeneration(a, 1);
      assert.equal((await s.objects.get(a.id)).reconcileOwed, 1);
    },
  },
  {
    name: "deleteFinalizer removes one finalizer and reports clearing the last of a deleting row",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a", {}, ["f1", "f2"]);
      assert.equal(await s.objects.deleteFinalizer(a, "f1"), false);
      assert.deepEqual((await s.objects.get(a.id)).finalizers, ["f2"]);
      await s.deletionRequests.create(a);
      const n = await logCount(s, Widget);
      assert.equal(await s.objects.deleteFinalizer(a, "absent"), false);
      assert.equal(await logCount(s, Widget), n);
      assert.equal(await s.objects.deleteFinalizer(a, "f2"), true);
      assert.deepEqual((await s.objects.get(a.id)).finalizers, []);
      assert.equal(await logCount(s, Widget), n + 1);
    },
  },
  {
    name: "deleteFinalizer on a live row clearing the last finalizer does not report cleared",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a", {}, ["f"]);
      assert.equal(await s.objects.deleteFinalizer(a, "f"), false);
      await assert.rejects(s.objects.deleteFinalizer(ref(Gadget, a.id), "f"), WrongKindError);
      await assert.rejects(s.objects.deleteFinalizer(ref(Widget, 55), "f"), NotFoundError);
    },
  },
  {
    name:
      "delete removes the row, cascades its conditions and events, and a second delete is NotFoundError",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.conditions.set(a, [{ type: "Ready", status: "True" }]);
      await s.events.add(a, { type: "Normal", reason: "Made" });
      await s.objects.delete(a.id);
      await assert.rejects(s.objects.get(a.id), NotFoundError);
      assert.deepEqual(await s.events.list(a.id), []);
      await assert.rejects(s.objects.delete(a.id), NotFoundError);
    },
  },
  {
    name: "delete is refused while another row's edge points at it, and the row stays",
    async fn(h) {
      const s = await h.open();
      const owner = await make(s, Widget, "owner");
      const child = await make(s, Widget, "child");
      await s.edges.add({ fromId: child.id, toId: owner.id, relation: "owned_by" });
      await assert.rejects(s.objects.delete(owner.id), StoreError);
      assert.equal((await s.objects.get(owner.id)).name, "owner");
      await s.objects.delete(child.id);
      await s.objects.delete(owner.id);
    },
  },
  {
    name: "delete succeeds with a self-edge, which goes with the row",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.edges.add({ fromId: a.id, toId: a.id, relation: "depends_on" });
      await s.objects.delete(a.id);
      await assert.rejects(s.objects.get(a.id), NotFoundError);
    },
  },
  {
    name: "getForReconcile returns the row with conditions, a cursor, and hasDependencies",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Widget, "b");
      await s.conditions.set(a, [{ type: "Ready", status: "True" }]);
      const load = await s.objects.getForReconcile(a.id);
      assert.equal(load.object.conditions.length, 1);
      assert.equal(load.hasDependencies, false);
      assert.equal(load.cursor, await s.getLatestResourceVersion());
      await s.edges.add({ fromId: a.id, toId: b.id, relation: "owned_by" });
      assert.equal((await s.objects.getForReconcile(a.id)).hasDependencies, false);
      await s.edges.add({ fromId: a.id, toId: b.id, relation: "depends_on" });
      assert.equal((await s.objects.getForReconcile(a.id)).hasDependencies, true);
      await assert.rejects(s.objects.getForReconcile(999), NotFoundError);
    },
  },
  {
    name: "getForReconcile's object is the one get returns: every condition in type order, or none",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Widget, "b");
      assert.deepEqual((await s.objects.getForReconcile(b.id)).object, await s.objects.get(b.id));
      await s.conditions.set(a, [
        { type: "Synced", status: "False", reason: "Waiting", message: "on b" },
        { type: "Available", status: "True" },
        { type: "Ready", status: "Unknown" },
      ]);
      await s.edges.add({ fromId: a.id, toId: b.id, relation: "depends_on" });
      const load = await s.objects.getForReconcile(a.id);
      assert.deepEqual(load.object, await s.objects.get(a.id));
      assert.deepEqual(load.object.conditions.map((c) => c.type), ["Available", "Ready", "Synced"]);
      assert.equal(load.hasDependencies, true);
      assert.equal((await s.objects.getForReconcile(b.id)).object.conditions.length, 0);
    },
  },
  {
    name: "getForReconcile's cursor never leads the row it loaded",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const load = await s.objects.getForReconcile(a.id);
      assert.ok(load.cursor >= load.object.resourceVersion);
      await s.within(async (tx) => {
        await tx.objects.updateStatus(a, { status: "1" });
        const inner = await tx.objects.getForReconcile(a.id);
        // The transaction's own write is visible, but not yet published.
        assert.equal(inner.object.status, "1");
        assert.ok(inner.cursor < inner.object.resourceVersion);
      });
    },
  },
  {
    name: "every row change appends a write-log entry; a no-op appends none",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a", {}, ["f"]);
      await s.objects.updateSpec(a, { spec: "2" });
      await s.objects.updateStatus(a, { status: "1" });
      await s.objects.setObservedGeneration(a, 2);
      await s.conditions.set(a, [{ type: "Ready", status: "True" }]);
      await s.deletionRequests.create(a);
      await s.objects.deleteFinalizer(a, "f");
      const ops = (await s.objectWrites.listSince(Widget, { after: 0, limit: 100 })).writes.map((
        w,
      ) => w.op);
      assert.deepEqual(ops, ["create", "update", "update", "update", "update", "update", "update"]);
      await s.objects.updateSpec(ref(Gadget, 1), { spec: "x" }).catch(() => {});
      await s.events.add(a, { type: "Normal", reason: "R" });
      await s.objects.updateStatus(a, { status: "1" });
      assert.equal(await logCount(s, Widget), 7);
      await s.objects.delete(a.id);
      const last = (await s.objectWrites.listSince(Widget, { after: 0, limit: 100 })).writes.at(
        -1,
      )!;
      assert.equal(last.op, "delete");
    },
  },
  {
    name: "store errors quote at most a bounded prefix of the user's value, however long it is",
    async fn(h) {
      const s = await h.open();
      const long = "n".repeat(1_000_000);
      const bounded = async (call: () => Promise<unknown>, what: string) => {
        let message = "";
        try {
          await call();
        } catch (error) {
          message = (error as Error).message;
        }
        assert.ok(message !== "", `${what} was refused`);
        assert.ok(message.length < 400, `${what}: a message of ${message.length} characters`);
        assert.match(message, /… \(\d{7} characters\)/, what);
      };
      const w = await make(s, Widget, "w");
      await bounded(() => s.objects.getByName({ ...Widget, name: long }), "a missing name");
      await bounded(
        () => s.objects.getByName({ group: long, kind: "K", name: "x" }),
        "a missing object of a long kind",
      );
      await bounded(
        () => s.objects.create(Widget, { name: `${long}\u0000`, spec: "{}" }),
        "a name with a NUL",
      );
      await bounded(
        () => s.objects.create({ group: `${long}\ud800`, kind: "K" }, { name: "x", spec: "{}" }),
        "a kind with a lone surrogate",
      );
      const t = "t".repeat(1_000_000);
      await bounded(
        () => s.conditions.set(w, [{ type: t, status: "Maybe" as "True" }]),
        "a condition's bad status",
      );
      await bounded(
        () => s.conditions.set(w, [{ type: t, status: "True" }, { type: t, status: "True" }]),
        "a condition type twice",
      );
      await bounded(
        () => s.events.add(w, { type: "Normal", reason: `${long}\u0000` }),
        "an event reason with a NUL",
      );
      await bounded(() => s.driverCursors.set(long, -1), "a driver cursor's bad value");
      const held = await s.leases.acquire({ name: "l", holder: long, duration: 60_000 });
      assert.equal(held.acquired, true);
      await bounded(() => s.leases.hold("l", "other"), "a lease held by a long holder");
    },
  },
];
