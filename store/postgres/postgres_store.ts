/**
 * The PostgreSQL store: {@linkcode openPostgresStore} and {@linkcode PostgresStore}.
 *
 * @module
 */
import { Socket } from "node:net";
import pg from "pg";
import { BeehiveError, InvalidOptionError, StoreError } from "../../src/model/errors.ts";
import type { Logger } from "../../src/telemetry/logger.ts";
import type { Fence, GroupKind } from "../../src/store.ts";
import { type KindTail, openKindTailSymbol } from "../../src/watches/kind_tail.ts";
import { MemoryTail } from "../sql/_kind_tails.ts";
import { OpenLocks } from "./_open_locks.ts";
import { CommitListener } from "./_commit_listener.ts";
import { Core, Db, lockKey, type PgClient, pgTypes } from "./_core.ts";
import { HeldLocks } from "./_held_locks.ts";
import {
  checkedReclaim,
  checkIntegerOption,
  checkMaxPages,
  checkOpenArguments,
  checkStoredVersion,
  describe,
  rejectWith,
} from "../sql/_checks.ts";
import type { DialectChecks } from "../sql/_integrity.ts";
import { done } from "../sql/_query.ts";
import { type DialectKit, rootParts } from "../sql/_root_parts.ts";
import { SqlStore } from "../sql/sql_store.ts";
import { migrations } from "./_schema.ts";
import { brokenClients, releaseClient } from "./_connections.ts";
import { RootSession, runOutermost, type Session, sqlSession, type TxSession } from "./_session.ts";

/** How a {@linkcode PostgresStore} is opened. */
export interface PostgresStoreOptions {
  /**
   * The schema holding the store's tables (created on first open): many
   * stores share one database under different schemas, and every process
   * opening the same database and schema shares one store. Lower-case
   * letters, digits and `_`, starting with a letter or `_`, at most 40 long.
   * @default {"beehive"}
   */
  schema?: string;
  /**
   * The most pooled connections this open uses (each write transaction holds
   * one to its end). Held leases and the commit listener each use one more,
   * outside the pool.
   * @default {10}
   */
  max?: number;
  /**
   * How long, in ms, a connection of this open may sit inside a transaction
   * between statements before the server ends its session
   * (`idle_in_transaction_session_timeout`). A process paused mid-transaction
   * (SIGSTOP, a frozen VM) holds the counter row every writer locks; this is
   * what frees it, so another replica can take over and write. Keep it at or
   * below the leader election's `leaseDuration`, and above the longest await
   * inside a `store.within` body. 0 leaves the server's own setting.
   * @default {10_000}
   */
  idleInTransactionTimeout?: number;
  /**
   * How long, in ms, opening a connection may take before it fails: the open
   * itself, and each connection the store opens later (pooled, the commit
   * listener's, a held lease's). A server that accepts TCP but never answers
   * fails the open after this long. 0 waits forever.
   * @default {10_000}
   */
  connectTimeout?: number;
  /**
   * Aborts the open: the promise rejects with the signal's reason and every
   * connection the open had started is closed. Only the open listens to it.
   */
  signal?: AbortSignal;
  /**
   * Where failures with no caller to reject (a throwing afterCommit hook, a
   * lost listener connection) are reported; `console` qualifies.
   * @default {undefined} (silent)
   */
  logger?: Logger;
  /**
   * Opens an existing store to read it only: no migration, no new open
   * epoch, no write of any kind (every session is
   * `default_transaction_read_only`), so it works with a role that may only
   * read. Every write rejects with a {@linkcode StoreError}. A liveness
   * condition reads `True` while the open that wrote it is alive, as from
   * every other process. A schema holding no beehive store, or one older than
   * this build's (open it writable once), is refused.
   * @default {false}
   */
  readOnly?: boolean;
}

const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,39}$/;

/** The default `idleInTransactionTimeout`, in ms. */
const IDLE_IN_TRANSACTION_TIMEOUT = 10_000;

/** The default `connectTimeout`, in ms. */
const CONNECT_TIMEOUT = 10_000;

/** The startup option that ends a session idle inside a transaction, if any. */
function idleSetting(ms: number | undefined): string {
  const value = ms ?? IDLE_IN_TRANSACTION_TIMEOUT;
  return value === 0 ? "" : ` -c idle_in_transaction_session_timeout=${value}`;
}

