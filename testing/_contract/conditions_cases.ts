/**
 * Store contract cases: conditions.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  DuplicateConditionTypeError,
  InvalidConditionError,
  NotFoundError,
  WrongKindError,
} from "../../src/model/errors.ts";
import type { ConditionInput, RawCondition, Store } from "../../src/store.ts";
import {
  type ContractCase,
  footprint,
  Gadget,
  logCount,
  make,
  ref,
  Widget,
  withFakeDate,
} from "./harness.ts";

/** `id`'s condition of type `type`, read through `get`. */
async function cond(store: Store, id: number, type: string): Promise<RawCondition | undefined> {
  return (await store.objects.get(id)).conditions.find((c) => c.type === type);
}

export const conditionsCases: ContractCase[] = [
  {
    name: "a condition round-trips through get, getByName and list with defaults filled in",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Widget, "b");
      await s.conditions.set(a, [{ type: "Ready", status: "True" }]);
      const [got] = (await s.objects.get(a.id)).conditions;
      assert.equal(got.type, "Ready");
      assert.equal(got.status, "True");
      assert.equal(got.reason, "");
      assert.equal(got.message, "");
      assert.equal(got.liveness, false);
      assert.equal(got.unconfirmed, false);
      assert.ok(got.transitionedAt instanceof Date);
      assert.ok(got.updatedAt instanceof Date);
      assert.deepEqual(got.transitionedAt, got.updatedAt);
      assert.deepEqual((await s.objects.getByName({ ...Widget, name: "a" })).conditions, [got]);
      const list = await s.objects.list(Widget);
      assert.deepEqual(list.map((o) => o.conditions), [[got], []]);
      assert.deepEqual((await s.objects.get(b.id)).conditions, []);
    },
  },
  {
    name: "a batch lands together, ordered by type, on every read path",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Widget, "b");
      const batch: ConditionInput[] = [
        { type: "Synced", status: "False", reason: "Pending", message: "waiting on b" },
        { type: "Ready", status: "Unknown", reason: "Probe", message: "m", liveness: true },
        { type: "Available", status: "True" },
      ];
      await s.conditions.set(a, batch);
      await s.conditions.set(b, [{ type: "Ready", status: "True" }]);
      const got = (await s.objects.get(a.id)).conditions;
      assert.deepEqual(
        got.map((c) => [c.type, c.status, c.reason, c.message, c.liveness, c.unconfirmed]),
        [
          ["Available", "True", "", "", false, false],
          ["Ready", "Unknown", "Probe", "m", true, false],
          ["Synced", "False", "Pending", "waiting on b", false, false],
        ],
      );
      assert.deepEqual((await s.objects.getByName({ ...Widget, name: "a" })).conditions, got);
      // Two rows take the batched conditions read.
      const list = await s.objects.list(Widget);
      assert.deepEqual(list[0].conditions, got);
      assert.deepEqual(list[1].conditions.map((c) => c.type), ["Ready"]);
      assert.deepEqual((await s.objects.listByIds(Widget, [a.id, b.id]))[0].conditions, got);
    },
  },
  {
    name: "transitionedAt moves only on a status change; updatedAt on any change",
    async fn(h) {
      const s = await h.open();
      await withFakeDate(async (clock) => {
        const a = await make(s, Widget, "a");
        await s.conditions.set(a, [{ type: "Ready", status: "False", reason: "Init" }]);
        const first = (await cond(s, a.id, "Ready"))!;

        clock.tick(1000);
        await s.conditions.set(a, [{ type: "Ready", status: "False", reason: "Still" }]);
        const reasonChanged = (await cond(s, a.id, "Ready"))!;
        assert.deepEqual(reasonChanged.transitionedAt, first.transitionedAt);
        assert.notDeepEqual(reasonChanged.updatedAt, first.updatedAt);
        assert.equal(reasonChanged.updatedAt.getTime(), first.updatedAt.getTime() + 1000);

        clock.tick(1000);
        await s.conditions.set(a, [{ type: "Ready", status: "True", reason: "Still" }]);
        const flipped = (await cond(s, a.id, "Ready"))!;
        assert.equal(flipped.transitionedAt.getTime(), first.transitionedAt.getTime() + 2000);
        assert.deepEqual(flipped.updatedAt, flipped.transitionedAt);

        clock.tick(1000);
        await s.conditions.set(a, [{ type: "Ready", status: "True", reason: "Still" }]);
        assert.deepEqual(await cond(s, a.id, "Ready"), flipped);
      });
    },
  },
  {
    name: "a change bumps the object's resource version and updatedAt and logs one update",
    async fn(h) {
      const s = await h.open();
      await withFakeDate(async (clock) => {
        const a = await make(s, Widget, "a");
        const before = await s.objects.get(a.id);
        clock.tick(1000);
        await s.conditions.set(a, [{ type: "Ready", status: "True" }]);
        const after = await s.objects.get(a.id);
        assert.ok(after.resourceVersion > before.resourceVersion);
        assert.equal(after.updatedAt.getTime(), before.updatedAt.getTime() + 1000);
        assert.equal(after.generation, before.generation);
        assert.equal(await s.getLatestResourceVersion(), after.resourceVersion);
        const writes = (await s.objectWrites.listSince(Widget, { after: 0, limit: 10 })).writes;
        assert.deepEqual(
          writes.map((w) => [w.op, w.id, w.resourceVersion]),
          [["create", a.id, before.resourceVersion], ["update", a.id, after.resourceVersion]],
        );
      });
    },
  },
  {
    name: "an identical write is suppressed: no version, no log entry, no stamp moves",
    async fn(h) {
      const s = await h.open();
      await withFakeDate(async (clock) => {
        const a = await make(s, Widget, "a");
        const c = { type: "Ready", status: "True", reason: "R", message: "M" } as const;
        await s.conditions.set(a, [c]);
        const before = await footprint(s, a);
        clock.tick(1000);
        await s.conditions.set(a, [c]);
        assert.deepEqual(await footprint(s, a), before);
      });
    },
  },
  {
    name: "a condition read back and written again is a no-op: read-only fields are ignored",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.conditions.set(a, [
        { type: "Ready", status: "True", liveness: true },
        { type: "Synced", status: "False", reason: "R" },
      ]);
      const before = await footprint(s, a);
      await s.conditions.set(a, before.object.conditions);
      assert.deepEqual(await footprint(s, a), before);
    },
  },
  {
    name: "unconfirmed is ignored on write",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const input = { type: "Ready", status: "True", liveness: true, unconfirmed: true };
      await s.conditions.set(a, [input as ConditionInput]);
      const got = (await cond(s, a.id, "Ready"))!;
      assert.equal(got.status, "True");
      assert.equal(got.unconfirmed, false);
      const before = await footprint(s, a);
      await s.conditions.set(a, [{ type: "Ready", status: "True", liveness: true }]);
      assert.deepEqual(await footprint(s, a), before);
    },
  },
  {
    name: "a batch takes one version and one log entry, and an unchanged member keeps its stamps",
    async fn(h) {
      const s = await h.open();
      await withFakeDate(async (clock) => {
        const a = await make(s, Widget, "a");
        await s.conditions.set(a, [
          { type: "A", status: "True" },
          { type: "B", status: "True" },
          { type: "C", status: "True" },
        ]);
        const before = await s.objects.get(a.id);
        const log = await logCount(s, Widget);
        clock.tick(1000);
        await s.conditions.set(a, [
          { type: "A", status: "False" },
          { type: "B", status: "True" },
          { type: "C", status: "True", message: "changed" },
          { type: "D", status: "Unknown" },
        ]);
        const after = await s.objects.get(a.id);
        assert.equal(await logCount(s, Widget), log + 1);
        assert.ok(after.resourceVersion > before.resourceVersion);
        // One draw for the whole batch.
        assert.equal(await s.getLatestResourceVersion(), after.resourceVersion);
        const [ca, cb, cc, cd] = after.conditions;
        const t1 = before.conditions[0].updatedAt.getTime() + 1000;
        assert.deepEqual(cb, before.conditions[1]);
        assert.equal(ca.updatedAt.getTime(), t1);
        assert.equal(ca.transitionedAt.getTime(), t1);
        assert.equal(cc.updatedAt.getTime(), t1);
        assert.deepEqual(cc.transitionedAt, before.conditions[2].transitionedAt);
        assert.equal(cd.type, "D");
        assert.equal(cd.transitionedAt.getTime(), t1);
      });
    },
  },
  {
    name: "a batch whose every member matches writes nothing, and neither does an empty batch",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const batch: ConditionInput[] = [
        { type: "A", status: "True" },
        { type: "B", status: "False", reason: "R", message: "M" },
      ];
      await s.conditions.set(a, batch);
      const before = await footprint(s, a);
      await s.conditions.set(a, [batch[1], batch[0]]);
      assert.deepEqual(await footprint(s, a), before);
      await s.conditions.set(a, []);
      assert.deepEqual(await footprint(s, a), before);
    },
  },
  {
    name: "a batch naming one type twice is DuplicateConditionTypeError and writes nothing",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.conditions.set(a, [{ type: "A", status: "True" }]);
      const before = await footprint(s, a);
      await assert.rejects(
        s.conditions.set(a, [
          { type: "B", status: "True" },
          { type: "A", status: "False" },
          { type: "A", status: "True" },
        ]),
        DuplicateConditionTypeError,
      );
      // Even when both copies are identical.
      await assert.rejects(
        s.conditions.set(a, [{ type: "C", status: "True" }, { type: "C", status: "True" }]),
        DuplicateConditionTypeError,
      );
      assert.deepEqual(await footprint(s, a), before);
    },
  },
  {
    name: "a bad status or an empty type is InvalidConditionError and writes nothing",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const before = await footprint(s, a);
      for (const bad of ["true", "Maybe", "", "TRUE", undefined, 1]) {
        await assert.rejects(
          s.conditions.set(a, [
            { type: "Good", status: "True" },
            { type: "Ready", status: bad } as unknown as ConditionInput,
          ]),
          InvalidConditionError,
          `status ${String(bad)}`,
        );
      }
      await assert.rejects(
        s.conditions.set(a, [{ type: "", status: "True" }]),
        InvalidConditionError,
      );
      assert.deepEqual(await footprint(s, a), before);
    },
  },
  {
    name: "text that is not well-formed UTF-16 is InvalidConditionError in any field",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const before = await footprint(s, a);
      const lone = "x\uD800";
      const bad: ConditionInput[] = [
        { type: lone, status: "True" },
        { type: "Ready", status: lone as "True" },
        { type: "Ready", status: "True", reason: lone },
        { type: "Ready", status: "True", message: lone },
        { type: "Ready", status: "True", message: "\uDC00 trailing" },
      ];
      for (const c of bad) {
        await assert.rejects(s.conditions.set(a, [c]), InvalidConditionError);
      }
      assert.deepEqual(await footprint(s, a), before);
    },
  },
  {
    name: "non-ASCII text round-trips and an identical re-set is a no-op",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const c: ConditionInput = {
        type: "Bereit✓",
        status: "False",
        reason: "Ärger",
        message: "日本語 😀 end",
      };
      await s.conditions.set(a, [c]);
      const got = (await cond(s, a.id, "Bereit✓"))!;
      assert.equal(got.reason, c.reason);
      assert.equal(got.message, c.message);
      assert.equal(
        (await s.objects.getByName({ ...Widget, name: "a" })).conditions[0].type,
        c.type,
      );
      const before = await footprint(s, a);
      await s.conditions.set(a, [{ ...c }]);
      assert.deepEqual(await footprint(s, a), before);
      await s.conditions.delete(a, "Bereit✓");
      assert.deepEqual((await s.objects.get(a.id)).conditions, []);
    },
  },
  {
    name: "delete removes one type, bumping the version and logging one update",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.conditions.set(a, [{ type: "A", status: "True" }, { type: "B", status: "False" }]);
      const before = await s.objects.get(a.id);
      const log = await logCount(s, Widget);
      await s.conditions.delete(a, "A");
      const after = await s.objects.get(a.id);
      assert.deepEqual(after.conditions, [before.conditions[1]]);
      assert.ok(after.resourceVersion > before.resourceVersion);
      assert.equal(await logCount(s, Widget), log + 1);
      const last =
        (await s.objectWrites.listSince(Widget, { after: before.resourceVersion, limit: 5 }))
          .writes;
      assert.deepEqual(last.map((w) => [w.op, w.resourceVersion]), [[
        "update",
        after.resourceVersion,
      ]]);
    },
  },
  {
    name: "deleting an absent type does nothing",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.conditions.set(a, [{ type: "A", status: "True" }]);
      const before = await footprint(s, a);
      await s.conditions.delete(a, "Missing");
      await s.conditions.delete(a, "a");
      assert.deepEqual(await footprint(s, a), before);
    },
  },
  {
    name: "set and delete are kind-scoped, checked before anything is written",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.conditions.set(a, [{ type: "A", status: "True" }]);
      const before = await footprint(s, a);
      const gadgetLog = await logCount(s, Gadget);
      await assert.rejects(
        s.conditions.set(ref(Gadget, a.id), [{ type: "B", status: "True" }]),
        WrongKindError,
      );
      await assert.rejects(
        s.conditions.set(ref(Widget, a.id + 100), [{ type: "B", status: "True" }]),
        NotFoundError,
      );
      await assert.rejects(s.conditions.delete(ref(Gadget, a.id), "A"), WrongKindError);
      await assert.rejects(s.conditions.delete(ref(Widget, a.id + 100), "A"), NotFoundError);
      assert.deepEqual(await footprint(s, a), before);
      assert.equal(await logCount(s, Gadget), gadgetLog);
    },
  },
  {
    name: "other mutators leave conditions intact",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a", {}, ["f"]);
      await s.conditions.set(a, [{ type: "Ready", status: "True", reason: "R" }]);
      const conds = (await s.objects.get(a.id)).conditions;
      await s.objects.updateSpec(a, { spec: '{"v":2}' });
      await s.objects.updateStatus(a, { status: "{}" });
      await s.objects.setObservedGeneration(a, 2);
      await s.deletionRequests.create(a);
      await s.objects.deleteFinalizer(a, "f");
      assert.deepEqual((await s.objects.get(a.id)).conditions, conds);
    },
  },
  {
    reopens: true,
    name: "a liveness condition from an earlier open reads Unknown and unconfirmed on every path",
    async fn(h) {
      const path = h.tempPath("x.db");
      const first = await h.openPath(path);
      const a = await make(first, Widget, "a");
      const b = await make(first, Widget, "b");
      await first.conditions.set(a, [
        { type: "Alive", status: "True", reason: "Heartbeat", message: "pid 1", liveness: true },
        { type: "Ready", status: "True", reason: "Done", message: "ok" },
      ]);
      await first.conditions.set(b, [{ type: "Alive", status: "False", liveness: true }]);
      const stored = (await first.objects.get(a.id)).conditions;
      await first.close();

      const s = await h.openPath(path);
      const [alive, ready] = (await s.objects.get(a.id)).conditions;
      assert.equal(alive.status, "Unknown");
      assert.equal(alive.unconfirmed, true);
      assert.equal(alive.liveness, true);
      assert.equal(alive.reason, "Heartbeat");
      assert.equal(alive.message, "pid 1");
      assert.deepEqual(alive.transitionedAt, stored[0].transitionedAt);
      assert.deepEqual(alive.updatedAt, stored[0].updatedAt);
      // A condition without liveness is unaffected.
      assert.deepEqual(ready, stored[1]);
      const expect = [alive, ready];
      assert.deepEqual((await s.objects.getByName({ ...Widget, name: "a" })).conditions, expect);
      assert.deepEqual((await s.objects.getForReconcile(a.id)).object.conditions, expect);
      // Batched reads (more than one row) downgrade too.
      const list = await s.objects.list(Widget);
      assert.deepEqual(list[0].conditions, expect);
      assert.deepEqual(
        list[1].conditions.map((c) => [c.status, c.unconfirmed]),
        [["Unknown", true]],
      );
      const byIds = await s.objects.listByIds(Widget, [a.id, b.id]);
      assert.deepEqual(byIds[0].conditions, expect);
      assert.equal(byIds[1].conditions[0].unconfirmed, true);
      const snap = await s.objectWrites.snapshot(Widget);
      assert.deepEqual(snap.items[0].conditions, expect);
      assert.deepEqual(
        (await s.objectWrites.snapshotById(Widget, a.id)).items[0].conditions,
        expect,
      );
    },
  },
  {
    reopens: true,
    name: "a liveness condition still reads True after another writable open of the same store",
    async fn(h) {
      const path = h.tempPath("x.db");
      const writer = await h.openPath(path);
      const a = await make(writer, Widget, "a");
      await writer.conditions.set(a, [{ type: "Alive", status: "True", liveness: true }]);
      const other = await h.openPath(path);
      // The other open writes too (a client's apply), and opens a third time.
      await make(other, Widget, "b");
      const third = await h.openPath(path);
      for (const [who, s] of [["writer", writer], ["other", other], ["third", third]] as const) {
        const got = (await cond(s, a.id, "Alive"))!;
        assert.deepEqual([got.status, got.unconfirmed], ["True", false], who);
      }
      const list = await other.objects.list(Widget);
      assert.deepEqual(list[0].conditions.map((c) => [c.status, c.unconfirmed]), [["True", false]]);
      const snap = await third.objectWrites.snapshot(Widget);
      assert.equal(snap.items[0].conditions[0].status, "True");
    },
  },
  {
    reopens: true,
    name:
      "two open writers each read the other's liveness condition as True while both are open, and Unknown once it closed",
    async fn(h) {
      const path = h.tempPath("x.db");
      const first = await h.openPath(path);
      const a = await make(first, Widget, "a");
      const second = await h.openPath(path);
      const b = await make(second, Widget, "b");
      await first.conditions.set(a, [{ type: "Alive", status: "True", liveness: true }]);
      await second.conditions.set(b, [{ type: "Alive", status: "False", liveness: true }]);
      const read = async (s: Store) =>
        (await s.objects.list(Widget)).map((o) =>
          o.conditions.map((c) => [c.status, c.unconfirmed])
        );
      assert.deepEqual(await read(first), [[["True", false]], [["False", false]]]);
      assert.deepEqual(await read(second), [[["True", false]], [["False", false]]]);
      await second.close();
      assert.deepEqual(await read(first), [[["True", false]], [["Unknown", true]]]);
    },
  },
  {
    reopens: true,
    name:
      "a liveness condition reads Unknown once the open that wrote it has closed, and stays so when a later open takes its place",
    async fn(h) {
      const path = h.tempPath("x.db");
      const writer = await h.openPath(path);
      const a = await make(writer, Widget, "a");
      const b = await make(writer, Widget, "b");
      await writer.conditions.set(a, [{ type: "Alive", status: "True", liveness: true }]);
      const other = await h.openPath(path);
      assert.equal((await cond(other, a.id, "Alive"))!.status, "True");
      await writer.close();
      const gone = (await cond(other, a.id, "Alive"))!;
      assert.deepEqual([gone.status, gone.unconfirmed], ["Unknown", true]);
      // A restarted process writes liveness of its own (taking whatever proves it alive):
      // its predecessor's row still reads Unknown, to it and to every other open.
      const restarted = await h.openPath(path);
      await restarted.conditions.set(b, [{ type: "Alive", status: "True", liveness: true }]);
      for (const s of [restarted, other]) {
        const got = (await s.objects.list(Widget)).map((o) => o.conditions[0].status);
        assert.deepEqual(got, ["Unknown", "True"]);
      }
      await restarted.close();
      assert.equal((await cond(other, b.id, "Alive"))!.status, "Unknown");
    },
  },
  {
    reopens: true,
    name: "an Unknown liveness condition written in this open is not unconfirmed",
    async fn(h) {
      const path = h.tempPath("x.db");
      const first = await h.openPath(path);
      const a = await make(first, Widget, "a");
      await first.close();
      const s = await h.openPath(path);
      await s.conditions.set(a, [{ type: "Alive", status: "Unknown", liveness: true }]);
      const got = (await cond(s, a.id, "Alive"))!;
      assert.equal(got.status, "Unknown");
      assert.equal(got.unconfirmed, false);
      assert.equal(got.liveness, true);
    },
  },
  {
    reopens: true,
    name:
      "re-setting the identical liveness condition after a reopen rewrites it and clears the downgrade",
    async fn(h) {
      const path = h.tempPath("x.db");
      const first = await h.openPath(path);
      const a = await make(first, Widget, "a");
      const alive: ConditionInput = {
        type: "Alive",
        status: "True",
        reason: "Heartbeat",
        liveness: true,
      };
      const ready: ConditionInput = { type: "Ready", status: "True" };
      await first.conditions.set(a, [alive, ready]);
      await first.close();

      const s = await h.openPath(path);
      await withFakeDate(async (clock) => {
        clock.tick(60_000);
        // A non-liveness condition stored by the earlier open is still a match.
        const before = await footprint(s, a);
        await s.conditions.set(a, [ready]);
        assert.deepEqual(await footprint(s, a), before);

        await s.conditions.set(a, [alive, ready]);
        const after = await s.objects.get(a.id);
        assert.ok(after.resourceVersion > before.object.resourceVersion);
        assert.equal(await logCount(s, Widget), before.log + 1);
        const got = after.conditions[0];
        assert.equal(got.status, "True");
        assert.equal(got.unconfirmed, false);
        assert.equal(got.reason, "Heartbeat");
        assert.equal(got.updatedAt.getTime(), Date.now());
        assert.ok(got.updatedAt > before.object.conditions[0].updatedAt);
        // Ready was unchanged within the batch and keeps its stamps.
        assert.deepEqual(after.conditions[1], before.object.conditions[1]);

        // Confirmed in this open, so a repeat is suppressed again.
        const confirmed = await footprint(s, a);
        await s.conditions.set(a, [alive]);
        assert.deepEqual(await footprint(s, a), confirmed);
      });
    },
  },
  {
    name: "set and delete join a transaction and roll back with it",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.conditions.set(a, [{ type: "A", status: "True" }]);
      const before = await footprint(s, a);
      await assert.rejects(
        s.within(async (tx) => {
          await tx.conditions.set(a, [{ type: "B", status: "True" }]);
          await tx.conditions.delete(a, "A");
          assert.deepEqual((await tx.objects.get(a.id)).conditions.map((c) => c.type), ["B"]);
          throw new Error("rollback");
        }),
        /rollback/,
      );
      assert.deepEqual(await footprint(s, a), before);
    },
  },
  {
    name: "set refuses condition text with NUL, which would read back cut short",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await assert.rejects(
        s.conditions.set(a, [{ type: "Ready", status: "True", message: "x\u0000y" }]),
        InvalidConditionError,
      );
      assert.deepEqual((await s.objects.get(a.id)).conditions, []);
    },
  },
];
