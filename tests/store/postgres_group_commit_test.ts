/**
 * Group commit in the PostgreSQL store, and what frees the writer when a
 * process pauses mid-transaction. Single-call writes waiting together
 * share one transaction and one commit (counted on the client), each member
 * in its own savepoint; a refused or fenced member rolls back
 * alone; a lone write and sequential writes commit by themselves. Needs the
 * test database (`BEEHIVE_TEST_POSTGRES_URL`), under Deno and Node 22.
 *
 * @module
 */
import assert from "node:assert/strict";
import pg from "pg";
import {
  FencedError,
  InvalidOptionError,
  NameTakenError,
  StoreError,
} from "../../src/model/errors.ts";
import type { Store } from "../../src/store.ts";
import { test } from "../_test.ts";
import { holdWriter } from "./_held_writer.ts";
import { freshSchema, openPostgresStore } from "../_postgres.ts";

const Widget = { group: "test.beehive.dev", kind: "Widget" };

/**
 * A store in a fresh schema, and a count of the commits its connections ran
 * (counted on the client: a commit is the query that ends in `COMMIT`).
 */
async function withStore(
  fn: (store: Store, commits: () => number, savepoints: () => number) => Promise<void>,
): Promise<void> {
  const store = await openPostgresStore();
  let commits = 0;
  let savepoints = 0;
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    if (typeof args[0] === "string" && /\bCOMMIT\s*$/i.test(args[0])) commits++;
    if (typeof args[0] === "string" && /\bSAVEPOINT\b/.test(args[0])) savepoints++;
    return original.apply(this, args);
  };
  try {
    await fn(store, () => commits, () => savepoints);
  } finally {
    proto.query = original;
    await store.close();
  }
}

const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

test("PostgreSQL group commit: 32 concurrent creates share one transaction and each gets its own version", async () => {
  await withStore(async (store, commits) => {
    const before = commits();
    const made = await Promise.all(
      names("w", 32).map((name) => store.objects.create(Widget, { name, spec: "{}" })),
    );
    assert.equal(commits() - before, 1);
    const rvs = made.map((o) => o.resourceVersion);
    assert.equal(new Set(rvs).size, 32);
    assert.equal(await store.getLatestResourceVersion(), Math.max(...rvs));
  });
});

test("PostgreSQL group commit: single writes in a group run without a savepoint each", async () => {
  await withStore(async (store, commits, savepoints) => {
    const before = { commits: commits(), savepoints: savepoints() };
    await Promise.all(
      names("w", 32).map((name) => store.objects.create(Widget, { name, spec: "{}" })),
    );
    assert.equal(commits() - before.commits, 1);
    assert.equal(savepoints() - before.savepoints, 0);
    assert.equal((await store.objects.list(Widget)).length, 32);
  });
});

test("PostgreSQL group commit: a refused member rolls back alone and the others commit together", async () => {
  await withStore(async (store, commits) => {
    await store.objects.create(Widget, { name: "taken", spec: "{}" });
    const before = commits();
    const results = await Promise.allSettled(
      ["a", "taken", "b"].map((name) => store.objects.create(Widget, { name, spec: "{}" })),
    );
    assert.ok((results[1] as PromiseRejectedResult).reason instanceof NameTakenError);
    assert.equal(results[0].status, "fulfilled");
    assert.equal(results[2].status, "fulfilled");
    assert.equal(commits() - before, 1);
    assert.deepEqual((await store.objects.list(Widget)).map((o) => o.name).sort(), [
      "a",
      "b",
      "taken",
    ]);
    // The refused member's version draws were returned: the versions stay dense.
    const [a, b] = await Promise.all([
      store.objects.getByName({ ...Widget, name: "a" }),
      store.objects.getByName({ ...Widget, name: "b" }),
    ]);
    assert.equal(Math.abs(b.resourceVersion - a.resourceVersion), 1);
  });
});

