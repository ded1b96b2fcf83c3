/**
 * The Deno FFI driver on its own: values, statement and connection lifetimes,
 * error codes, the busy timeout, whether a transaction is open, the refusals
 * of `openSqliteStore(path, { driver: "ffi" })`, and databases shared with the
 * `node:sqlite` driver both ways. Under Node only the refusal runs (the driver needs Deno).
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InvalidOptionError, StoreError } from "../../src/model/errors.ts";
import type { Connection, Driver, SqlValue } from "../../store/sqlite/_driver.ts";
import { nodeSqliteDriver } from "../../store/sqlite/_node_sqlite.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";
import { test } from "../_test.ts";

const onDeno = (globalThis as { Deno?: unknown }).Deno !== undefined;
const Kind = { group: "ffi.beehive.dev", kind: "Thing" };

/** Runs `fn` with a fresh directory, removed afterwards. */
async function withDir(fn: (dir: string) => Promise<void> | void): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "beehive-ffi-"));
  try {
    await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function ffi(): Promise<Driver> {
  const { ffiDriver, libraryFromEnvironment } = await import("../../store/sqlite/_ffi_sqlite.ts");
  return ffiDriver(libraryFromEnvironment());
}

/**
 * Opens `path` on both drivers, runs `fn`, and closes both. Only for
 * statements that take no lock another connection must see: two copies of
 * SQLite in one process do not see each other's locks.
 */
async function withBoth(
  path: string,
  fn: (node: Connection, ffi: Connection, driver: Driver) => void,
): Promise<void> {
  const driver = await ffi();
  const a = nodeSqliteDriver.open(path);
  try {
    const b = driver.open(path);
    try {
      fn(a, b, driver);
    } finally {
      b.close();
    }
  } finally {
    a.close();
  }
}

/** Opens `path` twice on the FFI driver, runs `fn`, and closes both. */
async function withTwo(
  path: string,
  fn: (first: Connection, second: Connection, driver: Driver) => void,
): Promise<void> {
  const driver = await ffi();
  const a = driver.open(path);
  try {
    const b = driver.open(path);
    try {
      fn(a, b, driver);
    } finally {
      b.close();
    }
  } finally {
    a.close();
  }
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  assert.fail("expected a throw");
}

if (!onDeno) {
  test("openSqliteStore refuses driver ffi on Node with InvalidOptionError", async () => {
    await assert.rejects(openSqliteStore(":memory:", { driver: "ffi" }), (e: Error) => {
      assert.ok(e instanceof InvalidOptionError);
      assert.match(e.message, /Deno/);
      return true;
    });
  });
}

if (onDeno) {
  test("FFI driver reads back every bound value type as node:sqlite does", async () => {
    await withDir((dir) =>
      withBoth(join(dir, "values.db"), (node, ffi) => {
        const values: SqlValue[] = [
          null,
          0,
          -7,
          2 ** 53 - 1,
          1.5,
          -0.25,
          "",
          "plain",
          "ünïcödé, 😀",
          "x".repeat(10_000),
          new Uint8Array([0, 1, 2, 255]),
          new Uint8Array(0),
          12n,
        ];
        const sql = `SELECT ${values.map((_, i) => `?${i + 1} AS c${i}`).join(", ")}`;
        const a = node.prepare(sql).get(...values);
        const b = ffi.prepare(sql).get(...values);
        assert.deepEqual(b, a);
        assert.ok(b!.c11 instanceof Uint8Array && b!.c11.byteLength === 0, "an empty blob");
        assert.equal(Object.getPrototypeOf(b), null, "null-prototype rows");
        const arrays = ffi.prepare(sql);
        arrays.setReturnArrays!(true);
        assert.deepEqual(arrays.all(...values), [Object.values(a!)]);
        // Deno's node:sqlite cuts text at a NUL; the FFI driver reads the stored length.
        assert.equal(ffi.prepare("SELECT ? AS v").get("a\0b")!.v, "a\0b");
      })
    );
  });

  test("FFI driver returns integers beyond 2^53 as bigint and binds missing parameters as NULL", async () => {
    await withDir((dir) =>
      withBoth(join(dir, "ints.db"), (_node, ffi) => {
        const big = 2n ** 62n + 3n;
        assert.deepEqual(ffi.prepare("SELECT ? AS v").get(big), { __proto__: null, v: big });
        const s = ffi.prepare("SELECT ?1 AS a, ?2 AS b");
        assert.equal(s.get(1, 2)!.b, 2);
        assert.equal(s.get(1)!.b, null, "a parameter left over from the last call is cleared");
      })
    );
  });

  test("FFI statements reset after each call, so a reader sees later commits", async () => {
    await withDir((dir) =>
      withTwo(join(dir, "reset.db"), (node, ffi) => {
        node.exec("PRAGMA journal_mode = WAL; CREATE TABLE t (x INTEGER) STRICT");
        const count = ffi.prepare("SELECT COUNT(*) AS n FROM t");
        const all = ffi.prepare("SELECT x FROM t");
        assert.equal(count.get()!.n, 0);
        assert.deepEqual(all.all(), []);
        node.prepare("INSERT INTO t VALUES (?), (?)").run(1, 2);
        assert.equal(count.get()!.n, 2);
        assert.equal(all.all().length, 2);
        assert.equal(ffi.prepare("UPDATE t SET x = x + 1").run().changes, 2);
        // No statement holds a snapshot: a truncating checkpoint completes.
        const cp = node.prepare("PRAGMA wal_checkpoint(TRUNCATE)").get()!;
        assert.equal(cp.busy, 0);
      })
    );
  });

  test("both drivers say whether a transaction is open (isTransaction); a failed constraint leaves it open", async () => {
    const driver = await ffi();
    await withDir((dir) => {
      for (const [name, d] of [["node", nodeSqliteDriver], ["ffi", driver]] as const) {
        const conn = d.open(join(dir, `${name}.db`));
        try {
          conn.exec("CREATE TABLE t (x INTEGER PRIMARY KEY) STRICT");
          assert.equal(conn.isTransaction, false, name);
          conn.exec("BEGIN IMMEDIATE");
          assert.equal(conn.isTransaction, true, name);
          conn.prepare("INSERT INTO t VALUES (1)").run();
          // A constraint failure undoes its statement only: the transaction stays open.
          assert.throws(() => conn.prepare("INSERT INTO t VALUES (1)").run());
          assert.equal(conn.isTransaction, true, name);
          conn.exec("COMMIT");
          assert.equal(conn.isTransaction, false, name);
        } finally {
          conn.close();
        }
      }
    });
  });

  test("FFI connection close finalizes its statements; later use throws", async () => {
    const driver = await ffi();
    await withDir((dir) => {
      const conn = driver.open(join(dir, "close.db"));
      const s = conn.prepare("SELECT 1 AS one");
      assert.equal(s.get()!.one, 1);
      conn.close();
      assert.throws(() => s.get(), TypeError);
      assert.throws(() => conn.prepare("SELECT 1"), TypeError);
      assert.throws(() => conn.exec("SELECT 1"), TypeError);
      assert.throws(() => conn.close(), TypeError);
    });
  });

  test("FFI driver errors carry SQLite's extended code and node:sqlite's message", async () => {
    await withDir((dir) =>
      withBoth(join(dir, "errors.db"), (node, ffi, driver) => {
        node.exec("CREATE TABLE u (x INTEGER UNIQUE) STRICT");
        ffi.prepare("INSERT INTO u VALUES (?)").run(1);
        const a = thrown(() => node.prepare("INSERT INTO u VALUES (?)").run(1));
        const b = thrown(() => ffi.prepare("INSERT INTO u VALUES (?)").run(1));
        assert.deepEqual(driver.describeFailure(b), nodeSqliteDriver.describeFailure(a));
        assert.equal(driver.describeFailure(b).code, 2067); // SQLITE_CONSTRAINT_UNIQUE
        const c = thrown(() => ffi.prepare("SELEC 1"));
        assert.equal(driver.describeFailure(c).code, 1);
        assert.match(driver.describeFailure(c).message, /near "SELEC"/);
        const d = thrown(() => ffi.exec("INSERT INTO missing VALUES (1)"));
        assert.match(driver.describeFailure(d).message, /no such table: missing/);
        assert.throws(() => ffi.prepare("SELECT ?").get({} as unknown as SqlValue), TypeError);
      })
    );
  });

  test("FFI driver honours the busy timeout, then reports SQLITE_BUSY", async () => {
    await withDir((dir) =>
      withTwo(join(dir, "busy.db"), (node, ffi, driver) => {
        node.exec("PRAGMA journal_mode = WAL; CREATE TABLE t (x INTEGER) STRICT");
        node.exec("BEGIN IMMEDIATE");
        try {
          ffi.exec("PRAGMA busy_timeout = 20");
          const e = thrown(() => ffi.exec("BEGIN IMMEDIATE"));
          assert.equal(driver.describeFailure(e).code, 5); // SQLITE_BUSY
        } finally {
          node.exec("ROLLBACK");
        }
        ffi.exec("BEGIN IMMEDIATE; COMMIT");
      })
    );
  });

  test("openSqliteStore with driver ffi refuses bad options with InvalidOptionError", async () => {
    const bad = [
      { driver: "sqlite3" as "ffi" },
      { driver: "ffi" as const, library: "" },
      { driver: "ffi" as const, library: 42 as unknown as string },
      { library: "libsqlite3.so.0" },
    ];
    for (const options of bad) {
      await assert.rejects(openSqliteStore(":memory:", options), InvalidOptionError);
    }
  });

  test("openSqliteStore with driver ffi names a missing or non-SQLite library in a StoreError", async () => {
    await assert.rejects(
      openSqliteStore(":memory:", { driver: "ffi", library: "libnot-sqlite-at-all.so" }),
      (e: Error) => e instanceof StoreError && /libnot-sqlite-at-all\.so/.test(e.message),
    );
    const denoOs = (globalThis as unknown as { Deno: { build: { os: string } } }).Deno.build.os;
    if (denoOs === "linux") {
      await assert.rejects(
        openSqliteStore(":memory:", { driver: "ffi", library: "libc.so.6" }),
        (e: Error) => e instanceof StoreError && /sqlite3_libversion/.test(e.message),
      );
    }
  });

  test("openSqliteStore with driver ffi loads the library BEEHIVE_SQLITE_LIBRARY names", async () => {
    const env = (globalThis as unknown as {
      Deno: { env: { get(k: string): string | undefined; set(k: string, v: string): void } };
    }).Deno.env;
    const before = env.get("BEEHIVE_SQLITE_LIBRARY");
    env.set("BEEHIVE_SQLITE_LIBRARY", "libfrom-the-environment.so");
    try {
      await assert.rejects(
        openSqliteStore(":memory:", { driver: "ffi" }),
        (e: Error) => e instanceof StoreError && /libfrom-the-environment\.so/.test(e.message),
      );
    } finally {
      env.set("BEEHIVE_SQLITE_LIBRARY", before ?? "");
    }
  });

  test("FFI library check names the SQLite version the store needs", async () => {
    const { checkVersion } = await import("../../store/sqlite/_ffi_library.ts");
    assert.throws(
      () => checkVersion("libold.so", 3_031_001, "3.31.1"),
      /"libold\.so" is version 3\.31\.1; the store needs SQLite 3\.38\.0 or newer/,
    );
    checkVersion("libnew.so", 3_038_000, "3.38.0");
  });

  test("openSqliteStore with driver ffi without --allow-ffi rejects with a StoreError saying so", async () => {
    const { Deno: D } = globalThis as unknown as {
      Deno: {
        execPath(): string;
        Command: new (cmd: string, o: { args: string[]; env: Record<string, string> }) => {
          output(): Promise<{ code: number; stdout: Uint8Array; stderr: Uint8Array }>;
        };
      };
    };
    await withDir(async (dir) => {
      const mod = new URL("../../store/sqlite/mod.ts", import.meta.url).href;
      const script = join(dir, "no_ffi.ts");
      writeFileSync(
        script,
        `import { openSqliteStore } from ${JSON.stringify(mod)};
try { await openSqliteStore(":memory:", { driver: "ffi" }); console.log("opened"); }
catch (e) { console.log(e.name + ": " + e.message); }`,
      );
      const out = await new D.Command(D.execPath(), {
        args: ["run", "--no-config", "--allow-read", "--allow-write", "--allow-env", script],
        env: { NO_COLOR: "1" },
      }).output();
      const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      assert.match(text, /^StoreError: .*--allow-ffi/m);
    });
  });

  test("openSqliteStore refuses a file this process holds open through the other driver", async () => {
    await withDir(async (dir) => {
      const path = join(dir, "mixed.db");
      const node = await openSqliteStore(path);
      try {
        await assert.rejects(
          openSqliteStore(path, { driver: "ffi" }),
          (e: Error) => e instanceof StoreError && /open with driver "node"/.test(e.message),
        );
        const again = await openSqliteStore(path); // the same driver twice is fine
        await again.close();
      } finally {
        await node.close();
      }
      const ffiStore = await openSqliteStore(path, { driver: "ffi" });
      try {
        await assert.rejects(openSqliteStore(path), /open with driver "ffi"/);
      } finally {
        await ffiStore.close();
      }
    });
  });

  test("a database written by either driver opens and works under the other", async () => {
    await withDir(async (dir) => {
      const path = join(dir, "shared.db");
      const orders: ("node" | "ffi")[][] = [["node", "ffi", "node"], ["ffi", "node", "ffi"]];
      for (const [i, order] of orders.entries()) {
        const file = `${path}.${i}`;
        let expected = 0;
        for (const [step, driver] of order.entries()) {
          const store = await openSqliteStore(file, { driver });
          try {
            const ids = await store.objects.listIds(Kind);
            assert.equal(ids.length, expected, `${driver} sees the earlier drivers' objects`);
            for (const id of ids) {
              assert.equal((await store.objects.get(id)).conditions.length, 1);
              assert.equal((await store.events.list(id)).length, 1);
            }
            const o = await store.objects.create(Kind, {
              name: `made-by-${driver}-${step}`,
              spec: JSON.stringify({ step, text: "ünïcödé" }),
            });
            await store.conditions.set({ ...Kind, id: o.id }, [{
              type: "Ready",
              status: "True",
              reason: "ByDriver",
              message: driver,
            }]);
            await store.events.add({ ...Kind, id: o.id }, {
              type: "Normal",
              reason: "Made",
              message: driver,
            });
            expected++;
            const read = await store.objects.getByName({
              ...Kind,
              name: `made-by-${driver}-${step}`,
            });
            assert.equal(JSON.parse(read.spec).text, "ünïcödé");
          } finally {
            await store.close();
          }
        }
      }
    });
  });
}
