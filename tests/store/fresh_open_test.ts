/**
 * A fresh database opened by several processes at the same instant (a rolling
 * deploy onto a new volume, replicas starting together) opens in every one of
 * them: migrations are serialized across processes. Eight processes on the
 * runtime running the test, told at once to open the same new SQLite file (on
 * the driver under test) or the same new PostgreSQL schema, round after round.
 *
 * @module
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { freshSchema, openPostgresStore } from "../_postgres.ts";
import { testDriver } from "../_sqlite_driver.ts";
import { test } from "../_test.ts";
import { Replica } from "../multiprocess/_processes.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";
import type { Store } from "../../src/store.ts";
import { nodeTempDirs } from "./sqlite_factory.ts";

const OPENER = fileURLToPath(new URL("./_fresh_opener.ts", import.meta.url));
const PROCESSES = 8;
const Kind = { group: "test.beehive.dev", kind: "Opener" };

/** Starts the openers, runs `rounds` rounds on fresh targets, and checks every open and write. */
async function openTogether(
  which: "sqlite" | "postgres",
  rounds: number,
  fresh: () => string,
  reopen: (target: string) => Promise<Store>,
): Promise<void> {
  const openers = Array.from(
    { length: PROCESSES },
    (_, i) => new Replica({ name: `opener-${i}` }, OPENER),
  );
  try {
    await Promise.all(openers.map((o) => o.waitForEvent("ready", 60_000)));
    const failures: string[] = [];
    for (let round = 0; round < rounds; round++) {
      const target = fresh();
      const line = JSON.stringify({ store: which, target });
      const from = openers.map((o) => o.events.length);
      // One synchronous loop: every process gets the line in the same instant.
      for (const o of openers) o.send(line);
      const results = await Promise.all(
        openers.map((o, i) =>
          o.waitFor(
            (e) => e.target === target && (e.ev === "opened" || e.ev === "failed"),
            60_000,
            from[i],
          )
        ),
      );
      const failed = results.filter((r) => r.ev === "failed");
      for (const r of failed) failures.push(`round ${round}, ${r.name}: ${r.error}`);
      const store = await reopen(target);
      try {
        const ids = await store.objects.listIds(Kind);
        assert.equal(ids.length, PROCESSES - failed.length, `round ${round}`);
      } finally {
        await store.close();
      }
    }
    assert.deepEqual(failures, [], `${failures.length} of ${rounds * PROCESSES} opens failed`);
  } finally {
    await Promise.all(openers.map((o) => o.close()));
  }
}

test("openSqliteStore on one fresh file from 8 processes at once: every open succeeds", async () => {
  const dir = nodeTempDirs.make();
  let n = 0;
  try {
    await openTogether(
      "sqlite",
      16,
      () => nodeTempDirs.join(dir, `fresh-${n++}.db`),
      (path) => openSqliteStore(path, testDriver === "ffi" ? { driver: "ffi" } : {}),
    );
  } finally {
    nodeTempDirs.remove(dir);
  }
});

test("openPostgresStore on one fresh schema from 8 processes at once: every open succeeds", async () => {
  await openTogether("postgres", 3, freshSchema, (schema) => openPostgresStore({ schema }));
});
