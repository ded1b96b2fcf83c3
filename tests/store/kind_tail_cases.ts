/**
 * Kind tails served from a SQL store's commit journal (`store/sql/_kind_tails.ts`),
 * as cases any SQL store runs (`sqlite_kind_tail_test.ts`,
 * `postgres_kind_tail_test.ts`): a tail hands out the store's own commits
 * from memory, with the rows the writes left, and reads the log whenever
 * something it did not see may have committed — another open of the store, a
 * transaction already open when it started, more than it holds. Whatever it
 * hands out is exactly the log: every case compares the tail's entries with
 * `listSince` over the same range.
 *
 * @module
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  type KindTailSource,
  openKindTailSymbol,
  type TailWrite,
} from "../../src/watches/kind_tail.ts";
import type { GroupKind, Store } from "../../src/store.ts";
import { MAX_HELD } from "../../store/sql/_kind_tails.ts";
import { test } from "../_test.ts";
import { holdWriter } from "./_held_writer.ts";

/** A store that tails kinds from memory. */
export type TailStore = Store & KindTailSource;

/** How the cases open one SQL store. */
export interface TailStoreFactory {
  /** Names the tests: "SQLite", "PostgreSQL". */
  readonly name: string;
  /** Whether another open's commit reaches this one as an announcement it must wait for. */
  readonly announced: boolean;
  /** Opens a fresh store, and a second open of the same store on demand; `done` cleans up. */
  open(): Promise<{ store: TailStore; reopen(): Promise<Store>; done(): void }>;
}

export const Widget: GroupKind = { group: "test.beehive.dev", kind: "Widget" };
export const Gadget: GroupKind = { group: "test.beehive.dev", kind: "Gadget" };

async function withStore(
  f: TailStoreFactory,
  fn: (store: TailStore, reopen: () => Promise<Store>) => Promise<void>,
): Promise<void> {
  const { store, reopen, done } = await f.open();
  try {
    await fn(store, reopen);
  } finally {
    await store.close();
    done();
  }
}

/** Resolves once `store` hears a commit another open made. */
function commitHeard(store: Store): Promise<void> {
  const { promise, resolve } = Promise.withResolvers<void>();
  const stop = store.watchCommits(() => {
    stop();
    resolve();
  });
  return promise;
}

/** Everything the tail has above `after`, page by page, with where it ended. */
export async function readAll(
  tail: ReturnType<TailStore[typeof openKindTailSymbol]>,
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
export async function logged(store: Store, gk: GroupKind, after: number): Promise<string[]> {
  const out: string[] = [];
  for (;;) {
    const { writes } = await store.objectWrites.listSince(gk, { after, limit: 512 });
    for (const w of writes) out.push(`${w.resourceVersion}:${w.id}:${w.op}`);
    if (writes.length < 512) return out;
    after = writes[writes.length - 1].resourceVersion;
  }
}

export const brief = (ws: readonly TailWrite[]) =>
  ws.map((w) => `${w.resourceVersion}:${w.id}:${w.op}`);

/** Registers the kind-tail cases on the store `f` opens. */
export function kindTailCases(f: TailStoreFactory): void {
  test(`${f.name} kind tail: the store's own commits come from memory, with the rows they left`, async () => {
    await withStore(f, async (store) => {
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

  test(`${f.name} kind tail: a commit through another connection is read from the log, and nothing is lost`, async () => {
    await withStore(f, async (store, reopen) => {
      const start = await store.objectWrites.maxVersion(Widget);
      const tail = store[openKindTailSymbol](Widget);
      const other = await reopen();
      try {
        await store.objects.create(Widget, { name: "mine-1", spec: "{}" });
        const first = await readAll(tail, start);
        assert.equal(first.length, 1);
        assert.ok(first[0].row !== undefined, "served from memory");
        let at = first[0].resourceVersion;
        const heard = f.announced ? commitHeard(store) : undefined;
        await other.objects.create(Widget, { name: "theirs", spec: "{}" });
        // Read before this store writes again: the other open's commit must not wait for it
        // (once this open has heard of it, where commits are announced).
        await heard;
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

  test(`${f.name} kind tail: what a rolled-back member, transaction or nested frame wrote never reaches it`, async () => {
    await withStore(f, async (store) => {
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

  test(`${f.name} kind tail: the store's own commit landing while a read is out to the log is neither skipped nor handed out twice`, async () => {
    // Every alignment of the commit against the log read, a promise turn apart (on an
    // asynchronous store the read's snapshot is taken some round trips in).
    for (let turns = 0; turns <= 12; turns++) {
      await withStore(f, async (store) => {
        const start = await store.objectWrites.maxVersion(Widget);
        const tail = store[openKindTailSymbol](Widget);
        try {
          await store.objects.create(Widget, { name: "before", spec: "{}" });
          // Nothing is covered yet: this read goes to the log.
          const reading = tail.read(start, 512);
          for (let i = 0; i < turns; i++) await null;
          await store.objects.create(Widget, { name: "during", spec: "{}" });
          const got = [...(await reading).writes];
          got.push(
            ...await readAll(tail, got.length > 0 ? got[got.length - 1].resourceVersion : start),
          );
          await store.objects.create(Widget, { name: "after", spec: "{}" });
          got.push(...await readAll(tail, got[got.length - 1].resourceVersion));
          assert.deepEqual(
            brief(got),
            await logged(store, Widget, start),
            `commit ${turns} turns in`,
          );
          assert.equal(got.length, 3);
        } finally {
          tail.close();
        }
      });
    }
  });

  test(`${f.name} kind tail: a deletion cascade's marks, logged by one statement for many rows where the store can, come from memory as the log has them`, async () => {
    await withStore(f, async (store) => {
      const owner = await store.objects.create(Gadget, { name: "owner", spec: "{}" });
      const children = [];
      for (let i = 0; i < 3; i++) {
        const c = await store.objects.create(Widget, { name: `c${i}`, spec: "{}" });
        await store.edges.add({ fromId: c.id, toId: owner.id, relation: "owned_by" });
        children.push(c);
      }
      const start = await store.objectWrites.maxVersion(Widget);
      const tail = store[openKindTailSymbol](Widget);
      try {
        await store.objects.create(Widget, { name: "first", spec: "{}" });
        const got = await readAll(tail, start);
        await store.deletionRequests.createFromOwner(owner.id);
        got.push(...await readAll(tail, got[0].resourceVersion));
        assert.deepEqual(brief(got), await logged(store, Widget, start));
        assert.deepEqual(got.slice(1).map((w) => w.id), children.map((c) => c.id));
        assert.ok(got[0].row !== undefined, "served from memory");
      } finally {
        tail.close();
      }
    });
  });

  test(`${f.name} kind tail: a transaction already open when the tail started is not missed`, async () => {
    await withStore(f, async (store) => {
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

  test(`${f.name} kind tail: a reader that falls further behind than the tail holds reads the log`, async () => {
    await withStore(f, async (store) => {
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

  test(`${f.name} kind tail: under any mix of committed and rolled-back writes, its entries are the log's`, async () => {
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
        await withStore(f, async (store) => {
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
}
