/**
 * Several real processes on one SQLite file: watches that miss nothing
 * another process commits, the store lease, leader failover after SIGKILL,
 * fencing of a leader paused with SIGSTOP (its store writes and its device
 * writes), a holder whose lock file is deleted stopping, and requeues from a standby and the CLI reaching the leader. Runs on Deno and Node 22 (the
 * replicas run on the runtime running the test).
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { Beehive, StoreInUseError } from "../../mod.ts";
import { openTestStore, testStore } from "../_sqlite_driver.ts";
import { notApplicable, test } from "../_test.ts";
import { Job, type Replica, type ReplicaEvent, withReplicas } from "./_processes.ts";
import { DeviceTable } from "../../examples/fenced-devices/device_table.ts";
import { cli } from "../cli/_cli_harness.ts";

async function withDir(fn: (db: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "beehive-mp-"));
  try {
    await fn(join(dir, "shared.db"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Creates the schema first, so replicas starting at once do not race to migrate. */
async function initialize(db: string): Promise<void> {
  const store = await openTestStore(db);
  await store.close();
}

async function writersDeliverEverything(processes: number, count: number): Promise<void> {
  await withDir(async (db) => {
    await initialize(db);
    await withReplicas(async (spawnReplica) => {
      const writers: Replica[] = [];
      for (let i = 0; i < processes; i++) {
        writers.push(spawnReplica({
          db,
          role: "writer",
          name: `w${i}`,
          count,
          expect: processes * count,
        }));
      }
      for (const w of writers) await w.waitForEvent("ready");
      for (const w of writers) w.send("write");
      const seen = await Promise.all(writers.map((w) => w.waitForEvent("seen", 120_000)));
      const written = new Map<number, number>();
      for (const w of writers) {
        for (const e of w.events) {
          if (e.ev === "wrote") written.set(e.id as number, e.resourceVersion as number);
        }
      }
      assert.equal(written.size, processes * count);
      for (const s of seen) {
        const changes = s.seen as [number, number, string][];
        const ids = changes.map(([, id]) => id);
        assert.equal(new Set(ids).size, ids.length, `${s.name} saw a Job twice`);
        const missing = [...written.keys()].filter((id) => !ids.includes(id));
        assert.deepEqual(missing, [], `${s.name} missed ${missing.length} Jobs`);
        for (let i = 1; i < changes.length; i++) {
          assert.ok(
            changes[i][0] > changes[i - 1][0],
            `${s.name}: version ${changes[i][0]} delivered after ${changes[i - 1][0]}`,
          );
        }
        for (const [rv, id, type] of changes) {
          assert.equal(type, "Added");
          assert.equal(rv, written.get(id), `${s.name}: Job ${id} at the version its create took`);
        }
      }
    });
  });
}

test("multiprocess: two processes writing one file — every watch delivers every create exactly once, in version order", async () => {
  await writersDeliverEverything(2, 1_500);
});

test("multiprocess: three processes writing one file — every watch delivers every create exactly once, in version order", async () => {
  await writersDeliverEverything(3, 1_000);
});

test("multiprocess: a second process's start is refused naming the holder, and a SIGKILL frees the lease at once", async () => {
  await withDir(async (db) => {
    await initialize(db);
    await withReplicas(async (spawnReplica) => {
      const a = spawnReplica({ db, role: "plain", name: "a" });
      const started = await a.waitForEvent("started");
      const b = spawnReplica({ db, role: "plain", name: "b" });
      const refused = await b.waitForEvent("refused");
      assert.equal(refused.error, "StoreInUseError");
      assert.ok(String(refused.message).includes(String(started.holder)), String(refused.message));
      // This process too.
      const store = await openTestStore(db);
      try {
        const bh = new Beehive(store);
        await assert.rejects(bh.start(), StoreInUseError);
        a.signal("SIGKILL");
        await a.close(false);
        // No expiry to wait for: the next start succeeds at once.
        const stop = await bh.start();
        const lease = await bh.leadership();
        assert.equal(lease.self, true);
        assert.equal(lease.epoch, (started.epoch as number) + 1);
        await stop();
        assert.equal((await bh.leadership()).holder, undefined, "stop released the lease");
      } finally {
        await store.close();
      }
    });
  });
});

