/**
 * The CLI against hostile input: `apply` all-or-nothing, a byte order mark,
 * a file or standard input above the size cap, control characters in stored names reaching the
 * terminal, deeply nested specs rendered by `get -o json` and `describe`, another application's
 * database, and reads while a running process holds the write lock.
 *
 * @module
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import {
  closeSync,
  ftruncateSync,
  openSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { DatabaseSync } from "node:sqlite";
import process from "node:process";
import { Beehive } from "../../mod.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";
import { test } from "../_test.ts";
import { tempDir } from "../_beehive_harness.ts";
import { cli } from "./_cli_harness.ts";

const K = { group: "g", kind: "K" };

async function withDb(fn: (db: string, dir: ReturnType<typeof tempDir>) => Promise<void>) {
  const dir = tempDir();
  try {
    const db = dir.file("hostile.db");
    const store = await openSqliteStore(db);
    await store.close();
    await fn(db, dir);
  } finally {
    dir.remove();
  }
}

/** Control characters a terminal acts on: C0 (but newline), DEL, C1, and the bidi overrides. */
// deno-lint-ignore no-control-regex
const TERMINAL_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

test("cli apply writes nothing when any item is refused, though earlier items were valid", async () => {
  await withDb(async (db, dir) => {
    const file = dir.file("objects.json");
    for (
      const second of [
        { ...K, name: "n".repeat(2_000), spec: {} }, // above limits.nameBytes
        { ...K, name: "deep", spec: JSON.parse("[".repeat(100) + "]".repeat(100)) }, // nestingDepth
        { group: "g", kind: "K".repeat(2_000), name: "b", spec: {} }, // fieldBytes
      ]
    ) {
      writeFileSync(file, JSON.stringify([{ ...K, name: "first", spec: { a: 1 } }, second]));
      const r = await cli([db, "apply", "-f", file]);
      assert.equal(r.code, 1, r.out);
      assert.match(r.err, /^error: item 1: .*\(nothing was written\)\n$/);
      assert.ok(r.err.length < 500, `a bounded message: ${r.err.length}`);
      assert.equal(r.out, "");
      assert.match((await cli([db, "get", "K.g"])).err, /unknown kind "K\.g"/);
    }
    // The same first item alone is written.
    writeFileSync(file, JSON.stringify([{ ...K, name: "first", spec: { a: 1 } }]));
    assert.equal((await cli([db, "apply", "-f", file])).out, "K.g/first created\n");
  });
});

test("cli apply reads a JSON file that starts with a UTF-8 byte order mark", async () => {
  await withDb(async (db, dir) => {
    const file = dir.file("bom.json");
    writeFileSync(file, "\uFEFF" + JSON.stringify({ ...K, name: "a", spec: {} }));
    const r = await cli([db, "apply", "-f", file]);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, "K.g/a created\n");
    const stdin = await cli([db, "apply", "-f", "-"], {
      stdin: "\uFEFF" + JSON.stringify({ ...K, name: "b", spec: {} }),
    });
    assert.equal(stdin.out, "K.g/b created\n");
  });
});

test("cli apply refuses a file above 64 MiB with one line, before reading it", async () => {
  await withDb(async (db, dir) => {
    const file = dir.file("huge.json");
    const fd = openSync(file, "w");
    ftruncateSync(fd, 600 * 1_048_576); // sparse: no disk written
    closeSync(fd);
    const r = await cli([db, "apply", "-f", file]);
    assert.equal(r.code, 1);
    assert.match(r.err, /^error: .*huge\.json is 629145600 bytes, above the 64 MiB apply reads/);
    assert.equal(r.err.split("\n").length, 2);
  });
});

