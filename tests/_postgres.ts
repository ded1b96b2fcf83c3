/**
 * The PostgreSQL server the tests run against: `BEEHIVE_TEST_POSTGRES_URL`
 * names a throwaway database (`scripts/postgres up` creates one, and
 * `scripts/test` exports it). Unset, every PostgreSQL test fails with a
 * message saying so: a suite that cannot reach its server never passes by
 * skipping.
 *
 * @module
 */
import process from "node:process";
import pg from "pg";
import { migrations } from "../store/postgres/_schema.ts";
import {
  openPostgresStore as open,
  type PostgresStore,
  type PostgresStoreOptions,
} from "../store/postgres/mod.ts";

export type { PostgresStore, PostgresStoreOptions };

/** The test database's url. @throws {Error} it is not set. */
export function postgresUrl(): string {
  const url = process.env.BEEHIVE_TEST_POSTGRES_URL;
  if (url === undefined || url === "") {
    throw new Error(
      "BEEHIVE_TEST_POSTGRES_URL is not set: run the PostgreSQL tests through scripts/test, " +
        "or export the url `bash scripts/postgres up` prints",
    );
  }
  return url;
}

let counter = 0;

/** A schema name no other test (or process) uses. */
export function freshSchema(): string {
  const random = crypto.randomUUID().replaceAll("-", "").slice(0, 12);
  return `t_${random}_${++counter}`;
}

/** The schema standing for a SQLite file path in restart cases: one path, one schema. */
export function schemaForPath(path: string): string {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(path)) {
    h ^= byte;
    h = Math.imul(h, 0x01000193);
  }
  return `p_${(h >>> 0).toString(16)}_${path.length}`;
}

/**
 * How long a test connection may idle inside a transaction: short, so a
 * replica paused mid-transaction (the SIGSTOP cases) frees the counter row
 * well inside the tests' failover bounds, long enough for any test's own
 * transactions on a loaded machine.
 */
export const TEST_IDLE_IN_TRANSACTION_TIMEOUT = 2_000;

/** Opens a store on the test database, in a fresh schema unless `options.schema` names one. */
export function openPostgresStore(options: PostgresStoreOptions = {}): Promise<PostgresStore> {
  return open(postgresUrl(), {
    schema: freshSchema(),
    idleInTransactionTimeout: TEST_IDLE_IN_TRANSACTION_TIMEOUT,
    ...options,
  });
}

/**
 * Runs `fn` with a client on a fresh schema (its search path) that this build's migrations
 * 1–`version` brought forward, each with its bookkeeping row; drops the schema after.
 */
export async function withSchemaAt<T>(
  version: number,
  fn: (client: pg.Client, schema: string) => Promise<T>,
): Promise<T> {
  const schema = freshSchema();
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA "${schema}"`);
    await client.query(`SET search_path TO "${schema}"`);
    await client.query(`CREATE TABLE schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`);
    for (const m of migrations.filter((m) => m.version <= version)) {
      await client.query(m.sql);
      await client.query(
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, 0)",
        [m.version, m.name],
      );
    }
    return await fn(client, schema);
  } finally {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
    await client.end();
  }
}

/**
 * Restarts the local cluster serving the test database (`pg_ctlcluster`, as root or its owner).
 * Only a cluster of the test run's own (`beehive_restart_*`, `scripts/postgres cluster-up`):
 * the shared cluster other suites and processes use is never restarted.
 */
export async function restartServer(): Promise<void> {
  const { execFile } = await import("node:child_process");
  const run = (cmd: string, args: string[]) =>
    new Promise<string>((resolve, reject) =>
      execFile(cmd, args, (error, stdout, stderr) => {
        if (error) reject(new Error(`${cmd} ${args.join(" ")} failed: ${stderr || error.message}`));
        else resolve(stdout);
      })
    );
  const port = new URL(postgresUrl()).port || "5432";
  const line = (await run("pg_lsclusters", ["--no-header"])).split("\n")
    .map((l) => l.trim().split(/\s+/)).find((f) => f[2] === port);
  if (line === undefined) throw new Error(`no local PostgreSQL cluster listens on port ${port}`);
  if (!line[1].startsWith("beehive_restart_")) {
    throw new Error(
      `refusing to restart the cluster ${line[0]}/${line[1]}: only a throwaway beehive_restart_* ` +
        "cluster (bash scripts/postgres cluster-up) is restarted by a test",
    );
  }
  await run("pg_ctlcluster", [line[0], line[1], "restart", "-m", "fast"]);
}

/**
 * The backends (but `admin`'s own) granted a two-key advisory lock whose
 * first key is `key1` in this database, and whose second is `key2` when given:
 * how a test finds the connection holding a lease or an open's live-open lock
 * (other files running beside it hold locks of their own schemas).
 */
export async function advisoryLockHolders(
  admin: pg.Client,
  key1: number,
  key2?: number,
): Promise<number[]> {
  const { rows } = await admin.query(
    `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND classid = ($1::int8 & 4294967295)::oid
       AND ($2::int8 IS NULL OR objid = ($2::int8 & 4294967295)::oid)
       AND pid <> pg_backend_pid()`,
    [key1, key2 ?? null],
  );
  return rows.map((r) => Number(r.pid));
}