const LOCK_DELETED =
  "multiprocess: the store lease's lock file deleted under a running Beehive — it stops reconciling loudly, and only the second process reconciles";
if (testStore === "postgres") notApplicable(LOCK_DELETED, "an advisory lock has no file to delete");
else {test(LOCK_DELETED, async () => {
    await withDir(async (db) => {
      await initialize(db);
      await withReplicas(async (spawnReplica) => {
        const a = spawnReplica({ db, role: "plain", name: "a" });
        await a.waitForEvent("started");
        // What a cleanup such as `rm beehive.db-*` does to the lock files.
        const dir = dirname(db);
        const locks = readdirSync(dir).filter((f) => f.startsWith(`${basename(db)}-lease-`));
        assert.ok(locks.length > 0, "a held lease has a lock file");
        for (const f of locks) rmSync(join(dir, f));
        const b = spawnReplica({ db, role: "plain", name: "b" });
        await b.waitForEvent("started");
        const lost = await a.waitFor(
          isEvent("error", (e) => /lock was lost/.test(String(e.message))),
          20_000,
        );
        assert.match(String(lost.error), /deleted or replaced/);
        a.send("status after-loss");
        const status = await a.waitFor(isEvent("status", (e) => e.tag === "after-loss"));
        assert.equal(status.leading, false);
        const [id] = await createJobs(db, ["after-loss"]);
        await b.waitFor(isEvent("reconciled", (e) => e.id === id));
        assert.equal(a.events.filter(isEvent("reconciled", (e) => e.id === id)).length, 0);
        a.send("stop");
        b.send("stop");
        await a.waitForEvent("stopped");
        await b.waitForEvent("stopped");
      });
    });
  });}

const LOCK_DELETED_ALONE =
  "multiprocess: the store lease's lock file deleted under a running Beehive with no other process — it takes the lease again and reconciles";
if (testStore === "postgres") {
  notApplicable(LOCK_DELETED_ALONE, "an advisory lock has no file to delete");
} else {test(LOCK_DELETED_ALONE, async () => {
    await withDir(async (db) => {
      await initialize(db);
      await withReplicas(async (spawnReplica) => {
        const a = spawnReplica({ db, role: "plain", name: "a" });
        await a.waitForEvent("started");
        const dir = dirname(db);
        for (const f of readdirSync(dir).filter((f) => f.startsWith(`${basename(db)}-lease-`))) {
          rmSync(join(dir, f));
        }
        await a.waitFor(isEvent("error", (e) => /lock was lost/.test(String(e.message))), 20_000);
        await a.waitForEvent("reclaimed");
        const [id] = await createJobs(db, ["after-reclaim"]);
        await a.waitFor(isEvent("reconciled", (e) => e.id === id));
        a.send("stop");
        await a.waitForEvent("stopped");
      });
    });
  });}

const LEASE = { leaseDuration: 1_500, renewInterval: 300 };

/** Creates Jobs from this process (a client, not a started Beehive). */
async function createJobs(db: string, names: string[]): Promise<number[]> {
  const store = await openTestStore(db);
  try {
    const jobs = new Beehive(store).client(Job);
    const ids: number[] = [];
    for (const name of names) ids.push((await jobs.create(name, {})).id);
    return ids;
  } finally {
    await store.close();
  }
}

/** Reads every Job's status.by. */
async function stampedBy(db: string): Promise<Map<string, string | undefined>> {
  const store = await openTestStore(db);
  try {
    const all = await new Beehive(store).client<unknown, { by: string }>(Job).list();
    return new Map(all.map((o) => [o.name, o.status?.by]));
  } finally {
    await store.close();
  }
}

function isEvent(ev: string, pred: (e: ReplicaEvent) => boolean = () => true) {
  return (e: ReplicaEvent) => e.ev === ev && pred(e);
}

