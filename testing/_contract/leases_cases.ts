/**
 * Store contract cases: leases (timed and held), fencing, and what two
 * connections to one store see of each other's commits.
 *
 * @module
 */
import assert from "node:assert/strict";
import { FencedError, StoreInUseError } from "../../src/model/errors.ts";
import type { Store } from "../../src/store.ts";
import { type ContractCase, type Harness, make, ref, Widget, withFakeDate } from "./harness.ts";

/** Two handles on one store, as two processes would hold it. */
async function twoHandles(h: Harness): Promise<[Store, Store, string]> {
  const path = h.tempPath("shared.db");
  const a = await h.openPath(path);
  const b = await h.openPath(path);
  return [a, b, path];
}

/** Resolves once `store` reports a commit from another connection. */
function nextCommit(store: Store): { seen: Promise<void>; off: () => void } {
  const { promise, resolve } = Promise.withResolvers<void>();
  const off = store.watchCommits(resolve);
  return { seen: promise, off };
}

const D = 10_000;

export const leasesCases: ContractCase[] = [
  {
    name: "leases.get of a lease never taken is undefined",
    async fn(h) {
      const s = await h.open();
      assert.equal(await s.leases.get("never"), undefined);
    },
  },
  {
    name: "leases.acquire takes a free lease at epoch 1 with its holder and expiry",
    async fn(h) {
      const s = await h.open();
      await withFakeDate(async () => {
        const now = Date.now();
        const r = await s.leases.acquire({ name: "l", holder: "a", duration: D });
        assert.equal(r.acquired, true);
        assert.deepEqual(r.lease, {
          name: "l",
          holder: "a",
          epoch: 1,
          acquiredAt: now,
          expiresAt: now + D,
        });
        assert.deepEqual(await s.leases.get("l"), r.lease);
      });
    },
  },
  {
    name: "leases.acquire of a live lease held by another is refused and changes nothing",
    async fn(h) {
      const s = await h.open();
      const first = await s.leases.acquire({ name: "l", holder: "a", duration: D });
      const second = await s.leases.acquire({ name: "l", holder: "b", duration: D });
      assert.equal(second.acquired, false);
      assert.deepEqual(second.lease, first.lease);
      assert.deepEqual(await s.leases.get("l"), first.lease);
    },
  },
  {
    name: "leases.acquire by the holder renews and keeps the epoch",
    async fn(h) {
      const s = await h.open();
      await withFakeDate(async (clock) => {
        const first = await s.leases.acquire({ name: "l", holder: "a", duration: D });
        clock.tick(1_000);
        const again = await s.leases.acquire({ name: "l", holder: "a", duration: D });
        assert.equal(again.acquired, true);
        assert.equal(again.lease.epoch, first.lease.epoch);
        assert.equal(again.lease.expiresAt, Date.now() + D);
      });
    },
  },
  {
    name:
      "a lapsed lease is taken by another holder under a fake clock, and the epoch grows by one",
    async fn(h) {
      const s = await h.open();
      await withFakeDate(async (clock) => {
        await s.leases.acquire({ name: "l", holder: "a", duration: D });
        clock.tick(D - 1);
        assert.equal(
          (await s.leases.acquire({ name: "l", holder: "b", duration: D })).acquired,
          false,
        );
        clock.tick(1);
        const taken = await s.leases.acquire({ name: "l", holder: "b", duration: D });
        assert.equal(taken.acquired, true);
        assert.equal(taken.lease.holder, "b");
        assert.equal(taken.lease.epoch, 2);
        // The old holder's term is over: renew and release refuse it.
        assert.equal(
          await s.leases.renew({ name: "l", holder: "a", epoch: 1, duration: D }),
          undefined,
        );
        assert.equal(await s.leases.release({ name: "l", holder: "a", epoch: 1 }), false);
        assert.equal((await s.leases.get("l"))!.holder, "b");
      });
    },
  },
  {
    name:
      "leases.renew extends the term from now and keeps the epoch; a lapsed lease nobody took renews",
    async fn(h) {
      const s = await h.open();
      await withFakeDate(async (clock) => {
        const { lease } = await s.leases.acquire({ name: "l", holder: "a", duration: D });
        clock.tick(D + 5);
        const renewed = await s.leases.renew({
          name: "l",
          holder: "a",
          epoch: lease.epoch,
          duration: D,
        });
        assert.ok(renewed !== undefined);
        assert.equal(renewed.epoch, lease.epoch);
        assert.equal(renewed.expiresAt, Date.now() + D);
        assert.equal(renewed.acquiredAt, lease.acquiredAt);
        assert.equal(
          await s.leases.renew({ name: "l", holder: "a", epoch: lease.epoch + 1, duration: D }),
          undefined,
          "a wrong epoch is not the holder's term",
        );
      });
    },
  },
  {
    name:
      "leases.release frees the lease at once; the next holder's epoch is above every earlier one",
    async fn(h) {
      const s = await h.open();
      const a = await s.leases.acquire({ name: "l", holder: "a", duration: D });
      assert.equal(await s.leases.release({ name: "l", holder: "a", epoch: a.lease.epoch }), true);
      assert.equal(await s.leases.release({ name: "l", holder: "a", epoch: a.lease.epoch }), false);
      const free = await s.leases.get("l");
      assert.deepEqual(free, {
        name: "l",
        holder: undefined,
        epoch: 1,
        acquiredAt: undefined,
        expiresAt: undefined,
      });
      const b = await s.leases.acquire({ name: "l", holder: "b", duration: D });
      assert.equal(b.acquired, true);
      assert.equal(b.lease.epoch, 2);
      // The same holder coming back after a release is a change of holder too.
      await s.leases.release({ name: "l", holder: "b", epoch: 2 });
      const again = await s.leases.acquire({ name: "l", holder: "b", duration: D });
      assert.equal(again.lease.epoch, 3);
    },
  },
  {
    reopens: true,
    name: "lease epochs are never reused across a reopen",
    async fn(h) {
      const path = h.tempPath("epochs.db");
      const first = await h.openPath(path);
      const a = await first.leases.acquire({ name: "l", holder: "a", duration: D });
      await first.leases.release({ name: "l", holder: "a", epoch: a.lease.epoch });
      const held = await first.leases.hold("plain", "p1");
      await held.release();
      await first.close();
      const second = await h.openPath(path);
      assert.equal(
        (await second.leases.acquire({ name: "l", holder: "b", duration: D })).lease
          .epoch,
        2,
      );
      assert.equal((await second.leases.hold("plain", "p2")).lease.epoch, 2);
    },
  },
  {
    name: "leases are independent by name",
    async fn(h) {
      const s = await h.open();
      await s.leases.acquire({ name: "x", holder: "a", duration: D });
      const y = await s.leases.acquire({ name: "y", holder: "b", duration: D });
      assert.equal(y.acquired, true);
      assert.equal(y.lease.epoch, 1);
    },
  },
  {
    name: "leases refuse malformed names, holders, durations and epochs with a TypeError",
    async fn(h) {
      const s = await h.open();
      const bad: (() => Promise<unknown>)[] = [
        () => s.leases.get(""),
        () => s.leases.acquire({ name: "", holder: "a", duration: D }),
        () => s.leases.acquire({ name: "l", holder: "", duration: D }),
        () => s.leases.acquire({ name: "l", holder: "a\0b", duration: D }),
        () => s.leases.acquire({ name: "l", holder: "a", duration: 0 }),
        () => s.leases.acquire({ name: "l", holder: "a", duration: NaN }),
        () => s.leases.acquire(null as never),
        () => s.leases.renew({ name: "l", holder: "a", epoch: -1, duration: D }),
        () => s.leases.renew({ name: "l", holder: "a", epoch: 1, duration: -5 }),
        () => s.leases.release({ name: "l", holder: "a", epoch: 1.5 }),
        () => s.leases.hold("", "a"),
        () => s.leases.hold("l", 5 as never),
      ];
      for (const call of bad) await assert.rejects(call(), TypeError);
      assert.equal(await s.leases.get("l"), undefined, "nothing was written");
    },
  },
  {
    reopens: true,
    name:
      "leases.hold takes the lease as a lock; a second holder on another connection is refused by name",
    async fn(h) {
      const [a, b] = await twoHandles(h);
      const held = await a.leases.hold("store", "process-a");
      assert.equal(held.lease.holder, "process-a");
      assert.equal(held.lease.expiresAt, undefined);
      await assert.rejects(b.leases.hold("store", "process-b"), (e: unknown) => {
        assert.ok(e instanceof StoreInUseError);
        assert.match(e.message, /process-a/);
        return true;
      });
      await assert.rejects(a.leases.hold("store", "again"), StoreInUseError);
      assert.equal((await b.leases.get("store"))!.holder, "process-a");
      await held.release();
      await held.release();
      const next = await b.leases.hold("store", "process-b");
      assert.equal(next.lease.epoch, held.lease.epoch + 1);
      await next.release();
    },
  },
  {
    reopens: true,
    name:
      "a held lease is freed at once when its holder's store closes, with no expiry to wait for",
    async fn(h) {
      const [a, b] = await twoHandles(h);
      await a.leases.hold("store", "process-a");
      await a.close();
      assert.equal((await b.leases.get("store"))!.holder, undefined, "a dead holder reads as free");
      const next = await b.leases.hold("store", "process-b");
      assert.equal(next.lease.holder, "process-b");
      await next.release();
    },
  },
  {
    reopens: true,
    name: "a held lease and a timed lease of one name keep each other out while live",
    async fn(h) {
      const [a, b] = await twoHandles(h);
      const held = await a.leases.hold("l", "plain");
      assert.equal(
        (await b.leases.acquire({ name: "l", holder: "timed", duration: D })).acquired,
        false,
      );
      await held.release();
      const timed = await b.leases.acquire({ name: "l", holder: "timed", duration: D });
      assert.equal(timed.acquired, true);
      await assert.rejects(a.leases.hold("l", "plain"), StoreInUseError);
      assert.equal((await a.leases.get("l"))!.holder, "timed");
    },
  },
  {
    reopens: true,
    name:
      "leases.hold judges a timed lease of the same name by how long this open has seen it unchanged, never by the holder's clock",
    async fn(h) {
      const [a, b] = await twoHandles(h);
      await withFakeDate(async (clock) => {
        const { lease } = await b.leases.acquire({ name: "l", holder: "timed", duration: D });
        // a's wall clock runs a minute ahead (or jumps): by it, b's expiry is long past.
        clock.setSystemTime(Date.now() + 60_000);
        const hold = () => a.leases.hold("l", "plain");
        await assert.rejects(hold(), StoreInUseError);
        // b renews within every duration: a never sees one term for a whole duration.
        for (let i = 0; i < 3; i++) {
          clock.tick(D / 2);
          await b.leases.renew({ name: "l", holder: "timed", epoch: lease.epoch, duration: D });
          await assert.rejects(hold(), StoreInUseError, `renewal ${i}`);
        }
        // b stops renewing: a holds the lease once it has seen the last term for D.
        clock.tick(D - 1);
        await assert.rejects(hold(), StoreInUseError);
        clock.tick(1);
        const held = await hold();
        assert.equal(held.lease.epoch, lease.epoch + 1);
        assert.equal((await b.leases.get("l"))!.holder, "plain");
        await held.release();
      });
    },
  },
  {
    reopens: true,
    name: "a timed lease is taken over from a held lease whose holder died",
    async fn(h) {
      const [a, b] = await twoHandles(h);
      const held = await a.leases.hold("l", "plain");
      await a.close();
      const timed = await b.leases.acquire({ name: "l", holder: "timed", duration: D });
      assert.equal(timed.acquired, true);
      assert.equal(timed.lease.epoch, held.lease.epoch + 1);
    },
  },
  {
    name: "leases.hold inside a transaction is refused",
    async fn(h) {
      const s = await h.open();
      await assert.rejects(s.within((tx) => tx.leases.hold("l", "a")), /inside a transaction/);
      assert.equal(await s.leases.get("l"), undefined);
    },
  },
  {
    name: "a fenced store writes while its epoch is current, through calls and transactions",
    async fn(h) {
      const s = await h.open();
      const { lease } = await s.leases.acquire({ name: "leader", holder: "a", duration: D });
      const f = s.fenced({ lease: "leader", epoch: lease.epoch });
      const w = await make(f, Widget, "w");
      await f.objects.updateStatus(w, { status: '{"ok":true}' });
      await f.within(async (tx) => {
        await tx.conditions.set(w, [{ type: "Ready", status: "True" }]);
      });
      assert.equal((await s.objects.get(w.id)).status, '{"ok":true}');
      assert.equal((await s.objects.get(w.id)).conditions.length, 1);
    },
  },
  {
    name:
      "a fenced store's writes reject with FencedError and commit nothing once the lease moved on",
    async fn(h) {
      const s = await h.open();
      await withFakeDate(async (clock) => {
        const old = await s.leases.acquire({ name: "leader", holder: "a", duration: D });
        const f = s.fenced({ lease: "leader", epoch: old.lease.epoch });
        const w = await make(f, Widget, "w");
        const before = await s.getLatestResourceVersion();
        clock.tick(D);
        await s.leases.acquire({ name: "leader", holder: "b", duration: D });
        await assert.rejects(f.objects.updateStatus(w, { status: '"late"' }), FencedError);
        await assert.rejects(make(f, Widget, "late"), FencedError);
        await assert.rejects(f.driverCursors.set("c", 5), FencedError);
        let ran = false;
        await assert.rejects(
          f.within(async (tx) => {
            ran = true;
            await tx.objects.updateStatus(w, { status: '"late"' });
          }),
          FencedError,
        );
        assert.equal(ran, false, "the transaction is refused before it runs");
        assert.equal((await s.objects.get(w.id)).status, undefined);
        assert.equal(await s.driverCursors.get("c"), undefined);
        assert.equal(await s.getLatestResourceVersion(), before);
        // Reads through the fenced handle still work.
        assert.equal((await f.objects.get(w.id)).id, w.id);
        // The successor's own fence writes.
        const g = s.fenced({ lease: "leader", epoch: old.lease.epoch + 1 });
        await g.objects.updateStatus(w, { status: '"new"' });
      });
    },
  },
  {
    reopens: true,
    name: "fencing is checked against the lease as committed by another connection",
    async fn(h) {
      const [a, b] = await twoHandles(h);
      const first = await a.leases.acquire({ name: "leader", holder: "a", duration: 1 });
      const fa = a.fenced({ lease: "leader", epoch: first.lease.epoch });
      const w = await make(fa, Widget, "w");
      await withFakeDate(async (clock) => {
        // b first sees the term, then sees it unchanged for its duration.
        assert.equal(
          (await b.leases.acquire({ name: "leader", holder: "b", duration: D })).acquired,
          false,
        );
        clock.tick(D);
        assert.equal(
          (await b.leases.acquire({ name: "leader", holder: "b", duration: D }))
            .acquired,
          true,
        );
      });
      await assert.rejects(fa.objects.updateStatus(w, { status: '"late"' }), FencedError);
      assert.equal((await b.objects.get(w.id)).status, undefined);
    },
  },
  {
    name:
      "leases.acquire judges a timed lease by how long this open has seen it unchanged, never by the holder's clock: a skewed clock takes nothing",
    reopens: true,
    async fn(h) {
      const [a, b] = await twoHandles(h);
      await withFakeDate(async (clock) => {
        const { lease } = await a.leases.acquire({ name: "l", holder: "a", duration: D });
        // b's wall clock runs a minute ahead (or jumps): by it, a's expiry is long past.
        clock.setSystemTime(Date.now() + 60_000);
        const acquire = () => b.leases.acquire({ name: "l", holder: "b", duration: D });
        assert.equal((await acquire()).acquired, false);
        // a renews within every duration: b never sees one term for a whole duration.
        for (let i = 0; i < 5; i++) {
          clock.tick(D / 2);
          await a.leases.renew({ name: "l", holder: "a", epoch: lease.epoch, duration: D });
          assert.equal((await acquire()).acquired, false, `renewal ${i}`);
        }
        // a stops renewing: b takes the lease once it has seen the last term for D.
        clock.tick(D - 1);
        assert.equal((await acquire()).acquired, false);
        clock.tick(1);
        const taken = await acquire();
        assert.equal(taken.acquired, true);
        assert.equal(taken.lease.epoch, lease.epoch + 1);
      });
    },
  },
  {
    name: "fenced refuses a malformed fence with a TypeError",
    async fn(h) {
      const s = await h.open();
      assert.throws(() => s.fenced({ lease: "", epoch: 1 }), TypeError);
      assert.throws(() => s.fenced({ lease: "l", epoch: -1 }), TypeError);
      assert.throws(() => s.fenced(null as never), TypeError);
    },
  },
  {
    reopens: true,
    name: "versions follow commit order across two connections writing in turn",
    async fn(h) {
      const [a, b] = await twoHandles(h);
      const versions: number[] = [];
      for (let i = 0; i < 50; i++) {
        const s = i % 3 === 0 ? b : a;
        versions.push(
          (await s.objects.create(Widget, { name: `w${i}`, spec: "{}" }))
            .resourceVersion,
        );
      }
      for (let i = 1; i < versions.length; i++) {
        assert.ok(versions[i] > versions[i - 1], `version ${versions[i]} after ${versions[i - 1]}`);
      }
      // Each side's log and latest version include the other's writes.
      const log = (await a.objectWrites.listSinceAll({ after: 0, limit: 1000 })).writes;
      assert.deepEqual(log.map((w) => w.resourceVersion), versions);
      assert.equal(await a.getLatestResourceVersion(), versions.at(-1));
      assert.equal(await b.getLatestResourceVersion(), versions.at(-1));
    },
  },
  {
    reopens: true,
    name: "a tailer on one connection misses nothing the other commits",
    async fn(h) {
      const [a, b] = await twoHandles(h);
      let cursor = await a.getLatestResourceVersion();
      const seen: number[] = [];
      const written: number[] = [];
      for (let round = 0; round < 20; round++) {
        for (const s of [a, b, b, a]) {
          written.push((await make(s, Widget, `w${written.length}`)).id);
        }
        const page = await a.objectWrites.listSinceAll({ after: cursor, limit: 1000 });
        for (const w of page.writes) seen.push(w.id);
        if (page.writes.length > 0) cursor = page.writes.at(-1)!.resourceVersion;
      }
      assert.deepEqual(seen, written);
    },
  },
  {
    reopens: true,
    name: "watchCommits hears another connection's commit, and not this connection's own",
    async fn(h) {
      const [a, b] = await twoHandles(h);
      let own = 0;
      const offOwn = a.watchCommits(() => own++);
      const { seen, off } = nextCommit(a);
      try {
        await make(a, Widget, "mine");
        await make(b, Widget, "theirs");
        await seen;
        assert.equal(own, 1, "one wake for the other connection's commit only");
      } finally {
        off();
        offOwn();
      }
    },
  },
  {
    reopens: true,
    name: "getForReconcile's cursor covers another connection's commits",
    async fn(h) {
      const [a, b] = await twoHandles(h);
      const w = await make(a, Widget, "w");
      const other = await b.objects.create(Widget, { name: "x", spec: "{}" });
      const load = await a.objects.getForReconcile(w.id);
      assert.ok(load.cursor >= other.resourceVersion);
      assert.equal(ref(Widget, w.id).id, w.id);
    },
  },
];
