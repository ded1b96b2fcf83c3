/**
 * The write group: every outermost write of one open SQL store — a
 * single-call write and a `within` transaction alike — queues here, and the
 * writes waiting when the writer next frees share one transaction and one
 * commit. What differs per dialect is its {@linkcode GroupPolicy} (how long a
 * group stays open after its first member queued, how many members one
 * commit takes, whether a transaction waits for company) and its
 * {@linkcode GroupTransactions} (how the shared transaction begins, fences,
 * sets member savepoints and commits).
 *
 * Members run one at a time, in the order they queued. A group of one is the
 * member's own transaction: a throw rolls it all back. With more than one,
 * each member runs in its own savepoint, so one that throws is rolled back
 * alone and rejects alone — except where the dialect can run single writes
 * plainly ({@linkcode PlainMembers}): then the members up to and including
 * the group's first transaction run without savepoints. One that throws
 * having written nothing rejects alone; one that wrote something before it
 * threw rolls the whole group back, and the group runs again with every
 * member in its savepoint — but for that member, when it is the transaction,
 * which rejects. Only single writes ran before it, and a single write can run
 * twice: it holds nothing but its own writes and result. A fenced member's fence is checked inside the
 * transaction (inside its savepoint in a larger group). Every member resolves
 * only once the shared commit is durable (a transaction after its
 * `afterCommit` hooks, in member order); a failing commit rejects them all.
 *
 * A group of single writes only (each can run twice) may be begun on a guess
 * ({@linkcode GroupTransactions.confirm}): its members run before the dialect
 * knows where the transaction began, and nothing is judged — no member
 * rejected, nothing committed — until the guess is confirmed. A guess that
 * missed rolls the group back, and it runs again, begun exactly.
 *
 * A dialect whose statements are synchronous (SQLite) returns plain values
 * from its steps, and the group never awaits them: a lone single-call write
 * runs from begin to commit without yielding.
 *
 * @module
 */
import type { BeehiveError } from "../../src/model/errors.ts";
import type { Fence } from "../../src/store.ts";
import type { AsyncLock } from "./_lock.ts";

/** A value, or a promise of it: a synchronous dialect's steps return values. */
export type Maybe<T> = T | Promise<T>;

/** When a group starts, and how large it may grow: set per dialect. */
export interface GroupPolicy {
  /** Calls `start` once the group's first member has waited long enough for company. */
  readonly window: (start: () => void) => void;
  /** The most members one commit takes; the rest form the next group. */
  readonly cap: number;
  /**
   * Where set, the group after one that committed forms only once this
   * resolves: the writes that commit resolved queue theirs at once (a
   * caller's next write, a pass's next step), and they join it.
   */
  readonly handoff?: () => Promise<void>;
  /**
   * Whether an outermost transaction waits for the window like any write.
   * When false, a transaction that finds the writer free and nothing queued
   * takes it at once, alone; one that finds it busy still joins a group.
   */
  readonly transactionsJoin: boolean;
}

/** How a dialect runs the group's shared transaction; `Tx` is its open transaction. */
export interface GroupTransactions<Tx> {
  /** The store's writer: one group (or lone transaction) at a time. */
  readonly lock: AsyncLock;
  /**
   * Opens the shared transaction (checking the store is still open). `guess`:
   * every member can run twice, so the dialect may begin without waiting to
   * learn where the transaction stands (see {@linkcode GroupTransactions.confirm}).
   */
  begin(guess: boolean): Maybe<Tx>;
  /**
   * Whether a transaction begun on a guess began where it guessed; absent
   * for a dialect that never guesses. False: nothing its members did counts,
   * and the group runs again, begun exactly. Rejects with what the begin
   * failed with.
   */
  confirm?(tx: Tx): Maybe<boolean>;
  /** Refuses the transaction (or the member's savepoint) when `fence` is from a term that is over. */
  checkFence(tx: Tx, fence: Fence): Maybe<void>;
  /** Sets the savepoint the next member of a larger group runs in. */
  openMember(tx: Tx): Maybe<void>;
  /** Ends a member's savepoint: keeps its writes, or (`failed`) undoes them. */
  closeMember(tx: Tx, failed: boolean): Maybe<void>;
  /** Publishes the highest version drawn and commits. */
  commit(tx: Tx, drawn: number): Maybe<void>;
  /** Rolls the shared transaction back, quietly (the transaction may already be gone). */
  abort(tx: Tx): Maybe<void>;
  /** The transaction is over: `drawn` is its highest committed draw, or undefined when nothing committed. */
  finish(tx: Tx, drawn: number | undefined): void;
  /** Translates anything a driver threw into a store error. */
  translate(error: unknown): BeehiveError;
  /** Where the dialect can run single writes without a savepoint; see {@linkcode PlainMembers}. */
  readonly plain?: PlainMembers<Tx>;
  /** Where the dialect can run a group's single writes at once; see {@linkcode AtOnce}. */
  readonly atOnce?: AtOnce<Tx>;
}

