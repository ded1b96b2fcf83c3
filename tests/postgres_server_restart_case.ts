/**
 * The PostgreSQL store across a server restart while the engine runs: writes
 * in flight fail with `StoreError` and commit nothing half-way, no write that
 * was acknowledged is lost, and the engine converges once the server is back.
 * Real time (the outage is the server's). It restarts the cluster it runs
 * on, so it runs against a throwaway cluster of its own, never the shared one
 * (its name keeps it out of test discovery; `scripts/test` runs it on Deno and
 * Node against `bash scripts/postgres cluster-up` and drops the cluster after):
 *   url=$(bash scripts/postgres cluster-up $$)
 *   BEEHIVE_TEST_POSTGRES_URL=$url deno test -A tests/postgres_server_restart_case.ts
 *   bash scripts/postgres cluster-down "$url"
 *
 * @module
 */
import assert from "node:assert/strict";
import { Beehive, NameTakenError, settled, StoreError } from "../mod.ts";
import { openPostgresStore, restartServer } from "./_postgres.ts";
import { test } from "./_test.ts";

const Thing = { group: "test.beehive.dev", kind: "Thing" };
const COUNT = 40;

test("PostgresStore survives a server restart while the engine runs: no acknowledged write is lost, and everything converges", async () => {
  const store = await openPostgresStore();
  const bh = new Beehive(store);
  const reconciled = new Set<string>();
  const all = Promise.withResolvers<void>();
  bh.register(Thing, (obj) => {
    reconciled.add(obj.name);
    if (reconciled.size === COUNT) all.resolve();
    return settled();
  }, { maxRetryInterval: 1000 });
  const stop = await bh.start();
  const things = bh.client(Thing);
  let restart: Promise<void> | undefined;
  let failures = 0;
  const acknowledged: string[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    for (let i = 0; i < COUNT; i++) {
      if (i === COUNT / 2) restart = restartServer();
      const name = `t${i}`;
      for (;;) {
        try {
          await things.create(name, { i });
          acknowledged.push(name);
          break;
        } catch (error) {
          // A commit whose reply was lost is there after all: the retry finds the name taken.
          if (error instanceof NameTakenError) {
            acknowledged.push(name);
            break;
          }
          assert.ok(error instanceof StoreError, `a failed write is a StoreError: ${error}`);
          failures++;
          await restart;
        }
      }
    }
    await restart;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`converged on ${reconciled.size}/${COUNT}`)),
        60_000,
      );
    });
    await Promise.race([all.promise, deadline]);
    const names = (await store.objects.list(Thing)).map((o) => o.name).sort();
    assert.deepEqual(names, [...acknowledged].sort(), "every acknowledged write is there");
    assert.equal(acknowledged.length, COUNT);
    console.log(`server restart: ${failures} write(s) failed and were retried`);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    await restart?.catch(() => {});
    await stop();
    await store.close();
  }
});
