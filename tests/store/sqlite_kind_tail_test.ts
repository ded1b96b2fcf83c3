/**
 * Kind tails served from the SQLite store's commit journal: a tail hands out
 * the store's own commits from memory, with the rows the writes left, and
 * reads the log whenever something it did not see may have committed —
 * another connection, a transaction already open when it started, more than
 * it holds. Whatever it hands out is exactly the log: every case compares
 * the tail's entries with `listSince` over the same range.
 *
 * @module
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { openKindTailSymbol, type TailWrite } from "../../src/watches/kind_tail.ts";
import type { GroupKind, Store } from "../../src/store.ts";
import { openSqliteStore } from "../_sqlite_driver.ts";
import { MAX_HELD } from "../../store/sqlite/_kind_tails.ts";
import { tempDir } from "../_beehive_harness.ts";
import { test } from "../_test.ts";
import { holdWriter } from "./_held_writer.ts";
import { DatabaseSync } from "node:sqlite";
import type { Driver } from "../../store/sqlite/_driver.ts";
import { nodeSqliteDriver } from "../../store/sqlite/_node_sqlite.ts";
import { SqliteStore } from "../../store/sqlite/sqlite_store.ts";
import { GROUP_TURNS } from "../../store/sqlite/_dialect.ts";

const Widget: GroupKind = { group: "test.beehive.dev", kind: "Widget" };
const Gadget: GroupKind = { group: "test.beehive.dev", kind: "Gadget" };

async function withStore(fn: (store: SqliteStore, path: string) => Promise<void>): Promise<void> {
  const dir = tempDir();
  const path = dir.file("tail.db");
  const store = await openSqliteStore(path);
  try {
    await fn(store, path);
  } finally {
    await store.close();
    dir.remove();
  }
}

/** Everything the tail has above `after`, page by page, with where it ended. */
async function readAll(
  tail: ReturnType<SqliteStore[typeof openKindTailSymbol]>,
  after: number,
): Promise<TailWrite[]> {
  const out: TailWrite[] = [];
  for (;;) {
    const page = await tail.read(after, 512);
    out.push(...page.writes);
    if (page.writes.length < 512) return out;
    after = page.writes[page.writes.length - 1].resourceVersion;
  }
}

/** The log's entries of `gk` above `after`, as `(version, id, op)`. */
async function logged(store: Store, gk: GroupKind, after: number): Promise<string[]> {
  const out: string[] = [];
  for (;;) {
    const { writes } = await store.objectWrites.listSince(gk, { after, limit: 512 });
    for (const w of writes) out.push(`${w.resourceVersion}:${w.id}:${w.op}`);
    if (writes.length < 512) return out;
    after = writes[writes.length - 1].resourceVersion;
  }
}

const brief = (ws: readonly TailWrite[]) => ws.map((w) => `${w.resourceVersion}:${w.id}:${w.op}`);

test("SQLite kind tail: the store's own commits come from memory, with the rows they left", async () => {
  await withStore(async (store) => {
    const start = await store.objectWrites.maxVersion(Widget);
    const tail = store[openKindTailSymbol](Widget);
    try {
      const a = await store.objects.create(Widget, { name: "a", spec: '{"n":0}' });
      await store.objects.create(Gadget, { name: "g", spec: "{}" }); // another kind's
      const updated = await store.objects.updateSpec(a, { spec: '{"n":1}' });
      await store.objects.updateStatus(a, { status: '{"ok":true}' });
      await store.objects.delete(a.id);
      const got = await readAll(tail, start);
      assert.deepEqual(brief(got), await logged(store, Widget, start));
      assert.deepEqual(got.map((w) => w.op), ["create", "update", "update", "delete"]);
      // The create and the spec update carry their rows; the status write has none at hand.
      assert.equal(got[0].row?.spec, '{"n":0}');
      assert.deepEqual(got[1].row, updated.object);
      assert.equal(got[2].row, undefined);
      assert.equal(got[3].row, undefined);
      assert.equal(got[3].final?.id, a.id);
      assert.equal(got[3].final?.status, '{"ok":true}');
      // Nothing more, and asking again from the end gives nothing.
      assert.deepEqual((await tail.read(got[3].resourceVersion, 512)).writes, []);
    } finally {
      tail.close();
    }
  });
});