test("PostgreSQL group commit: a fenced member whose term is over is refused alone", async () => {
  await withStore(async (store, commits) => {
    const { lease } = await store.leases.acquire({ name: "leader", holder: "a", duration: 60_000 });
    const before = commits();
    const stale = store.fenced({ lease: "leader", epoch: lease.epoch - 1 });
    const current = store.fenced({ lease: "leader", epoch: lease.epoch });
    const results = await Promise.allSettled([
      current.objects.create(Widget, { name: "ok1", spec: "{}" }),
      stale.objects.create(Widget, { name: "late", spec: "{}" }),
      store.objects.create(Widget, { name: "ok2", spec: "{}" }),
    ]);
    assert.equal(results[0].status, "fulfilled");
    assert.ok((results[1] as PromiseRejectedResult).reason instanceof FencedError);
    assert.equal(results[2].status, "fulfilled");
    assert.equal(commits() - before, 1);
    assert.deepEqual((await store.objects.list(Widget)).map((o) => o.name).sort(), ["ok1", "ok2"]);
  });
});

test("PostgreSQL group commit: a lone write commits by itself, and sequential writes one by one", async () => {
  await withStore(async (store, commits) => {
    const before = commits();
    for (const name of names("s", 3)) await store.objects.create(Widget, { name, spec: "{}" });
    assert.equal(commits() - before, 3);
  });
});

test("PostgreSQL group commit: writes arriving while a group runs form the next group", async () => {
  await withStore(async (store, commits) => {
    const before = commits();
    const first = names("f", 8);
    const second = names("n", 8);
    const running = Promise.all(
      first.map((name) => store.objects.create(Widget, { name, spec: "{}" })),
    );
    // Submitted after the first group took the connection: they wait for it together.
    await new Promise((resolve) => setTimeout(resolve, 0));
    const next = Promise.all(
      second.map((name) => store.objects.create(Widget, { name, spec: "{}" })),
    );
    const [a, b] = await Promise.all([running, next]);
    assert.equal(commits() - before, 2);
    // The second group committed after the first: every version of it is higher.
    assert.ok(
      Math.min(...b.map((o) => o.resourceVersion)) > Math.max(...a.map((o) => o.resourceVersion)),
    );
  });
});

test("PostgreSQL group commit: writes queued behind an open transaction join one group when it ends", async () => {
  await withStore(async (store, commits) => {
    const held = await holdWriter(
      store,
      (t) => t.objects.create(Widget, { name: "in-tx", spec: "{}" }),
    );
    const queued = names("q", 5).map((name) => store.objects.create(Widget, { name, spec: "{}" }));
    const before = commits();
    held.release();
    await held.done;
    await Promise.all(queued);
    assert.equal(commits() - before, 2, "the transaction's commit, then one for the group");
  });
});

test("PostgreSQL group commit: concurrent transactions behind a busy writer share one commit", async () => {
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
    // The first found the writer free and committed alone; the nine that queued shared one.
    assert.equal(commits() - before, 2);
    assert.equal(new Set(made).size, 10);
    for (const id of made) assert.equal((await store.objects.get(id)).conditions.length, 1);
  });
});

test("PostgreSQL group commit: a grouped transaction that throws unwinds alone, and its hooks never run", async () => {
  await withStore(async (store, commits) => {
    const hooks: string[] = [];
    const first = await holdWriter(store);
    const member = (name: string, fail: boolean) =>
      store.within(async (tx) => {
        await tx.objects.create(Widget, { name, spec: "{}" });
        tx.afterCommit(() => void hooks.push(name));
        if (fail) throw new Error(`${name} gives up`);
      });
    const grouped = [member("g1", false), member("bad", true), member("g2", false)];
    const before = commits();
    first.release();
    await first.done;
    const results = await Promise.allSettled(grouped);
    assert.equal(commits() - before, 2, "the first transaction's commit, then the group's");
    assert.equal(results[0].status, "fulfilled");
    assert.match(String((results[1] as PromiseRejectedResult).reason), /bad gives up/);
    assert.equal(results[2].status, "fulfilled");
    assert.deepEqual(hooks, ["g1", "g2"]);
    assert.deepEqual((await store.objects.list(Widget)).map((o) => o.name).sort(), ["g1", "g2"]);
  });
});