test("cli escapes control characters of stored names in every command's output", async () => {
  await withDb(async (db) => {
    const hostile = "x\u001b]0;pwned\u0007\u009b31m\u202eevil";
    const store = await openSqliteStore(db);
    try {
      const bh = new Beehive(store);
      const a = await bh.client(K).create(hostile, { note: hostile });
      await bh.adminClient(K).addEvent(a.id, {
        type: "Warning",
        reason: "R\u001b[2J",
        message: hostile,
      });
      await bh.adminClient(K).setCondition(a.id, {
        type: "Ready",
        status: "False",
        message: hostile,
      });
    } finally {
      await store.close();
    }
    const runs = [
      await cli([db, "get", "K.g"]),
      await cli([db, "get", "K.g", hostile, "-o", "json"]),
      await cli([db, "describe", "K.g", hostile]),
      await cli([db, "describe", "K.g", hostile, "-o", "json"]),
      await cli([db, "events", "K.g", hostile]),
      await cli([db, "events", "K.g", hostile, "-o", "json"]),
      await cli([db, "apply", "-f", "-"], {
        stdin: JSON.stringify({ ...K, name: hostile, spec: { note: 1 } }),
      }),
      await cli([db, "requeue", "K.g", hostile]),
      await cli([db, "delete", "K.g", hostile]),
      await cli([db, "delete", "K.g", `${hostile}-missing`]),
      await cli([db, "get", "K.g\u001b[2J"]),
    ];
    for (const [i, r] of runs.entries()) {
      assert.ok(!TERMINAL_CONTROL.test(r.out), `run ${i} stdout: ${JSON.stringify(r.out)}`);
      assert.ok(!TERMINAL_CONTROL.test(r.err), `run ${i} stderr: ${JSON.stringify(r.err)}`);
    }
    // JSON output stays valid JSON and carries the exact name.
    assert.equal(JSON.parse(runs[1].out).name, hostile);
    assert.match(runs[7].out, /^K\.g\/x.*requeued\n$/);
  });
});

test("cli get -o json and describe print a deeply nested stored spec within a bound", async () => {
  await withDb(async (db) => {
    let spec: unknown = {};
    for (let i = 0; i < 2_235; i++) spec = { a: spec };
    const text = JSON.stringify(spec);
    // Written through the store port, below the engine's nesting limit: an old row, say.
    const store = await openSqliteStore(db);
    try {
      await store.objects.create(K, { name: "deep", spec: text, specVersion: 1 });
    } finally {
      await store.close();
    }
    for (const args of [["get", "K.g", "deep", "-o", "json"], ["describe", "K.g", "deep"]]) {
      const r = await cli([db, ...args]);
      assert.equal(r.code, 0, r.err);
      assert.ok(r.out.length < 4 * text.length + 1_048_576 + 10_000, `${args}: ${r.out.length}`);
    }
    const json = await cli([db, "get", "K.g", "deep", "-o", "json"]);
    assert.equal(JSON.stringify(JSON.parse(json.out).spec), text);
  });
});

