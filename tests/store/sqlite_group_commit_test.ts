/**
 * Group commit in the SQLite store: writes (single calls and transactions)
 * queued within a few promise turns of each other share one `COMMIT`, each
 * in its own savepoint, their write-log entries inserted together; a lone
 * write still commits by itself; writes queued
 * behind an open transaction join one group when it ends. Counted on the
 * driver, under Deno and Node 22.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { NameTakenError } from "../../src/model/errors.ts";
import type { Connection, Driver } from "../../store/sqlite/_driver.ts";
import { nodeSqliteDriver } from "../../store/sqlite/_node_sqlite.ts";
import { SqliteStore } from "../../store/sqlite/sqlite_store.ts";
import { GROUP_TURNS } from "../../store/sqlite/_dialect.ts";
import { test } from "../_test.ts";
import { holdWriter } from "./_held_writer.ts";
import { installFakeTime } from "../_fake_time.ts";

const Widget = { group: "test.beehive.dev", kind: "Widget" };

/**
 * A driver that counts the COMMITs its connections run, the statements appending to the write
 * log, and every transaction-control statement (`execs(re)`: how many matched `re`). With
 * `{ tellsTransaction: false }` its connections cannot say whether a transaction is open.
 */
function counting({ tellsTransaction = true } = {}): {
  driver: Driver;
  commits: () => number;
  logInserts: () => number;
  execs: (re: RegExp) => number;
} {
  let commits = 0;
  let logInserts = 0;
  const execs: string[] = [];
  const driver: Driver = {
    open(path: string): Connection {
      const conn = nodeSqliteDriver.open(path);
      const wrapped: Connection = {
        exec(sql) {
          if (/^\s*COMMIT\b/i.test(sql)) commits++;
          execs.push(sql);
          conn.exec(sql);
        },
        prepare(sql) {
          const stmt = conn.prepare(sql);
          if (!/^\s*INSERT INTO object_writes\b/.test(sql)) return stmt;
          return {
            run(...params) {
              logInserts++;
              return stmt.run(...params);
            },
            get: (...params) => stmt.get(...params),
            all: (...params) => stmt.all(...params),
          };
        },
        close: () => conn.close(),
      };
      if (!tellsTransaction) return wrapped;
      return Object.defineProperty(wrapped, "isTransaction", { get: () => conn.isTransaction });
    },
    describeFailure: (e) => nodeSqliteDriver.describeFailure(e),
  };
  return {
    driver,
    commits: () => commits,
    logInserts: () => logInserts,
    execs: (re) => execs.filter((sql) => re.test(sql)).length,
  };
}

