/**
 * The shared state of one open PostgreSQL store: the connection pool, the
 * schema, the open's origin, statement naming, the resource-version counter,
 * the fence check, and error translation.
 *
 * @module
 */
import pg from "pg";
import type { Fence } from "../../src/store.ts";
import { CommitJournal, type JournalSource } from "../sql/_journal.ts";
import { AsyncLock } from "../sql/_lock.ts";
import type { Query } from "../sql/_query.ts";
import type { LiveOpens } from "../sql/_live_opens.ts";
import { FENCE_SQL, refuseStaleFence, type StoreOpen, StoreState } from "../sql/_store_state.ts";

/** A value a statement binds. */
export type PgValue = number | string | boolean | null | readonly (number | string)[];

/** A row as an array, in column order. */
export type PgRowArray = unknown[];

/** A row keyed by column name. */
export type PgRow = Record<string, unknown>;

/** The part of a `pg` client the adapter uses. */
export type PgClient = pg.PoolClient;

/** Renders `?` placeholders as `$1..$n`, skipping quoted text and identifiers. */
export function numberPlaceholders(sql: string): string {
  let out = "";
  let n = 0;
  let quote: string | undefined;
  for (const ch of sql) {
    if (quote !== undefined) {
      if (ch === quote) quote = undefined;
      out += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      out += ch;
    } else if (ch === "?") {
      out += `$${++n}`;
    } else {
      out += ch;
    }
  }
  return out;
}

/** Statement names by SQL text: each text is parsed once per connection. */
const statements = new Map<string, { name: string; text: string }>();

function statement(sql: string): { name: string; text: string } {
  let s = statements.get(sql);
  if (s === undefined) {
    s = { name: `bh_${statements.size + 1}`, text: numberPlaceholders(sql) };
    statements.set(sql, s);
  }
  return s;
}

/**
 * Every statement text this process has named so far, as PostgreSQL reads it
 * (`$n` placeholders): what a test plans to check each statement's plan.
 */
export function namedStatements(): string[] {
  return [...statements.values()].map((s) => s.text);
}

/** Whether `sql` only reads (a plain `SELECT`: no data-modifying `WITH`). */
const readsOnly = (sql: string) => /^\s*SELECT\b/i.test(sql);

/** A statement sent out of its lane's turn: the group it ran in runs again, one member at a time. */
export class OutOfTurnError extends Error {
  constructor() {
    super("a group member sent a statement after another member's: the group runs again");
    this.name = "OutOfTurnError";
  }
}

/**
 * The order in which the members of a group run at once (each in a lane of
 * one connection) send their statements: each lane's must go out together,
 * none after another lane's, for the members to be serialized as they were
 * sent. A statement out of turn is refused, and the turns are not kept.
 */
export class Turns {
  #current = -1;
  readonly #over = new Set<number>();
  #kept = true;

  /** Whether every lane's statements went out together. */
  get kept(): boolean {
    return this.#kept;
  }

