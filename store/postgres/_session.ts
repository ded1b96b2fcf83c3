/**
 * Sessions route a family's statements: the root session reads on any pooled
 * connection and wraps each write in its own transaction; a transaction
 * session runs everything on the transaction's connection, with a savepoint
 * around each write so a failing mutator leaves nothing behind. A transaction
 * spans awaits; its units run one at a time.
 *
 * @module
 */
import {
  type Frame,
  FrameSession,
  RootSessionBase,
  type RunOutermost,
  type SavepointSteps,
  submitOutermost,
  TxState,
} from "../sql/_frames.ts";
import { type Core, Db } from "./_core.ts";
import { AsyncLock } from "../sql/_lock.ts";
import type { CommitJournal } from "../sql/_journal.ts";
import { isServerError, releaseClient, rollbackQuietly } from "./_connections.ts";
import { type PgTx, postgresDialect, submitWrite } from "./_dialect.ts";
import { driveAsync } from "../sql/_query.ts";
import { BodySession, type DialectSession, type SqlSession } from "../sql/_session.ts";
import { type Draws, Scope, type WriteScope } from "./_write_scope.ts";

export type { WriteScope } from "./_write_scope.ts";

/** How a family reaches the database: each call's work a promise on a pooled connection. */
export type Session = DialectSession<Core, Db, WriteScope, true>;

/** One outermost PostgreSQL transaction's state: its connection, its draws, and the lock its units take turns on. */
export class PgTxState extends TxState {
  readonly db: Db;
  readonly draws: Draws;
  /** The store's commit journal, cut back with each savepoint that rolls back. */
  readonly journal: CommitJournal;
  /** Units (and savepoint statements) run one at a time on the connection. */
  readonly lock = new AsyncLock();
  /**
   * A savepoint set with nothing written since (the group member's), which a
   * unit rolls back to instead of setting its own; `undefined` once anything
   * is written or a frame's savepoint is set.
   */
  emptySavepoint: string | undefined;
  /**
   * Whether the last unit's savepoint is still set: it is released by the
   * next savepoint statement (which carries the `RELEASE` in its round trip),
   * or with the frame, the member or the commit that encloses it.
   */
  unitHeld = false;

  constructor(db: Db, draws: Draws, journal: CommitJournal, emptySavepoint?: string) {
    super();
    this.db = db;
    this.draws = draws;
    this.journal = journal;
    this.emptySavepoint = emptySavepoint;
  }

  /** `statement` setting a savepoint, releasing the last unit's first when it is still set. */
  afterUnit(statement: string): string {
    if (!this.unitHeld) return statement;
    this.unitHeld = false;
    return `RELEASE bh_unit; ${statement}`;
  }

  /** Runs `fn` holding the connection. */
  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    await this.lock.acquire();
    try {
      return await fn();
    } finally {
      this.lock.release();
    }
  }
}

/** A frame of a PostgreSQL transaction. */
export type PgFrame = Frame<PgTxState>;

/** The session of a root store handle; a fenced handle checks its fence in every write. */
export class RootSession extends RootSessionBase<Core> implements Session {
  async read<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    const core = this.core;
    try {
      core.assertOpen();
    } catch (error) {
      throw core.translate(error);
    }
    core.enter();
    try {
      const client = await core.connect();
      let failed = false;
      try {
        return await fn(new Db(client, core.epoch));
      } catch (error) {
        failed = !isServerError(error);
        throw error;
      } finally {
        releaseClient(client, failed);
      }
    } catch (error) {
      throw core.translate(error);
    } finally {
      core.leave();
    }
  }

  async readSnapshot<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    const core = this.core;
    try {
      core.assertOpen();
    } catch (error) {
      throw core.translate(error);
    }
    core.enter();
    try {
      const client = await core.connect();
      const db = new Db(client, core.epoch);
      let failed = false;
      try {
        await db.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
        const result = await fn(db);
        await db.exec("COMMIT");
        return result;
      } catch (error) {
        failed = !await rollbackQuietly(db);
        throw error;
      } finally {
        releaseClient(client, failed);
      }
    } catch (error) {
      throw core.translate(error);
    } finally {
      core.leave();
    }
  }

  /** Queues the unit for the next group commit (see `../sql/_write_group.ts`). */
  write<T>(fn: (scope: WriteScope) => Promise<T>): Promise<T> {
    const core = this.core;
    try {
      core.assertOpen();
    } catch (error) {
      return Promise.reject(core.translate(error));
    }
    core.enter();
    const { promise, resolve, reject } = Promise.withResolvers<T>();
    let value: T;
    submitWrite(core, {
      fence: this.fence,
      transaction: false,
      async run(tx) {
        try {
          value = await fn(new Scope(tx.db, tx.draws, core.journal, tx.inLane));
        } catch (error) {
          throw core.translate(error);
        }
        return tx.draws.drawn;
      },
      committed() {
        core.leave();
        resolve(value);
      },
      failed(error) {
        core.leave();
        reject(error);
      },
    });
    return promise;
  }
}