async function withStore(
  fn: (
    store: SqliteStore,
    commits: () => number,
    logInserts: () => number,
    execs: (re: RegExp) => number,
    path: string,
  ) => Promise<void>,
  options?: { tellsTransaction?: boolean },
): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "beehive-group-"));
  const { driver, commits, logInserts, execs } = counting(options);
  const path = join(dir, "db.sqlite");
  const store = SqliteStore.open(path, {}, driver);
  try {
    await fn(store, commits, logInserts, execs, path);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const MEMBER_SAVEPOINT = /^SAVEPOINT bh_member$/;
const BEGIN_WRITE = /^BEGIN IMMEDIATE$/;
const FULL_ROLLBACK = /^ROLLBACK$/;

test("SQLite group commit: 32 concurrent creates share one commit and each gets its own version", async () => {
  await withStore(async (store, commits) => {
    const before = commits();
    const made = await Promise.all(
      Array.from(
        { length: 32 },
        (_, i) => store.objects.create(Widget, { name: `w${i}`, spec: "{}" }),
      ),
    );
    assert.equal(commits() - before, 1);
    const rvs = made.map((o) => o.resourceVersion);
    assert.deepEqual(rvs, [...rvs].sort((a, b) => a - b));
    assert.equal(new Set(rvs).size, 32);
    assert.equal(await store.getLatestResourceVersion(), rvs[31]);
  });
});

test("SQLite group commit: a group's log entries are inserted together at its commit, 16 a statement", async () => {
  await withStore(async (store, commits, logInserts) => {
    await store.objects.create(Widget, { name: "first", spec: "{}" });
    assert.equal(logInserts(), 1, "a lone write: one entry, one statement");
    const before = { commits: commits(), inserts: logInserts() };
    const made = await Promise.all(
      Array.from(
        { length: 35 },
        (_, i) => store.objects.create(Widget, { name: `w${i}`, spec: "{}" }),
      ),
    );
    assert.equal(commits() - before.commits, 1);
    assert.equal(logInserts() - before.inserts, 3, "35 entries: 16, 16 and 3");
    const { writes } = await store.objectWrites.listSince(Widget, { after: 0, limit: 100 });
    assert.deepEqual(
      writes.slice(1).map((w) => [w.id, w.resourceVersion, w.op]),
      made.map((o) => [o.id, o.resourceVersion, "create"]),
    );
  });
});

test("SQLite group commit: a refused member rolls back alone and the group still commits once", async () => {
  await withStore(async (store, commits) => {
    await store.objects.create(Widget, { name: "taken", spec: "{}" });
    const before = commits();
    const results = await Promise.allSettled(
      ["a", "taken", "b"].map((name) => store.objects.create(Widget, { name, spec: "{}" })),
    );
    assert.equal(commits() - before, 1);
    assert.ok((results[1] as PromiseRejectedResult).reason instanceof NameTakenError);
    assert.deepEqual((await store.objects.list(Widget)).map((o) => o.name).sort(), [
      "a",
      "b",
      "taken",
    ]);
  });
});

test("SQLite group commit: the members up to and including a group's first transaction run without savepoints; the writes after it have theirs", async () => {
  await withStore(async (store, commits, _, execs) => {
    const a = await store.objects.create(Widget, { name: "a", spec: "{}" });
    const ref = { ...Widget, id: a.id };
    const before = { commits: commits(), savepoints: execs(MEMBER_SAVEPOINT) };
    await Promise.all([
      store.objects.updateStatus(ref, { status: "1" }),
      store.objects.create(Widget, { name: "b", spec: "{}" }),
      store.within((tx) => tx.objects.create(Widget, { name: "c", spec: "{}" })),
      store.objects.create(Widget, { name: "d", spec: "{}" }),
      store.within((tx) => tx.objects.create(Widget, { name: "e", spec: "{}" })),
    ]);
    assert.equal(commits() - before.commits, 1);
    assert.equal(execs(MEMBER_SAVEPOINT) - before.savepoints, 2, "d's and e's");
    assert.deepEqual((await store.objects.list(Widget)).map((o) => o.name), [
      "a",
      "b",
      "c",
      "d",
      "e",
    ]);
  });
});

test("SQLite group commit: a plain transaction that rejects after writing rolls its group back; the single writes before it run again and commit, and it alone rejects, its hooks unrun", async () => {
  await withStore(async (store, commits, _, execs) => {
    const a = await store.objects.create(Widget, { name: "a", spec: "{}" });
    const ref = { ...Widget, id: a.id };
    const hooks: string[] = [];
    const boom = new Error("boom");
    const before = { commits: commits(), begins: execs(BEGIN_WRITE) };
    const results = await Promise.allSettled([
      store.objects.updateStatus(ref, { status: "1" }),
      store.objects.create(Widget, { name: "b", spec: "{}" }),
      store.within(async (tx) => {
        await tx.objects.create(Widget, { name: "c", spec: "{}" });
        tx.afterCommit(() => void hooks.push("c"));
        throw boom;
      }),
      store.objects.create(Widget, { name: "d", spec: "{}" }),
      store.within(async (tx) => {
        await tx.objects.create(Widget, { name: "e", spec: "{}" });
        tx.afterCommit(() => void hooks.push("e"));
      }),
    ]);
    assert.deepEqual(results.map((r) => r.status), [
      "fulfilled",
      "fulfilled",
      "rejected",
      "fulfilled",
      "fulfilled",
    ]);
    assert.equal((results[2] as PromiseRejectedResult).reason, boom);
    assert.deepEqual(hooks, ["e"]);
    assert.equal(commits() - before.commits, 1);
    assert.equal(execs(BEGIN_WRITE) - before.begins, 2, "the plain run, then the rerun");
    assert.deepEqual((await store.objects.list(Widget)).map((o) => o.name), ["a", "b", "d", "e"]);
    assert.equal((await store.objects.get(a.id)).status, "1");
    const { writes } = await store.objectWrites.listSince(Widget, { after: 0, limit: 100 });
    assert.equal(writes.length, 5, "a's create and status write, b, d and e");
  });
});

test("SQLite group commit: a plain transaction first in a group of two that rejects after writing leaves the other to commit by itself", async () => {
  await withStore(async (store, commits, _, execs) => {
    const before = { commits: commits(), begins: execs(BEGIN_WRITE) };
    const boom = new Error("boom");
    const results = await Promise.allSettled([
      store.within(async (tx) => {
        await tx.objects.create(Widget, { name: "gone", spec: "{}" });
        throw boom;
      }),
      store.objects.create(Widget, { name: "kept", spec: "{}" }),
    ]);
    assert.deepEqual(results.map((r) => r.status), ["rejected", "fulfilled"]);
    assert.equal((results[0] as PromiseRejectedResult).reason, boom);
    assert.equal(commits() - before.commits, 1);
    assert.equal(execs(BEGIN_WRITE) - before.begins, 2);
    assert.deepEqual((await store.objects.list(Widget)).map((o) => o.name), ["kept"]);
  });
});

test("SQLite group commit: a plain transaction that rejects before writing anything rejects alone, and the group commits without running again", async () => {
  await withStore(async (store, commits, _, execs) => {
    const before = { commits: commits(), begins: execs(BEGIN_WRITE) };
    const boom = new Error("boom");
    const results = await Promise.allSettled([
      store.objects.create(Widget, { name: "a", spec: "{}" }),
      store.within(async (tx) => {
        await tx.objects.list(Widget);
        throw boom;
      }),
      store.objects.create(Widget, { name: "b", spec: "{}" }),
    ]);
    assert.deepEqual(results.map((r) => r.status), ["fulfilled", "rejected", "fulfilled"]);
    assert.equal(commits() - before.commits, 1);
    assert.equal(execs(BEGIN_WRITE) - before.begins, 1);
    assert.deepEqual((await store.objects.list(Widget)).map((o) => o.name), ["a", "b"]);
  });
});

test("SQLite group commit: a plain single write refused before it wrote anything rejects alone, and the group commits without running again", async () => {
  await withStore(async (store, commits, _, execs) => {
    await store.objects.create(Widget, { name: "taken", spec: "{}" });
    const before = {
      commits: commits(),
      begins: execs(BEGIN_WRITE),
      rollbacks: execs(FULL_ROLLBACK),
    };
    const results = await Promise.allSettled(
      ["a", "taken", "b"].map((name) => store.objects.create(Widget, { name, spec: "{}" })),
    );
    assert.deepEqual(results.map((r) => r.status), ["fulfilled", "rejected", "fulfilled"]);
    assert.ok((results[1] as PromiseRejectedResult).reason instanceof NameTakenError);
    assert.equal(commits() - before.commits, 1);
    assert.equal(execs(BEGIN_WRITE) - before.begins, 1, "one transaction");
    assert.equal(execs(FULL_ROLLBACK) - before.rollbacks, 0);
  });
});

for (const tellsTransaction of [true, false]) {
  const when = tellsTransaction
    ? "a plain single write that wrote part of its work before it was refused"
    : "on a driver that cannot say whether a transaction is open, any refused plain single write";
  test(`SQLite group commit: ${when} rolls the group back, and the group runs again with savepoints: only that write fails`, async () => {
    await withStore(async (store, commits, _, execs, path) => {
      await store.objects.create(Widget, { name: "taken", spec: "{}" });
      const before = {
        commits: commits(),
        begins: execs(BEGIN_WRITE),
        rollbacks: execs(FULL_ROLLBACK),
      };
      const results = await Promise.allSettled([
        store.objects.create(Widget, { name: "a", spec: "{}", labels: { ring: "a" } }),
        // A new label set is made (two statements) before the name is found taken.
        store.objects.create(Widget, { name: "taken", spec: "{}", labels: { ring: "new" } }),
        store.objects.create(Widget, { name: "b", spec: "{}" }),
      ]);
      assert.deepEqual(results.map((r) => r.status), ["fulfilled", "rejected", "fulfilled"]);
      assert.ok((results[1] as PromiseRejectedResult).reason instanceof NameTakenError);
      assert.equal(commits() - before.commits, 1);
      assert.equal(execs(BEGIN_WRITE) - before.begins, 2, "the plain run, then the rerun");
      assert.equal(execs(FULL_ROLLBACK) - before.rollbacks, 1);
      const selected = (labels: string) =>
        store.objects.list(Widget, {
          labelSelector: [{ key: "ring", operator: "In", values: [labels] }],
        });
      assert.deepEqual((await selected("a")).map((o) => o.name), ["a"]);
      assert.deepEqual(await selected("new"), []);
      const raw = new DatabaseSync(path);
      const sets = raw.prepare("SELECT labels FROM label_sets ORDER BY labels").all();
      raw.close();
      assert.deepEqual(
        sets.map((r) => r.labels),
        ['{"ring":"a"}'],
        "the refused write's set is gone",
      );
      const made = await store.objects.create(Widget, {
        name: "c",
        spec: "{}",
        labels: { ring: "new" },
      });
      assert.deepEqual((await selected("new")).map((o) => o.id), [made.id]);
      const { writes } = await store.objectWrites.listSince(Widget, { after: 0, limit: 100 });
      assert.deepEqual(writes.map((w) => w.op), ["create", "create", "create", "create"]);
    }, { tellsTransaction });
  });
}

test("SQLite group commit: a lone write commits by itself, and sequential writes commit one by one", async () => {
  await withStore(async (store, commits) => {
    const before = commits();
    for (let i = 0; i < 3; i++) await store.objects.create(Widget, { name: `s${i}`, spec: "{}" });
    assert.equal(commits() - before, 3);
  });
});

test("SQLite group commit: writes queued behind an open transaction join one group when it ends", async () => {
  await withStore(async (store, commits) => {
    const held = await holdWriter(
      store,
      (t) => t.objects.create(Widget, { name: "in-tx", spec: "{}" }),
    );
    const queued = Array.from(
      { length: 5 },
      (_, i) => store.objects.create(Widget, { name: `q${i}`, spec: "{}" }),
    );
    // Let the queued writes reach the writer lock, which the transaction holds.
    await new Promise((r) => setTimeout(r, 0));
    const before = commits();
    held.release();
    await held.done;
    await Promise.all(queued);
    assert.equal(commits() - before, 2, "the transaction's commit, then one for the group");
  });
});

test("SQLite group commit: a write queued within GROUP_TURNS promise turns of the first joins its group; a later one commits next", async () => {
  await withStore(async (store, commits) => {
    const turns = async (n: number) => {
      for (let i = 0; i < n; i++) await Promise.resolve();
    };
    let before = commits();
    // A caller and a pass that reaches its write a few turns later, as in a busy process.
    await Promise.all([
      store.objects.create(Widget, { name: "caller", spec: "{}" }),
      turns(GROUP_TURNS - 6).then(() => store.objects.create(Widget, { name: "pass", spec: "{}" })),
    ]);
    assert.equal(commits() - before, 1, "both in one group");
    before = commits();
    await Promise.all([
      store.objects.create(Widget, { name: "early", spec: "{}" }),
      turns(GROUP_TURNS + 4).then(() => store.objects.create(Widget, { name: "late", spec: "{}" })),
    ]);
    assert.equal(commits() - before, 2, "the late write misses the group");
  });
});

test("SQLite group commit: works under fake timers (no timer in the commit path)", async () => {
  const clock = installFakeTime();
  try {
    await withStore(async (store, commits) => {
      const before = commits();
      await Promise.all([
        store.objects.create(Widget, { name: "x", spec: "{}" }),
        store.objects.create(Widget, { name: "y", spec: "{}" }),
      ]);
      assert.equal(commits() - before, 1);
    });
  } finally {
    clock.uninstall();
  }
});

test("SQLite group commit: concurrent transactions share one commit", async () => {
  await withStore(async (store, commits) => {
    const before = commits();
    const made = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        store.within(async (tx) => {
          const o = await tx.objects.create(Widget, { name: `t${i}`, spec: "{}" });
          await tx.conditions.set({ ...Widget, id: o.id }, [{ type: "Ready", status: "True" }]);
          return o.id;
        })),
    );
    // Queued in the same turn: one group, one commit.
    assert.equal(commits() - before, 1);
    assert.equal(new Set(made).size, 10);
  });
});
