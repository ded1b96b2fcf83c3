/**
 * Leadership in one process under fake time: the plain store lease, and
 * leader election between Beehives on two handles of one database (as two
 * replicas would hold it): start, takeover on stop, loss of the lease
 * aborting passes and stopping dispatch, and fencing of a late write.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  Beehive,
  type BeehiveOptions,
  type ControllerClient,
  FencedError,
  type FencedRepository,
  type ReconcileResult,
  type RegisterOptions,
  settled,
  type StopFunction,
  StoreInUseError,
} from "../mod.ts";
import { openTestStore, type TestStore } from "./_sqlite_driver.ts";
import { recordingLogger, Thing } from "./_beehive_harness.ts";
import { type FakeClock, installFakeTime } from "./_fake_time.ts";
import { FaultStore } from "./reliability/fault_store.ts";
import { test } from "./_test.ts";

const LEASE = { leaseDuration: 3_000, renewInterval: 1_000 };

interface Replica {
  readonly name: string;
  readonly bh: Beehive;
  readonly store: TestStore;
  readonly faulty: FaultStore;
  readonly passes: string[];
  readonly logger: ReturnType<typeof recordingLogger>;
  stop?: StopFunction;
}

interface World {
  readonly clock: FakeClock;
  readonly path: string;
  replica(
    name: string,
    options?: BeehiveOptions,
    reconcile?: Reconcile,
    register?: RegisterOptions,
  ): Promise<Replica>;
  /** Starts each replica and lets its first acquire attempt run, in order: the first one leads. */
  startInTurn(...replicas: Replica[]): Promise<void>;
}

type Reconcile = (
  r: Replica,
  obj: { name: string },
  cc: ControllerClient<{ by: string }>,
) => Promise<ReconcileResult>;

async function withWorld(fn: (w: World) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "beehive-leader-"));
  const clock = installFakeTime();
  const replicas: Replica[] = [];
  try {
    await fn({
      clock,
      path: join(dir, "db.sqlite"),
      async replica(name, options = {}, reconcile, register) {
        const store = await openTestStore(join(dir, "db.sqlite"));
        const faulty = new FaultStore(store);
        const logger = recordingLogger();
        const bh = new Beehive(faulty, {
          logger,
          leaderElection: { identity: name, ...LEASE },
          ...options,
        });
        const r: Replica = { name, bh, store, faulty, passes: [], logger };
        bh.register<unknown, { by: string }>(Thing, async (obj, cc) => {
          r.passes.push(obj.name);
          if (reconcile !== undefined) return await reconcile(r, obj, cc);
          await cc.updateStatus({ by: name });
          return settled();
        }, register);
        replicas.push(r);
        return r;
      },
      async startInTurn(...rs) {
        for (const r of rs) {
          r.stop = await r.bh.start();
          await clock.tickAsync(0);
        }
      },
    });
  } finally {
    for (const r of replicas) {
      r.faulty.faults.clear();
      await r.stop?.();
      await r.store.close();
    }
    clock.uninstall();
    rmSync(dir, { recursive: true, force: true });
  }
}

test("Beehive without leader election holds the store lease: isLeader and leadership() say so, stop releases it", async () => {
  const store = await openTestStore(":memory:");
  try {
    const bh = new Beehive(store, { leaseName: "orders" });
    assert.equal(bh.isLeader, false);
    assert.deepEqual(await bh.leadership(), {
      holder: undefined,
      epoch: 0,
      expiresAt: undefined,
      self: false,
    });
    const stop = await bh.start();
    assert.equal(bh.isLeader, true);
    const lease = await bh.leadership();
    assert.equal(lease.self, true);
    assert.match(lease.holder!, /^beehive-/);
    assert.equal(lease.epoch, 1);
    assert.equal(lease.expiresAt, undefined, "the plain lease never expires by time");
    await stop();
    assert.equal(bh.isLeader, false);
    assert.equal((await bh.leadership()).holder, undefined);
  } finally {
    await store.close();
  }
});

