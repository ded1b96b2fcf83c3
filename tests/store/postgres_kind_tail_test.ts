/**
 * Kind tails served from the PostgreSQL store's commit journal: the cases
 * every SQL store runs (`kind_tail_cases.ts`), on a fresh schema of the test
 * database (a second open of the same schema stands for another replica),
 * and what only PostgreSQL has: commits learned of through notifications,
 * which a lost listener connection may miss.
 *
 * @module
 */
import assert from "node:assert/strict";
import pg from "pg";
import { openKindTailSymbol } from "../../src/watches/kind_tail.ts";
import { lockKey } from "../../store/postgres/_core.ts";
import { advisoryLockHolders, freshSchema, openPostgresStore, postgresUrl } from "../_postgres.ts";
import { test } from "../_test.ts";
import { brief, kindTailCases, logged, readAll, Widget } from "./kind_tail_cases.ts";

kindTailCases({
  name: "PostgreSQL",
  announced: true,
  async open() {
    const schema = freshSchema();
    return {
      store: await openPostgresStore({ schema }),
      reopen: () => openPostgresStore({ schema }),
      done: () => {},
    };
  },
});

test("PostgreSQL kind tail: a commit whose notification the lost listener connection missed is read from the log", async () => {
  const schema = freshSchema();
  const store = await openPostgresStore({ schema });
  const other = await openPostgresStore({ schema });
  const admin = new pg.Client({ connectionString: postgresUrl() });
  await admin.connect();
  const start = await store.objectWrites.maxVersion(Widget);
  const tail = store[openKindTailSymbol](Widget);
  try {
    await store.objects.create(Widget, { name: "mine", spec: "{}" });
    const mine = await readAll(tail, start);
    assert.ok(mine.length === 1 && mine[0].row !== undefined, "served from memory");
    // The listeners' connections end (both opens'); the other open commits while this one's is
    // down or coming back.
    const back = Promise.withResolvers<void>();
    const stop = store.watchCommits(() => back.resolve());
    // Each listener's backend: the one holding its open's live-open lock (taken after the LISTEN).
    const listeners = await advisoryLockHolders(admin, lockKey(`${schema}\u0000open`));
    assert.equal(listeners.length, 2, JSON.stringify(listeners));
    await admin.query("SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid", [
      listeners,
    ]);
    await other.objects.create(Widget, { name: "theirs", spec: "{}" });
    // Listeners are called once the connection is back (or on the commit, if it was heard).
    await back.promise;
    stop();
    const after = mine[0].resourceVersion;
    const got = await readAll(tail, after);
    assert.deepEqual(brief(got), await logged(store, Widget, after));
    assert.equal(got.length, 1);
  } finally {
    tail.close();
    await admin.end();
    await other.close();
    await store.close();
  }
});