/** Each open store's commit listener and held locks, shared by all its handles. */
const listeners = new WeakMap<Core, CommitListener>();
const heldLocks = new WeakMap<Core, HeldLocks>();

/** Tables whose rows churn: the write log, events and conditions. */
const CHURN_TABLES = ["object_writes", "events", "conditions", "objects", "edges"];
/** A table is vacuumed when this many of its rows are dead, and at least 1 in 8. */
const DEAD_FLOOR = 1000;
const PAGE = 8192;

/**
 * PostgreSQL's space reclaim: autovacuum recycles dead rows; this vacuums the
 * churning tables whose dead rows pass the floor now, returning trailing free
 * pages to the OS. Resolves to the pages the files shrank by (not bounded by
 * `maxPages`: VACUUM cannot stop part-way; at most one table runs per call).
 */
function reclaim(session: Session, maxPages: number): Promise<number> {
  return checkedReclaim(session.core, maxPages, async () => {
    const core = session.core;
    const due = await session.read(async (db) =>
      await db.get(
        `SELECT relname AS name, pg_relation_size(relid) AS size FROM pg_stat_user_tables
         WHERE schemaname = ? AND relname = ANY(?::text[])
           AND n_dead_tup > ? AND n_dead_tup * 8 > n_live_tup
         ORDER BY n_dead_tup DESC LIMIT 1`,
        core.schema,
        CHURN_TABLES,
        DEAD_FLOOR,
      )
    );
    if (due === undefined) return 0;
    return session.read(async (db) => {
      // VACUUM runs outside a transaction: a root read's connection is in autocommit.
      await db.exec(`VACUUM "${core.schema}"."${due.name as string}"`);
      const after = await db.get(
        "SELECT pg_relation_size(?::regclass) AS size",
        `"${core.schema}"."${due.name as string}"`,
      );
      return Math.max(0, Math.floor((Number(due.size) - Number(after!.size)) / PAGE));
    });
  });
}

/**
 * PostgreSQL checks its pages itself (with data checksums, when the cluster has them on) and
 * enforces every foreign key: the shared checks are the ones left.
 */
const POSTGRES_CHECKS: DialectChecks = {
  latestSchema: migrations[migrations.length - 1].version,
  names: [],
  run: () => done([]),
};

/** What PostgreSQL's handles reach of the store's own machinery. */
const POSTGRES: DialectKit<Core, RootSession, TxSession> = {
  sql: sqlSession,
  locks: (core) => heldLocks.get(core)!,
  checks: POSTGRES_CHECKS,
  latestVersion: (session) => session.read((db) => session.core.latestVersion(db)),
  reclaimSpace: reclaim,
  txReclaimSpace: (session, maxPages) =>
    rejectWith(() => {
      checkMaxPages(maxPages);
      // VACUUM cannot run inside a transaction; the check still refuses a stale handle.
      return session.read(() => Promise.resolve(0));
    }),
  watchCommits: (core, listener) => listeners.get(core)!.subscribe(listener),
  outermost: runOutermost,
};

/**
 * A {@linkcode Store} over one schema of a PostgreSQL database, through a
 * pool of connections. Write transactions serialize on one counter row, so
 * resource versions follow commit order across every connection and replica;
 * reads run beside them and see only committed state.
 */
export class PostgresStore extends SqlStore {
  readonly #core: Core;
  readonly #session: RootSession;

  /** Use {@linkcode openPostgresStore}. */
  private constructor(identity: string, core: Core, fence?: Fence, root?: SqlStore) {
    if (!listeners.has(core)) listeners.set(core, new CommitListener(core));
    if (!heldLocks.has(core)) heldLocks.set(core, new HeldLocks(core));
    const session = new RootSession(core, fence);
    super(
      identity,
      rootParts(POSTGRES, session, {
        withFence: (fence, root) => new PostgresStore(identity, core, fence, root),
        close: () => closeOpen(core),
      }),
      root,
    );
    this.#core = core;
    this.#session = session;
  }

