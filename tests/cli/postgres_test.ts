/**
 * The CLI over a PostgreSQL store: every command, `serve` included, takes a
 * `postgres://` url (`?schema=` picks the schema), and the read commands open it read-only. Needs `BEEHIVE_TEST_POSTGRES_URL`, as every
 * PostgreSQL test does.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Beehive } from "../../mod.ts";
import { freshSchema, openPostgresStore, postgresUrl } from "../_postgres.ts";
import { test } from "../_test.ts";
import { cli, whileServing } from "./_cli_harness.ts";

test("cli runs every command against a postgres:// url with ?schema=", async () => {
  const schema = freshSchema();
  const store = await openPostgresStore({ schema });
  try {
    const Worker = { group: "shop.example", kind: "Worker" };
    const w = await new Beehive(store).client(Worker).create("w-2", { size: 1 });
    await new Beehive(store).adminClient(Worker).setConditions(w.id, [
      { type: "Ready", status: "True", reason: "Up" },
      { type: "Connected", status: "True", liveness: true },
    ]);
    const url = new URL(postgresUrl());
    url.searchParams.set("schema", schema);
    const db = url.href;
    const kinds = await cli([db, "kinds"]);
    assert.equal(kinds.code, 0, kinds.err);
    assert.match(kinds.out, /^Worker\.shop\.example +workers +- +- +1$/m);
    assert.match((await cli([db, "get", "worker", "w-2", "-o", "yaml"])).out, /^name: w-2$/m);
    assert.equal((await cli([db, "describe", "workers", "w-2"])).code, 0);
    assert.equal((await cli([db, "events", "Worker", "w-2"])).code, 0);
    assert.equal((await cli([db, "wait", "worker", "w-2", "--for=condition=Ready"])).code, 0);
    assert.equal((await cli([db, "watch", "worker"], { signal: AbortSignal.abort() })).code, 0);
    const checked = await cli([db, "check"]);
    assert.equal(checked.code, 0, checked.out);
    assert.match(checked.out, /^ok: no damage found$/m);
    // The read commands opened read-only: the running open's liveness still reads True.
    const got = JSON.parse((await cli([db, "get", "worker", "w-2", "-o", "json"])).out);
    const connected = got.conditions.find((c: { type: string }) => c.type === "Connected");
    assert.equal(connected.status, "True");
    const applied = await cli([db, "apply", "-f", "-"], {
      stdin: JSON.stringify({ ...Worker, name: "w-3", spec: { size: 2 } }),
    });
    assert.equal(applied.out, "Worker.shop.example/w-3 created\n", applied.err);
    assert.equal((await cli([db, "requeue", "worker", "w-3"])).code, 0);
    assert.equal((await cli([db, "delete", "worker", "w-3"])).code, 0);
    await whileServing(db, undefined, async (server) => {
      const got = await fetch(`${server}/apis/shop.example/v1/workers/w-2`);
      assert.equal(got.status, 200);
      assert.equal((await got.json()).metadata.name, "w-2");
    });
  } finally {
    await store.close();
  }
});
