/**
 * Store contract cases: transactions.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  BeehiveError,
  ConcurrentNestedTxError,
  NameTakenError,
  NotFoundError,
  StaleTxError,
} from "../../src/model/errors.ts";
import type { Store } from "../../src/store.ts";
import { type ContractCase, Gadget, logCount, make, ref, Widget } from "./harness.ts";

/** The names of a kind's objects, in id order, read through `store`. */
async function names(store: Store, gk = Widget): Promise<string[]> {
  return (await store.objects.list(gk)).map((o) => o.name);
}

/** The write log of `Widget` as "op id" lines, read through `store`. */
async function entries(store: Store): Promise<string[]> {
  return (await store.objectWrites.listSince(Widget, { after: 0, limit: 100 })).writes.map((w) =>
    `${w.op} ${w.id}`
  );
}

/** A promise and the function that resolves it. */
function gate(): { wait: Promise<void>; open: () => void } {
  const { promise, resolve } = Promise.withResolvers<void>();
  return { wait: promise, open: () => resolve() };
}

export const transactionsCases: ContractCase[] = [
  {
    name:
      "concurrent transactions: one that rejects unwinds alone, the others commit and run their hooks",
    async fn(h) {
      const s = await h.open();
      const hooks: string[] = [];
      const boom = new Error("boom");
      const run = (name: string, fail = false) =>
        s.within(async (tx) => {
          await tx.objects.create(Widget, { name, spec: "{}" });
          await tx.within(async (inner) => {
            await inner.objects.create(Widget, { name: `${name}-inner`, spec: "{}" });
          });
          tx.afterCommit(() => void hooks.push(name));
          if (fail) throw boom;
          return name;
        });
      const results = await Promise.allSettled([run("a"), run("b", true), run("c"), run("d")]);
      assert.deepEqual(results.map((r) => r.status), [
        "fulfilled",
        "rejected",
        "fulfilled",
        "fulfilled",
      ]);
      assert.equal((results[1] as PromiseRejectedResult).reason, boom, "fn's own rejection");
      // Concurrent transactions have no order among themselves: only which hooks ran counts.
      assert.deepEqual([...hooks].sort(), ["a", "c", "d"]);
      assert.deepEqual((await names(s)).sort(), [
        "a",
        "a-inner",
        "c",
        "c-inner",
        "d",
        "d-inner",
      ]);
    },
  },
  {
    name:
      "concurrent transactions: each resolves after its commit, and its handle is stale afterwards",
    async fn(h) {
      const s = await h.open();
      const handles: Store[] = [];
      await Promise.all(["a", "b", "c"].map((name) =>
        s.within(async (tx) => {
          handles.push(tx);
          await tx.objects.create(Widget, { name, spec: "{}" });
        })
      ));
      for (const tx of handles) {
        await assert.rejects(tx.objects.create(Widget, { name: "late", spec: "{}" }), StaleTxError);
      }
      assert.deepEqual((await names(s)).sort(), ["a", "b", "c"]);
    },
  },
  {
    name:
      "concurrent single-call writes each commit or fail alone: a refused one takes nothing of the others",
    async fn(h) {
      const s = await h.open();
      await make(s, Widget, "taken");
      const names = ["a", "b", "taken", "c", "d"];
      const results = await Promise.allSettled(
        names.map((name) => s.objects.create(Widget, { name, spec: "{}" })),
      );
      assert.deepEqual(results.map((r) => r.status), [
        "fulfilled",
        "fulfilled",
        "rejected",
        "fulfilled",
        "fulfilled",
      ]);
      assert.ok((results[2] as PromiseRejectedResult).reason instanceof NameTakenError);
      assert.deepEqual((await s.objects.list(Widget)).map((o) => o.name).sort(), [
        "a",
        "b",
        "c",
        "d",
        "taken",
      ]);
      // Each landed write has its own version and its own log entry (concurrent calls have no order).
      const rvs = results.filter((r) => r.status === "fulfilled").map((r) =>
        (r as PromiseFulfilledResult<{ resourceVersion: number }>).value.resourceVersion
      );
      assert.equal(new Set(rvs).size, 4);
      assert.equal(await logCount(s, Widget), 5);
    },
  },
  {
    name: "concurrent writes through a fenced handle and the root: the stale fence fails alone",
    async fn(h) {
      const s = await h.open();
      const first = await s.leases.acquire({ name: "l", holder: "a", duration: 1 });
      const stale = s.fenced({ lease: "l", epoch: first.lease.epoch });
      await s.leases.release({ name: "l", holder: "a", epoch: first.lease.epoch });
      await s.leases.acquire({ name: "l", holder: "b", duration: 60_000 });
      const results = await Promise.allSettled([
        s.objects.create(Widget, { name: "root", spec: "{}" }),
        stale.objects.create(Widget, { name: "stale", spec: "{}" }),
        s.objects.create(Widget, { name: "root-2", spec: "{}" }),
      ]);
      assert.deepEqual(results.map((r) => r.status), ["fulfilled", "rejected", "fulfilled"]);
      assert.equal((results[1] as PromiseRejectedResult).reason.name, "FencedError");
      assert.deepEqual((await names(s)).sort(), ["root", "root-2"]);
    },
  },
  {
    name: "within commits every write when fn resolves",
    async fn(h) {
      const s = await h.open();
      const before = await s.getLatestResourceVersion();
      await s.within(async (tx) => {
        await make(tx, Widget, "a");
        await make(tx, Widget, "b");
      });
      assert.deepEqual(await names(s), ["a", "b"]);
      assert.equal(await logCount(s, Widget), 2);
      assert.ok(await s.getLatestResourceVersion() > before);
    },
  },
  {
    name: "within rolls back every write and runs no hook when fn rejects",
    async fn(h) {
      const s = await h.open();
      await make(s, Widget, "kept");
      const before = await s.getLatestResourceVersion();
      const ran: string[] = [];
      const boom = new Error("boom");
      await assert.rejects(
        s.within(async (tx) => {
          await make(tx, Widget, "a");
          await tx.objects.updateSpec((await tx.objects.list(Widget))[0], { spec: '{"v":2}' });
          tx.afterCommit(() => {
            ran.push("hook");
          });
          throw boom;
        }),
        (error) => error === boom,
      );
      assert.deepEqual(await names(s), ["kept"]);
      assert.equal((await s.objects.getByName({ ...Widget, name: "kept" })).spec, "{}");
      assert.equal(await logCount(s, Widget), 1);
      assert.equal(await s.getLatestResourceVersion(), before);
      assert.deepEqual(ran, []);
    },
  },
  {
    name: "within resolves to fn's value",
    async fn(h) {
      const s = await h.open();
      const got = await s.within(async (tx) => {
        const o = await tx.objects.create(Widget, { name: "a", spec: "{}" });
        return { id: o.id, tag: "done" };
      });
      assert.equal(got.tag, "done");
      assert.equal((await s.objects.get(got.id)).name, "a");
    },
  },
  {
    name: "a transaction handle's families work and read the transaction's own writes",
    async fn(h) {
      const s = await h.open();
      await s.within(async (tx) => {
        const o = await tx.objects.create(Widget, { name: "a", spec: '{"x":1}' });
        assert.equal((await tx.objects.get(o.id)).spec, '{"x":1}');
        assert.equal((await tx.objects.getByName({ ...Widget, name: "a" })).id, o.id);
        await tx.conditions.set({ ...Widget, id: o.id }, [{ type: "Ready", status: "True" }]);
        assert.deepEqual(
          (await tx.objects.get(o.id)).conditions.map((c) => c.type),
          ["Ready"],
        );
        assert.equal(await logCount(tx, Widget), 2);
        assert.equal(
          await tx.objectWrites.maxVersion(Widget),
          (await tx.objects.get(o.id)).resourceVersion,
        );
        assert.equal(tx.identity, s.identity);
      });
    },
  },
  {
    name: "a failing call inside a transaction leaves nothing behind and the rest commits",
    async fn(h) {
      const s = await h.open();
      await s.within(async (tx) => {
        await make(tx, Widget, "a");
        await assert.rejects(tx.objects.create(Widget, { name: "a", spec: "{}" }), NameTakenError);
        await assert.rejects(tx.objects.get(999), NotFoundError);
        await make(tx, Widget, "b");
      });
      assert.deepEqual(await names(s), ["a", "b"]);
      assert.equal(await logCount(s, Widget), 2);
    },
  },
  {
    name: "a nested within joins the transaction and commits with the outermost",
    async fn(h) {
      const s = await h.open();
      await s.within(async (tx) => {
        await make(tx, Widget, "outer");
        const v = await tx.within(async (inner) => {
          await make(inner, Widget, "inner");
          assert.deepEqual(await names(inner), ["outer", "inner"]);
          return 7;
        });
        assert.equal(v, 7);
        assert.deepEqual(await names(tx), ["outer", "inner"]);
        // Nothing is visible outside until the outermost commit.
        assert.deepEqual(await names(s), []);
      });
      assert.deepEqual(await names(s), ["outer", "inner"]);
    },
  },
  {
    name: "a nested rejection propagates and, when the outer rethrows, everything rolls back",
    async fn(h) {
      const s = await h.open();
      const boom = new Error("inner");
      await assert.rejects(
        s.within(async (tx) => {
          await make(tx, Widget, "outer");
          await tx.within(async (inner) => {
            await make(inner, Widget, "inner");
            throw boom;
          });
        }),
        (error) => error === boom,
      );
      assert.deepEqual(await names(s), []);
    },
  },
  {
    name: "a nested rejection the outer swallows unwinds only the nested frame's writes and hooks",
    async fn(h) {
      const s = await h.open();
      const ran: string[] = [];
      await s.within(async (tx) => {
        await make(tx, Widget, "before");
        tx.afterCommit(() => {
          ran.push("outer-before");
        });
        await assert.rejects(
          tx.within(async (inner) => {
            await make(inner, Widget, "inner");
            inner.afterCommit(() => {
              ran.push("inner");
            });
            throw new Error("inner fails");
          }),
          /inner fails/,
        );
        assert.deepEqual(await names(tx), ["before"]);
        await make(tx, Widget, "after");
        tx.afterCommit(() => {
          ran.push("outer-after");
        });
      });
      assert.deepEqual(await names(s), ["before", "after"]);
      assert.equal(await logCount(s, Widget), 2);
      assert.deepEqual(ran, ["outer-before", "outer-after"]);
    },
  },
  {
    name:
      "the write log inside a transaction: each read sees the transaction's entries so far, an unwound frame's are gone whether read before the unwind or not, and exactly the rest commit",
    async fn(h) {
      const s = await h.open();
      const ids: Record<string, number> = {};
      await s.within(async (tx) => {
        ids.a = (await make(tx, Widget, "a")).id;
        assert.deepEqual(await entries(tx), [`create ${ids.a}`]);
        await assert.rejects(
          tx.within(async (inner) => {
            ids.b = (await make(inner, Widget, "b")).id;
            // Read inside the frame, then written to again before it unwinds.
            assert.deepEqual(await entries(inner), [`create ${ids.a}`, `create ${ids.b}`]);
            await inner.objects.updateSpec(ref(Widget, ids.a), { spec: '{"v":2}' });
            throw new Error("unwind");
          }),
          /unwind/,
        );
        assert.deepEqual(await entries(tx), [`create ${ids.a}`]);
        await assert.rejects(
          tx.within(async (inner) => {
            // Never read inside the frame.
            await make(inner, Widget, "c");
            throw new Error("unwind");
          }),
          /unwind/,
        );
        await tx.objects.updateSpec(ref(Widget, ids.a), { spec: '{"v":3}' });
        ids.d = (await make(tx, Widget, "d")).id;
      });
      assert.deepEqual(await entries(s), [`create ${ids.a}`, `update ${ids.a}`, `create ${ids.d}`]);
      const writes = (await s.objectWrites.listSince(Widget, { after: 0, limit: 100 })).writes;
      const versions = writes.map((w) => w.resourceVersion);
      assert.deepEqual(versions, [...versions].sort((x, y) => x - y), "entries in version order");
      assert.equal(
        versions.at(-1),
        (await s.objects.get(ids.d)).resourceVersion,
        "the last entry is the last write's",
      );
      assert.equal(await s.objectWrites.maxVersion(Widget), versions.at(-1));
    },
  },
  {
    name:
      "a write made before a nested frame and first read from the log inside it survives the frame's unwind",
    async fn(h) {
      const s = await h.open();
      const ids: Record<string, number> = {};
      await s.within(async (tx) => {
        ids.a = (await make(tx, Widget, "a")).id;
        await assert.rejects(
          tx.within(async (inner) => {
            assert.deepEqual(await entries(inner), [`create ${ids.a}`]);
            ids.b = (await make(inner, Widget, "b")).id;
            throw new Error("unwind");
          }),
          /unwind/,
        );
        assert.deepEqual(await entries(tx), [`create ${ids.a}`]);
        ids.c = (await make(tx, Widget, "c")).id;
      });
      assert.deepEqual(await entries(s), [`create ${ids.a}`, `create ${ids.c}`]);
      assert.equal(await logCount(s, Widget), 2);
    },
  },
  {
    name:
      "concurrent single writes, one refused between others of its group: the log holds exactly the entries of the writes that committed",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const before = (await s.objectWrites.listSince(Widget, { after: 0, limit: 100 })).writes;
      const results = await Promise.allSettled([
        s.objects.updateSpec(a, { spec: '{"v":1}' }),
        s.objects.create(Widget, { name: "a", spec: "{}" }),
        s.objects.create(Widget, { name: "b", spec: "{}" }),
        s.objects.updateSpec(a, { spec: '{"v":2}' }),
      ]);
      assert.deepEqual(results.map((r) => r.status), [
        "fulfilled",
        "rejected",
        "fulfilled",
        "fulfilled",
      ]);
      assert.ok((results[1] as PromiseRejectedResult).reason instanceof NameTakenError);
      const b = await s.objects.getByName({ ...Widget, name: "b" });
      const after = (await s.objectWrites.listSince(Widget, { after: 0, limit: 100 })).writes;
      assert.deepEqual(
        after.slice(before.length).map((w) => `${w.op} ${w.id}`).sort(),
        [`create ${b.id}`, `update ${a.id}`, `update ${a.id}`].sort(),
      );
      assert.equal(after.at(-1)!.resourceVersion, await s.getLatestResourceVersion());
    },
  },
  {
    name:
      "concurrent single writes, one refused after part of its work (a new label set) was written: it leaves nothing, and exactly the others commit",
    async fn(h) {
      const s = await h.open();
      await make(s, Widget, "taken");
      const results = await Promise.allSettled([
        s.objects.create(Widget, { name: "a", spec: "{}", labels: { ring: "a" } }),
        s.objects.create(Widget, { name: "taken", spec: "{}", labels: { ring: "new" } }),
        s.objects.create(Widget, { name: "b", spec: "{}" }),
      ]);
      assert.deepEqual(results.map((r) => r.status), ["fulfilled", "rejected", "fulfilled"]);
      assert.ok((results[1] as PromiseRejectedResult).reason instanceof NameTakenError);
      const ring = async (value: string) =>
        (await s.objects.list(Widget, {
          labelSelector: [{ key: "ring", operator: "In", values: [value] }],
        })).map((o) => o.name);
      assert.deepEqual(await ring("a"), ["a"]);
      assert.deepEqual(await ring("new"), []);
      assert.deepEqual(await names(s), ["taken", "a", "b"]);
      assert.equal(await logCount(s, Widget), 3);
      await s.objects.create(Widget, { name: "c", spec: "{}", labels: { ring: "new" } });
      assert.deepEqual(await ring("new"), ["c"]);
    },
  },
  {
    name: "sibling nested frames are independent: one unwinding leaves the other's work",
    async fn(h) {
      const s = await h.open();
      const ran: string[] = [];
      await s.within(async (tx) => {
        await tx.within(async (a) => {
          await make(a, Widget, "a");
          a.afterCommit(() => {
            ran.push("a");
          });
        });
        await tx.within(async (b) => {
          await make(b, Widget, "b");
          b.afterCommit(() => {
            ran.push("b");
          });
          throw new Error("b fails");
        }).catch(() => {});
        await tx.within(async (c) => {
          await make(c, Widget, "c");
          c.afterCommit(() => {
            ran.push("c");
          });
        });
      });
      assert.deepEqual(await names(s), ["a", "c"]);
      assert.deepEqual(ran, ["a", "c"]);
    },
  },
  {
    name: "deep nesting works, and an unwind lands at the depth that failed",
    async fn(h) {
      const s = await h.open();
      const ran: number[] = [];
      const depth = 12;
      const failAt = 8;
      // Each level writes, registers a hook, then opens the next; level failAt throws after
      // its children and level failAt - 1 swallows it.
      const level = async (tx: Store, n: number): Promise<void> => {
        await make(tx, Widget, `l${n}`);
        tx.afterCommit(() => {
          ran.push(n);
        });
        if (n < depth) {
          const next = tx.within((inner) => level(inner, n + 1));
          if (n === failAt - 1) await next.catch(() => {});
          else await next;
        }
        if (n === failAt) throw new Error(`level ${n} fails`);
      };
      await s.within((tx) => level(tx, 1));
      const kept = Array.from({ length: failAt - 1 }, (_, i) => i + 1);
      assert.deepEqual(await names(s), kept.map((n) => `l${n}`));
      assert.deepEqual(ran, kept);
    },
  },
  {
    name: "afterCommit outside a transaction runs at once",
    async fn(h) {
      const s = await h.open();
      let ran = 0;
      s.afterCommit(() => {
        ran++;
      });
      assert.equal(ran, 1);
    },
  },
  {
    name:
      "afterCommit hooks run after the outermost commit, in registration order, awaited before within resolves",
    async fn(h) {
      const s = await h.open();
      const log: string[] = [];
      const seen: string[][] = [];
      await s.within(async (tx) => {
        await make(tx, Widget, "a");
        tx.afterCommit(async () => {
          // The commit is visible to a reader outside the transaction by now.
          seen.push(await names(s));
          await Promise.resolve();
          log.push("first");
        });
        await tx.within(async (inner) => {
          await make(inner, Widget, "b");
          inner.afterCommit(() => {
            log.push("nested");
          });
        });
        tx.afterCommit(async () => {
          for (let i = 0; i < 5; i++) await Promise.resolve();
          log.push("last");
        });
        assert.deepEqual(log, []);
      });
      assert.deepEqual(log, ["first", "nested", "last"]);
      assert.deepEqual(seen, [["a", "b"]]);
    },
  },
  {
    name: "a hook may write through the root store: the writer is free by the time hooks run",
    async fn(h) {
      const s = await h.open();
      await s.within(async (tx) => {
        await make(tx, Widget, "a");
        tx.afterCommit(async () => {
          await make(s, Widget, "from-hook");
          await s.within(async (again) => {
            await make(again, Widget, "from-hook-tx");
          });
        });
      });
      assert.deepEqual(await names(s), ["a", "from-hook", "from-hook-tx"]);
    },
  },
  {
    name: "a hook registered from a running hook runs",
    async fn(h) {
      const s = await h.open();
      const log: string[] = [];
      await s.within(async (tx) => {
        await make(tx, Widget, "a");
        tx.afterCommit(() => {
          log.push("outer");
          tx.afterCommit(() => {
            log.push("from-hook");
          });
        });
      });
      assert.deepEqual([...log].sort(), ["from-hook", "outer"]);
    },
  },
  {
    name: "afterCommit through a committed transaction's handle runs at once",
    async fn(h) {
      const s = await h.open();
      let captured: Store | undefined;
      await s.within(async (tx) => {
        captured = tx;
        await make(tx, Widget, "a");
      });
      let ran = 0;
      captured!.afterCommit(() => {
        ran++;
      });
      assert.equal(ran, 1);
    },
  },
  {
    name: "no hook runs after a rollback, including one registered on the handle afterwards",
    async fn(h) {
      const s = await h.open();
      let ran = 0;
      let captured: Store | undefined;
      await assert.rejects(
        s.within(async (tx) => {
          captured = tx;
          await tx.within(async (inner) => {
            await make(inner, Widget, "inner");
            inner.afterCommit(() => {
              ran++;
            });
          });
          tx.afterCommit(() => {
            ran++;
          });
          throw new Error("rollback");
        }),
        /rollback/,
      );
      captured!.afterCommit(() => {
        ran++;
      });
      assert.equal(ran, 0);
      assert.deepEqual(await names(s), []);
    },
  },
  {
    name: "a hook registered against a frame that already unwound never runs",
    async fn(h) {
      const s = await h.open();
      const ran: string[] = [];
      let unwound: Store | undefined;
      let releasedChild: Store | undefined;
      await s.within(async (tx) => {
        await tx.within(async (inner) => {
          unwound = inner;
          await make(inner, Widget, "unwound");
          throw new Error("unwind");
        }).catch(() => {});
        // A frame that committed into a parent which then unwound is gone with it.
        await tx.within(async (parent) => {
          await parent.within(async (child) => {
            releasedChild = child;
            await make(child, Widget, "child");
          });
          throw new Error("unwind parent");
        }).catch(() => {});
        unwound!.afterCommit(() => {
          ran.push("unwound");
        });
        releasedChild!.afterCommit(() => {
          ran.push("released-child");
        });
        tx.afterCommit(() => {
          ran.push("outer");
        });
      });
      assert.deepEqual(ran, ["outer"]);
      assert.deepEqual(await names(s), []);
    },
  },
  {
    name: "a hook that throws does not undo the commit or stop the next hook",
    async fn(h) {
      const s = await h.open();
      const ran: string[] = [];
      const got = await s.within(async (tx) => {
        await make(tx, Widget, "a");
        tx.afterCommit(() => {
          throw new Error("hook fails");
        });
        tx.afterCommit(async () => {
          await Promise.resolve();
          throw new Error("async hook fails");
        });
        tx.afterCommit(() => {
          ran.push("next");
        });
        return "value";
      });
      assert.equal(got, "value");
      assert.deepEqual(ran, ["next"]);
      assert.deepEqual(await names(s), ["a"]);
    },
  },
  {
    name: "a transaction handle used after its frame ended rejects with StaleTxError",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      let outer: Store | undefined;
      let inner: Store | undefined;
      await s.within(async (tx) => {
        outer = tx;
        await tx.within(async (t) => {
          inner = t;
          await make(t, Widget, "nested");
        });
        // The nested frame released; its handle is done even though the outer is open.
        await assert.rejects(inner!.objects.get(a.id), StaleTxError);
        await assert.rejects(make(inner!, Widget, "late"), StaleTxError);
        await assert.rejects(inner!.within(async () => {}), StaleTxError);
      });
      await assert.rejects(outer!.objects.get(a.id), StaleTxError);
      await assert.rejects(make(outer!, Widget, "late"), StaleTxError);
      await assert.rejects(outer!.getLatestResourceVersion(), StaleTxError);
      await assert.rejects(outer!.within(async () => {}), StaleTxError);
      assert.deepEqual(await names(s), ["a", "nested"]);
    },
  },
  {
    name: "a rolled-back transaction's handle rejects with StaleTxError",
    async fn(h) {
      const s = await h.open();
      let outer: Store | undefined;
      await assert.rejects(
        s.within(async (tx) => {
          outer = tx;
          await make(tx, Widget, "doomed");
          throw new Error("rollback");
        }),
        /rollback/,
      );
      await assert.rejects(make(outer!, Widget, "late"), StaleTxError);
      assert.deepEqual(await names(s), []);
    },
  },
  {
    name: "a handle used while a nested frame it opened is open rejects with StaleTxError",
    async fn(h) {
      const s = await h.open();
      await s.within(async (tx) => {
        await make(tx, Widget, "a");
        await tx.within(async (inner) => {
          await assert.rejects(tx.objects.list(Widget), StaleTxError);
          await assert.rejects(make(tx, Widget, "through-outer"), StaleTxError);
          await make(inner, Widget, "through-inner");
        });
        // Usable again once the nested frame ended.
        await make(tx, Widget, "b");
      });
      assert.deepEqual(await names(s), ["a", "through-inner", "b"]);
    },
  },
  {
    name: "two nested frames opened at once on one handle reject with ConcurrentNestedTxError",
    async fn(h) {
      const s = await h.open();
      let first: PromiseSettledResult<void> | undefined;
      let second: PromiseSettledResult<void> | undefined;
      await assert.rejects(
        s.within(async (tx) => {
          await make(tx, Widget, "outer");
          [first, second] = await Promise.allSettled([
            tx.within(async (a) => {
              await make(a, Widget, "first");
            }),
            tx.within(async (b) => {
              await make(b, Widget, "second");
            }),
          ]);
          if (second.status === "rejected") throw second.reason;
        }),
        ConcurrentNestedTxError,
      );
      assert.equal(first?.status, "fulfilled");
      assert.equal(second?.status, "rejected");
      assert.deepEqual(await names(s), []);
    },
  },
  {
    name:
      "an outer fn resolving while a nested frame is open rejects with ConcurrentNestedTxError and rolls back everything",
    async fn(h) {
      const s = await h.open();
      const before = await s.getLatestResourceVersion();
      const g = gate();
      let orphan: Promise<void> | undefined;
      let hooks = 0;
      await assert.rejects(
        s.within(async (tx) => {
          await make(tx, Widget, "outer");
          tx.afterCommit(() => {
            hooks++;
          });
          orphan = tx.within(async (inner) => {
            await make(inner, Widget, "inner");
            inner.afterCommit(() => {
              hooks++;
            });
            await g.wait;
            await make(inner, Widget, "too-late");
          });
        }),
        ConcurrentNestedTxError,
      );
      g.open();
      await assert.rejects(orphan!, StaleTxError);
      assert.deepEqual(await names(s), []);
      assert.equal(await logCount(s, Widget), 0);
      assert.equal(await s.getLatestResourceVersion(), before);
      assert.equal(hooks, 0);
    },
  },
  {
    name:
      "a nested fn resolving while a frame nested in it is open rejects with ConcurrentNestedTxError and unwinds that frame",
    async fn(h) {
      const s = await h.open();
      const g = gate();
      let orphan: Promise<void> | undefined;
      await s.within(async (tx) => {
        await make(tx, Widget, "outer");
        await assert.rejects(
          tx.within(async (mid) => {
            await make(mid, Widget, "mid");
            orphan = mid.within(async (deep) => {
              await make(deep, Widget, "deep");
              await g.wait;
            });
          }),
          ConcurrentNestedTxError,
        );
        g.open();
        await assert.rejects(orphan!, StaleTxError);
        await make(tx, Widget, "after");
      });
      assert.deepEqual(await names(s), ["outer", "after"]);
    },
  },
  {
    name: "a root read during an open transaction neither waits for it nor sees its writes",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.within(async (tx) => {
        await tx.objects.updateSpec(a, { spec: '{"v":2}' });
        await make(tx, Widget, "b");
        assert.deepEqual(await names(tx), ["a", "b"]);
        assert.equal((await tx.objects.get(a.id)).spec, '{"v":2}');
        // Awaited inside the transaction: a read that waited for it would never resolve.
        assert.deepEqual(await names(s), ["a"]);
        assert.equal((await s.objects.get(a.id)).spec, "{}");
        assert.equal(await logCount(s, Widget), 1);
      });
      assert.deepEqual(await names(s), ["a", "b"]);
      assert.equal((await s.objects.get(a.id)).spec, '{"v":2}');
    },
  },
  {
    name: "a root write issued during an open transaction runs after it commits",
    async fn(h) {
      const s = await h.open();
      let queued: Promise<number> | undefined;
      let settled = false;
      let inTx = 0;
      await s.within(async (tx) => {
        queued = make(s, Gadget, "root").then((r) => {
          settled = true;
          return r.id;
        });
        inTx = (await make(tx, Widget, "tx")).id;
        for (let i = 0; i < 10; i++) await Promise.resolve();
        assert.equal(settled, false);
        assert.deepEqual(await names(tx, Gadget), []);
      });
      const rootId = await queued!;
      const txRow = await s.objects.get(inTx);
      const rootRow = await s.objects.get(rootId);
      assert.ok(rootRow.resourceVersion > txRow.resourceVersion);
      const all = await s.objectWrites.listSinceAll({ after: 0, limit: 10 });
      assert.deepEqual(all.writes.map((w) => w.id), [inTx, rootId]);
    },
  },
  {
    name: "close through a transaction handle rejects and the store stays open",
    async fn(h) {
      const s = await h.open();
      await s.within(async (tx) => {
        await assert.rejects(tx.close(), BeehiveError);
        await make(tx, Widget, "a");
      });
      assert.deepEqual(await names(s), ["a"]);
    },
  },
];