  /** @internal A watch's tail of kind `gk`, served from this open's own commits. */
  [openKindTailSymbol](gk: GroupKind): KindTail {
    return new MemoryTail(this.#core, sqlSession(this.#session), gk);
  }

  /** @internal Opens a store; use {@linkcode openPostgresStore}. */
  static async open(url: string, options: PostgresStoreOptions): Promise<PostgresStore> {
    const { signal } = options;
    signal?.throwIfAborted();
    const schema = options.schema ?? "beehive";
    const identity = identityOf(url, schema);
    const sockets = new Set<Socket>();
    const connection: pg.ClientConfig = {
      connectionString: url,
      options: `-c search_path=${schema}${idleSetting(options.idleInTransactionTimeout)}${
        options.readOnly ? " -c default_transaction_read_only=on" : ""
      }`,
      application_name: "beehive",
      connectionTimeoutMillis: options.connectTimeout ?? CONNECT_TIMEOUT,
      // Each connection's socket, known so that an abort can cut one still connecting.
      stream: () => {
        const socket = new Socket();
        sockets.add(socket);
        socket.once("close", () => sockets.delete(socket));
        return socket;
      },
    };
    // Idle connections stay open until close: no idle timer, and no reconnect per burst.
    const pool = new pg.Pool({
      ...connection,
      types: pgTypes,
      max: options.max ?? 10,
      idleTimeoutMillis: 0,
    });
    pool.on(
      "error",
      (error) => options.logger?.error("beehive store: an idle connection failed", { error }),
    );
    pool.on("connect", (client) => {
      // A connection lost while checked out is marked, and destroyed on release.
      client.on("error", () => brokenClients.add(client));
    });
    const abort = () => {
      for (const socket of sockets) socket.destroy();
    };
    signal?.addEventListener("abort", abort, { once: true });
    let client: PgClient | undefined;
    let core: Core | undefined;
    let closed = false;
    try {
      client = await pool.connect();
      signal?.throwIfAborted();
      // A read-only open has no number of its own (0): it writes no row.
      let epoch = 0;
      if (options.readOnly) await readSchema(new Db(client, 0), schema, identity);
      else epoch = await migrate(new Db(client, 0), schema);
      releaseClient(client);
      client = undefined;
      signal?.throwIfAborted();
      const readOnlyAt = options.readOnly ? `the PostgreSQL store ${identity}` : undefined;
      const liveOpens = new OpenLocks(schema);
      core = new Core({ pool, connection, schema, liveOpens }, {
        epoch,
        logger: options.logger,
        readOnlyAt,
      });
      const listener = new CommitListener(core);
      listeners.set(core, listener);
      await listener.start();
      const store = new PostgresStore(identity, core);
      if (signal?.aborted) {
        closed = true;
        await store.close();
        throw signal.reason;
      }
      return store;
    } catch (error) {
      if (client !== undefined) releaseClient(client, true);
      if (!closed) {
        if (core !== undefined) await listeners.get(core)?.close().catch(() => {});
        await pool.end().catch(() => {});
      }
      if (signal?.aborted) throw signal.reason;
      if (error instanceof BeehiveError) throw error;
      throw new StoreError(
        `Cannot open PostgreSQL store ${identity}: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
    } finally {
      signal?.removeEventListener("abort", abort);
    }
  }
}

/** Closes one open once its transactions in flight end: its listener, held locks and pool. */
async function closeOpen(core: Core): Promise<void> {
  core.markClosing();
  await listeners.get(core)?.close();
  await core.drained();
  await heldLocks.get(core)?.close();
  core.markClosed();
  await core.pool.end().catch(() => {});
}

function identityOf(url: string, schema: string): string {
  try {
    const u = new URL(url);
    const database = decodeURIComponent(u.pathname.replace(/^\//, ""));
    return `postgres://${u.hostname}:${
      u.port === "" ? "5432" : u.port
    }/${database}?schema=${schema}`;
  } catch {
    // Not a URL (e.g. a socket directory): named without credentials it may carry.
    return `postgres:${url.replace(/:[^@/]*@/, "@")}?schema=${schema}`;
  }
}

/**
 * Checks a store's schema version without writing: a read-only open.
 * @throws {StoreError} no beehive store in `schema`, or one older than this build's.
 * @throws {SchemaVersionDowngradeError} one newer than this build's.
 */
async function readSchema(db: Db, schema: string, identity: string): Promise<void> {
  const present = await db.get(
    "SELECT to_regclass(?) IS NOT NULL AS migrations, to_regclass(?) IS NOT NULL AS epoch",
    `"${schema}".schema_migrations`,
    `"${schema}".store_epoch`,
  );
  if (present?.migrations !== true || present?.epoch !== true) {
    throw new StoreError(
      `Cannot open PostgreSQL store ${identity} read-only: schema "${schema}" holds no beehive store`,
    );
  }
  const current = Number(
    (await db.get(`SELECT COALESCE(MAX(version), 0) AS v FROM "${schema}".schema_migrations`))!.v,
  );
  const latest = migrations[migrations.length - 1].version;
  checkStoredVersion(current, latest, `PostgreSQL store ${identity}`);
}

/** Creates the schema and brings it forward; resolves to this open's epoch. */
async function migrate(db: Db, schema: string): Promise<number> {
  await db.exec("BEGIN");
  try {
    // Concurrent opens migrate one at a time (CREATE SCHEMA IF NOT EXISTS alone races).
    await db.run(
      "SELECT pg_advisory_xact_lock(?::int, ?::int)",
      lockKey("beehive:migrate"),
      lockKey(schema),
    );
    await db.exec(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await db.exec(`CREATE TABLE IF NOT EXISTS "${schema}".schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`);
    const current = Number(
      (await db.get(`SELECT COALESCE(MAX(version), 0) AS v FROM "${schema}".schema_migrations`))!.v,
    );
    const latest = migrations[migrations.length - 1].version;
    checkStoredVersion(current, latest);
    for (const m of migrations) {
      if (m.version <= current) continue;
      await db.exec(`SET LOCAL search_path TO "${schema}"; ${m.sql}`);
      await db.run(
        `INSERT INTO "${schema}".schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
        m.version,
        m.name,
        Date.now(),
      );
    }
    const epoch = Number(
      (await db.get(
        `UPDATE "${schema}".store_epoch SET value = value + 1 WHERE id = 1 RETURNING value`,
      ))!.value,
    );
    await db.exec("COMMIT");
    return epoch;
  } catch (error) {
    await db.exec("ROLLBACK").catch(() => {});
    throw error;
  }
}