  /** Lane `lane` sends a statement. @throws {OutOfTurnError} its turn is over. */
  take(lane: number): void {
    if (lane === this.#current) return;
    if (this.#over.has(lane)) {
      this.#kept = false;
      throw new OutOfTurnError();
    }
    if (this.#current !== -1) this.#over.add(this.#current);
    this.#current = lane;
  }
}

/** One connection, as a family sees it: every call is one round trip. */
export class Db {
  readonly #client: PgClient;
  /** The store open this connection's writes carry into the write log. */
  readonly origin: number;
  /**
   * Statements run that may have written, and statements the server refused
   * (which end the transaction's usefulness): what tells a plain group member
   * that failed whether it left the transaction clean.
   */
  #writes = 0;
  #refused = 0;
  /** The turns and the lane this connection sends in, for a group member run at once. */
  readonly #turns: Turns | undefined;
  readonly #lane: number;

  constructor(client: PgClient, origin: number, turns?: Turns, lane = -1) {
    this.#client = client;
    this.origin = origin;
    this.#turns = turns;
    this.#lane = lane;
  }

  /** The same connection as lane `lane` of `turns` sees it (see {@linkcode Turns}). */
  inLane(turns: Turns, lane: number): Db {
    return new Db(this.#client, this.origin, turns, lane);
  }

  /** Where the connection stands: moves with each statement that may write or that failed. */
  get mark(): number {
    return this.#writes + this.#refused;
  }

  #query(sql: string, config: pg.QueryConfig & { rowMode?: "array" }): Promise<pg.QueryResult> {
    this.#turns?.take(this.#lane);
    if (!readsOnly(sql)) this.#writes++;
    return this.#client.query(config).catch(this.#refuse);
  }

  readonly #refuse = (error: unknown): never => {
    this.#refused++;
    throw error;
  };

  /** Every row of `sql`, as arrays in column order. */
  async rows(sql: string, ...params: PgValue[]): Promise<PgRowArray[]> {
    const s = statement(sql);
    const r = await this.#query(sql, {
      name: s.name,
      text: s.text,
      values: params as unknown[],
      rowMode: "array",
    });
    return r.rows as PgRowArray[];
  }

  /** The first row of `sql` as an array in column order, or `undefined`. */
  async row(sql: string, ...params: PgValue[]): Promise<PgRowArray | undefined> {
    return (await this.rows(sql, ...params))[0];
  }

  /** Every row of `sql`, keyed by column name. */
  async all(sql: string, ...params: PgValue[]): Promise<PgRow[]> {
    const s = statement(sql);
    const r = await this.#query(sql, { name: s.name, text: s.text, values: params as unknown[] });
    return r.rows as PgRow[];
  }

  /** The first row of `sql`, or `undefined`. */
  async get(sql: string, ...params: PgValue[]): Promise<PgRow | undefined> {
    return (await this.all(sql, ...params))[0];
  }

  /** Runs `sql` and reports how many rows it changed. */
  async run(sql: string, ...params: PgValue[]): Promise<number> {
    const s = statement(sql);
    const r = await this.#query(sql, { name: s.name, text: s.text, values: params as unknown[] });
    return r.rowCount ?? 0;
  }

  /** Runs one statement a shared family body yielded (`../sql/_query.ts`). */
  query(query: Query): Promise<unknown> {
    const params = query.params as PgValue[];
    switch (query.op) {
      case "rows":
        return this.rows(query.sql, ...params);
      case "row":
        return this.row(query.sql, ...params);
      case "all":
        return this.all(query.sql, ...params);
      case "get":
        return this.get(query.sql, ...params);
      case "run":
        return this.run(query.sql, ...params);
    }
  }

  /**
   * Sends each statement as it is called, without waiting for the answers
   * before it (`pg`'s pipeline mode), or (`false`) one at a time again.
   * Switched only while the connection has nothing in flight.
   */
  pipelined(on: boolean): void {
    (this.#client as PgClient & { pipeline: boolean }).pipeline = on;
  }

  /** Runs statements that bind nothing (a simple query: several may share one round trip). */
  async exec(sql: string): Promise<unknown> {
    this.#turns?.take(this.#lane);
    if (!readsOnly(sql)) this.#writes++;
    return await this.#client.query(sql).catch(this.#refuse);
  }
}

/** int8 (bigint) columns read as numbers: every stored integer is a safe integer. */
const INT8_OID = 20;
export const pgTypes = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === INT8_OID && format !== "binary") return (v: string) => Number(v);
    return pg.types.getTypeParser(oid, format as "text");
  },
};

/** Takes the counter row's lock as a write transaction begins, and reads the committed counter. */
const BEGIN_LOCKED = "BEGIN; SELECT value FROM resource_version_seq WHERE id = 1 FOR UPDATE";

/** The committed counter in the answer to {@linkcode BEGIN_LOCKED}. */
const lockedCounter = (results: unknown) => Number((results as pg.QueryResult[])[1].rows[0].value);

/**
 * A shortcut that can miss (the counter guessed, a group's members run at
 * once): after a miss, the next {@linkcode MISS_PAUSE} chances go without it.
 */
class Shortcut {
  #paused = 0;

