/**
 * What a PostgreSQL store's connections send while a test runs, counted on
 * the client by wrapping `pg.Client.prototype.query`: write transactions
 * begun (the counter lock), statements sent behind the lock before its
 * answer, and statements sent behind another unanswered statement.
 *
 * @module
 */
import pg from "pg";

/** The counter lock a write transaction begins with. */
const LOCK = /^BEGIN; SELECT value FROM resource_version_seq WHERE id = 1 FOR UPDATE$/;

/** What the store's connections sent while `fn` ran. */
export interface Sent {
  /** Write transactions begun (the counter lock taken). */
  begins: number;
  /** Statements sent on a connection whose counter lock had not yet answered. */
  behindLock: number;
  /** Statements other than the lock sent while another such statement was unanswered. */
  overlapping: number;
}

/** Runs `fn`, counting what every `pg` client sends meanwhile. */
export async function watched(fn: () => Promise<void>): Promise<Sent> {
  const sent: Sent = { begins: 0, behindLock: 0, overlapping: 0 };
  const lockUnanswered = new WeakSet<object>();
  const unanswered = new Map<object, number>();
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function (this: object, ...args: unknown[]) {
    const text = typeof args[0] === "string" ? args[0] : (args[0] as { text?: string }).text;
    if (lockUnanswered.has(this)) sent.behindLock++;
    const result = original.apply(this, args);
    if (text !== undefined && LOCK.test(text)) {
      sent.begins++;
      lockUnanswered.add(this);
      const done = () => void lockUnanswered.delete(this);
      (result as Promise<unknown>).then(done, done);
      return result;
    }
    const open = unanswered.get(this) ?? 0;
    if (open > 0) sent.overlapping++;
    unanswered.set(this, open + 1);
    const done = () => void unanswered.set(this, unanswered.get(this)! - 1);
    (result as Promise<unknown>).then(done, done);
    return result;
  };
  try {
    await fn();
  } finally {
    proto.query = original;
  }
  return sent;
}