/**
 * Opens (creating and migrating if needed) the beehive store in schema
 * `options.schema` of the PostgreSQL database at `url` (a `postgres://`
 * connection string), through the `pg` client. Every process that opens the
 * same database and schema shares one store: resource versions follow commit
 * order across all of them, commits wake every replica's watches
 * (`LISTEN/NOTIFY`), and leases and fencing hold across them.
 *
 * @example Open, write, read, close
 * ```ts ignore
 * import { openPostgresStore } from "@beehive/beehive/postgres";
 *
 * const store = await openPostgresStore("postgres://beehive@localhost/app");
 * const kind = { group: "example.com", kind: "Greeting" };
 * const created = await store.objects.create(kind, { name: "hello", spec: '{"to":"world"}' });
 * const read = await store.objects.getByName({ ...kind, name: "hello" });
 * console.assert(read.id === created.id);
 * await store.close();
 * ```
 *
 * @throws {TypeError} `url` is not a non-empty string.
 * @throws {InvalidOptionError} `schema`, `max` or `idleInTransactionTimeout` is out of range.
 * @throws {SchemaVersionDowngradeError} the schema was written by a newer build.
 * @throws {StoreError} the server cannot be reached, refuses the login, or the schema cannot be migrated.
 */
export function openPostgresStore(
  url: string,
  options: PostgresStoreOptions = {},
): Promise<PostgresStore> {
  return rejectWith(() => {
    checkOpenArguments("PostgreSQL", ["url", url, "a postgres:// connection string"], options);
    const { schema, max } = options;
    if (schema !== undefined && (typeof schema !== "string" || !SCHEMA_PATTERN.test(schema))) {
      throw new InvalidOptionError(
        `Cannot open PostgreSQL store with schema: current value is ${
          describe(schema)
        }, expected lower-case letters, digits and _ (starting with a letter or _), at most 40 long`,
      );
    }
    const pg = "PostgreSQL";
    checkIntegerOption(
      pg,
      "idleInTransactionTimeout",
      options.idleInTransactionTimeout,
      0,
      "an integer number of ms >= 0 (0 = the server's setting)",
    );
    checkIntegerOption(
      pg,
      "max",
      max,
      2,
      "an integer >= 2 (a transaction holds one connection while reads use another)",
    );
    const { connectTimeout, signal } = options;
    checkIntegerOption(
      pg,
      "connectTimeout",
      connectTimeout,
      0,
      "an integer number of ms >= 0 (0 = wait forever)",
    );
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw new InvalidOptionError(
        `Cannot open PostgreSQL store with signal: current value is ${
          describe(signal)
        }, expected an AbortSignal`,
      );
    }
    return PostgresStore.open(url, options);
  });
}