test("Beehive start without election is refused with StoreInUseError while another open of the store holds the lease, and the refused one stays startable", async () => {
  const dir = mkdtempSync(join(tmpdir(), "beehive-lease-"));
  const a = await openTestStore(join(dir, "db.sqlite"));
  const b = await openTestStore(join(dir, "db.sqlite"));
  try {
    const first = new Beehive(a);
    const stopFirst = await first.start();
    // Another open of the file, as another process has it (the in-process claim is keyed
    // on identity, so present the second open under another one).
    const proxied = new Proxy(b, {
      get: (t, p) => p === "identity" ? "elsewhere" : Reflect.get(t, p),
    });
    const second = new Beehive(proxied);
    await assert.rejects(second.start(), (e: unknown) => {
      assert.ok(e instanceof StoreInUseError);
      assert.match(e.message, /beehive-/, "the message names the holder");
      return true;
    });
    await stopFirst();
    const stopSecond = await second.start();
    assert.equal(second.isLeader, true);
    await stopSecond();
  } finally {
    await b.close();
    await a.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("leaderElection: start resolves at once, one candidate leads and only it reconciles", async () => {
  await withWorld(async (w) => {
    const a = await w.replica("a");
    const b = await w.replica("b");
    await w.startInTurn(a, b);
    assert.equal(a.bh.isLeader, true);
    assert.equal(b.bh.isLeader, false);
    const seen = await b.bh.leadership();
    assert.equal(seen.holder, "a");
    assert.equal(seen.self, false);
    assert.equal(seen.epoch, 1);
    assert.ok(seen.expiresAt instanceof Date);
    assert.equal((await a.bh.leadership()).self, true);
    // Clients work in both; only the leader's controller runs.
    await b.bh.client(Thing).create("from-b", {});
    await a.bh.client(Thing).create("from-a", {});
    await w.clock.tickAsync(500);
    assert.deepEqual(a.passes.sort(), ["from-a", "from-b"]);
    assert.deepEqual(b.passes, []);
    // Renewals keep the lease for as long as the leader lives.
    await w.clock.tickAsync(30_000);
    assert.equal(a.bh.isLeader, true);
    assert.equal(b.bh.isLeader, false);
    assert.ok(a.logger.lines.some((l) => l.level === "info" && l.message === "beehive: leading"));
  });
});

test("leaderElection: stop releases the lease and a standby takes over within one acquire attempt", async () => {
  await withWorld(async (w) => {
    const a = await w.replica("a");
    const b = await w.replica("b");
    await w.startInTurn(a, b);
    const stopA = a.stop;
    a.stop = undefined;
    await stopA!();
    assert.equal(a.bh.isLeader, false);
    await w.clock.tickAsync(LEASE.renewInterval);
    assert.equal(b.bh.isLeader, true);
    const lease = await b.bh.leadership();
    assert.equal(lease.holder, "b");
    assert.equal(lease.epoch, 2);
    await b.bh.client(Thing).create("after", {});
    await w.clock.tickAsync(500);
    assert.deepEqual(b.passes, ["after"]);
    assert.ok(a.logger.lines.some((l) => l.message === "beehive: released the leader lease"));
  });
});

test("leaderElection: losing the lease aborts the in-flight pass, stops dispatch at once, and the pass's late write is fenced", async () => {
  await withWorld(async (w) => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const outcome: { aborted?: boolean; error?: unknown } = {};
    const a = await w.replica("a", {}, async (r, obj, cc) => {
      if (obj.name === "slow") {
        await gate;
        outcome.aborted = cc.signal.aborted;
        try {
          await cc.updateStatus({ by: r.name });
        } catch (error) {
          outcome.error = error;
        }
      }
      return settled();
    });
    const b = await w.replica("b");
    await w.startInTurn(a, b);
    await a.bh.client(Thing).create("slow", {});
    await w.clock.tickAsync(10);
    assert.deepEqual(a.passes, ["slow"]);
    // a loses the store: its lease runs out, and b takes it.
    a.faulty.faults.fail("leases.renew");
    a.faulty.faults.fail("leases.acquire");
    await w.clock.tickAsync(LEASE.leaseDuration + LEASE.renewInterval);
    assert.equal(a.bh.isLeader, false);
    assert.equal(b.bh.isLeader, true);
    assert.ok(
      a.logger.lines.some((l) => l.level === "info" && l.message === "beehive: no longer leading"),
    );
    // Dispatch stopped at once: a new object is b's alone.
    await a.bh.client(Thing).create("later", {});
    await w.clock.tickAsync(500);
    assert.deepEqual(a.passes, ["slow"]);
    assert.ok(b.passes.includes("later"));
    // The stuck pass wakes: its signal is aborted and its write lands nowhere.
    release();
    await w.clock.tickAsync(10);
    assert.equal(outcome.aborted, true);
    assert.ok(outcome.error instanceof FencedError, String(outcome.error));
    const slow = await b.bh.client<unknown, { by: string }>(Thing).getByName("slow");
    assert.equal(slow.status?.by, "b");
  });
});

test("leaderElection: an object read ahead when the term ends is handed back, and the next term passes it", async () => {
  await withWorld(async (w) => {
    const gate = Promise.withResolvers<void>();
    const a = await w.replica("a", {}, async (_r, obj) => {
      if (obj.name === "slow") await gate.promise;
      return settled();
    }, { concurrency: 1 });
    await w.startInTurn(a);
    await a.bh.client(Thing).create("slow", {});
    await w.clock.tickAsync(10);
    // Read while slow's pass runs: the worker's next object.
    await a.bh.client(Thing).create("next", {});
    await w.clock.tickAsync(10);
    assert.deepEqual(a.passes, ["slow"]);
    a.faulty.faults.fail("leases.renew");
    a.faulty.faults.fail("leases.acquire");
    await w.clock.tickAsync(LEASE.leaseDuration + 10);
    assert.equal(a.bh.isLeader, false);
    gate.resolve();
    await w.clock.tickAsync(10);
    // The term is over: what was read ahead is not passed in it.
    assert.deepEqual(a.passes, ["slow"]);
    a.faulty.faults.clear();
    await w.clock.tickAsync(LEASE.renewInterval);
    assert.equal(a.bh.isLeader, true);
    await w.clock.tickAsync(100);
    assert.ok(a.passes.includes("next"), a.passes.join());
  });
});

test("leaderElection: a deposed candidate campaigns again and leads once the lease is free", async () => {
  await withWorld(async (w) => {
    const a = await w.replica("a");
    const b = await w.replica("b");
    await w.startInTurn(a, b);
    a.faulty.faults.fail("leases.renew");
    a.faulty.faults.fail("leases.acquire");
    await w.clock.tickAsync(LEASE.leaseDuration + LEASE.renewInterval);
    assert.equal(b.bh.isLeader, true);
    a.faulty.faults.clear();
    const stopB = b.stop;
    b.stop = undefined;
    await stopB!();
    await w.clock.tickAsync(LEASE.renewInterval);
    assert.equal(a.bh.isLeader, true);
    assert.equal((await a.bh.leadership()).epoch, 3);
  });
});

test("leaderElection: a candidate whose term ended at its deadline wins its next term at a new epoch, though the lease still names it", async () => {
  await withWorld(async (w) => {
    const a = await w.replica("a");
    await w.startInTurn(a);
    assert.equal((await a.bh.leadership()).epoch, 1);
    // Renewals fail until the deadline ends the term; nobody else takes the lease meanwhile.
    a.faulty.faults.fail("leases.renew");
    a.faulty.faults.fail("leases.acquire");
    await w.clock.tickAsync(LEASE.leaseDuration + 10);
    assert.equal(a.bh.isLeader, false);
    a.faulty.faults.clear();
    await w.clock.tickAsync(LEASE.renewInterval);
    assert.equal(a.bh.isLeader, true);
    assert.equal((await a.bh.leadership()).epoch, 2, "each term has its own epoch");
    const terms = a.logger.lines.filter((l) => l.message === "beehive: leading");
    assert.deepEqual(terms.map((l) => l.attributes?.epoch), [1, 2]);
  });
});

/** A device table in memory: each row keeps the highest epoch that wrote it. */
function deviceTable() {
  const rows = new Map<string, { lastEpoch: number; by: string }>();
  const repository: FencedRepository = {
    applyFenced(entityId, epoch, mutation) {
      const row = rows.get(entityId);
      if (row !== undefined && epoch < row.lastEpoch) return Promise.resolve(false);
      rows.set(entityId, { lastEpoch: epoch, by: String(mutation) });
      return Promise.resolve(true);
    },
  };
  return { rows, repository };
}

const LOST = "beehive: lost leadership; the work in flight is left to the next leader";

test("leaderElection: an ex-leader's fenced write after the successor's is refused with FencedError; one info line, no failed pass, no retry", async () => {
  await withWorld(async (w) => {
    const { rows, repository } = deviceTable();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const fencings: Record<string, unknown> = {};
    const refused: unknown[] = [];
    const reconcile: Reconcile = async (r, obj, cc) => {
      fencings[r.name] = cc.fencing;
      if (r.name === "a" && obj.name === "lamp") await gate;
      try {
        await cc.fencedWrite("lamp", r.name);
      } catch (error) {
        refused.push(error);
        throw error;
      }
      return settled();
    };
    const a = await w.replica("a", {}, reconcile, { fencedRepository: repository });
    const b = await w.replica("b", {}, reconcile, { fencedRepository: repository });
    await w.startInTurn(a, b);
    await a.bh.client(Thing).create("lamp", {});
    await w.clock.tickAsync(10);
    assert.deepEqual(fencings.a, { lease: "beehive", epoch: 1 });
    a.faulty.faults.fail("leases.renew");
    a.faulty.faults.fail("leases.acquire");
    await w.clock.tickAsync(LEASE.leaseDuration + LEASE.renewInterval);
    assert.equal(b.bh.isLeader, true);
    await w.clock.tickAsync(10);
    assert.deepEqual(fencings.b, { lease: "beehive", epoch: 2 });
    assert.deepEqual(rows.get("lamp"), { lastEpoch: 2, by: "b" });
    release();
    await w.clock.tickAsync(10);
    assert.equal(refused.length, 1);
    assert.ok(refused[0] instanceof FencedError, String(refused[0]));
    assert.deepEqual(rows.get("lamp"), { lastEpoch: 2, by: "b" }, "the table holds b's write only");
    await w.clock.tickAsync(30_000);
    assert.deepEqual(a.passes, ["lamp"], "the ex-leader retried nothing");
    const lost = a.logger.lines.filter((l) => l.message === LOST);
    assert.equal(lost.length, 1);
    assert.equal(lost[0].level, "info");
    assert.equal(lost[0].attributes?.epoch, 1);
    const warned = a.logger.lines.filter((l) => l.level === "warn" && /reconcile/.test(l.message));
    assert.deepEqual(warned, []);
  });
});

test("leaderElection: a fenced write ends the term at once, before the elector's deadline, and the pass in flight is dropped quietly", async () => {
  await withWorld(async (w) => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const a = await w.replica("a", {}, async (r, obj, cc) => {
      if (obj.name === "slow") await gate;
      await cc.updateStatus({ by: r.name });
      return settled();
    });
    const b = await w.replica("b");
    await w.startInTurn(a, b);
    await a.bh.client(Thing).create("slow", {});
    await w.clock.tickAsync(10);
    try {
      // The lease moves on behind a's back: its renewals fail, and b takes the freed lease.
      a.faulty.faults.fail("leases.renew");
      assert.equal(await a.store.leases.release({ name: "beehive", holder: "a", epoch: 1 }), true);
      await w.clock.tickAsync(LEASE.renewInterval + 10);
      assert.equal(b.bh.isLeader, true);
      // a's own deadline is leaseDuration away: a write of its term is fenced well before it. On a
      // networked store a's next write can land just after the step b took the lease in, so time
      // moves on in small steps, at most one more renewInterval (a's deadline stays ahead).
      for (let waited = 0; a.bh.isLeader && waited < LEASE.renewInterval; waited += 50) {
        await w.clock.tickAsync(50);
      }
      assert.equal(a.bh.isLeader, false, "a fenced write ended a's term");
      const deposed = a.logger.lines.find((l) => l.message === "beehive: no longer leading");
      assert.match(String(deposed?.attributes?.reason), /fenced/);
    } finally {
      release();
    }
    await w.clock.tickAsync(10);
    assert.equal(a.logger.lines.filter((l) => l.message === LOST).length, 1);
    const warned = a.logger.lines.filter((l) =>
      l.level === "warn" && !l.message.startsWith("beehive: renewing the leader lease failed")
    );
    assert.deepEqual(warned, []);
    assert.deepEqual(a.passes, ["slow"]);
    const slow = await b.bh.client<unknown, { by: string }>(Thing).getByName("slow");
    assert.equal(slow.status?.by, "b");
  });
});

test("leaderElection: Client.requeue in a standby reaches the leader's queue through the store", async () => {
  await withWorld(async (w) => {
    const a = await w.replica("a");
    const b = await w.replica("b");
    await w.startInTurn(a, b);
    const obj = await a.bh.client(Thing).create("x", {});
    await w.clock.tickAsync(10);
    assert.deepEqual(a.passes, ["x"]);
    await w.clock.tickAsync(5_000);
    await b.bh.client(Thing).requeue(obj.id);
    // The commit probe's interval, one listing, one pass.
    await w.clock.tickAsync(250);
    assert.deepEqual(a.passes, ["x", "x"]);
    assert.deepEqual(b.passes, []);
    // Once consumed, the stamp asks for nothing more.
    await w.clock.tickAsync(5_000);
    assert.deepEqual(a.passes, ["x", "x"]);
    // Twice in a row, right after the pass: each reaches the leader.
    await b.bh.client(Thing).requeue(obj.id);
    await w.clock.tickAsync(250);
    assert.deepEqual(a.passes, ["x", "x", "x"]);
  });
});

test("leaderElection: a requeue made while no leader runs is kept, and the next leader runs it at start", async () => {
  await withWorld(async (w) => {
    const a = await w.replica("a");
    await w.startInTurn(a);
    const obj = await a.bh.client(Thing).create("x", {});
    await w.clock.tickAsync(10);
    assert.deepEqual(a.passes, ["x"]);
    const stopA = a.stop!;
    a.stop = undefined;
    await stopA();
    // A Beehive not started registers the kind and requeues: nobody leads.
    const b = await w.replica("b");
    await b.bh.client(Thing).requeue(obj.id);
    await w.startInTurn(b);
    await w.clock.tickAsync(10);
    assert.deepEqual(b.passes, ["x"]);
  });
});

test("leaderElection: a standby's requeue of an object waiting on its retry keeps that wait, and later commits do not re-run it", async () => {
  await withWorld(async (w) => {
    const a = await w.replica("a", {}, (_r, obj) => {
      if (obj.name === "bad") return Promise.reject(new Error("the device is down"));
      return Promise.resolve(settled());
    });
    const b = await w.replica("b");
    await w.startInTurn(a, b);
    const bad = await a.bh.client(Thing).create("bad", {});
    await w.clock.tickAsync(10);
    assert.deepEqual(a.passes, ["bad"]);
    // Stamped owed, and owed it stays while it fails.
    await b.bh.client(Thing).requeue(bad.id);
    // b commits every 100 ms for 2.5 s: each is a wake of a's owed listing.
    for (let i = 0; i < 25; i++) {
      await b.bh.client(Thing).create(`other-${i}`, {});
      await w.clock.tickAsync(100);
    }
    // The retry ladder alone: 1 s after the first failure, then 2 s later.
    assert.equal(a.passes.filter((n) => n === "bad").length, 2, a.passes.join(","));
    assert.equal(a.passes.filter((n) => n.startsWith("other-")).length, 25);
  });
});