/**
 * How a dialect runs the single writes of a group at once: each member in a
 * lane of the transaction, its statements sent as it makes them without
 * waiting for the other members' answers. The members are serialized as
 * they were sent; that holds only while each member's statements went out
 * together, none after another member's — what {@linkcode AtOnce.kept}
 * judges. Anything else (a member that failed, a lane out of turn, a guess
 * that missed) rolls the group back, and it runs again one member at a time.
 */
export interface AtOnce<Tx> {
  /** Whether to try: false after a recent try failed (the dialect backs off). */
  readonly tryNow: () => boolean;
  /** The transaction as the group's member `i` runs in it: what it sends goes out in lane `i`. */
  lane(tx: Tx, i: number): Tx;
  /** Whether every lane's statements went out together (and the try counts as kept). */
  kept(tx: Tx): boolean;
}

/**
 * How a dialect runs a member of a larger group without a savepoint: it
 * records where the transaction stands before the member runs, and judges a
 * member that threw.
 */
export interface PlainMembers<Tx> {
  /** A plain member is about to run. */
  start(tx: Tx): void;
  /**
   * The plain member that just ran threw: whether the transaction holds
   * nothing it wrote and is still open (then what the dialect keeps in memory
   * for it is cut back, and it rejects alone); false when it must be undone
   * with everything else.
   */
  failedClean(tx: Tx): boolean;
}

/** One queued write. */
export interface Member<Tx> {
  readonly fence: Fence | undefined;
  /** Whether the member is an outermost transaction (see {@linkcode GroupPolicy.transactionsJoin}). */
  readonly transaction: boolean;
  /**
   * Runs the member's writes inside the open transaction and returns the
   * highest version it drew (0 for none). A throw (or rejection) unwinds the
   * member alone and is what it rejects with. A single write (not a
   * transaction) may be run a second time after its transaction rolled
   * back: nothing it does may outlast a rollback but its writes.
   */
  run(tx: Tx): Maybe<number>;
  /** The shared commit is durable: finish (hooks) and resolve. */
  committed(): void | Promise<void>;
  /** Rejects the member: it was refused, or nothing committed. */
  failed(error: unknown): void;
}

/** A member's failure; undefined for a member whose writes stand. */
type Failure = { readonly error: unknown } | undefined;

/** A group run at once that was not kept: it runs again, one member at a time. */
const AGAIN = Symbol("again");

/** The write group of one open store. */
export class WriteGroup<Tx> {
  readonly #tx: GroupTransactions<Tx>;
  readonly #policy: GroupPolicy;
  readonly #pending: Member<Tx>[] = [];
  #scheduled = false;
  /** Set from a group's end until its {@linkcode GroupPolicy.handoff} resolves. */
  #handoff: Promise<void> | undefined;

  constructor(tx: GroupTransactions<Tx>, policy: GroupPolicy) {
    this.#tx = tx;
    this.#policy = policy;
  }

  /** Queues `member` for the next group commit. */
  submit(member: Member<Tx>): void {
    if (
      member.transaction && !this.#policy.transactionsJoin && this.#pending.length === 0 &&
      this.#tx.lock.tryAcquire()
    ) {
      void this.#runHeld([member]);
      return;
    }
    this.#pending.push(member);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#policy.window(() => void this.#run());
  }

