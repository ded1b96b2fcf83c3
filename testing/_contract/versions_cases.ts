/**
 * Store contract cases: versions.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Store } from "../../src/store.ts";
import type { IntegrityReport } from "../../store/sql/_integrity.ts";
import { type ContractCase, Gadget, make, ref, Widget, withFakeDate } from "./harness.ts";

/** Every write-log entry's resource version, ascending by the log's order. */
async function logVersions(store: Store): Promise<number[]> {
  return (await store.objectWrites.listSinceAll({ after: 0, limit: 1_000_000 })).writes.map(
    (w) => w.resourceVersion,
  );
}

/** Asserts `values` strictly increase (so they are also unique). */
function assertIncreasing(values: readonly number[]): void {
  for (let i = 1; i < values.length; i++) {
    assert.ok(
      values[i] > values[i - 1],
      `expected strictly increasing versions, got ${values[i - 1]} then ${values[i]} at ${i}`,
    );
  }
}

export const versionsCases: ContractCase[] = [
  {
    name: "a fresh store's latest version is 0",
    async fn(h) {
      const s = await h.open();
      assert.equal(await s.getLatestResourceVersion(), 0);
    },
  },
  {
    name: "versions are unique and increase in commit order across every kind of write",
    async fn(h) {
      const s = await h.open();
      const seen: number[] = [];
      const a = await s.objects.create(Widget, { name: "a", spec: "{}" });
      seen.push(a.resourceVersion);
      const b = await s.objects.create(Gadget, { name: "b", spec: "{}" });
      seen.push(b.resourceVersion);
      seen.push(
        (await s.objects.updateSpec(ref(Widget, a.id), { spec: "2" })).object.resourceVersion,
      );
      await s.events.add(ref(Widget, a.id), { type: "Normal", reason: "R" });
      seen.push((await s.events.getLatest(a.id, ""))!.resourceVersion);
      await s.objects.updateStatus(ref(Gadget, b.id), { status: "1" });
      seen.push((await s.objects.get(b.id)).resourceVersion);
      await s.events.add(ref(Widget, a.id), { type: "Normal", reason: "R" });
      seen.push((await s.events.getLatest(a.id, ""))!.resourceVersion);
      await s.conditions.set(ref(Widget, a.id), [{ type: "Ready", status: "True" }]);
      seen.push((await s.objects.get(a.id)).resourceVersion);
      await s.objects.delete(b.id);
      seen.push(await s.objectWrites.maxVersion(Gadget));
      assertIncreasing(seen);
      assert.equal(await s.getLatestResourceVersion(), seen.at(-1));
      // The log holds the object writes in the same order, each at its own version.
      const log = await logVersions(s);
      assertIncreasing(log);
      assert.deepEqual(log, [seen[0], seen[1], seen[2], seen[4], seen[6], seen[7]]);
    },
  },
  {
    name: "versions increase in commit order across interleaved transactions",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      // Issued together: each waits for the writer, and commits in turn.
      const writes = await Promise.all([
        s.within(async (tx) => {
          await tx.objects.updateStatus(a, { status: "1" });
          return (await tx.objects.get(a.id)).resourceVersion;
        }),
        s.objects.updateStatus(a, { status: "2" }).then(async () =>
          (await s.objects.get(a.id)).resourceVersion
        ),
        s.within(async (tx) => {
          await make(tx, Gadget, "g");
          return (await tx.objects.getByName({ ...Gadget, name: "g" })).resourceVersion;
        }),
      ]);
      const log = await logVersions(s);
      assertIncreasing(log);
      assert.equal(log.length, 4);
      assert.deepEqual([...writes].sort((x, y) => x - y), log.slice(1));
    },
  },
  {
    name: "a version is never reused after a delete, and neither is an id",
    async fn(h) {
      const s = await h.open();
      const a = await s.objects.create(Widget, { name: "a", spec: "{}" });
      await s.objects.delete(a.id);
      const deletedAt = await s.objectWrites.maxVersion(Widget);
      assert.ok(deletedAt > a.resourceVersion);
      const again = await s.objects.create(Widget, { name: "a", spec: "{}" });
      assert.ok(again.resourceVersion > deletedAt);
      assert.notEqual(again.id, a.id);
      assertIncreasing(await logVersions(s));
    },
  },
  {
    name: "the latest version moves on event writes, which the object log does not see",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const before = await s.getLatestResourceVersion();
      const logBefore = await s.objectWrites.maxVersionAll();
      await s.events.add(a, { type: "Warning", reason: "Boom" });
      const after = await s.getLatestResourceVersion();
      assert.ok(after > before);
      assert.equal(after, (await s.events.getLatest(a.id, ""))!.resourceVersion);
      assert.deepEqual(await s.objectWrites.maxVersionAll(), logBefore);
    },
  },
  {
    name: "the latest version is what was issued, not the end of a reserved block",
    async fn(h) {
      const s = await h.open();
      const a = await s.objects.create(Widget, { name: "a", spec: "{}" });
      assert.equal(await s.getLatestResourceVersion(), a.resourceVersion);
      await s.objects.updateStatus(ref(Widget, a.id), { status: "1" });
      const row = await s.objects.get(a.id);
      assert.equal(await s.getLatestResourceVersion(), row.resourceVersion);
      // A no-op writes nothing and issues nothing.
      await s.objects.updateStatus(ref(Widget, a.id), { status: "1" });
      assert.equal(await s.getLatestResourceVersion(), row.resourceVersion);
    },
  },
  {
    name: "an open transaction publishes nothing until it commits",
    async fn(h) {
      const s = await h.open();
      await make(s, Widget, "a");
      const before = await s.getLatestResourceVersion();
      let drawn = 0;
      await s.within(async (tx) => {
        drawn = (await tx.objects.create(Widget, { name: "b", spec: "{}" })).resourceVersion;
        assert.ok(drawn > before);
        assert.equal(await s.getLatestResourceVersion(), before);
        assert.equal(await tx.getLatestResourceVersion(), before);
      });
      assert.equal(await s.getLatestResourceVersion(), drawn);
    },
  },
  {
    name: "a rolled-back transaction publishes nothing, and the next commit is still above",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const before = await s.getLatestResourceVersion();
      await assert.rejects(
        s.within(async (tx) => {
          await make(tx, Widget, "b");
          await tx.objects.updateStatus(a, { status: "1" });
          await tx.events.add(a, { type: "Normal", reason: "R" });
          throw new Error("rollback");
        }),
        /rollback/,
      );
      assert.equal(await s.getLatestResourceVersion(), before);
      assert.equal(await s.objectWrites.maxVersion(Widget), before);
      await s.objects.updateStatus(a, { status: "2" });
      const after = await s.getLatestResourceVersion();
      assert.ok(after > before);
      assert.equal((await s.objects.get(a.id)).resourceVersion, after);
    },
  },
  {
    name: "a rolled-back transaction drawing past a block publishes nothing",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const before = await s.getLatestResourceVersion();
      await assert.rejects(
        s.within(async (tx) => {
          for (let i = 0; i < 1100; i++) await tx.objects.updateStatus(a, { status: String(i) });
          throw new Error("rollback");
        }),
        /rollback/,
      );
      assert.equal(await s.getLatestResourceVersion(), before);
      const b = await s.objects.create(Widget, { name: "b", spec: "{}" });
      assert.ok(b.resourceVersion > before);
      assert.equal(await s.getLatestResourceVersion(), b.resourceVersion);
      assertIncreasing(await logVersions(s));
    },
  },
  {
    name: "the latest version never falls, even when retention empties the log",
    async fn(h) {
      const s = await h.open();
      await withFakeDate(async (clock) => {
        const a = await make(s, Widget, "a");
        const b = await make(s, Gadget, "b");
        await s.objects.updateStatus(a, { status: "1" });
        await s.objects.updateStatus(b, { status: "1" });
        const latest = await s.getLatestResourceVersion();
        assert.ok(await s.objectWrites.sweep({ perKind: 1, maxAge: 0 }) > 0);
        assert.equal(await s.getLatestResourceVersion(), latest);
        await s.objects.delete(a.id);
        await s.objects.delete(b.id);
        const afterDeletes = await s.getLatestResourceVersion();
        assert.ok(afterDeletes > latest);
        clock.tick(10 * 60_000);
        assert.ok(await s.objectWrites.sweep({ perKind: 0, maxAge: 60_000 }) > 0);
        assert.equal((await s.objectWrites.maxVersionAll()).at, 0);
        assert.equal(await s.getLatestResourceVersion(), afterDeletes);
        const c = await s.objects.create(Widget, { name: "c", spec: "{}" });
        assert.ok(c.resourceVersion > afterDeletes);
      });
    },
  },
  {
    name: "versions cross a reserved block boundary without a repeat or a step back",
    async fn(h) {
      const s = await h.open();
      const o = await s.objects.create(Widget, { name: "a", spec: "{}" });
      const a = ref(Widget, o.id);
      const seen = [o.resourceVersion];
      for (let i = 0; i < 1100; i++) {
        await s.objects.updateStatus(a, { status: String(i) });
        seen.push(await s.getLatestResourceVersion());
      }
      assertIncreasing(seen);
      const log = await logVersions(s);
      assert.equal(log.length, 1101);
      assert.deepEqual(log, seen);
      assert.equal((await s.objects.get(a.id)).resourceVersion, seen.at(-1));
    },
  },
  {
    name: "one transaction may draw more versions than a block holds",
    async fn(h) {
      const s = await h.open();
      await make(s, Gadget, "first");
      const ids = await s.within(async (tx) => {
        const out: number[] = [];
        for (let i = 0; i < 1100; i++) {
          out.push((await tx.objects.create(Widget, { name: `w${i}`, spec: "{}" })).id);
        }
        return out;
      });
      const rows = await s.objects.list(Widget);
      assert.deepEqual(rows.map((o) => o.id), ids);
      const versions = rows.map((o) => o.resourceVersion);
      assertIncreasing(versions);
      assert.equal(await s.getLatestResourceVersion(), versions.at(-1));
      const next = await s.objects.create(Gadget, { name: "next", spec: "{}" });
      assert.ok(next.resourceVersion > versions.at(-1)!);
      assertIncreasing(await logVersions(s));
    },
  },
  {
    reopens: true,
    name: "versions survive a reopen and resume above everything issued before",
    async fn(h) {
      const path = h.tempPath("x.db");
      const first = await h.openPath(path);
      const a = await make(first, Widget, "a");
      for (let i = 0; i < 1030; i++) await first.objects.updateStatus(a, { status: String(i) });
      await first.events.add(a, { type: "Normal", reason: "R" });
      const issued = await first.getLatestResourceVersion();
      assert.ok(issued > 1024);
      await first.close();

      const second = await h.openPath(path);
      assert.ok(await second.getLatestResourceVersion() >= issued);
      assert.equal((await second.objects.get(a.id)).status, "1029");
      await second.objects.updateStatus(a, { status: "after" });
      const row = await second.objects.get(a.id);
      assert.ok(row.resourceVersion > issued);
      assert.equal(await second.getLatestResourceVersion(), row.resourceVersion);
      const b = await second.objects.create(Widget, { name: "b", spec: "{}" });
      assert.ok(b.resourceVersion > row.resourceVersion);
      assertIncreasing(await logVersions(second));
      await second.close();

      // A reopen with nothing written in between still moves forward.
      const third = await h.openPath(path);
      assert.ok(await third.getLatestResourceVersion() >= b.resourceVersion);
      const c = await third.objects.create(Widget, { name: "c", spec: "{}" });
      assert.ok(c.resourceVersion > b.resourceVersion);
    },
  },
  {
    reopens: true,
    name: "a reopen after a transaction that drew past a block resumes above it",
    async fn(h) {
      const path = h.tempPath("x.db");
      const first = await h.openPath(path);
      await first.within(async (tx) => {
        for (let i = 0; i < 1100; i++) {
          await tx.objects.create(Widget, { name: `w${i}`, spec: "{}" });
        }
      });
      const issued = await first.getLatestResourceVersion();
      assert.equal(await first.objectWrites.maxVersion(Widget), issued);
      await first.close();

      const second = await h.openPath(path);
      const next = await second.objects.create(Gadget, { name: "g", spec: "{}" });
      assert.ok(next.resourceVersion > issued);
      assertIncreasing(await logVersions(second));
    },
  },
  {
    name:
      "check on a healthy store reports ok, the schema version and every check it ran, and writes nothing",
    async fn(h) {
      const s = await h.open();
      const owner = await make(s, Widget, "owner");
      const child = await make(s, Gadget, "child");
      await s.edges.add({ fromId: child.id, toId: owner.id, relation: "owned_by" });
      await s.edges.add({ fromId: child.id, toId: owner.id, relation: "depends_on" });
      await s.conditions.set(owner, [{ type: "Ready", status: "True" }]);
      await s.events.add(owner, { type: "Normal", reason: "Made" });
      await s.dependencies.watermarkSet(child.id, 1);
      const latest = await s.getLatestResourceVersion();
      const report = await (s as Store & { check(): Promise<IntegrityReport> }).check();
      assert.deepEqual(report.findings, []);
      assert.equal(report.ok, true);
      assert.ok(report.schemaVersion >= 5, `schema ${report.schemaVersion}`);
      for (const name of ["schema version", "versions under the counter", "dangling edges"]) {
        assert.ok(report.checks.includes(name), name);
      }
      assert.equal(await s.getLatestResourceVersion(), latest);
    },
  },
];
