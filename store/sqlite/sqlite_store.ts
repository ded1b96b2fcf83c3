/**
 * The SQLite store: {@linkcode openSqliteStore} and {@linkcode SqliteStore}.
 *
 * @module
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { BeehiveError, InvalidOptionError, StoreError } from "../../src/model/errors.ts";
import type { Fence, GroupKind } from "../../src/store.ts";
import { CommitProbe } from "./_commit_probe.ts";
import { LockFiles } from "./_lock_files.ts";
import { Core, Db } from "./_core.ts";
import { OpenSlots } from "./_open_slots.ts";
import { readOnlyError } from "../sql/_store_state.ts";
import type { Logger } from "../../src/telemetry/logger.ts";
import type { Driver } from "./_driver.ts";
import { selectDriver, usesNodeSqlite } from "./_drivers.ts";
import {
  checkedReclaim,
  checkIntegerOption,
  checkOpenArguments,
  checkStoredVersion,
  describe,
  rejectWith,
} from "../sql/_checks.ts";
import { SQLITE_CHECKS } from "./_integrity_checks.ts";
import { openReading, storedVersion } from "./_open_checks.ts";
import { type DialectKit, rootParts } from "../sql/_root_parts.ts";
import { SqlStore } from "../sql/sql_store.ts";
import { migrations, PAGE_SIZE } from "./_schema.ts";
import { Checkpointer } from "./_checkpointer.ts";
import { MemoryTail } from "../sql/_kind_tails.ts";
import { type KindTail, openKindTailSymbol } from "../../src/watches/kind_tail.ts";
import { RootSession, runOutermost, type Session, sqlSession, type TxSession } from "./_session.ts";

/** How a {@linkcode SqliteStore} is opened. */
export interface SqliteStoreOptions {
  /**
   * How hard a commit waits for the disk. `"normal"` (WAL with
   * `synchronous=NORMAL`) survives a process crash (`kill -9`) with nothing
   * committed lost; a power failure may lose the last few commits, never
   * corrupting the file. `"full"` also survives power loss, at a cost per
   * commit.
   * @default {"normal"}
   */
  synchronous?: "normal" | "full";
  /**
   * How long a statement waits for another process's lock, in ms.
   * @default {5000}
   */
  busyTimeout?: number;
  /**
   * Where failures with no caller to reject (a throwing afterCommit hook) are
   * reported; `console` qualifies.
   * @default {undefined} (silent)
   */
  logger?: Logger;
  /**
   * The SQLite binding. `"node"` is the `node:sqlite` module built into Deno
   * and Node, with its bundled SQLite. `"ffi"` (Deno only, with
   * `--allow-ffi`) loads a SQLite shared library through `Deno.dlopen` — a
   * newer or custom build, or one with extensions; it needs SQLite 3.38.0 or
   * newer. Both read and write the same file format and schema.
   * @default {"node"}
   */
  driver?: "node" | "ffi";
  /**
   * The library `driver: "ffi"` loads: a name the dynamic loader resolves or
   * a path. Unset, the `BEEHIVE_SQLITE_LIBRARY` environment variable names it
   * (when set and readable), else the platform's name (`libsqlite3.so.0`,
   * `libsqlite3.dylib`, `sqlite3.dll`).
   * @default {undefined}
   */
  library?: string;
  /**
   * Opens an existing store to read it only: no migration, no new open
   * epoch, no checkpoint and no lock file — nothing is written, so it works on
   * a read-only file or filesystem and while another connection holds a long
   * write transaction. Every write rejects with a {@linkcode StoreError}.
   * A liveness condition reads `True` while the open that wrote it is alive,
   * as from every other process.
   * A missing file, a database that is not a beehive store, or one whose
   * schema is older than this build's (open it writable once) is refused.
   * Not for `":memory:"`.
   * @default {false}
   */
  readOnly?: boolean;
}

const FREE_PAGE_FLOOR = 256;

/** Each open store's commit probe, shared by its root, fenced and transaction handles. */
const probes = new WeakMap<Core, CommitProbe>();

function reclaim(session: Session, maxPages: number): Promise<number> {
  return checkedReclaim(session.core, maxPages, (maxPages) =>
    // An idle reclaim is a read: the write transaction opens only above the floor.
    session.read((db) => {
      const pages = Number(db.get("PRAGMA page_count")!.page_count);
      const free = Number(db.get("PRAGMA freelist_count")!.freelist_count);
      return free > FREE_PAGE_FLOOR && free * 8 > pages;
    }).then((due) => due ? drain(session, maxPages) : 0));
}