  async #run(): Promise<void> {
    const lock = this.#tx.lock;
    if (!lock.tryAcquire()) await lock.acquire();
    if (this.#handoff !== undefined) await this.#handoff;
    // Everything queued by the time the writer is ours goes in this group.
    const group = this.#pending.splice(0, this.#policy.cap);
    this.#scheduled = false;
    if (this.#pending.length > 0) this.#schedule();
    if (group.length === 0) {
      lock.release();
      return;
    }
    await this.#runHeld(group);
  }

  /** Runs `group` with the writer held, then releases it and settles the members. */
  async #runHeld(group: readonly Member<Tx>[]): Promise<void> {
    const failures = group.length === 1 ? await this.#alone(group[0]) : await this.#together(group);
    const handoff = this.#policy.handoff?.();
    if (handoff !== undefined) {
      this.#handoff = handoff;
      void handoff.then(() => {
        if (this.#handoff === handoff) this.#handoff = undefined;
      });
    }
    this.#tx.lock.release();
    if (failures === undefined) return;
    for (let i = 0; i < group.length; i++) {
      const failure = failures[i];
      if (failure === undefined) await group[i].committed();
      else group[i].failed(failure.error);
    }
  }

  /**
   * Opens the shared transaction; on failure rejects `group` and returns
   * undefined. A synchronous dialect's transaction comes back as it is.
   */
  #begin(group: readonly Member<Tx>[], guess: boolean): Maybe<{ tx: Tx } | undefined> {
    const t = this.#tx;
    const refuse = (error: unknown) => {
      const failure = t.translate(error);
      for (const m of group) m.failed(failure);
      return undefined;
    };
    try {
      const begun = t.begin(guess && group.every((m) => !m.transaction));
      if (begun instanceof Promise) return begun.then((tx) => ({ tx }), refuse);
      return { tx: begun };
    } catch (error) {
      return refuse(error);
    }
  }