test("SQLite kind tail: a commit through another connection is read from the log, and nothing is lost", async () => {
  await withStore(async (store, path) => {
    const start = await store.objectWrites.maxVersion(Widget);
    const tail = store[openKindTailSymbol](Widget);
    const other = await openSqliteStore(path);
    try {
      await store.objects.create(Widget, { name: "mine-1", spec: "{}" });
      const first = await readAll(tail, start);
      assert.equal(first.length, 1);
      assert.ok(first[0].row !== undefined, "served from memory");
      let at = first[0].resourceVersion;
      await other.objects.create(Widget, { name: "theirs", spec: "{}" });
      // Read before this store writes again: the other connection's commit must not wait for it.
      const foreign = await readAll(tail, at);
      assert.deepEqual(brief(foreign), await logged(store, Widget, at));
      assert.equal(foreign.length, 1);
      assert.equal(foreign[0].row, undefined, "read from the log");
      at = foreign[0].resourceVersion;
      await other.objects.create(Widget, { name: "theirs-2", spec: "{}" });
      await store.objects.create(Widget, { name: "mine-2", spec: "{}" });
      const mixed = await readAll(tail, at);
      assert.deepEqual(brief(mixed), await logged(store, Widget, at));
      assert.equal(mixed.length, 2);
      at = mixed[1].resourceVersion;
      // After a read that reached the end, the store's own commits come from memory again.
      await store.objects.create(Widget, { name: "mine-3", spec: "{}" });
      const again = await readAll(tail, at);
      assert.equal(again.length, 1);
      assert.ok(again[0].row !== undefined, "from memory again");
    } finally {
      tail.close();
      await other.close();
    }
  });
});

test("SQLite kind tail: what a rolled-back member, transaction or nested frame wrote never reaches it", async () => {
  await withStore(async (store) => {
    const start = await store.objectWrites.maxVersion(Widget);
    const tail = store[openKindTailSymbol](Widget);
    try {
      const a = await store.objects.create(Widget, { name: "a", spec: "{}" });
      // Queue a group behind an open transaction: members commit together, one rolls back.
      const held = await holdWriter(store);
      const kept = store.objects.create(Widget, { name: "kept", spec: "{}" });
      const rolledBack = store.within(async (tx) => {
        await tx.objects.create(Widget, { name: "lost", spec: "{}" });
        await tx.objects.updateSpec(a, { spec: '{"lost":true}' });
        throw new Error("this transaction rolls back");
      });
      const nested = store.within(async (tx) => {
        await tx.within(async (inner) => {
          await inner.objects.create(Widget, { name: "inner-lost", spec: "{}" });
          throw new Error("this frame rolls back");
        }).catch(() => {});
        await tx.objects.create(Widget, { name: "outer-kept", spec: "{}" });
      });
      held.release();
      await held.done;
      await kept;
      await assert.rejects(rolledBack, /this transaction rolls back/);
      await nested;
      const got = await readAll(tail, start);
      assert.deepEqual(brief(got), await logged(store, Widget, start));
      const names = got.map((w) => w.row?.name);
      assert.deepEqual(names, ["a", "kept", "outer-kept"]);
    } finally {
      tail.close();
    }
  });
});

test("SQLite kind tail: a transaction already open when the tail started is not missed", async () => {
  await withStore(async (store) => {
    const start = await store.objectWrites.maxVersion(Widget);
    const held = await holdWriter(
      store,
      (tx) => tx.objects.create(Widget, { name: "early", spec: "{}" }),
    );
    const tail = store[openKindTailSymbol](Widget);
    try {
      // A read while it is open: nothing yet, and the tail now covers the log up to here.
      assert.deepEqual(await readAll(tail, start), []);
      held.release();
      await held.done;
      const got = await readAll(tail, start);
      assert.deepEqual(brief(got), await logged(store, Widget, start));
      assert.equal(got.length, 1);
      // The store knows its own commit went by unjournaled, and read the log for it.
      assert.equal(got[0].row, undefined);
    } finally {
      tail.close();
    }
  });
});

test("SQLite kind tail: a reader that falls further behind than the tail holds reads the log", async () => {
  await withStore(async (store) => {
    const start = await store.objectWrites.maxVersion(Widget);
    const tail = store[openKindTailSymbol](Widget);
    try {
      await store.within(async (tx) => {
        for (let i = 0; i <= MAX_HELD; i++) {
          await tx.objects.create(Widget, { name: `w${i}`, spec: "{}" });
        }
      });
      const got = await readAll(tail, start);
      assert.equal(got.length, MAX_HELD + 1);
      assert.deepEqual(brief(got), await logged(store, Widget, start));
      assert.ok(got.every((w) => w.row === undefined), "read from the log");
    } finally {
      tail.close();
    }
  });
});

