/**
 * The SQLite store's background checkpointer: a worker thread that copies the
 * WAL back into the database file off the event loop, started once a store
 * has committed `CHECKPOINT_EVERY` times; under Deno and Node 22.
 *
 * @module
 */
import assert from "node:assert/strict";
import { existsSync, statSync } from "node:fs";
import { openSqliteStore } from "../../store/sqlite/mod.ts";
import { SqliteStore } from "../../store/sqlite/sqlite_store.ts";
import {
  CHECKPOINT_EVERY,
  useCheckpointWorker,
  workerUrl,
} from "../../store/sqlite/_checkpointer.ts";
import { test } from "../_test.ts";
import { tempDir } from "../_beehive_harness.ts";

const Widget = { group: "test.beehive.dev", kind: "Widget" };

async function withDir(fn: (file: string) => Promise<void>): Promise<void> {
  const dir = tempDir();
  try {
    await fn(dir.file("db.sqlite"));
  } finally {
    dir.remove();
  }
}

/** `n` creates, one commit each. */
async function commits(store: SqliteStore, n: number, from = 0): Promise<void> {
  for (let i = from; i < from + n; i++) {
    await store.objects.create(Widget, { name: `w${i}`, spec: JSON.stringify({ i }) });
  }
}

test("SQLite checkpointer: no worker until the store has committed CHECKPOINT_EVERY times", async () => {
  await withDir(async (file) => {
    const store = await openSqliteStore(file);
    try {
      const checkpointer = SqliteStore.checkpointerOf(store)!;
      assert.ok(checkpointer !== undefined, "a node:sqlite store has one");
      await commits(store, CHECKPOINT_EVERY - 1);
      assert.equal(checkpointer.running, false);
      const next = checkpointer.next();
      await commits(store, 1, CHECKPOINT_EVERY - 1);
      assert.equal(checkpointer.running, true);
      const result = await next;
      assert.ok(result.log > 0, "the WAL held the commits");
      assert.equal(result.checkpointed, result.log, "nothing else was writing: all of it copied");
    } finally {
      await store.close();
    }
  });
});

test("SQLite checkpointer: the worker copies the WAL into the database file long before SQLite's own threshold", async () => {
  await withDir(async (file) => {
    const store = await openSqliteStore(file);
    try {
      const checkpointer = SqliteStore.checkpointerOf(store)!;
      const sizeBefore = statSync(file).size;
      const next = checkpointer.next();
      await commits(store, CHECKPOINT_EVERY);
      await next;
      // SQLite's own automatic checkpoint waits for 1,000 pages; these commits wrote far fewer.
      assert.ok(statSync(file).size > sizeBefore, "the database file took the pages");
    } finally {
      await store.close();
    }
  });
});

test("SQLite checkpointer: close ends the worker first, so the last close removes the WAL", async () => {
  await withDir(async (file) => {
    const store = await openSqliteStore(file);
    const checkpointer = SqliteStore.checkpointerOf(store)!;
    const next = checkpointer.next();
    await commits(store, CHECKPOINT_EVERY * 2);
    await next;
    await store.close();
    assert.equal(checkpointer.running, false);
    assert.equal(existsSync(`${file}-wal`), false, "no connection was left open on the file");
    const reopened = await openSqliteStore(file);
    try {
      assert.equal((await reopened.objects.list(Widget)).length, CHECKPOINT_EVERY * 2);
    } finally {
      await reopened.close();
    }
  });
});

test("SQLite checkpointer: a store on the FFI driver has none (its library is not node:sqlite)", async () => {
  const deno = (globalThis as { Deno?: { dlopen?: unknown } }).Deno;
  if (typeof deno?.dlopen !== "function") return; // Node: the FFI driver does not exist there.
  await withDir(async (file) => {
    const store = await openSqliteStore(file, { driver: "ffi" });
    try {
      assert.equal(SqliteStore.checkpointerOf(store), undefined);
      await commits(store, CHECKPOINT_EVERY + 1);
    } finally {
      await store.close();
    }
  });
});

test("SQLite checkpointer: a worker that fails is logged once and the writer checkpoints again", async () => {
  // A worker that reports a failure on its first request.
  useCheckpointWorker(workerUrl(`
    import { parentPort } from "node:worker_threads";
    import process from "node:process";
    parentPort.on("message", (m) => {
      if (m === "close") process.exit(0);
      parentPort.postMessage({ error: "disk on fire" });
    });
  `));
  try {
    await withDir(async (file) => {
      const warned = Promise.withResolvers<{ message: string; error: unknown }>();
      const warnings: string[] = [];
      const logger = {
        error() {},
        info() {},
        debug() {},
        warn(message: string, attrs?: Record<string, unknown>) {
          warnings.push(message);
          warned.resolve({ message, error: attrs?.error });
        },
      };
      const store = await openSqliteStore(file, { logger });
      try {
        const checkpointer = SqliteStore.checkpointerOf(store)!;
        const next = checkpointer.next();
        await commits(store, CHECKPOINT_EVERY);
        await assert.rejects(next, /disk on fire/);
        const { message, error } = await warned.promise;
        assert.match(message, /background checkpointer failed/);
        assert.match(String(error), /disk on fire/);
        assert.equal(checkpointer.running, false);
        // Later requests go nowhere and nothing else is logged; writes carry on.
        await commits(store, CHECKPOINT_EVERY * 2, CHECKPOINT_EVERY);
        assert.equal((await store.objects.list(Widget)).length, CHECKPOINT_EVERY * 3);
        assert.equal(warnings.length, 1);
      } finally {
        await store.close();
      }
      assert.equal(existsSync(`${file}-wal`), false, "the failed worker's connection is gone too");
    });
  } finally {
    useCheckpointWorker(undefined);
  }
});