test("multiprocess: leader SIGKILLed — a standby leads within leaseDuration + renewInterval and reconciles what was created meanwhile", async () => {
  await withDir(async (db) => {
    await initialize(db);
    await withReplicas(async (spawnReplica) => {
      const a = spawnReplica({ db, role: "candidate", name: "a", ...LEASE });
      await a.waitForEvent("leading");
      const b = spawnReplica({ db, role: "candidate", name: "b", ...LEASE });
      await b.waitForEvent("candidate");
      await createJobs(db, ["before"]);
      await a.waitFor(isEvent("reconciled", (e) => e.object === "before"));
      // The last renewal a made before dying bounds when b may lead.
      const killedAt = Date.now();
      a.signal("SIGKILL");
      await a.close(false);
      await createJobs(db, ["during-1", "during-2"]);
      const led = await b.waitForEvent("leading", 10_000);
      assert.ok(
        led.at - killedAt <= LEASE.leaseDuration + LEASE.renewInterval + 1_000,
        `b led ${led.at - killedAt} ms after the kill`,
      );
      for (const name of ["during-1", "during-2"]) {
        await b.waitFor(isEvent("reconciled", (e) => e.object === name));
      }
      const by = await stampedBy(db);
      // a may die between its status write and its generation handshake; then b redoes it.
      assert.ok(["a", "b"].includes(by.get("before")!));
      assert.equal(by.get("during-1"), "b");
      assert.equal(by.get("during-2"), "b");
      // One leader at a time: a never said it led again, b led once.
      assert.equal(b.events.filter((e) => e.ev === "leading").length, 1);
    });
  });
});

test("multiprocess: a standby whose clock runs a minute ahead never takes a healthy leader's lease, and takes it after the leader dies", async () => {
  await withDir(async (db) => {
    await initialize(db);
    await withReplicas(async (spawnReplica) => {
      const a = spawnReplica({ db, role: "candidate", name: "a", ...LEASE });
      await a.waitForEvent("leading");
      const b = spawnReplica({ db, role: "candidate", name: "b", ...LEASE, skewMs: 60_000 });
      await b.waitForEvent("candidate");
      // Watch a renew its lease 12 times (3.6 s, over twice leaseDuration): by b's clock every
      // expiry a writes is a minute past, and b tries to acquire every renewInterval.
      const store = await openTestStore(db);
      try {
        let last = (await store.leases.get("beehive"))?.expiresAt;
        let renewals = 0;
        const { promise: renewed, resolve } = Promise.withResolvers<void>();
        const off = store.watchCommits(() => {
          void store.leases.get("beehive").then((lease) => {
            if (lease?.expiresAt !== last) renewals++;
            last = lease?.expiresAt;
            if (renewals >= 12) resolve();
          });
        });
        try {
          await renewed;
        } finally {
          off();
        }
      } finally {
        await store.close();
      }
      assert.deepEqual(b.events.filter(isEvent("leading")), [], "b took a live lease");
      assert.deepEqual(a.events.filter(isEvent("deposed")), []);
      a.signal("SIGKILL");
      await a.close(false);
      await b.waitForEvent("leading", 10_000);
    });
  });
});

test("multiprocess: leader paused with SIGSTOP mid-pass past its lease — the standby takes over and not one late write lands", async () => {
  await withDir(async (db) => {
    await initialize(db);
    await withReplicas(async (spawnReplica) => {
      const a = spawnReplica({
        db,
        role: "candidate",
        name: "a",
        ...LEASE,
        slowMs: 4_000,
        stopMidPass: true,
      });
      await a.waitForEvent("leading");
      const b = spawnReplica({ db, role: "candidate", name: "b", ...LEASE });
      await b.waitForEvent("candidate");
      await createJobs(db, ["slow"]);
      // The pass stops its process (SIGSTOP) once it has said mid-pass; SIGCONT resumes it.
      await a.waitForEvent("mid-pass");
      const led = await b.waitForEvent("leading", 10_000);
      await b.waitFor(isEvent("reconciled", (e) => e.object === "slow"));
      assert.ok((led.epoch as number) > 0);
      a.signal("SIGCONT");
      const late = await a.waitForEvent("late-write", 10_000);
      assert.equal(late.outcome, "FencedError", JSON.stringify(late));
      await a.waitForEvent("deposed", 10_000);
      // The database has b's write and none of a's.
      assert.equal((await stampedBy(db)).get("slow"), "b");
      a.send("stop");
      b.send("stop");
      await a.waitForEvent("stopped");
      await b.waitForEvent("stopped");
    });
  });
});