/** The session of one transaction frame's handle. */
export class TxSession extends FrameSession<Core, PgTxState, TxSession> implements Session {
  async read<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    const core = this.core;
    try {
      core.assertConnected();
      this.frame.assertLive();
      const state = this.frame.state;
      // Checked at the call, as a unit begins: the units already queued run before any
      // commit or rollback, which queue behind them.
      return await state.exclusive(() => fn(state.db));
    } catch (error) {
      throw core.translate(error);
    }
  }

  readSnapshot<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    return this.read(fn);
  }

  async write<T>(fn: (scope: WriteScope) => Promise<T>): Promise<T> {
    const core = this.core;
    try {
      core.assertConnected();
      this.frame.assertLive();
      const state = this.frame.state;
      return await state.exclusive(async () => {
        const db = state.db;
        // A fixed name is safe: units hold the connection, so they never interleave.
        // Right after the member's savepoint, the unit rolls back to that one: no round trip.
        const reused = state.emptySavepoint;
        if (reused === undefined) await db.exec(state.afterUnit("SAVEPOINT bh_unit"));
        const mark = state.draws.mark();
        const journal = state.journal;
        const journalMark = journal.mark();
        try {
          const result = await fn(new Scope(db, state.draws, journal));
          // Left set: the next savepoint statement, the frame, the member or the commit releases it.
          if (reused === undefined) state.unitHeld = true;
          state.emptySavepoint = undefined;
          return result;
        } catch (error) {
          // Versions drawn by a unit that unwound are returned: none was seen outside.
          state.draws.restore(mark);
          await journal.undo(journalMark, async () => {
            // Rolled back to, the member's savepoint stays set and empty.
            await db.exec(
              reused === undefined
                ? "ROLLBACK TO bh_unit; RELEASE bh_unit"
                : `ROLLBACK TO ${reused}`,
            );
          });
          throw error;
        }
      });
    } catch (error) {
      throw core.translate(error);
    }
  }

  protected savepoints(): SavepointSteps<PgTxState> {
    return SAVEPOINTS;
  }

  protected on(frame: PgFrame): TxSession {
    return new TxSession(this.core, frame);
  }
}

/** The draws as each nested frame's savepoint opened, returned when the frame unwinds. */
const drawsAtOpen = new WeakMap<PgFrame, { readonly next: number; readonly drawn: number }>();

/**
 * PostgreSQL's savepoints on the transaction's connection: queued, not
 * awaited (`fn` starts at once, and its units queue behind the savepoint),
 * the journal marked where each opened.
 */
const SAVEPOINTS: SavepointSteps<PgTxState> = {
  open(frame, name) {
    const state = frame.state;
    drawsAtOpen.set(frame, state.draws.mark());
    return state.exclusive(async () => {
      state.emptySavepoint = undefined;
      await state.db.exec(state.afterUnit(`SAVEPOINT ${name}`));
      frame.mark = state.journal.mark();
    }).then(
      () => undefined,
      (error) => error ?? new Error("SAVEPOINT failed"),
    );
  },
  async rollback(frame, name) {
    const state = frame.state;
    await state.exclusive(() => {
      // A unit's savepoint still set inside the frame goes with it.
      state.unitHeld = false;
      return state.journal.undo(frame.mark, async () => {
        await state.db.exec(`ROLLBACK TO ${name}; RELEASE ${name}`);
      });
    });
    // Versions drawn by a frame that unwound are returned: none was seen outside.
    state.draws.restore(drawsAtOpen.get(frame)!);
  },
  async release(frame, name) {
    const state = frame.state;
    await state.exclusive(() => {
      // A unit's savepoint still set inside the frame is released with it.
      state.unitHeld = false;
      return state.db.exec(`RELEASE ${name}`);
    });
  },
};

/**
 * Runs `fn` as an outermost transaction in the write group (see
 * `../sql/_write_group.ts`): alone at once when the writer is free, else in
 * the next group, each member in its own savepoint.
 */
export const runOutermost: RunOutermost<Core, TxSession> = (core, fn, fence) =>
  submitOutermost(core, fence, {
    admitted: () => core.enter(),
    begin: (tx: PgTx) =>
      new PgTxState(tx.db, tx.draws, core.journal, tx.inMember ? tx.savepoint.name : undefined),
    run: (frame) => fn(new TxSession(core, frame)),
    // Units it left running hold the connection.
    settle: (state) => state.exclusive(() => Promise.resolve()),
    drawn: (tx) => tx.draws.drawn,
    over: () => core.leave(),
  }, (member) => submitWrite(core, member));

/** `session` as the shared families see it: bodies driven one round trip at a time. */
export function sqlSession(session: Session): SqlSession {
  return new BodySession(session, postgresDialect, session instanceof TxSession, driveAsync);
}