test("cli apply -f - stops reading standard input above 64 MiB with one line, as a program", async () => {
  await withDb(async (db) => {
    const args = "Deno" in globalThis
      ? ["run", "--allow-read", "--allow-write", "--allow-env", "cli/mod.ts"]
      : ["--disable-warning=ExperimentalWarning", "cli/mod.ts"];
    const child = spawn(process.execPath, [...args, db, "apply", "-f", "-"], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    let err = "";
    child.stderr!.setEncoding("utf8").on("data", (t: string) => (err += t));
    child.stdout!.resume();
    const exited = new Promise<number>((resolve) => child.once("close", (c) => resolve(c ?? -1)));
    child.stdin!.on("error", () => {}); // the program stops reading: EPIPE is expected
    const chunk = new Uint8Array(1_048_576).fill(0x20);
    let open = true;
    exited.then(() => (open = false));
    for (let i = 0; i < 80 && open; i++) {
      if (!child.stdin!.write(chunk)) {
        await new Promise<void>((resolve) => {
          child.stdin!.once("drain", resolve);
          exited.then(() => resolve());
        });
      }
    }
    child.stdin!.end();
    assert.equal(await exited, 1);
    assert.match(err, /^error: stdin is more than \d+ bytes, above the 64 MiB apply reads/);
    assert.equal(err.split("\n").length, 2);
  });
});

test("cli refuses another application's database for reads and writes, and leaves it untouched", async () => {
  const dir = tempDir();
  try {
    const db = dir.file("app.db");
    const app = new DatabaseSync(db);
    app.exec("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)");
    app.close();
    const before = readFileSync(db);
    const file = dir.file("objects.json");
    writeFileSync(file, JSON.stringify({ ...K, name: "a", spec: {} }));
    for (
      const args of [["kinds"], ["get", "K.g"], ["apply", "-f", file], ["delete", "K.g", "a"]]
    ) {
      const r = await cli([db, ...args]);
      assert.equal(r.code, 1, `${args[0]}: ${r.out}`);
      assert.match(r.err, /not a beehive store/, args[0]);
    }
    assert.deepEqual(readFileSync(db), before);
    assert.deepEqual(readdirSync(dir.path).sort(), ["app.db", "objects.json"]);
  } finally {
    dir.remove();
  }
});

test("cli read commands open the store read-only: no new open epoch, no write, no lock wait", async () => {
  await withDb(async (db) => {
    const store = await openSqliteStore(db);
    const a = await store.objects.create(K, { name: "a", spec: "{}" });
    await store.conditions.set(a, [{ type: "Connected", status: "True", liveness: true }]);
    // The running process holds the write lock through every read below.
    const holder = new DatabaseSync(db);
    holder.exec("BEGIN IMMEDIATE");
    try {
      const epoch = () => Number(holder.prepare("SELECT value FROM store_epoch").get()!.value);
      const at = epoch();
      for (
        const args of [["kinds"], ["get", "K.g"], ["describe", "K.g", "a"], ["events", "K.g", "a"]]
      ) {
        const r = await cli([db, ...args]);
        assert.equal(r.code, 0, `${args[0]}: ${r.err}`);
      }
      const got = await cli([db, "get", "K.g", "a", "-o", "json"]);
      const [condition] = JSON.parse(got.out).conditions;
      assert.equal(condition.status, "True", "the live process's liveness reads True");
      assert.equal(epoch(), at);
    } finally {
      holder.exec("ROLLBACK");
      holder.close();
      await store.close();
    }
  });
});

test("cli get after a writable apply shows the running process's liveness as True, and Unknown once that process closed the store", async () => {
  await withDb(async (db, dir) => {
    const store = await openSqliteStore(db);
    try {
      const a = await store.objects.create(K, { name: "a", spec: "{}" });
      await store.conditions.set(a, [{ type: "Connected", status: "True", liveness: true }]);
      const connected = async () => {
        const got = await cli([db, "get", "K.g", "a", "-o", "json"]);
        assert.equal(got.code, 0, got.err);
        return JSON.parse(got.out).conditions.find((c: { type: string }) => c.type === "Connected");
      };
      const file = dir.file("b.json");
      writeFileSync(file, JSON.stringify({ ...K, name: "b", spec: {} }));
      const applied = await cli([db, "apply", "-f", file]);
      assert.equal(applied.code, 0, applied.err);
      assert.equal((await cli([db, "delete", "K.g", "b"])).code, 0);
      const after = await connected();
      assert.equal(after.status, "True", "the writable CLI opens downgraded nothing");
      assert.equal(after.unconfirmed, false);
      const own = (await store.objects.get(a.id)).conditions[0];
      assert.equal(own.status, "True");
    } finally {
      await store.close();
    }
    const gone = await cli([db, "get", "K.g", "a", "-o", "json"]);
    const [condition] = JSON.parse(gone.out).conditions;
    assert.equal(condition.status, "Unknown");
    assert.equal(condition.unconfirmed, true);
  });
});

test("cli check exits 0 on a healthy store and 1, naming each damage, on a damaged one", async () => {
  await withDb(async (db) => {
    const store = await openSqliteStore(db);
    const a = await store.objects.create(K, { name: "a", spec: "{}" });
    const b = await store.objects.create(K, { name: "b", spec: "{}" });
    await store.edges.add({ fromId: b.id, toId: a.id, relation: "depends_on" });
    await store.close();
    const healthy = await cli([db, "check"]);
    assert.equal(healthy.code, 0, healthy.err);
    assert.match(healthy.out, /^integrity_check: ok$/m);
    assert.match(healthy.out, /^ok: no damage found$/m);
    const json = await cli([db, "check", "-o", "json"]);
    assert.equal(JSON.parse(json.out).ok, true);

    const raw = new DatabaseSync(db);
    raw.exec("PRAGMA foreign_keys = OFF");
    raw.exec(`DELETE FROM objects WHERE id = ${a.id}`);
    raw.close();
    const damaged = await cli([db, "check"]);
    assert.equal(damaged.code, 1);
    assert.equal(damaged.err, "");
    assert.match(damaged.out, /^foreign_key_check: FAILED$/m);
    assert.match(damaged.out, new RegExp(`^dangling edges: FAILED\\n  .*: ${b.id}$`, "m"));
    assert.match(damaged.out, /^damaged: see the checks above$/m);
  });
});

test("cli check on a file that is not a database fails with one line, exit 1", async () => {
  const dir = tempDir();
  try {
    const db = dir.file("garbage.db");
    writeFileSync(db, "x".repeat(8192));
    const r = await cli([db, "check"]);
    assert.equal(r.code, 1);
    assert.match(r.err, /^error: .*not a database\n$/);
  } finally {
    dir.remove();
  }
});