test("multiprocess: leader paused mid-pass past its lease — the successor writes the device, the ex-leader's device write is refused, and the table holds only the successor's", async () => {
  await withDir(async (db) => {
    await initialize(db);
    const devicesDb = `${db}.devices`;
    new DeviceTable(devicesDb).close();
    await withReplicas(async (spawnReplica) => {
      const devices = { devices: devicesDb };
      const a = spawnReplica({
        db,
        role: "candidate",
        name: "a",
        ...LEASE,
        ...devices,
        slowMs: 4_000,
        stopMidPass: true,
      });
      await a.waitForEvent("leading");
      const b = spawnReplica({ db, role: "candidate", name: "b", ...LEASE, ...devices });
      await b.waitForEvent("candidate");
      await createJobs(db, ["slow"]);
      const mid = await a.waitForEvent("mid-pass");
      const led = await b.waitForEvent("leading", 10_000);
      assert.ok((led.epoch as number) > (mid.epoch as number));
      await b.waitFor(isEvent("reconciled", (e) => e.object === "slow"));
      a.signal("SIGCONT");
      const late = await a.waitForEvent("late-write", 10_000);
      assert.equal(late.outcome, "FencedError", JSON.stringify(late));
      await a.waitForEvent("deposed", 10_000);
      await a.waitForEvent("lost", 10_000);
      const table = new DeviceTable(devicesDb);
      try {
        // The row is b's, written in a term b led: the one it took over in, or (a loaded machine
        // can make b miss its own renewals) a later term it won again, never a's.
        const rows = table.list();
        const terms = b.events.filter((e) => e.ev === "leading").map((e) => e.epoch as number);
        const seen = JSON.stringify({ rows, terms });
        assert.equal(rows.length, 1, seen);
        const { lastEpoch, ...row } = rows[0];
        assert.deepEqual(row, { id: "slow", power: "on", writtenBy: "b" }, seen);
        assert.ok(
          terms.includes(lastEpoch as number) && (lastEpoch as number) >= (led.epoch as number),
          seen,
        );
      } finally {
        table.close();
      }
      a.send("stop");
      b.send("stop");
      await a.waitForEvent("stopped");
      await b.waitForEvent("stopped");
      // One line for the lost term; no failed pass, no retry. A lease renewal the stop caught in
      // flight may fail when it resumes (on PostgreSQL the server ends a session left inside a
      // transaction): that warning is the elector's, about the lease, and is allowed.
      assert.equal(a.events.filter((e) => e.ev === "lost").length, 1);
      const renewal = "beehive: renewing the leader lease failed; retrying until the deadline";
      assert.deepEqual(
        a.events.filter((e) => (e.ev === "warn" || e.ev === "error") && e.message !== renewal),
        [],
      );
    });
  });
});

test("multiprocess: a standby's Client.requeue and the CLI's requeue reach the leader's queue by a wake, not the owed pass", async () => {
  await withDir(async (db) => {
    await initialize(db);
    await withReplicas(async (spawnReplica) => {
      // An owed pass an hour apart: only the cross-process wake can deliver these requeues.
      const slow = { ...LEASE, owedPassInterval: 3_600_000 };
      const a = spawnReplica({ db, role: "candidate", name: "a", ...slow });
      await a.waitForEvent("leading");
      const b = spawnReplica({ db, role: "candidate", name: "b", ...slow });
      await b.waitForEvent("candidate");
      await createJobs(db, ["job"]);
      await a.waitFor(isEvent("reconciled", (e) => e.object === "job"));
      for (let i = 0; i < 3; i++) {
        const from = a.events.length;
        b.send("requeue job");
        await b.waitForEvent("requeued", 10_000, b.events.length);
        await a.waitFor(isEvent("reconciled", (e) => e.object === "job"), 10_000, from);
      }
      // The CLI opens a SQLite file (its PostgreSQL form is the URL, not this path).
      if (testStore === "sqlite") {
        const from = a.events.length;
        const run = await cli([db, "requeue", "Job.test.beehive.dev", "job"]);
        assert.equal(run.code, 0, run.err);
        await a.waitFor(isEvent("reconciled", (e) => e.object === "job"), 10_000, from);
      }
      assert.deepEqual(b.events.filter((e) => e.ev === "reconciled"), []);
      a.send("stop");
      b.send("stop");
      await a.waitForEvent("stopped");
      await b.waitForEvent("stopped");
    });
  });
});
