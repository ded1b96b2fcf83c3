/**
 * The PostgreSQL dialect: its spelling for the shared families, how it runs
 * the statements their bodies yield, and its side of the shared write group
 * (`../sql/_write_group.ts`): its
 * policy — a group waits one microtask for company (callers resumed together
 * submit together), the group after one that committed forms once the writes
 * that commit resolved have queued theirs (a `setImmediate` handoff), takes
 * up to {@linkcode MAX_GROUP} members, and a transaction that finds the
 * writer free runs at once, alone — and its
 * transaction steps on one pooled connection: the counter row locked at
 * `BEGIN` (writers serialize on it anyway, so one group at a time loses no
 * parallelism) — for a group of single writes, without waiting for the
 * lock's answer: begun on a guess of the counter, its statements sent behind
 * the lock, and confirmed before anything is judged — the members up to the
 * first transaction run plainly (a group of single writes first with every
 * member at once, each in its lane, kept only when each member's statements
 * went out together; judged
 * by the connection's count of statements that may write or failed) and a
 * savepoint for each after it, kept between members, and the publish, the
 * notification and the `COMMIT` in one round trip.
 *
 * @module
 */
import type { Fence } from "../../src/store.ts";
import {
  type GroupPolicy,
  type GroupTransactions,
  type Member,
  writeGroupOf,
} from "../sql/_write_group.ts";
import { MemberSavepoint, releaseClient, rollbackQuietly } from "./_connections.ts";
import type { Dialect } from "../sql/_dialect.ts";
import {
  type Core,
  Db,
  FOREIGN_KEY_VIOLATION,
  type PgClient,
  sqlState,
  Turns,
  UNIQUE_VIOLATION,
} from "./_core.ts";
import { Draws } from "./_write_scope.ts";

/** The most members one commit takes; the rest form the next group. */
export const MAX_GROUP = 256;

const POLICY: GroupPolicy = {
  window: (start) => queueMicrotask(start),
  handoff: () => new Promise((resolve) => setImmediate(resolve)),
  cap: MAX_GROUP,
  transactionsJoin: false,
};

/** One group's transaction: its pooled connection, the counter's draws, the member savepoint. */
export class PgTx {
  readonly client: PgClient;
  readonly db: Db;
  readonly draws: Draws;
  readonly savepoint: MemberSavepoint;
  /** The committed counter the transaction began at (under the counter row's lock). */
  readonly committed: number;
  /** The draws as the running member's savepoint opened. */
  mark: { readonly next: number; readonly drawn: number };
  /** Where the commit journal stood as the running member's savepoint opened. */
  journalMark = 0;
  /** Whether the running member has a savepoint of its own (it runs in a larger group). */
  inMember = false;
  /** Where the connection stood as the running plain member began (see {@linkcode Db.mark}). */
  dbMark = 0;
  /** Whether the connection failed (it is destroyed, not reused). */
  broken = false;
  /**
   * For a transaction begun on a guess of the committed counter
   * (`committed`), the counter as the lock's answer will read it.
   */
  readonly counter: Promise<number> | undefined;

  /** The turns of the members run at once in this transaction, once one runs in a lane. */
  turns: Turns | undefined;
  /** Whether this is a member's lane of a group run at once (its versions drawn as peeked). */
  readonly inLane: boolean = false;

  constructor(client: PgClient, db: Db, committed: number, counter?: Promise<number>) {
    this.client = client;
    this.db = db;
    this.committed = committed;
    this.counter = counter;
    this.draws = new Draws(committed);
    this.savepoint = new MemberSavepoint(db, "bh_member");
    this.mark = this.draws.mark();
  }
}

/**
 * The transaction `tx` as member `lane` of a group run at once sees it: the
 * same transaction, its statements sent in that lane (see {@linkcode Turns}).
 */
function inLane(tx: PgTx, lane: number): PgTx {
  const turns = tx.turns ??= new Turns();
  const view = Object.create(tx) as PgTx;
  Object.defineProperty(view, "db", { value: tx.db.inLane(turns, lane) });
  Object.defineProperty(view, "inLane", { value: true });
  return view;
}

