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
import { channelName, lockKey } from "../../store/postgres/_core.ts";
import { freshSchema, openPostgresStore, postgresUrl } from "../_postgres.ts";
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
    // Each listener's backend: the one that ran this schema's LISTEN, or holds its open's
    // live-open lock (which it takes after the LISTEN, so that is its last query).
    const ended = await admin.query(
      `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
       WHERE query = $1 OR pid IN (
         SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
           AND classid = ($2::int8 & 4294967295)::oid)`,
      [`LISTEN "${channelName(schema)}"`, lockKey(`${schema}\u0000open`)],
    );
    assert.equal(ended.rows.length, 2);
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
