/**
 * Sessions route a family's statements: the root session reads on the reader
 * connection and wraps each write in its own `BEGIN IMMEDIATE` under the
 * writer lock; a transaction session runs everything on the writer inside the
 * open transaction, with a savepoint around each write so a failing mutator
 * leaves nothing behind.
 *
 * @module
 */
import { ConcurrentNestedTxError, StaleTxError } from "../../src/errors.ts";
import {
  afterCommit,
  Frame,
  isUnwound,
  markUnwound,
  runHooks,
  TxState,
  unwindFrame,
} from "../sql/_frames.ts";
import type { Fence } from "../../src/store.ts";
import type { Core, Db } from "./_core.ts";
import { submitWrite } from "./_dialect.ts";
import type { Dialect } from "../sql/_dialect.ts";
import { driveSync, type Q, runOn } from "../sql/_query.ts";
import type { SqlSession, WriteScope as SqlWriteScope } from "../sql/_session.ts";
import { Scope, type WriteScope } from "./_write_scope.ts";

export type { WriteScope };

/** How a family reaches the database. */
export interface Session {
  readonly core: Core;
  /** Runs synchronous reads on the right connection. */
  read<T>(fn: (db: Db) => T): Promise<T>;
  /** Runs synchronous reads that must see one snapshot. */
  readSnapshot<T>(fn: (db: Db) => T): Promise<T>;
  /** Runs a synchronous write unit atomically. */
  write<T>(fn: (scope: WriteScope) => T): Promise<T>;
}

/** One outermost SQLite transaction's state: the frames' shared state and its highest draw. */
export class SqliteTxState extends TxState {
  drawn = 0;
}

/** A frame of a SQLite transaction. */
export type SqliteFrame = Frame<SqliteTxState>;

/** The session of a root store handle; a fenced handle checks its fence in every write. */
export class RootSession implements Session {
  readonly core: Core;
  readonly fence: Fence | undefined;

  constructor(core: Core, fence?: Fence) {
    this.core = core;
    this.fence = fence;
  }

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
export class TxSession implements Session {
  readonly core: Core;
  readonly frame: SqliteFrame;

  constructor(core: Core, frame: SqliteFrame) {
    this.core = core;
    this.frame = frame;
  }

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
      const mark = core.journal.mark();
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

  /** Registers a hook against this frame. */
  afterCommit(fn: () => void | Promise<void>): void {
    afterCommit(this.frame, fn, this.core);
  }

  /** Opens a nested frame (a savepoint) and runs `fn` in it. */
  async nested<T>(fn: (session: TxSession) => Promise<T>): Promise<T> {
    const core = this.core;
    const parent = this.frame;
    try {
      core.assertConnected();
      if (parent.child !== undefined && !parent.ended && !parent.state.done) {
        throw new ConcurrentNestedTxError(
          "Cannot open a nested transaction frame: a sibling frame on the same handle is still open",
        );
      }
      parent.assertLive();
    } catch (error) {
      throw core.translate(error);
    }
    const frame = new Frame(parent.state, parent);
    const state = parent.state;
    const name = state.nextSavepoint();
    try {
      core.writer.exec(`SAVEPOINT ${name}`);
    } catch (error) {
      throw core.translate(error);
    }
    frame.mark = core.journal.mark();
    parent.child = frame;
    let result: T | undefined;
    let failure: unknown;
    let failed = false;
    try {
      result = await fn(new TxSession(core, frame));
      if (frame.child !== undefined) {
        throw new ConcurrentNestedTxError(
          "Cannot commit the transaction frame: a frame nested in it is still open",
        );
      }
    } catch (error) {
      failed = true;
      failure = error;
    }
    if (state.done || isUnwound(frame)) {
      // An enclosing frame already ended and took this savepoint with it: nothing is ours to touch.
      markUnwound(frame);
      if (failed) throw failure;
      throw new StaleTxError(
        "Cannot commit the nested transaction frame: an enclosing frame ended while it was open",
      );
    }
    if (failed) {
      try {
        unwind(core, frame, name);
      } catch (error) {
        core.report("beehive store: rolling back a savepoint failed", error);
      }
      // fn's own rejection reaches the caller as it was thrown.
      throw failure;
    }
    frame.ended = true;
    parent.child = undefined;
    try {
      core.writer.exec(`RELEASE ${name}`);
    } catch (error) {
      throw core.translate(error);
    }
    return result as T;
  }
}

function unwind(core: Core, frame: SqliteFrame, savepoint: string): void {
  if (unwindFrame(frame)) core.rollbackToSavepoint(savepoint, frame.mark);
}

/**
 * Runs `fn` as an outermost transaction in the next write group (see
 * `../sql/_write_group.ts`): it commits when it resolves and rolls back (alone) when
 * it rejects; resolves after the commit and its hooks.
 */
export function runOutermost<T>(
  core: Core,
  fn: (session: TxSession) => Promise<T>,
  fence?: Fence,
): Promise<T> {
  try {
    core.assertOpen();
  } catch (error) {
    return Promise.reject(core.translate(error));
  }
  const { promise, resolve, reject } = Promise.withResolvers<T>();
  const state = new SqliteTxState();
  const frame = new Frame(state, undefined);
  const unwound = () => {
    frame.ended = true;
    state.done = true;
    markUnwound(frame);
  };
  let value: T;
  submitWrite(core, {
    fence,
    transaction: true,
    async run() {
      try {
        value = await fn(new TxSession(core, frame));
      } catch (error) {
        unwound();
        // fn's own rejection reaches the caller as it was thrown.
        throw error;
      }
      if (frame.child !== undefined) {
        unwound();
        throw new ConcurrentNestedTxError(
          "Cannot commit the transaction: a nested frame is still open",
        );
      }
      frame.ended = true;
      state.done = true;
      return state.drawn;
    },
    async committed() {
      state.committed = true;
      await runHooks(core, state.hooks.map((h) => h.fn));
      resolve(value);
    },
    failed(error) {
      // A member that ran to its end lost its writes with the group's commit.
      if (!state.done) unwound();
      else markUnwound(frame);
      reject(error);
    },
  });
  return promise;
}

/** A session as the shared families see it: bodies driven synchronously on the session's connection. */
export class SqliteSql implements SqlSession {
  readonly dialect: Dialect;
  readonly epoch: number;
  readonly #s: Session;

  constructor(session: Session, dialect: Dialect) {
    this.#s = session;
    this.dialect = dialect;
    this.epoch = session.core.epoch;
  }

  get inTransaction(): boolean {
    return this.#s instanceof TxSession;
  }

  assertOpen(): void {
    this.#s.core.assertOpen();
  }

  read<T>(body: () => Q<T>): Promise<T> {
    return this.#s.read((db) => driveSync(body(), db, runOn));
  }

  readSnapshot<T>(body: () => Q<T>): Promise<T> {
    return this.#s.readSnapshot((db) => driveSync(body(), db, runOn));
  }

  write<T>(body: (scope: SqlWriteScope) => Q<T>): Promise<T> {
    return this.#s.write((scope) => driveSync(body(scope), scope.db, runOn));
  }
}
