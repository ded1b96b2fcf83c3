/**
 * A lease held on PostgreSQL lives on the advisory lock of a dedicated
 * connection: when that connection fails (a server restart, an administrator
 * terminating it), the server frees the lock, and the held lease's `lost`
 * signal says so, rather than leaving two holders unaware of each other.
 *
 * @module
 */
import assert from "node:assert/strict";
import pg from "pg";
import { StoreError } from "../../src/model/errors.ts";
import { lockKey } from "../../store/postgres/_core.ts";
import { test } from "../_test.ts";
import { advisoryLockHolders, freshSchema, openPostgresStore, postgresUrl } from "../_postgres.ts";

test("PostgreSQL leases.hold: the connection holding the lock terminated — lost aborts, and another open can hold the lease", async () => {
  const schema = freshSchema();
  const a = await openPostgresStore({ schema });
  const b = await openPostgresStore({ schema });
  const admin = new pg.Client({ connectionString: postgresUrl() });
  await admin.connect();
  try {
    const held = await a.leases.hold("beehive", "a");
    assert.ok(held.lost !== undefined && !held.lost.aborted);
    const { promise: lost, resolve } = Promise.withResolvers<unknown>();
    held.lost.addEventListener("abort", () => resolve(held.lost!.reason), { once: true });
    // The holder's backend: the one granted this schema's advisory lock for the lease (other
    // files running beside this one hold leases of their own schemas).
    const holders = await advisoryLockHolders(admin, lockKey(schema), lockKey("beehive"));
    assert.equal(holders.length, 1, JSON.stringify(holders));
    await admin.query("SELECT pg_terminate_backend($1)", [holders[0]]);
    const reason = await lost;
    assert.ok(reason instanceof StoreError);
    assert.match(reason.message, /Lost lease "beehive"/);
    const second = await b.leases.hold("beehive", "b");
    assert.equal(second.lease.holder, "b");
    await second.release();
    await held.release();
  } finally {
    await admin.end();
    await b.close();
    await a.close();
  }
});