function drain(session: Session, maxPages: number): Promise<number> {
  return session.write(({ db }) => {
    const pages = Number(db.get("PRAGMA page_count")!.page_count);
    const free = Number(db.get("PRAGMA freelist_count")!.freelist_count);
    if (free <= FREE_PAGE_FLOOR || free * 8 <= pages) return 0;
    // A pragma takes no bound parameter, and must be stepped to completion: Deno's
    // node:sqlite `exec` steps a row-returning pragma once, freeing a single page.
    db.all(`PRAGMA incremental_vacuum(${Math.min(maxPages, free)})`);
    const after = Number(db.get("PRAGMA freelist_count")!.freelist_count);
    return Math.max(0, free - after);
  });
}

/** What SQLite's handles reach of the store's own machinery. */
const SQLITE: DialectKit<Core, RootSession, TxSession> = {
  sql: sqlSession,
  locks: (core) => core.locks,
  checks: SQLITE_CHECKS,
  latestVersion: (session) => session.read((db) => session.core.latestVersion(db)),
  reclaimSpace: reclaim,
  txReclaimSpace: reclaim,
  watchCommits: (core, listener) => probes.get(core)!.subscribe(listener),
  outermost: runOutermost,
};

/**
 * A {@linkcode Store} over one SQLite database file, with a writer connection
 * owned by an async lock and a separate reader connection (WAL): reads never
 * wait on a write and never see uncommitted state.
 */
export class SqliteStore extends SqlStore {
  readonly #core: Core;
  readonly #session: RootSession;

  /** Use {@linkcode openSqliteStore}. */
  private constructor(
    identity: string,
    core: Core,
    tempDir: string | undefined,
    fence?: Fence,
    root?: SqlStore,
  ) {
    if (!probes.has(core)) probes.set(core, new CommitProbe(core));
    const session = new RootSession(core, fence);
    super(
      identity,
      rootParts(SQLITE, session, {
        withFence: (fence, root) => new SqliteStore(identity, core, undefined, fence, root),
        close: () => closeOpen(core, tempDir),
      }),
      root,
    );
    this.#core = core;
    this.#session = session;
  }

