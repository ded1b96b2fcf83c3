/**
 * Kind tails served from the SQLite store's commit journal: the cases every
 * SQL store runs (`kind_tail_cases.ts`), and a race only SQLite's driver can
 * stage (another process committing just before the writer's `BEGIN`).
 *
 * @module
 */
import assert from "node:assert/strict";
import { openKindTailSymbol } from "../../src/watches/kind_tail.ts";
import { openSqliteStore } from "../_sqlite_driver.ts";
import { tempDir } from "../_beehive_harness.ts";
import { test } from "../_test.ts";
import { DatabaseSync } from "node:sqlite";
import type { Driver } from "../../store/sqlite/_driver.ts";
import { nodeSqliteDriver } from "../../store/sqlite/_node_sqlite.ts";
import { SqliteStore } from "../../store/sqlite/sqlite_store.ts";
import { GROUP_TURNS } from "../../store/sqlite/_dialect.ts";
import { brief, kindTailCases, logged, readAll, Widget } from "./kind_tail_cases.ts";

kindTailCases({
  name: "SQLite",
  announced: false,
  async open() {
    const dir = tempDir();
    const path = dir.file("tail.db");
    return {
      store: await openSqliteStore(path),
      reopen: () => openSqliteStore(path),
      done: () => dir.remove(),
    };
  },
});

test("SQLite kind tail: another process's commit landing between a read's check and its hand-out is not skipped", async () => {
  // A driver whose writer, when armed, lets "another process" commit a log entry just before its
  // next BEGIN IMMEDIATE: that transaction's batch then starts the tail's coverage over above it.
  let armed = false;
  let foreign: DatabaseSync | undefined;
  const driver: Driver = {
    open(path) {
      const conn = nodeSqliteDriver.open(path);
      return {
        exec(sql) {
          if (armed && /^BEGIN IMMEDIATE/.test(sql)) {
            armed = false;
            foreign ??= new DatabaseSync(path);
            foreign.exec(`BEGIN IMMEDIATE;
              UPDATE resource_version_seq SET value = value + 1 WHERE id = 1;
              INSERT INTO object_writes (resource_version, object_id, "group", kind, op, written_at)
                SELECT value, 999999, '${Widget.group}', '${Widget.kind}', 2, 0
                FROM resource_version_seq WHERE id = 1;
              COMMIT`);
          }
          conn.exec(sql);
        },
        prepare: (sql) => conn.prepare(sql),
        close: () => conn.close(),
      };
    },
    describeFailure: (e) => nodeSqliteDriver.describeFailure(e),
  };
  // Every alignment of the read against the write's commit, a promise turn apart.
  for (let turns = 0; turns <= 2 * GROUP_TURNS + 4; turns++) {
    const dir = tempDir();
    const store = SqliteStore.open(dir.file("race.db"), {}, driver);
    const tail = store[openKindTailSymbol](Widget);
    try {
      const start = await store.objectWrites.maxVersion(Widget);
      await store.objects.create(Widget, { name: "a", spec: "{}" });
      const got = await readAll(tail, start);
      armed = true;
      const write = store.objects.create(Widget, { name: "b", spec: "{}" });
      for (let i = 0; i < turns; i++) await null;
      got.push(...(await tail.read(got[got.length - 1].resourceVersion, 512)).writes);
      await write;
      got.push(...await readAll(tail, got[got.length - 1].resourceVersion));
      assert.deepEqual(brief(got), await logged(store, Widget, start), `read ${turns} turns in`);
      assert.equal(got.length, 3);
    } finally {
      armed = false;
      tail.close();
      await store.close();
      foreign?.close();
      foreign = undefined;
      dir.remove();
    }
  }
});