test("PostgreSQL group commit: a grouped transaction's writes that fail and are caught leave nothing, and its other writes commit", async () => {
  await withStore(async (store) => {
    await store.objects.create(Widget, { name: "taken", spec: "{}" });
    const first = await holdWriter(store);
    const member = (name: string) =>
      store.within(async (tx) => {
        // The member's first write fails (the name is taken) and is caught; so is a later one.
        await assert.rejects(
          tx.objects.create(Widget, { name: "taken", spec: "{}" }),
          NameTakenError,
        );
        await tx.objects.create(Widget, { name, spec: "{}" });
        await assert.rejects(
          tx.objects.create(Widget, { name: "taken", spec: "{}" }),
          NameTakenError,
        );
        await tx.objects.create(Widget, { name: `${name}-again`, spec: "{}" });
      });
    const grouped = [member("g1"), member("g2")];
    first.release();
    await first.done;
    await Promise.all(grouped);
    assert.deepEqual(
      (await store.objects.list(Widget)).map((o) => o.name).sort(),
      ["g1", "g1-again", "g2", "g2-again", "taken"],
    );
  });
});

test("PostgreSQL group commit: a grouped transaction whose term is over is refused before it runs", async () => {
  await withStore(async (store) => {
    const { lease } = await store.leases.acquire({ name: "leader", holder: "a", duration: 60_000 });
    const stale = store.fenced({ lease: "leader", epoch: lease.epoch - 1 });
    const first = await holdWriter(store);
    let ran = false;
    const late = stale.within(async (tx) => {
      ran = true;
      await tx.objects.create(Widget, { name: "late", spec: "{}" });
    });
    const fine = store.within((tx) => tx.objects.create(Widget, { name: "fine", spec: "{}" }));
    first.release();
    await first.done;
    await assert.rejects(late, FencedError);
    await fine;
    assert.equal(ran, false);
    assert.deepEqual((await store.objects.list(Widget)).map((o) => o.name), ["fine"]);
  });
});

test("PostgreSQL store: a transaction left idle past idleInTransactionTimeout is ended by the server, and other opens write meanwhile", async () => {
  const schema = freshSchema();
  const paused = await openPostgresStore({ schema, idleInTransactionTimeout: 300 });
  const other = await openPostgresStore({ schema });
  try {
    const inside = Promise.withResolvers<void>();
    const resume = Promise.withResolvers<void>();
    // A process paused mid-transaction: it holds the counter row every writer locks.
    const stuck = paused.within(async (tx) => {
      await tx.objects.create(Widget, { name: "paused", spec: "{}" });
      inside.resolve();
      await resume.promise;
      await tx.objects.create(Widget, { name: "after", spec: "{}" });
    });
    const outcome = stuck.then(() => "committed", (error) => error);
    await inside.promise;
    // Waits on the row lock until the server ends the idle session.
    await other.objects.create(Widget, { name: "elsewhere", spec: "{}" });
    resume.resolve();
    const error = await outcome;
    assert.ok(error instanceof StoreError, `the paused transaction rejects: ${error}`);
    assert.deepEqual((await other.objects.list(Widget)).map((o) => o.name), ["elsewhere"]);
    // The open that lost its session writes again on a fresh connection.
    await paused.objects.create(Widget, { name: "again", spec: "{}" });
  } finally {
    await other.close();
    await paused.close();
  }
});

test("PostgreSQL store: idleInTransactionTimeout must be a whole number of ms >= 0", async () => {
  for (const bad of [-1, 1.5, "10", Number.NaN]) {
    await assert.rejects(
      openPostgresStore({ idleInTransactionTimeout: bad as number }),
      InvalidOptionError,
    );
  }
});