  /** @internal A watch's tail of kind `gk`, served from this store's own commits. */
  [openKindTailSymbol](gk: GroupKind): KindTail {
    return new MemoryTail(this.#core, sqlSession(this.#session), gk);
  }

  /** @internal The store's background checkpointer, if it has one (for tests). */
  static checkpointerOf(store: SqliteStore): Checkpointer | undefined {
    return store.#core.checkpointer;
  }

  /** @internal Opens a store; use {@linkcode openSqliteStore}. */
  static open(path: string, options: SqliteStoreOptions, driver: Driver): SqliteStore {
    let identity: string;
    let file: string;
    let tempDir: string | undefined;
    if (path === ":memory:") {
      const uuid = crypto.randomUUID();
      // The directory carries the identity's uuid, so a leftover file can be traced to its store.
      tempDir = mkdtempSync(join(tmpdir(), `beehive-${uuid}-`));
      file = join(tempDir, "memory.db");
      identity = `memory:${uuid}`;
    } else {
      file = resolve(path);
      identity = file;
    }
    if (options.readOnly) return SqliteStore.#openReadOnly(path, file, options, driver);
    let writer: Db | undefined;
    let reader: Db | undefined;
    let liveOpens: OpenSlots | undefined;
    try {
      writer = new Db(driver.open(file));
      const busy = options.busyTimeout ?? 5000;
      writer.exec(`PRAGMA busy_timeout = ${busy}`);
      // Before anything writes: another application's database is refused, never migrated.
      storedVersion(writer, path);
      // page_size and auto_vacuum only take effect before the first table is created.
      writer.exec(`PRAGMA page_size = ${PAGE_SIZE}`);
      writer.exec("PRAGMA auto_vacuum = INCREMENTAL");
      switchToWal(writer, driver, busy);
      writer.exec(`PRAGMA synchronous = ${options.synchronous === "full" ? "FULL" : "NORMAL"}`);
      writer.exec("PRAGMA foreign_keys = ON");
      migrate(writer);
      liveOpens = new OpenSlots(driver, file);
      const epoch = claimEpoch(writer, liveOpens);
      writer.origin = epoch;
      reader = new Db(driver.open(file));
      reader.exec(`PRAGMA busy_timeout = ${busy}`);
      reader.exec("PRAGMA query_only = ON");
      const locks = new LockFiles(driver, file);
      const core = new Core({ driver, writer, reader, locks, liveOpens }, {
        epoch,
        logger: options.logger,
      });
      if (usesNodeSqlite(driver)) {
        core.checkpointer = new Checkpointer(file, writer, options.logger);
      }
      return new SqliteStore(identity, core, tempDir);
    } catch (error) {
      try {
        liveOpens?.close();
        reader?.close();
        writer?.close();
      } catch {
        // Already failing: the open error is the one to report.
      }
      if (tempDir !== undefined) rmSync(tempDir, { recursive: true, force: true });
      throw openFailure(path, driver, error);
    }
  }

  /** Opens an existing store without writing anything (see {@linkcode SqliteStoreOptions.readOnly}). */
  static #openReadOnly(
    path: string,
    file: string,
    options: SqliteStoreOptions,
    driver: Driver,
  ): SqliteStore {
    if (!existsSync(file)) {
      throw new StoreError(`Cannot open SQLite store at ${JSON.stringify(path)}: no such file`);
    }
    const busy = options.busyTimeout ?? 5000;
    let writer: Db | undefined;
    let reader: Db | undefined;
    try {
      writer = openReading(driver, file, busy);
      const version = storedVersion(writer, path);
      const latest = migrations[migrations.length - 1].version;
      if (version === 0) {
        throw new StoreError(
          `Cannot open SQLite store at ${JSON.stringify(path)} read-only: the database is empty`,
        );
      }
      checkStoredVersion(version, latest, `SQLite store at ${JSON.stringify(path)}`);
      reader = openReading(driver, file, busy);
      const at = `the SQLite store at ${JSON.stringify(path)}`;
      const refusal = () => readOnlyError(at);
      const locks = new LockFiles(driver, file, refusal);
      const liveOpens = new OpenSlots(driver, file, refusal);
      const core = new Core({ driver, writer, reader, locks, liveOpens }, {
        epoch: 0,
        logger: options.logger,
        readOnlyAt: at,
      });
      return new SqliteStore(file, core, undefined);
    } catch (error) {
      try {
        reader?.close();
        writer?.close();
      } catch {
        // Already failing: the open error is the one to report.
      }
      throw openFailure(path, driver, error);
    }
  }
}

/**
 * Starts this open's number (`store_epoch`) and takes its open slot, in one
 * write transaction: from its commit, this open's liveness rows read as alive
 * to every other open for as long as it holds the slot.
 */
function claimEpoch(writer: Db, liveOpens: OpenSlots): number {
  writer.exec("BEGIN IMMEDIATE");
  try {
    const epoch = Number(
      writer.get("UPDATE store_epoch SET value = value + 1 WHERE id = 1 RETURNING value")!.value,
    );
    liveOpens.claim(writer, epoch);
    writer.exec("COMMIT");
    return epoch;
  } catch (error) {
    writer.exec("ROLLBACK");
    throw error;
  }
}

/** `error`, from opening the store at `path`, as a beehive error. */
function openFailure(path: string, driver: Driver, error: unknown): BeehiveError {
  if (error instanceof BeehiveError) return error;
  return new StoreError(
    `Cannot open SQLite store at ${JSON.stringify(path)}: ${driver.describeFailure(error).message}`,
    { cause: error },
  );
}

/** Closes one open: its commit probe, checkpointer and connections, once the writer is free. */
async function closeOpen(core: Core, tempDir: string | undefined): Promise<void> {
  core.markClosing();
  probes.get(core)?.close();
  await core.lock.acquire();
  try {
    await core.checkpointer?.close();
    core.close();
  } finally {
    core.lock.release();
    if (tempDir !== undefined) rmSync(tempDir, { recursive: true, force: true });
  }
}

const SQLITE_BUSY = 5;

/**
 * Puts the file in WAL mode. The switch takes its lock without SQLite's busy handler: on a fresh
 * file that other processes are opening at the same instant it answers "database is locked" at
 * once, so it is retried here, pausing the thread as the busy handler itself would, within the
 * same `busyTimeout`.
 */
