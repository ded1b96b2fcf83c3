/**
 * The SQLite dialect: its spelling for the shared families, how it runs the
 * statements their bodies yield, and its side of the shared write group
 * (`../sql/_write_group.ts`): its
 * policy — a group waits {@linkcode GROUP_TURNS} promise turns for company,
 * takes up to {@linkcode MAX_GROUP} members, and transactions queue like any
 * write — and its transaction steps, all synchronous on the writer
 * connection: `BEGIN IMMEDIATE`, the versions readied, the members up to the
 * first transaction run plainly (judged by the writer's count of writing
 * statements) and a `bh_member` savepoint for each after it, the deferred
 * log entries inserted and the counter published just before `COMMIT`.
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
import type { Dialect } from "../sql/_dialect.ts";
import type { Core } from "./_core.ts";

/** The most members one commit takes; the rest form the next group. */
export const MAX_GROUP = 256;

/**
 * How many promise-reaction turns a group waits after its first member
 * queued: enough for a caller resumed by the last commit, a pass that just
 * returned and the pass after it to reach their next writes and join. No
 * timer is involved, so a fake clock changes nothing.
 */
export const GROUP_TURNS = 16;

/** Settled once: each turn of a window chains on it, making no promise of its own to start from. */
const SETTLED = Promise.resolve();

/** Calls `fn` after `turns` promise-reaction turns (a promise reaction cannot be faked). */
function afterTurns(turns: number, fn: () => void): void {
  const hop = () => {
    if (--turns <= 0) fn();
    else void SETTLED.then(hop);
  };
  void SETTLED.then(hop);
}

const POLICY: GroupPolicy = {
  window: (start) => afterTurns(GROUP_TURNS, start),
  cap: MAX_GROUP,
  transactionsJoin: true,
};

/** Rolls the writer's transaction back, ignoring a transaction SQLite already ended. */
export function rollbackQuietly(core: Core): void {
  core.journal.aborted();
  core.log.clear();
  core.labelSetIds.clear();
  try {
    core.writer.exec("ROLLBACK");
  } catch {
    // SQLite already rolled back (e.g. SQLITE_FULL); nothing is left to undo.
  }
}

/** The shared transaction on the writer; the open transaction is the core itself. */
function transactions(core: Core): GroupTransactions<Core> {
  return {
    lock: core.lock,
    begin(): Core {
      // A write queued behind a close is refused; the transaction in flight has finished.
      core.assertOpen();
      core.writer.exec("BEGIN IMMEDIATE");
      try {
        core.beginVersions();
      } catch (error) {
        rollbackQuietly(core);
        throw error;
      }
      return core;
    },
    checkFence(_: Core, fence: Fence): void {
      core.checkFence(fence);
    },
    openMember(): void {
      // A fixed name is safe: members run one after another.
      core.writer.exec("SAVEPOINT bh_member");
      core.memberMark = core.mark();
    },
    closeMember(_: Core, failed: boolean): void {
      if (failed) core.rollbackToSavepoint("bh_member", core.memberMark);
      else core.writer.exec("RELEASE bh_member");
    },
    commit(_: Core, drawn: number): void {
      core.log.flush();
      core.publish(drawn);
      core.writer.exec("COMMIT");
      core.log.clear();
    },
    abort(): void {
      rollbackQuietly(core);
    },
    finish(_: Core, drawn: number | undefined): void {
      if (drawn === undefined) return;
      core.committed(drawn);
      core.checkpointer?.committed();
    },
    translate: (error) => core.translate(error),
    plain: {
      start(): void {
        core.memberMark = core.mark();
      },
      failedClean: () => core.nothingWrittenSince(core.memberMark),
    },
  };
}

/** Queues `member` for the next group commit of `core`. */
export function submitWrite(core: Core, member: Member<Core>): void {
  const refused = core.readOnlyRefusal();
  if (refused !== undefined) return member.failed(refused);
  writeGroupOf(core, transactions, POLICY).submit(member);
}

const dialects = new WeakMap<Core, Dialect>();

/** SQLite's spelling and abilities for the shared families, one per open store. */
export function sqliteDialect(core: Core): Dialect {
  let dialect = dialects.get(core);
  if (dialect === undefined) dialects.set(core, dialect = newDialect(core));
  return dialect;
}

function newDialect(core: Core): Dialect {
  return {
    name: "SQLite",
    inIds: " IN (SELECT value FROM json_each(?))",
    ids: (ids) => JSON.stringify(ids),
    // CROSS JOIN keeps the rows before it the outer loop: one rowid lookup a row.
    objectsOfIds: ` (SELECT value AS object_key FROM json_each(?)) AS k
      CROSS JOIN objects ON objects.id = k.object_key`,
    objectAt: (key) => ` CROSS JOIN objects ON objects.id = ${key}`,
    inTexts: " IN (SELECT value FROM json_each(?))",
    texts: (texts) => JSON.stringify(texts),
    jsonEntries: " FROM json_each(?)",
    chainsInserts: false,
    // A key holds no '"' (Kubernetes' key rules), so quoting it makes a path.
    labelValue: (column) => `json_extract(${column}, ?)`,
    labelKey: (key) => `$."${key}"`,
    inKinds: " IN (SELECT value ->> 0, value ->> 1 FROM json_each(?))",
    kinds: (kinds) => [JSON.stringify(kinds.map((k) => [k.group, k.kind]))],
    bigint: "?",
    isDistinct: "IS NOT",
    greatest: "max",
    noLimit: -1,
    indexedBy: (index) => ` INDEXED BY ${index}`,
    joinInOrder: "CROSS JOIN",
    forUpdate: "",
    inProcess: true,
    labelSetIds: core.labelSetIds,
    isUniqueViolation: (error) => core.isUniqueViolation(error),
    isForeignKeyViolation: (error) => core.isForeignKeyViolation(error),
  };
}