  /** Rolls back after a failure and ends the transaction with nothing committed. */
  async #abort(tx: Tx): Promise<void> {
    const t = this.#tx;
    try {
      const aborted = t.abort(tx);
      if (aborted instanceof Promise) await aborted;
    } finally {
      t.finish(tx, undefined);
    }
  }

  /** Checks a member's fence inside the transaction, as a store error. */
  #checkFence(tx: Tx, fence: Fence): Promise<void> | undefined {
    const t = this.#tx;
    try {
      const checked = t.checkFence(tx, fence);
      if (checked instanceof Promise) {
        return checked.catch((error) => {
          throw t.translate(error);
        });
      }
      return undefined;
    } catch (error) {
      throw t.translate(error);
    }
  }

  /**
   * Whether the transaction began where its dialect guessed (see
   * {@linkcode GroupTransactions.confirm}); a dialect that never guesses
   * answers at once.
   */
  #confirm(tx: Tx): Maybe<boolean> {
    const confirm = this.#tx.confirm;
    return confirm === undefined ? true : confirm(tx);
  }

  /**
   * A group of one: the transaction is the member's, and a throw rolls it all
   * back. `guess`: it may begin on a guess (not when running again after one missed).
   */
  async #alone(m: Member<Tx>, guess = true): Promise<Failure[] | undefined> {
    const t = this.#tx;
    const opening = this.#begin([m], guess);
    const begun = opening instanceof Promise ? await opening : opening;
    if (begun === undefined) return undefined;
    const tx = begun.tx;
    let drawn = 0;
    let failure: Failure;
    try {
      const fenced = m.fence === undefined ? undefined : this.#checkFence(tx, m.fence);
      if (fenced !== undefined) await fenced;
      const ran = m.run(tx);
      drawn = typeof ran === "number" ? ran : await ran;
    } catch (error) {
      failure = { error };
    }
    try {
      const confirmed = this.#confirm(tx);
      if (!(typeof confirmed === "boolean" ? confirmed : await confirmed)) {
        // Begun on a guess that missed: the member runs again, begun exactly.
        await this.#abort(tx);
        return this.#alone(m, false);
      }
    } catch (error) {
      await this.#abort(tx);
      m.failed(t.translate(error));
      return undefined;
    }
    if (failure !== undefined) {
      await this.#abort(tx);
      m.failed(failure.error);
      return undefined;
    }
    try {
      const done = t.commit(tx, drawn);
      if (done instanceof Promise) await done;
    } catch (error) {
      await this.#abort(tx);
      m.failed(t.translate(error));
      return undefined;
    }
    t.finish(tx, drawn);
    return [undefined];
  }

  /**
   * Several members, each in its own savepoint — but, where the dialect runs
   * members plainly and `plain` holds, the members up to and including the
   * first transaction, which run without one; returns each member's failure
   * (undefined: none), in group order.
   */
  async #together(
    group: readonly Member<Tx>[],
    plain = this.#tx.plain !== undefined,
    guess = true,
  ): Promise<Failure[] | undefined> {
    const t = this.#tx;
    if (
      guess && plain && t.atOnce !== undefined && group.every((m) => !m.transaction) &&
      t.atOnce.tryNow()
    ) {
      const done = await this.#atOnce(group, t.atOnce);
      // Not kept: rolled back; the group runs again, one member at a time, begun exactly.
      if (done !== AGAIN) return done;
      return this.#together(group, plain, false);
    }
    const opening = this.#begin(group, guess);
    const begun = opening instanceof Promise ? await opening : opening;
    if (begun === undefined) return undefined;
    const tx = begun.tx;
    const failures: Failure[] = [];
    let drawn = 0;
    /** Set when a plain member left writes no savepoint can undo: the group runs again. */
    let rerun: { readonly without: Member<Tx> | undefined; readonly error: unknown } | undefined;
    try {
      for (const m of group) {
        const bare = plain;
        // After the first transaction, every member has its savepoint: a rerun must not run it.
        if (m.transaction) plain = false;
        if (bare) t.plain!.start(tx);
        else {
          const opened = t.openMember(tx);
          if (opened instanceof Promise) await opened;
        }
        let failure: Failure;
        try {
          const fenced = m.fence === undefined ? undefined : this.#checkFence(tx, m.fence);
          if (fenced !== undefined) await fenced;
          const ran = m.run(tx);
          const d = typeof ran === "number" ? ran : await ran;
          if (d > drawn) drawn = d;
        } catch (error) {
          failure = { error };
        }
        if (bare) {
          if (failure !== undefined && !t.plain!.failedClean(tx)) {
            // A transaction does not run twice: it fails, and the group runs again without it.
            rerun = { without: m.transaction ? m : undefined, error: failure.error };
            break;
          }
        } else {
          // A failing rollback loses the whole group (below).
          const closed = t.closeMember(tx, failure !== undefined);
          if (closed instanceof Promise) await closed;
        }
        failures.push(failure);
      }
    } catch (error) {
      // The shared transaction is lost: nothing any member wrote committed.
      return await this.#lost(tx, group, failures, error);
    }
    try {
      const confirmed = this.#confirm(tx);
      if (!(typeof confirmed === "boolean" ? confirmed : await confirmed)) {
        // Begun on a guess that missed: the group runs again, begun exactly.
        await this.#abort(tx);
        return this.#together(group, this.#tx.plain !== undefined, false);
      }
    } catch (error) {
      // The begin failed: so did everything after it.
      return await this.#lost(tx, group, [], error);
    }
    try {
      if (rerun === undefined) {
        const done = t.commit(tx, drawn);
        if (done instanceof Promise) await done;
      }
    } catch (error) {
      return await this.#lost(tx, group, failures, error);
    }
    if (rerun !== undefined) return await this.#again(tx, group, rerun.without, rerun.error);
    t.finish(tx, drawn);
    return failures;
  }

  /**
   * Runs `group` (single writes only) with every member at once, each in its
   * lane (see {@linkcode AtOnce}), and commits when every member succeeded
   * member by member; returns {@linkcode AGAIN}, rolled back, when not.
   */
  async #atOnce(
    group: readonly Member<Tx>[],
    atOnce: AtOnce<Tx>,
  ): Promise<Failure[] | undefined | typeof AGAIN> {
    const t = this.#tx;
    const opening = this.#begin(group, true);
    const begun = opening instanceof Promise ? await opening : opening;
    if (begun === undefined) return undefined;
    const tx = begun.tx;
    // Started in group order: each member's first statements go out before the next member runs.
    const runs = group.map((m, i) => this.#inLane(atOnce.lane(tx, i), m));
    let drawn = 0;
    let kept = true;
    for (const outcome of await Promise.allSettled(runs)) {
      if (outcome.status === "rejected") kept = false;
      else if (outcome.value > drawn) drawn = outcome.value;
    }
    try {
      const confirmed = this.#confirm(tx);
      if (!(typeof confirmed === "boolean" ? confirmed : await confirmed)) kept = false;
    } catch (error) {
      // The begin failed: so did everything after it.
      return await this.#lost(tx, group, [], error);
    }
    if (!atOnce.kept(tx) || !kept) {
      await this.#abort(tx);
      return AGAIN;
    }
    try {
      const done = t.commit(tx, drawn);
      if (done instanceof Promise) await done;
    } catch (error) {
      return await this.#lost(tx, group, [], error);
    }
    t.finish(tx, drawn);
    return group.map(() => undefined);
  }

  /**
   * Runs member `m` in its lane `tx`: its fence check sent first and judged
   * after its writes, so that both go out together; resolves to its highest draw.
   */
  async #inLane(tx: Tx, m: Member<Tx>): Promise<number> {
    const fenced = m.fence === undefined ? undefined : this.#checkFence(tx, m.fence);
    // Judged below; a rejection meanwhile is not unhandled.
    fenced?.catch(() => {});
    const ran = m.run(tx);
    const drawn = typeof ran === "number" ? ran : await ran;
    if (fenced !== undefined) await fenced;
    return drawn;
  }

  /**
   * The shared transaction is lost (`error`): nothing any member wrote
   * committed. Rolls back and rejects each member, with its own failure
   * where it had one.
   */
  async #lost(
    tx: Tx,
    group: readonly Member<Tx>[],
    failures: readonly Failure[],
    error: unknown,
  ): Promise<undefined> {
    await this.#abort(tx);
    const failure = this.#tx.translate(error);
    group.forEach((m, i) => m.failed(failures[i] !== undefined ? failures[i].error : failure));
    return undefined;
  }

  /**
   * A plain member left writes no savepoint can undo: rolls everything back
   * and runs the group again, every member in its savepoint — without
   * `failed`, a transaction, which rejects with `error` (only single writes
   * ran before it, and they can run twice).
   */
  async #again(
    tx: Tx,
    group: readonly Member<Tx>[],
    failed: Member<Tx> | undefined,
    error: unknown,
  ): Promise<Failure[] | undefined> {
    await this.#abort(tx);
    if (failed === undefined) return this.#together(group, false, false);
    const rest = group.filter((m) => m !== failed);
    const again = rest.length === 1
      ? await this.#alone(rest[0], false)
      : await this.#together(rest, false, false);
    if (again === undefined) {
      // The rest were rejected already.
      failed.failed(error);
      return undefined;
    }
    let next = 0;
    return group.map((m) => m === failed ? { error } : again[next++]);
  }
}

/** Each open store's write group, keyed by its core. */
const groups = new WeakMap<object, WriteGroup<unknown>>();

/**
 * The write group of the store `core` belongs to, made on first use from the
 * dialect's transaction steps and policy.
 */
export function writeGroupOf<C extends object, Tx>(
  core: C,
  transactions: (core: C) => GroupTransactions<Tx>,
  policy: GroupPolicy,
): WriteGroup<Tx> {
  let group = groups.get(core) as WriteGroup<Tx> | undefined;
  if (group === undefined) {
    group = new WriteGroup(transactions(core), policy);
    groups.set(core, group as WriteGroup<unknown>);
  }
  return group;
}