function transactions(core: Core): GroupTransactions<PgTx> {
  return {
    lock: core.writeLock,
    async begin(guess: boolean): Promise<PgTx> {
      // Each member passed the open check and is counted as work in flight by its caller,
      // so a store closing meanwhile waits for the group.
      const client = await core.connect();
      const db = new Db(client, core.epoch);
      try {
        const guessed = guess ? core.guess() : undefined;
        const tx = guessed === undefined
          ? new PgTx(client, db, await core.begin(db, undefined))
          : new PgTx(client, db, guessed, core.beginOnGuess(db));
        // Versions are drawn above the counter read under its row lock, held to the commit:
        // this transaction's log entries are the whole log between it and the one it publishes.
        core.journal.begin(tx.committed, core.commitStamp());
        return tx;
      } catch (error) {
        const failed = !await rollbackQuietly(db);
        db.pipelined(false);
        releaseClient(client, failed);
        throw error;
      }
    },
    confirm(tx: PgTx): Promise<boolean> | boolean {
      const counter = tx.counter;
      if (counter === undefined) return true;
      return counter.then((value) => core.confirmGuess(tx.committed, value));
    },
    checkFence: (tx: PgTx, fence: Fence) => core.checkFence(tx.db, fence),
    async openMember(tx: PgTx): Promise<void> {
      await tx.savepoint.open();
      tx.inMember = true;
      tx.mark = tx.draws.mark();
      tx.journalMark = core.journal.mark();
    },
    closeMember(tx: PgTx, failed: boolean): Promise<void> | undefined {
      if (!failed) return undefined;
      // Versions drawn by a member that unwound are returned: none was seen outside.
      tx.draws.restore(tx.mark);
      return core.journal.undo(tx.journalMark, () => tx.savepoint.rollback());
    },
    commit: (tx: PgTx, drawn: number) => core.commit(tx.db, tx.committed, drawn),
    async abort(tx: PgTx): Promise<void> {
      core.journal.aborted();
      tx.broken = !await rollbackQuietly(tx.db);
    },
    finish(tx: PgTx, drawn: number | undefined): void {
      tx.db.pipelined(false);
      releaseClient(tx.client, tx.broken);
      if (drawn === undefined) return;
      const published = Math.max(tx.committed, drawn);
      core.sawCommit(published);
      core.journal.committed(published);
    },
    translate: (error) => core.translate(error),
    // The single writes of a group sent at once, each member's statements behind the one
    // before: one round trip for a group whose members each send theirs together.
    atOnce: {
      tryNow: () => core.atOnceNow(),
      lane: inLane,
      kept: (tx: PgTx) => core.atOnceKept(tx.turns?.kept ?? true),
    },
    // A member up to the group's first transaction runs without a savepoint of its own: one
    // round trip less a member. One that fails having run nothing that writes, and nothing
    // the server refused, left the transaction as it found it and rejects alone; any other
    // failure rolls the group back, and it runs again with a savepoint a member.
    plain: {
      start(tx: PgTx): void {
        tx.inMember = false;
        tx.mark = tx.draws.mark();
        tx.journalMark = core.journal.mark();
        tx.dbMark = tx.db.mark;
      },
      failedClean(tx: PgTx): boolean {
        if (tx.db.mark !== tx.dbMark) return false;
        tx.draws.restore(tx.mark);
        core.journal.rollbackTo(tx.journalMark);
        return true;
      },
    },
  };
}

/**
 * Queues `member` for the next group commit of `core`. The caller has checked
 * the store is open and counts the write as work in flight.
 */
export function submitWrite(core: Core, member: Member<PgTx>): void {
  const refused = core.readOnlyRefusal();
  if (refused !== undefined) return member.failed(refused);
  writeGroupOf(core, transactions, POLICY).submit(member);
}

/**
 * The objects row whose id is `key`, joined laterally: a correlated subquery with a LIMIT is
 * never flattened into a join, so each row is one probe of the primary key, where a join or
 * `id = ANY(…)` planned on a new table reads all of it (`../sql/_keyed.ts`).
 */
function objectAt(key: string): string {
  return ` CROSS JOIN LATERAL (SELECT * FROM objects WHERE objects.id = ${key} LIMIT 1) AS objects`;
}

/** PostgreSQL's spelling and abilities, for the shared families. */
export const postgresDialect: Dialect = {
  name: "PostgreSQL",
  inIds: " = ANY(?::bigint[])",
  ids: (ids) => ids,
  // A correlated subquery with a LIMIT is never flattened into a join: each id is one probe
  // of the primary key, where `id = ANY(…)` planned on a new table reads all of it.
  objectsOfIds: ` unnest(?::bigint[]) AS k (object_key)${objectAt("k.object_key")}`,
  objectAt,
  inTexts: " = ANY(?::text[])",
  texts: (texts) => texts,
  unnest: (types, alias, columns) =>
    ` FROM unnest(${types.map((t) => `?::${t}[]`).join(", ")}) AS ${alias} (${columns.join(", ")})`,
  jsonEntries: " FROM jsonb_each_text(?::jsonb)",
  chainsInserts: true,
  labelValue: (column) => `(${column}::jsonb ->> ?::text)`,
  labelKey: (key) => key,
  inKinds: " IN (SELECT * FROM unnest(?::text[], ?::text[]))",
  kinds: (kinds) => [kinds.map((k) => k.group), kinds.map((k) => k.kind)],
  bigint: "?::bigint",
  isDistinct: "IS DISTINCT FROM",
  greatest: "GREATEST",
  noLimit: null,
  indexedBy: () => "",
  joinInOrder: "JOIN",
  forUpdate: " FOR UPDATE",
  inProcess: false,
  isUniqueViolation: (error) => sqlState(error) === UNIQUE_VIOLATION,
  isForeignKeyViolation: (error) => sqlState(error) === FOREIGN_KEY_VIOLATION,
};