test("SQLite kind tail: another process's commit landing between a read's check and its hand-out is not skipped", async () => {
  // A driver whose writer, when armed, lets "another process" commit a log entry just before its
  // next BEGIN IMMEDIATE: that transaction's batch then starts the tail's coverage over above it.
  let armed = false;
  let foreign: DatabaseSync | undefined;
  const driver: Driver = {
    open(path) {
      const conn = nodeSqliteDriver.open(path);
      return {
        exec(sql) {
          if (armed && /^BEGIN IMMEDIATE/.test(sql)) {
            armed = false;
            foreign ??= new DatabaseSync(path);
            foreign.exec(`BEGIN IMMEDIATE;
              UPDATE resource_version_seq SET value = value + 1 WHERE id = 1;
              INSERT INTO object_writes (resource_version, object_id, "group", kind, op, written_at)
                SELECT value, 999999, '${Widget.group}', '${Widget.kind}', 2, 0
                FROM resource_version_seq WHERE id = 1;
              COMMIT`);
          }
          conn.exec(sql);
        },
        prepare: (sql) => conn.prepare(sql),
        close: () => conn.close(),
      };
    },
    describeFailure: (e) => nodeSqliteDriver.describeFailure(e),
  };
  // Every alignment of the read against the write's commit, a promise turn apart.
  for (let turns = 0; turns <= 2 * GROUP_TURNS + 4; turns++) {
    const dir = tempDir();
    const store = SqliteStore.open(dir.file("race.db"), {}, driver);
    const tail = store[openKindTailSymbol](Widget);
    try {
      const start = await store.objectWrites.maxVersion(Widget);
      await store.objects.create(Widget, { name: "a", spec: "{}" });
      const got = await readAll(tail, start);
      armed = true;
      const write = store.objects.create(Widget, { name: "b", spec: "{}" });
      for (let i = 0; i < turns; i++) await null;
      got.push(...(await tail.read(got[got.length - 1].resourceVersion, 512)).writes);
      await write;
      got.push(...await readAll(tail, got[got.length - 1].resourceVersion));
      assert.deepEqual(brief(got), await logged(store, Widget, start), `read ${turns} turns in`);
      assert.equal(got.length, 3);
    } finally {
      armed = false;
      tail.close();
      await store.close();
      foreign?.close();
      foreign = undefined;
      dir.remove();
    }
  }
});

test("SQLite kind tail: under any mix of committed and rolled-back writes, its entries are the log's", async () => {
  type Step =
    | { op: "create"; kind: 0 | 1 }
    | { op: "update"; pick: number }
    | { op: "delete"; pick: number }
    | { op: "tx"; fail: boolean; inner: boolean; innerFail: boolean }
    | { op: "group"; fail: boolean }
    | { op: "read" };
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({
      op: fc.constant("create" as const),
      kind: fc.constantFrom(0 as const, 1 as const),
    }),
    fc.record({ op: fc.constant("update" as const), pick: fc.nat() }),
    fc.record({ op: fc.constant("delete" as const), pick: fc.nat() }),
    fc.record({
      op: fc.constant("tx" as const),
      fail: fc.boolean(),
      inner: fc.boolean(),
      innerFail: fc.boolean(),
    }),
    fc.record({ op: fc.constant("group" as const), fail: fc.boolean() }),
    fc.record({ op: fc.constant("read" as const) }),
  );
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30 }), async (steps) => {
      await withStore(async (store) => {
        const start = await store.objectWrites.maxVersion(Widget);
        const tail = store[openKindTailSymbol](Widget);
        const live: { id: number; group: string; kind: string }[] = [];
        let n = 0;
        const got: TailWrite[] = [];
        const drain = async () => {
          const after = got.length > 0 ? got[got.length - 1].resourceVersion : start;
          got.push(...await readAll(tail, after));
        };
        const create = (s: Store, kind: GroupKind) =>
          s.objects.create(kind, { name: `o${n++}`, spec: "{}" }).then((o) => {
            live.push(o);
            return o;
          });
        try {
          for (const s of steps) {
            switch (s.op) {
              case "create":
                await create(store, s.kind === 0 ? Widget : Gadget);
                break;
              case "update":
                if (live.length > 0) {
                  await store.objects.updateSpec(live[s.pick % live.length], {
                    spec: `{"v":${n++}}`,
                  });
                }
                break;
              case "delete":
                if (live.length > 0) {
                  const [gone] = live.splice(s.pick % live.length, 1);
                  await store.objects.delete(gone.id);
                }
                break;
              case "tx": {
                const made: { id: number; group: string; kind: string }[] = [];
                await store.within(async (tx) => {
                  made.push(await create(tx, Widget));
                  if (s.inner) {
                    await tx.within(async (inner) => {
                      await inner.objects.create(Widget, { name: `i${n++}`, spec: "{}" });
                      if (s.innerFail) throw new Error("inner rolls back");
                    }).catch(() => {});
                  }
                  if (s.fail) throw new Error("rolls back");
                }).catch(() => {});
                if (s.fail) { for (const m of made) live.splice(live.indexOf(m), 1); }
                break;
              }
              case "group": {
                const held = await holdWriter(store);
                const members = [
                  create(store, Widget),
                  store.within(async (tx) => {
                    await tx.objects.create(Widget, { name: `g${n++}`, spec: "{}" });
                    if (s.fail) throw new Error("member rolls back");
                  }).catch(() => {}),
                  create(store, Gadget),
                ];
                held.release();
                await held.done;
                await Promise.all(members);
                break;
              }
              case "read":
                await drain();
                break;
            }
          }
          await drain();
          assert.deepEqual(brief(got), await logged(store, Widget, start));
        } finally {
          tail.close();
        }
      });
    }),
    { numRuns: 40 },
  );
});
