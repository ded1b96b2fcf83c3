/**
 * A PostgreSQL open proves itself alive by an advisory lock on its commit
 * listener's connection: when that connection fails, the server drops the
 * lock, and the listener takes it again as it reconnects, so the open's
 * liveness conditions read `True` to other opens once it is back.
 *
 * @module
 */
import assert from "node:assert/strict";
import pg from "pg";
import { lockKey } from "../../store/postgres/_core.ts";
import { test } from "../_test.ts";
import { advisoryLockHolders, freshSchema, openPostgresStore, postgresUrl } from "../_postgres.ts";

const Widget = { group: "test.beehive", kind: "Widget" };

test("PostgreSQL: an open whose listener connection was terminated takes its live-open lock again on reconnecting, so its liveness reads True elsewhere", async () => {
  const schema = freshSchema();
  const a = await openPostgresStore({ schema });
  const b = await openPostgresStore({ schema });
  const admin = new pg.Client({ connectionString: postgresUrl() });
  await admin.connect();
  try {
    const w = await a.objects.create(Widget, { name: "w", spec: "{}" });
    await a.conditions.set(w, [{ type: "Connected", status: "True", liveness: true }]);
    const seenByB = async () => (await b.objects.get(w.id)).conditions[0].status;
    assert.equal(await seenByB(), "True");
    // a's listener backend: the one granted a's live-open lock in this schema.
    const holders = await advisoryLockHolders(admin, lockKey(`${schema}\u0000open`), a.origin);
    assert.equal(holders.length, 1, JSON.stringify(holders));
    // The listener calls a's commit listeners once its connection is back.
    const { promise: reconnected, resolve } = Promise.withResolvers<void>();
    const off = a.watchCommits(() => resolve());
    await admin.query("SELECT pg_terminate_backend($1)", [holders[0]]);
    await reconnected;
    off();
    assert.equal(await seenByB(), "True");
    await a.close();
    assert.equal(await seenByB(), "Unknown");
  } finally {
    await admin.end();
    await b.close();
    await a.close();
  }
});