  /** Whether to take the shortcut this time (each refusal counts down the pause). */
  take(): boolean {
    if (this.#paused === 0) return true;
    this.#paused--;
    return false;
  }

  /** The shortcut missed: the next chances go without it. */
  missed(): void {
    this.#paused = MISS_PAUSE;
  }
}

/** After a shortcut missed, how many chances go without it. */
const MISS_PAUSE = 64;

/** SQLSTATE codes the adapter branches on. */
export const UNIQUE_VIOLATION = "23505";
export const FOREIGN_KEY_VIOLATION = "23503";

/** The SQLSTATE code of a client error, if it carries one. */
export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A PostgreSQL open's pool, dedicated-connection settings and schema. */
export interface Connections {
  readonly pool: pg.Pool;
  readonly connection: pg.ClientConfig;
  readonly schema: string;
  /** Which opens of the store are alive. */
  readonly liveOpens: OpenLockKeys;
}

/** Which opens of the store are alive, and how this open's lock is keyed. */
export interface OpenLockKeys extends LiveOpens {
  lockParams(epoch: number): [number, number];
}

/**
 * A commit notification's payload: the committing open's epoch and the
 * counter the commit published, as `"<epoch> <counter>"`.
 */
export function commitPayload(epoch: number, published: number): string {
  return `${epoch} ${published}`;
}

/** A commit notification's epoch and published counter (`undefined` where the payload has none). */
export function readCommitPayload(payload: string): { epoch: number; published?: number } {
  const [epoch, published] = payload.split(" ");
  const counter = Number(published);
  return {
    epoch: Number(epoch),
    published: published !== undefined && Number.isSafeInteger(counter) ? counter : undefined,
  };
}

/** Everything one open store shares between its handles. */
export class Core extends StoreState implements JournalSource {
  readonly pool: pg.Pool;
  /** The schema the store's tables live in. */
  readonly schema: string;
  /** The NOTIFY channel commits are announced on. */
  readonly channel: string;
  /**
   * One write transaction of this open at a time: the counter row serializes
   * every writer anyway (versions are commit-ordered), so waiting here instead
   * loses nothing, and lets writes that wait together share a commit.
   */
  readonly writeLock = new AsyncLock();
  /** Connection settings for dedicated (non-pooled) connections. */
  readonly connection: pg.ClientConfig;
  /** Which opens of the store are alive, and how this open's lock is keyed. */
  readonly liveOpens: OpenLockKeys;
  /** The open write transaction's log entries, for the kinds tailed from memory. */
  readonly journal = new CommitJournal();
  #inFlight = 0;
  #idle: PromiseWithResolvers<void> | undefined;
  /** The highest committed counter this open knows of. */
  #committed = 0;
  /** Moves whenever a notification may have been missed; `#listening`: whether the listener is. */
  #stamp = 0;
  #listening = false;
  /** Beginning a write transaction on a guess of the counter. */
  readonly #guessing = new Shortcut();
  /** Running a group's single writes at once. */
  readonly #atOnce = new Shortcut();

  constructor(connections: Connections, open: StoreOpen) {
    super(open);
    this.pool = connections.pool;
    this.connection = connections.connection;
    this.schema = connections.schema;
    this.liveOpens = connections.liveOpens;
    this.channel = channelName(connections.schema);
  }

  /**
   * The highest committed counter this open knows of: read under the counter
   * lock, published by its own commits, or announced by another open's.
   */
  get committedVersion(): number {
    return this.#committed;
  }