function switchToWal(db: Db, driver: Driver, busyTimeout: number): void {
  const deadline = Date.now() + busyTimeout;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let ms = 1;; ms = Math.min(ms * 2, 50)) {
    try {
      db.exec("PRAGMA journal_mode = WAL");
      return;
    } catch (error) {
      const code = driver.describeFailure(error).code;
      if (code === undefined || (code & 0xff) !== SQLITE_BUSY || Date.now() >= deadline) {
        throw error;
      }
    }
    Atomics.wait(pause, 0, 0, ms);
  }
}

/**
 * Brings the schema forward. Several processes may open one fresh file at the same instant: each
 * migration re-reads the version under the write lock (`BEGIN IMMEDIATE`) and is skipped when
 * another process applied it meanwhile, so migrations are serialized across processes.
 */
function migrate(db: Db): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`);
  const latest = migrations[migrations.length - 1].version;
  const version = () => {
    const current = Number(
      db.get("SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations")!.v,
    );
    checkStoredVersion(current, latest);
    return current;
  };
  // Read without the write lock first: an up-to-date database takes none.
  if (version() === latest) return;
  for (const m of migrations) {
    // The pragma is a no-op inside a transaction; dropping a parent table with it on would cascade.
    if (m.foreignKeysOff) db.exec("PRAGMA foreign_keys = OFF");
    db.exec("BEGIN IMMEDIATE");
    try {
      if (version() >= m.version) {
        db.exec("ROLLBACK");
        continue;
      }
      db.exec(m.sql);
      if (m.foreignKeysOff && db.get("PRAGMA foreign_key_check") !== undefined) {
        throw new StoreError(
          `Cannot apply schema migration ${m.version} (${m.name}): a foreign key check failed`,
        );
      }
      db.run(
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
        m.version,
        m.name,
        Date.now(),
      );
      db.exec("COMMIT");
    } catch (error) {
      db.exec("ROLLBACK");
      throw error;
    } finally {
      if (m.foreignKeysOff) db.exec("PRAGMA foreign_keys = ON");
    }
  }
}

/**
 * Opens (creating if needed) the SQLite database at `path` as a
 * {@linkcode Store}, through the `node:sqlite` module built into Deno 2.2+ and
 * Node 22.13+ (22.5+ with `--experimental-sqlite`), or on Deno through a SQLite
 * library over FFI (`driver: "ffi"`). `":memory:"` opens a private temporary
 * file, removed on close, with its own unique identity.
 *
 * @example Open, write, read, close
 * ```ts
 * import { openSqliteStore } from "@beehive/beehive/sqlite";
 *
 * const store = await openSqliteStore(":memory:");
 * const kind = { group: "example.com", kind: "Greeting" };
 * const created = await store.objects.create(kind, { name: "hello", spec: '{"to":"world"}' });
 * const read = await store.objects.getByName({ ...kind, name: "hello" });
 * console.assert(read.id === created.id);
 * await store.close();
 * ```
 *
 * @throws {InvalidOptionError} an option is out of range, or `driver: "ffi"`
 * is asked for off Deno.
 * @throws {SchemaVersionDowngradeError} the database was written by a newer build.
 * @throws {StoreError} the file cannot be opened or migrated, or holds another
 * application's tables and no beehive schema (it is left untouched); with
 * `readOnly`, the file is missing or its schema is older than this build's;
 * for `"ffi"`, the library is missing, older than SQLite 3.38.0, or FFI access
 * is not granted.
 */
export function openSqliteStore(
  path: string,
  options: SqliteStoreOptions = {},
): Promise<SqliteStore> {
  return rejectWith(() => {
    checkOpenArguments("SQLite", ["path", path, 'a file path or ":memory:"'], options);
    const { synchronous, busyTimeout } = options;
    if (synchronous !== undefined && synchronous !== "normal" && synchronous !== "full") {
      throw new InvalidOptionError(
        `Cannot open SQLite store with synchronous: current value is ${
          describe(synchronous)
        }, expected "normal" or "full"`,
      );
    }
    checkIntegerOption("SQLite", "busyTimeout", busyTimeout, 0, "an integer >= 0 (ms)");
    if (options.readOnly && path === ":memory:") {
      throw new InvalidOptionError(
        `Cannot open SQLite store ":memory:" with readOnly: a private temporary store has nothing to read`,
      );
    }
    const driver = selectDriver(options);
    if (driver instanceof Promise) return driver.then((d) => SqliteStore.open(path, options, d));
    return Promise.resolve(SqliteStore.open(path, options, driver));
  });
}
