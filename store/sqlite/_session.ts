/**
 * Sessions route a family's statements: the root session reads on the reader
 * connection and wraps each write in its own `BEGIN IMMEDIATE` under the
 * writer lock; a transaction session runs everything on the writer inside the
 * open transaction, with a savepoint around each write so a failing mutator
 * leaves nothing behind.
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
import type { Core, Db, TxMark } from "./_core.ts";
import { sqliteDialect, submitWrite } from "./_dialect.ts";
import { driveSync } from "../sql/_query.ts";
import { BodySession, type DialectSession, type SqlSession } from "../sql/_session.ts";
import { Scope, type WriteScope } from "./_write_scope.ts";

export type { WriteScope };

/** How a family reaches the database: synchronous work on the connection. */
export type Session = DialectSession<Core, Db, WriteScope, false>;

/** One outermost SQLite transaction's state: the frames' shared state and its highest draw. */
export class SqliteTxState extends TxState {
  drawn = 0;
}

/** A frame of a SQLite transaction. */
export type SqliteFrame = Frame<SqliteTxState>;

/** The session of a root store handle; a fenced handle checks its fence in every write. */
export class RootSession extends RootSessionBase<Core> implements Session {
  /**
   * The connection a read runs on: the writer while no transaction holds it
   * (it sees only what is committed, and its page cache stays warm across its
   * own commits, where the reader's is dropped after each one), else the
   * reader.
   */
  #readDb(): Db {
    const core = this.core;
    return core.lock.free ? core.writer : core.reader;
  }

  read<T>(fn: (db: Db) => T): Promise<T> {
    try {
      this.core.assertOpen();
      return Promise.resolve(fn(this.#readDb()));
    } catch (error) {
      return Promise.reject(this.core.translate(error));
    }
  }

  readSnapshot<T>(fn: (db: Db) => T): Promise<T> {
    try {
      this.core.assertOpen();
      const db = this.#readDb();
      db.exec("BEGIN");
      try {
        return Promise.resolve(fn(db));
      } finally {
        db.exec("COMMIT");
      }
    } catch (error) {
      return Promise.reject(this.core.translate(error));
    }
  }

  /** Queues the unit for the next group commit (see `../sql/_write_group.ts`). */
  write<T>(fn: (scope: WriteScope) => T): Promise<T> {
    const core = this.core;
    try {
      core.assertOpen();
    } catch (error) {
      return Promise.reject(core.translate(error));
    }
    const { promise, resolve, reject } = Promise.withResolvers<T>();
    let value: T;
    submitWrite(core, {
      fence: this.fence,
      transaction: false,
      run() {
        const scope = new Scope(core);
        try {
          value = fn(scope);
        } catch (error) {
          throw core.translate(error);
        }
        return scope.drawn;
      },
      committed: () => resolve(value),
      failed: reject,
    });
    return promise;
  }
}

/** The session of one transaction frame's handle. */
export class TxSession extends FrameSession<Core, SqliteTxState, TxSession> implements Session {
  read<T>(fn: (db: Db) => T): Promise<T> {
    try {
      this.core.assertConnected();
      this.frame.assertLive();
      return Promise.resolve(fn(this.core.writer));
    } catch (error) {
      return Promise.reject(this.core.translate(error));
    }
  }

  readSnapshot<T>(fn: (db: Db) => T): Promise<T> {
    return this.read(fn);
  }

  write<T>(fn: (scope: WriteScope) => T): Promise<T> {
    const core = this.core;
    try {
      core.assertConnected();
      this.frame.assertLive();
      const db = core.writer;
      // A fixed name is safe: the unit is synchronous, so units never interleave.
      db.exec("SAVEPOINT bh_unit");
      const mark = core.mark();
      try {
        const scope = new Scope(core);
        const result = fn(scope);
        db.exec("RELEASE bh_unit");
        const state = this.frame.state;
        if (scope.drawn > state.drawn) state.drawn = scope.drawn;
        return Promise.resolve(result);
      } catch (error) {
        core.rollbackToSavepoint("bh_unit", mark);
        throw error;
      }
    } catch (error) {
      return Promise.reject(core.translate(error));
    }
  }

  protected savepoints(): SavepointSteps<SqliteTxState> {
    return savepoints(this.core);
  }

  protected on(frame: SqliteFrame): TxSession {
    return new TxSession(this.core, frame);
  }
}

/** Where the transaction stood when each open frame's savepoint opened. */
const marks = new WeakMap<SqliteFrame, TxMark>();

/** SQLite's savepoints on the writer: set at once, the transaction marked where each opened. */
function savepoints(core: Core): SavepointSteps<SqliteTxState> {
  return {
    open(frame, name) {
      core.writer.exec(`SAVEPOINT ${name}`);
      marks.set(frame, core.mark());
    },
    rollback: (frame, name) => core.rollbackToSavepoint(name, marks.get(frame)!),
    release: (_, name) => core.writer.exec(`RELEASE ${name}`),
  };
}

/**
 * Runs `fn` as an outermost transaction in the next write group (see
 * `../sql/_write_group.ts`).
 */
export const runOutermost: RunOutermost<Core, TxSession> = (core, fn, fence) =>
  submitOutermost(core, fence, {
    begin: () => new SqliteTxState(),
    run: (frame) => fn(new TxSession(core, frame)),
    drawn: (_, state: SqliteTxState) => state.drawn,
  }, (member) => submitWrite(core, member));

/** `session` as the shared families see it: bodies driven synchronously on its connection. */
export function sqlSession(session: Session): SqlSession {
  return new BodySession(
    session,
    sqliteDialect(session.core),
    session instanceof TxSession,
    driveSync,
  );
}