  /** A commit at counter `version` is known to have landed. */
  sawCommit(version: number): void {
    if (version > this.#committed) this.#committed = version;
  }

  /**
   * Moves whenever this open may have missed a commit's counter: when the
   * commit listener (re)starts listening, or hears a commit announced without
   * it; `NaN` (equal to nothing) while it is not listening.
   */
  commitStamp(): number {
    return this.#listening ? this.#stamp : NaN;
  }

  /** The commit listener began (`true`) or stopped (`false`) listening. */
  listening(on: boolean): void {
    if (on) this.#stamp++;
    this.#listening = on;
  }

  /** A commit was announced without its counter: which commit is the newest is unknown. */
  unsure(): void {
    this.#stamp++;
  }

  /** Counts a unit of work that close must wait for. */
  enter(): void {
    this.#inFlight++;
  }

  /** Ends a unit of work counted by {@linkcode Core.enter}. */
  leave(): void {
    if (--this.#inFlight === 0) this.#idle?.resolve();
  }

  /** Resolves once no counted work runs. */
  drained(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve();
    this.#idle ??= Promise.withResolvers<void>();
    return this.#idle.promise;
  }

  /** Checks out a pooled connection. */
  async connect(): Promise<PgClient> {
    try {
      return await this.pool.connect();
    } catch (error) {
      throw this.translate(error);
    }
  }

  /**
   * Opens a write transaction on `client`: takes the counter row's lock, so
   * write transactions serialize and versions drawn under it follow commit
   * order; then checks the fence inside the same transaction. Resolves to the
   * committed counter.
   */
  async begin(db: Db, fence: Fence | undefined): Promise<number> {
    const committed = lockedCounter(await db.exec(BEGIN_LOCKED));
    this.sawCommit(committed);
    if (fence !== undefined) await this.checkFence(db, fence);
    return committed;
  }

  /**
   * The committed counter a write transaction may begin on without waiting
   * for its lock's answer: the newest this open knows of, while its commit
   * listener listens (another open's commit is then announced to it) and no
   * guess missed in the last {@linkcode MISS_PAUSE} begins; else undefined
   * (begin exactly).
   */
  guess(): number | undefined {
    if (!this.#guessing.take()) return undefined;
    return this.#listening ? this.#committed : undefined;
  }

  /**
   * Whether the next group of single writes may run its members at once:
   * not for the {@linkcode MISS_PAUSE} groups after one that was not kept.
   */
  atOnceNow(): boolean {
    return this.#atOnce.take();
  }

  /** Whether a group run at once kept its turns (`kept`); one that did not makes the next groups run one by one. */
  atOnceKept(kept: boolean): boolean {
    if (!kept) this.#atOnce.missed();
    return kept;
  }

  /**
   * Opens a write transaction on `db` without waiting: takes the counter
   * row's lock, its answer left in flight while the statements after it are
   * sent behind it (the connection pipelined until it is released); they run
   * under the lock all the same. Resolves to the committed counter, for
   * {@linkcode Core.confirmGuess}.
   */
  beginOnGuess(db: Db): Promise<number> {
    db.pipelined(true);
    const counter = db.exec(BEGIN_LOCKED).then(lockedCounter);
    // Judged where the guess is confirmed; a begin that failed fails what followed it too.
    counter.catch(() => {});
    return counter;
  }

  /**
   * Whether a transaction begun on the guess `guess` began at `counter`, the
   * committed counter its lock read; a miss makes the next begins exact.
   */
  confirmGuess(guess: number, counter: number): boolean {
    this.sawCommit(counter);
    if (counter === guess) return true;
    this.#guessing.missed();
    return false;
  }

  /**
   * Publishes the highest draw, announces the commit (with the counter it
   * published), and commits, in one round trip. `committed` is the counter
   * the transaction began at.
   */
  async commit(db: Db, committed: number, drawn: number): Promise<void> {
    const publish = drawn > 0
      ? `UPDATE resource_version_seq SET value = ${drawn} WHERE id = 1; `
      : "";
    const payload = commitPayload(this.epoch, Math.max(committed, drawn));
    await db.exec(`${publish}SELECT pg_notify('${this.channel}', '${payload}'); COMMIT`);
  }

  /**
   * Refuses a write transaction from a term that is over: run inside it, after
   * the counter lock, so no successor can take the lease before the commit.
   * @throws {FencedError}
   */
  async checkFence(db: Db, fence: Fence): Promise<void> {
    refuseStaleFence(fence, await db.get(FENCE_SQL, fence.lease));
  }

  /** The highest committed resource version. */
  async latestVersion(db: Db): Promise<number> {
    return Number((await db.get("SELECT value FROM resource_version_seq WHERE id = 1"))!.value);
  }

  protected describeFailure(error: unknown): string {
    const state = sqlState(error);
    return `PostgreSQL store failure${state === undefined ? "" : ` (${state})`}: ${
      messageOf(error)
    }`;
  }

  /** Whether a client error is a unique violation. */
  isUniqueViolation(error: unknown): boolean {
    return sqlState(error) === UNIQUE_VIOLATION;
  }

  /** Whether a client error is a foreign-key violation. */
  isForeignKeyViolation(error: unknown): boolean {
    return sqlState(error) === FOREIGN_KEY_VIOLATION;
  }
}

/** The NOTIFY channel of a schema (an identifier; schema names are checked at open). */
export function channelName(schema: string): string {
  return `beehive_commits_${schema}`.slice(0, 63);
}

/** A 32-bit FNV-1a hash, as a signed int4 (an advisory-lock key). */
export function lockKey(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    h ^= byte;
    h = Math.imul(h, 0x01000193);
  }
  return h | 0;
}
