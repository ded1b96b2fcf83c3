/**
 * Sessions route a family's statements: the root session reads on any pooled
 * connection and wraps each write in its own transaction; a transaction
 * session runs everything on the transaction's connection, with a savepoint
 * around each write so a failing mutator leaves nothing behind. A transaction
 * spans awaits; its units run one at a time.
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
import { type Core, Db } from "./_core.ts";
import { AsyncLock } from "../sql/_lock.ts";
import { isServerError, releaseClient, rollbackQuietly } from "./_connections.ts";
import { postgresDialect, submitWrite } from "./_dialect.ts";
import type { Dialect } from "../sql/_dialect.ts";
import { driveAsync, type Q, runOn } from "../sql/_query.ts";
import type { SqlSession, WriteScope as SqlWriteScope } from "../sql/_session.ts";
import { type Draws, Scope, type WriteScope } from "./_write_scope.ts";

export type { WriteScope } from "./_write_scope.ts";

/** How a family reaches the database. */
export interface Session {
  readonly core: Core;
  /** Runs reads on a connection. */
  read<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  /** Runs reads that must see one snapshot. */
  readSnapshot<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  /** Runs a write unit atomically. */
  write<T>(fn: (scope: WriteScope) => Promise<T>): Promise<T>;
}

/** One outermost PostgreSQL transaction's state: its connection, its draws, and the lock its units take turns on. */
export class PgTxState extends TxState {
  readonly db: Db;
  readonly draws: Draws;
  /** Units (and savepoint statements) run one at a time on the connection. */
  readonly lock = new AsyncLock();

  constructor(db: Db, draws: Draws) {
    super();
    this.db = db;
    this.draws = draws;
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
export class RootSession implements Session {
  readonly core: Core;
  readonly fence: Fence | undefined;

  constructor(core: Core, fence?: Fence) {
    this.core = core;
    this.fence = fence;
  }

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
          value = await fn(new Scope(tx.db, tx.draws));
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
export class TxSession implements Session {
  readonly core: Core;
  readonly frame: PgFrame;

  constructor(core: Core, frame: PgFrame) {
    this.core = core;
    this.frame = frame;
  }

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
        await db.exec("SAVEPOINT bh_unit");
        const mark = state.draws.mark();
        try {
          const result = await fn(new Scope(db, state.draws));
          await db.exec("RELEASE bh_unit");
          return result;
        } catch (error) {
          // Versions drawn by a unit that unwound are returned: none was seen outside.
          state.draws.restore(mark);
          await db.exec("ROLLBACK TO bh_unit; RELEASE bh_unit");
          throw error;
        }
      });
    } catch (error) {
      throw core.translate(error);
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
    const state = parent.state;
    try {
      core.assertConnected();
      if (parent.child !== undefined && !parent.ended && !state.done) {
        throw new ConcurrentNestedTxError(
          "Cannot open a nested transaction frame: a sibling frame on the same handle is still open",
        );
      }
      parent.assertLive();
    } catch (error) {
      throw core.translate(error);
    }
    const frame = new Frame(state, parent);
    const name = state.nextSavepoint();
    // Claimed before the savepoint's round trip, so a sibling opened meanwhile is refused.
    parent.child = frame;
    const draws = { next: state.draws.next, drawn: state.draws.drawn };
    // Queued, not awaited: fn starts at once, and its units queue behind the savepoint.
    let opened: unknown;
    const savepoint = state.exclusive(() => state.db.exec(`SAVEPOINT ${name}`)).then(
      () => true,
      (error) => {
        opened = error;
        return false;
      },
    );
    let result: T | undefined;
    let failure: unknown;
    let failed = false;
    try {
      result = await fn(new TxSession(core, frame));
      if (!await savepoint) throw core.translate(opened);
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
      // An enclosing frame already ended and took this savepoint with it.
      markUnwound(frame);
      if (failed) throw failure;
      throw new StaleTxError(
        "Cannot commit the nested transaction frame: an enclosing frame ended while it was open",
      );
    }
    if (failed) {
      try {
        await unwind(frame, name);
        state.draws.next = draws.next;
        state.draws.drawn = draws.drawn;
      } catch (error) {
        core.report("beehive store: rolling back a savepoint failed", error);
      }
      throw failure;
    }
    frame.ended = true;
    parent.child = undefined;
    try {
      await state.exclusive(() => state.db.exec(`RELEASE ${name}`));
    } catch (error) {
      throw core.translate(error);
    }
    return result as T;
  }
}

async function unwind(frame: PgFrame, savepoint: string): Promise<void> {
  const state = frame.state;
  if (unwindFrame(frame)) {
    await state.exclusive(() => state.db.exec(`ROLLBACK TO ${savepoint}; RELEASE ${savepoint}`));
  }
}

/**
 * Runs `fn` as an outermost transaction in the write group (see
 * `../sql/_write_group.ts`): alone at once when the writer is free, else in
 * the next group, each member in its own savepoint. It commits when it
 * resolves and rolls back (alone) when it rejects; resolves after the commit
 * and its hooks.
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
  core.enter();
  const { promise, resolve, reject } = Promise.withResolvers<T>();
  let state: PgTxState;
  let frame: PgFrame;
  const unwound = () => {
    frame.ended = true;
    state.done = true;
    markUnwound(frame);
  };
  let value: T;
  submitWrite(core, {
    fence,
    transaction: true,
    async run(tx) {
      state = new PgTxState(tx.db, tx.draws);
      frame = new Frame(state, undefined);
      let failed = false;
      let failure: unknown;
      try {
        value = await fn(new TxSession(core, frame));
        if (frame.child !== undefined) {
          throw new ConcurrentNestedTxError(
            "Cannot commit the transaction: a nested frame is still open",
          );
        }
      } catch (error) {
        failed = true;
        // fn's own rejection reaches the caller as it was thrown.
        failure = error;
      }
      if (failed) unwound();
      else {
        frame.ended = true;
        state.done = true;
      }
      // Units it left running hold the connection: they finish before the rollback or the next member.
      await state.exclusive(() => Promise.resolve());
      if (failed) throw failure;
      return tx.draws.drawn;
    },
    async committed() {
      state.committed = true;
      core.leave();
      await runHooks(core, state.hooks.map((h) => h.fn));
      resolve(value);
    },
    failed(error) {
      // A member that ran to its end lost its writes with the group's commit.
      if (state !== undefined) {
        if (!state.done) unwound();
        else markUnwound(frame);
      }
      core.leave();
      reject(error);
    },
  });
  return promise;
}

/** A session as the shared families see it: bodies driven one round trip at a time. */
export class PgSql implements SqlSession {
  readonly dialect: Dialect = postgresDialect;
  readonly epoch: number;
  readonly #s: Session;

  constructor(session: Session) {
    this.#s = session;
    this.epoch = session.core.epoch;
  }

  get inTransaction(): boolean {
    return this.#s instanceof TxSession;
  }

  assertOpen(): void {
    this.#s.core.assertOpen();
  }

  read<T>(body: () => Q<T>): Promise<T> {
    return this.#s.read((db) => driveAsync(body(), db, runOn));
  }

  readSnapshot<T>(body: () => Q<T>): Promise<T> {
    return this.#s.readSnapshot((db) => driveAsync(body(), db, runOn));
  }

  write<T>(body: (scope: SqlWriteScope) => Q<T>): Promise<T> {
    return this.#s.write((scope) => driveAsync(body(scope), scope.db, runOn));
  }
}
