/**
 * The reconcile loop of one kind: its workers, the pass, the retry ladder,
 * and the drivers that find work (owed pass, full pass, startup pass,
 * individual-pass admission, triggers; the owed wake is `owed_wake.ts`).
 *
 * @module
 */
import type { KindCodec } from "../model/_codec.ts";
import { collect } from "./_collect.ts";
import { type Engine, type KindLoop, kindName, type Term } from "./_engine.ts";
import { isStorableText } from "../model/_text.ts";
import { sleep } from "./_sleep.ts";
import { InvalidResultError, NotFoundError, PermanentError } from "../model/errors.ts";
import { type ConditionWrite, decodeObject } from "../model/object.ts";
import type { ResolvedRegisterOptions } from "./options.ts";
import { fail, type ResultInfo, resultInfo } from "../model/result.ts";
import { passClient, StatusBaseline } from "../clients/controller_client.ts";
import { clipText } from "../clients/_write_checks.ts";
import type { GroupKind, ObjectId, ObjectRef, RawCondition, ReconcileLoad } from "../store.ts";
import { WorkQueue } from "./work_queue.ts";
import { OwedWake } from "./_owed_wake.ts";
import type { KindTelemetry, PassReport, PassSpan } from "../telemetry/telemetry.ts";

/** The first rung of the retry ladder, in ms. */
export const BASE_RETRY_INTERVAL = 1_000;

/** A controller as `register` accepts it. */
export type ControllerFn = (obj: unknown, cc: unknown) => unknown;

/** The longest stall message kept, in UTF-16 code units (at most 12 KiB of UTF-8). */
const MAX_STALL_MESSAGE = 4_096;

/** The condition type a permanent failure sets. */
export const STALLED = "Stalled";

/** The condition type a transient failure sets `True` (the object is on the retry ladder). */
export const RETRYING = "Retrying";

/** Whether `conditions` hold `type` with status `True`. */
function holds(conditions: readonly { type: string; status: string }[], type: string): boolean {
  return conditions.some((c) => c.type === type && c.status === "True");
}

/** An object taken for a pass, with its read when it was read ahead. */
interface Next {
  readonly id: ObjectId;
  readonly load: Promise<ReconcileLoad> | undefined;
}

interface PassOutcome {
  readonly info: ResultInfo;
  /** The object was collected (or is gone): forget it. */
  readonly gone: boolean;
  /** A permanent failure stalled the object, durably: nothing is scheduled. */
  readonly stalled: boolean;
  /** How metrics and traces report the pass; `undefined` when no reconcile ran. */
  readonly report: PassReport | undefined;
  /** The failure a failed or stalled pass records on its span. */
  readonly error: unknown;
  /** The pass's term is over: nothing is scheduled, the next leader owes it. */
  readonly abandoned?: boolean;
}

/** A pass whose term ended under it: not a failure, and not retried here. */
const ABANDONED: PassOutcome = {
  info: { outcome: "settled", requeueAfter: undefined, err: undefined },
  gone: false,
  stalled: false,
  report: undefined,
  error: undefined,
  abandoned: true,
};

const GONE: PassOutcome = {
  info: { outcome: "settled", requeueAfter: undefined, err: undefined },
  gone: true,
  stalled: false,
  report: undefined,
  error: undefined,
};

/** The outcome of a pass whose reconcile ran and returned `info`. */
function ran(info: ResultInfo, gone = false, stalled = false): PassOutcome {
  const report: PassReport = stalled
    ? "stalled"
    : info.outcome === "fail"
    ? "failed"
    : info.outcome;
  return { info, gone, stalled, report, error: info.err };
}

/** One kind's reconcile loop. */
export class Reconciler implements KindLoop {
  readonly gk: GroupKind;
  readonly queue: WorkQueue = new WorkQueue();
  readonly codec: KindCodec;
  readonly #engine: Engine;
  readonly #reconcile: ControllerFn;
  readonly #opts: ResolvedRegisterOptions;
  readonly #backoff = new Map<ObjectId, number>();
  readonly #tasks = new Set<Promise<unknown>>();
  readonly #timers: ReturnType<typeof setInterval>[] = [];
  /** The trigger feeds still being pulled from. */
  readonly #triggers = new Set<AsyncIterator<unknown>>();
  /** Pokes received and not yet looked up: a burst for one address costs one lookup. */
  readonly #pokedIds = new Set<ObjectId>();
  readonly #pokedNames = new Set<string>();
  /** The flush armed for the pokes pending, if any. */
  #pokeTimer: ReturnType<typeof setTimeout> | undefined;
  /** The flush chain: flushes run one at a time. */
  #flushing: Promise<void> = Promise.resolve();
  #running = false;
  /**
   * The next object a busy worker took from the queue, its read already
   * under way (see {@linkcode Reconciler.#readAhead}); undefined when none.
   */
  #ahead: Promise<Next | undefined> | undefined;
  /** The term the loop runs in; set by `run`. */
  #term: Term | undefined;
  /** Metrics and traces of this kind's passes; `undefined` when off. */
  readonly #telemetry: KindTelemetry | undefined;
  /** Queues what other processes stamped owed (a requeue from a process that does not lead). */
  readonly #owedWake: OwedWake;

  constructor(
    engine: Engine,
    gk: GroupKind,
    reconcile: ControllerFn,
    opts: ResolvedRegisterOptions,
    codec: KindCodec,
  ) {
    this.#engine = engine;
    this.gk = gk;
    this.#reconcile = reconcile;
    this.#opts = opts;
    this.codec = codec;
    this.#telemetry = engine.telemetry?.forKind(kindName(gk));
    this.#owedWake = new OwedWake(engine, {
      gk,
      queue: this.queue,
      retrying: (id) => this.#backoff.has(id),
      track: (p) => this.#track(p),
    });
  }

  /** The resolved options of this kind. */
  get options(): ResolvedRegisterOptions {
    return this.#opts;
  }

  /**
   * Runs the loop for one term: the drivers and workers, until `stop`;
   * resolves once they have all ended. A later term may run it again.
   */
  async run(term: Term): Promise<void> {
    this.#term = term;
    this.#running = true;
    this.#backoff.clear();
    this.queue.restart();
    const o = this.#opts;
    // Before the startup listing: a stamp committed meanwhile is not missed.
    this.#owedWake.start();
    await this.#owedPass();
    if (o.individualPassInterval > 0) {
      this.#track(this.#admit(o.startupFullPass ? 0 : o.individualPassInterval));
    } else if (o.startupFullPass) {
      await this.#enqueueAll("startup pass");
    }
    // A stop during the startup listings has already cleared the timers:
    // arming them now would outlive the term.
    if (this.#running) {
      this.#timers.push(setInterval(() => this.#track(this.#owedPass()), o.owedPassInterval));
      if (o.fullPassInterval > 0) {
        this.#timers.push(
          setInterval(() => this.#track(this.#enqueueAll("full pass")), o.fullPassInterval),
        );
      }
    }
    const workers = Array.from({ length: o.concurrency }, () => this.#work());
    await Promise.all(workers);
    while (this.#tasks.size > 0) await Promise.allSettled([...this.#tasks]);
  }

  /** Stops finding work and dispatching it; the workers end after their current pass. */
  stop(): void {
    this.#running = false;
    for (const t of this.#timers.splice(0)) clearInterval(t);
    this.#owedWake.stop();
    this.queue.stop();
  }

  /**
   * Pulls the trigger feeds for the Beehive's whole life (pokes outside a
   * term find a stopped queue and are dropped); resolves once they have
   * ended after `closeTriggers`.
   */
  async runTriggers(): Promise<void> {
    const o = this.#opts;
    const feeds: Promise<void>[] = [
      ...o.triggerById.map((feed) => this.#trigger(feed, "id")),
      ...o.triggerByName.map((feed) => this.#trigger(feed, "name")),
    ];
    await Promise.all(
      feeds.map((f) =>
        f.catch((error) => this.#engine.log.error("beehive: driver failed", { error }))
      ),
    );
    // What the feeds sent before they ended is served.
    if (!this.#engine.shutdown.signal.aborted) this.#flushPokes();
    await this.#flushing;
  }

  /** Ends the trigger feeds, dropping pokes not yet looked up. */
  closeTriggers(): void {
    for (const it of this.#triggers) endFeed(it);
    this.#triggers.clear();
    clearTimeout(this.#pokeTimer);
    this.#pokeTimer = undefined;
    this.#pokedIds.clear();
    this.#pokedNames.clear();
  }

  /** Clears `id`'s retry ladder. */
  resetBackoff(id: ObjectId): void {
    this.#backoff.delete(id);
  }

  #track(p: Promise<unknown>): void {
    const tracked = p.catch((error) => this.#engine.log.error("beehive: driver failed", { error }));
    this.#tasks.add(tracked);
    void tracked.finally(() => this.#tasks.delete(tracked));
  }

  async #owedPass(): Promise<void> {
    const store = this.#engine.store;
    const log = this.#engine.log;
    for (
      const [source, list] of [
        ["unsettled", () => store.objects.listUnsettledIds(this.gk)],
        ["owed", () => store.reconcileOwed.listIds(this.gk)],
      ] as const
    ) {
      try {
        for (const id of await list()) this.queue.add(id);
      } catch (error) {
        if (this.#running) {
          log.warn(`beehive: owed pass listing failed`, { kind: kindName(this.gk), source, error });
        }
      }
    }
  }

  async #enqueueAll(driver: string): Promise<void> {
    try {
      const ids = await this.#engine.store.objects.listIds(this.gk, EXCLUDE_STALLED);
      for (const id of ids) this.queue.add(id);
    } catch (error) {
      if (this.#running) {
        this.#engine.log.warn(`beehive: ${driver} listing failed`, {
          kind: kindName(this.gk),
          error,
        });
      }
    }
  }

  /** Spreads every object's first individual pass across `window`, retrying the listing. */
  async #admit(window: number): Promise<void> {
    let delay = 100;
    while (this.#running) {
      try {
        const ids = await this.#engine.store.objects.listIds(this.gk, EXCLUDE_STALLED);
        for (const id of ids) this.queue.addAfter(id, Math.random() * window, "admit");
        return;
      } catch (error) {
        this.#engine.log.warn("beehive: individual-pass admission failed; retrying", {
          kind: kindName(this.gk),
          error,
        });
        await sleep(delay, this.#term!.signal);
        delay = Math.min(delay * 2, 30_000);
      }
    }
  }

  async #trigger(source: AsyncIterable<unknown>, by: "id" | "name"): Promise<void> {
    const it = source[Symbol.asyncIterator]();
    this.#triggers.add(it);
    const signal = this.#engine.shutdown.signal;
    const { promise: stopped, resolve } = Promise.withResolvers<IteratorResult<unknown>>();
    const onStop = () => resolve({ done: true, value: undefined });
    if (signal.aborted) onStop();
    signal.addEventListener("abort", onStop, { once: true });
    try {
      while (!signal.aborted) {
        const next = await Promise.race([it.next(), stopped]);
        if (next.done || signal.aborted) break;
        this.#poke(next.value, by);
      }
    } finally {
      // A feed that ended (or threw) is let go of: stop has nothing to return.
      this.#triggers.delete(it);
      signal.removeEventListener("abort", onStop);
    }
  }

  /**
   * Records a poke; the lookup runs after the current turn, so a burst (every
   * poke the feeds deliver before then, from any feed of the kind) costs one
   * read per distinct name, one read for all ids, and one enqueue per object.
   */
  #poke(address: unknown, by: "id" | "name"): void {
    if (
      by === "id" && typeof address === "number" && Number.isSafeInteger(address) && address > 0
    ) {
      this.#pokedIds.add(address);
    } else if (
      by === "name" && typeof address === "string" && address !== "" && isStorableText(address)
    ) {
      this.#pokedNames.add(address);
    } else {
      this.#ignored(address);
      return;
    }
    if (this.#pokeTimer === undefined) {
      this.#pokeTimer = setTimeout(() => {
        this.#pokeTimer = undefined;
        this.#flushPokes();
      }, 0);
    }
  }

  #ignored(address: unknown): void {
    this.#engine.log.debug("beehive: trigger ignored an address outside the kind", {
      kind: kindName(this.gk),
      address,
    });
  }

  /** Looks up and requeues the pokes pending now, after any flush in flight. */
  #flushPokes(): void {
    clearTimeout(this.#pokeTimer);
    this.#pokeTimer = undefined;
    if (this.#pokedIds.size === 0 && this.#pokedNames.size === 0) return;
    const ids = [...this.#pokedIds];
    const names = [...this.#pokedNames];
    this.#pokedIds.clear();
    this.#pokedNames.clear();
    this.#flushing = this.#flushing.then(() => this.#lookUp(ids, names));
  }

  async #lookUp(ids: readonly ObjectId[], names: readonly string[]): Promise<void> {
    // Outside a term the queue drops pokes: reading for them would be wasted.
    if (this.#engine.term === undefined) return;
    const store = this.#engine.store;
    const log = this.#engine.log;
    // One requeue per object however many addresses of the batch named it.
    const found = new Set<ObjectId>();
    if (ids.length > 0) {
      try {
        const rows = await store.objects.listByIds(this.gk, ids);
        const hit = new Set(rows.map((o) => o.id));
        for (const id of ids) {
          if (hit.has(id)) found.add(id);
          else this.#ignored(id);
        }
      } catch (error) {
        log.warn("beehive: trigger lookup failed", { kind: kindName(this.gk), error });
      }
    }
    for (const name of names) {
      try {
        found.add((await store.objects.getMetaByName({ ...this.gk, name })).id);
      } catch (error) {
        if (error instanceof NotFoundError) this.#ignored(name);
        else log.warn("beehive: trigger lookup failed", { kind: kindName(this.gk), error });
      }
    }
    for (const id of found) this.queue.requeueNow(id);
  }

  /**
   * One worker: it takes the next object once its pass's reconcile has
   * returned, while that pass concludes (the settle handshake, a collection)
   * in the background, so the next pass's writes can share the conclusion's
   * commit. A worker has at most one pass concluding besides the one it runs.
   */
  async #work(): Promise<void> {
    let concluding: Promise<void> | undefined;
    for (;;) {
      const next = await this.#next();
      if (next === undefined) break;
      const { promise: reconciled, resolve } = Promise.withResolvers<void>();
      const finished = this.#dispatch(next.id, resolve, next.load);
      this.#readAhead();
      await reconciled;
      if (concluding !== undefined) await concluding;
      concluding = finished;
    }
    if (concluding !== undefined) await concluding;
  }

  /**
   * The next object to pass: the one read ahead, if any (a worker that frees
   * first takes it over, read or not), else the queue's next; undefined once
   * the loop stops. An object read ahead when the loop stopped is handed back.
   */
  async #next(): Promise<Next | undefined> {
    const ahead = this.#ahead;
    if (ahead === undefined) {
      const id = await this.queue.get();
      return id === undefined ? undefined : { id, load: undefined };
    }
    this.#ahead = undefined;
    const next = await ahead;
    if (next === undefined) return undefined;
    if (!this.#running) {
      this.queue.done(next.id);
      return undefined;
    }
    this.queue.start(next.id);
    return next;
  }

  /**
   * While a worker's pass runs, takes the queue's next object as soon as
   * there is one and starts its read, so the pass after needs no round trip
   * of its own before its reconcile: on a store across the network, its
   * writes can then share the commit of the writes the pass before it
   * resolved. The object is the worker's from then on, as though its pass had
   * begun: a change meanwhile queues another pass, as during any pass. One
   * object is read ahead at a time; a worker waiting on the queue is served
   * before it.
   */
  #readAhead(): void {
    if (this.#ahead !== undefined || !this.#running) return;
    const store = this.#engine.store;
    this.#ahead = this.queue.getAhead().then((id) => {
      if (id === undefined) return undefined;
      const load = store.objects.getForReconcile(id);
      // Awaited by the pass, which judges a failure.
      load.catch(() => {});
      return { id, load };
    });
  }

  /**
   * Runs one pass over `id` (`load`: its read, when it was read ahead) and
   * schedules what follows; calls `reconciled` once its reconcile returned.
   */
  async #dispatch(
    id: ObjectId,
    reconciled: () => void,
    load: Promise<ReconcileLoad> | undefined,
  ): Promise<void> {
    try {
      const started = Date.now();
      const t = this.#telemetry;
      let outcome: PassOutcome;
      if (t === undefined) {
        // No telemetry: no closure, no span, no extra frame.
        try {
          outcome = await this.#pass(id, undefined, reconciled, load);
        } catch (error) {
          outcome = ran(resultInfo(fail(error))!);
        }
      } else {
        outcome = await t.pass(id, (span) => this.#safePass(id, span, reconciled, load));
      }
      this.#engine.log.debug("beehive: pass finished", {
        driver: "reconcile",
        kind: kindName(this.gk),
        id,
        outcome: outcome.gone
          ? "collected"
          : outcome.abandoned
          ? "abandoned"
          : outcome.report ?? outcome.info.outcome,
        duration: Date.now() - started,
      });
      if (outcome.abandoned) {
        this.queue.done(id);
        return;
      }
      // A pass that concluded consumed the owed count it loaded.
      this.#owedWake.passEnded(id, outcome.report !== "failed");
      if (outcome.gone) {
        this.queue.forget(id);
        this.#backoff.delete(id);
        return;
      }
      this.queue.done(id);
      if (outcome.stalled) this.#park(id, outcome.info);
      else this.#scheduleNext(id, outcome.info);
    } finally {
      reconciled();
    }
  }

  /** A pass that never rejects: an unexpected throw is a failed pass. */
  async #safePass(
    id: ObjectId,
    span: PassSpan | undefined,
    reconciled: () => void,
    load: Promise<ReconcileLoad> | undefined,
  ): Promise<PassOutcome> {
    try {
      return await this.#pass(id, span, reconciled, load);
    } catch (error) {
      return ran(resultInfo(fail(error))!);
    }
  }

  /** A stalled object: no retry, no requeue; only a push or a new generation runs it again. */
  #park(id: ObjectId, info: ResultInfo): void {
    this.#backoff.delete(id);
    this.queue.cancel(id);
    const err = info.err as PermanentError;
    this.#engine.log.warn("beehive: reconcile failed permanently; the object is stalled", {
      kind: kindName(this.gk),
      id,
      reason: err.reason,
      error: err,
    });
  }

  #scheduleNext(id: ObjectId, info: ResultInfo): void {
    const log = this.#engine.log;
    if (info.outcome === "fail") {
      const level = info.err instanceof InvalidResultError ? "error" : "warn";
      log[level]("beehive: reconcile failed; retrying with backoff", {
        kind: kindName(this.gk),
        id,
        error: info.err,
      });
      const prev = this.#backoff.get(id);
      const next = prev === undefined
        ? Math.min(BASE_RETRY_INTERVAL, this.#opts.maxRetryInterval)
        : Math.min(prev * 2, this.#opts.maxRetryInterval);
      this.#backoff.set(id, next);
      this.queue.addAfter(id, next, "backoff");
      return;
    }
    this.#backoff.delete(id);
    if (info.requeueAfter !== undefined) {
      if (info.requeueAfter > 0) this.queue.addAfter(id, info.requeueAfter, "requeueAfter");
      else this.queue.add(id);
    } else if (info.outcome === "unsettled") {
      // Nothing lists an object that declines to settle at an observed generation.
      this.queue.addAfter(id, this.#opts.owedPassInterval, "requeueAfter");
    } else if (this.#opts.individualPassInterval > 0) {
      const d = this.#opts.individualPassInterval;
      this.queue.addAfter(id, d + Math.random() * 0.1 * d, "requeueAfter");
    }
  }

  /**
   * One pass over `id` (`readAhead`: its read, begun before the pass); calls
   * `reconciled` once the controller's reconcile returned.
   */
  async #pass(
    id: ObjectId,
    span: PassSpan | undefined,
    reconciled: () => void,
    readAhead: Promise<ReconcileLoad> | undefined,
  ): Promise<PassOutcome> {
    const engine = this.#engine;
    const store = engine.store;
    const term = this.#term!;
    const log = engine.log;
    let load: ReconcileLoad;
    try {
      load = await (readAhead ?? store.objects.getForReconcile(id));
    } catch (error) {
      if (error instanceof NotFoundError) return GONE;
      return ran(resultInfo(fail(error))!);
    }
    const raw = load.object;
    if (raw.group !== this.gk.group || raw.kind !== this.gk.kind) return GONE;
    span?.object(raw.name, raw.generation);
    const ref: ObjectRef = { group: raw.group, kind: raw.kind, id };
    const deleting = raw.deletionRequestedAt !== undefined;
    let obj;
    try {
      obj = decodeObject(raw, this.codec);
    } catch (error) {
      // Quarantine: the bytes will not change until someone rewrites them.
      log.warn("beehive: quarantining an object that does not decode", {
        kind: kindName(this.gk),
        id,
        name: raw.name,
        error,
      });
      const quarantined = { ...ran(SETTLED_INFO), report: "failed" as const, error };
      if (!deleting) return quarantined;
      const collected = await this.#collect(term, id, undefined);
      return { ...collected, report: "failed", error };
    }
    const baseline = new StatusBaseline(raw.status, raw.statusVersion);
    const { client, end } = passClient(engine, term, ref, baseline, {
      repository: this.#opts.fencedRepository,
      conditions: raw.conditions,
      namespace: raw.namespace,
    });
    let info: ResultInfo;
    try {
      const returned = await this.#reconcile(obj, client);
      info = resultInfo(returned) ?? resultInfo(fail(
        new InvalidResultError(
          `The reconcile of ${kindName(this.gk)} ${id} returned ${
            describe(returned)
          }, not a result from settled(), unsettled() or fail()`,
        ),
      ))!;
    } catch (error) {
      info = resultInfo(fail(error))!;
    } finally {
      end();
    }
    reconciled();
    if (info.outcome === "fail" && this.#termOver(term, id, info.err)) return ABANDONED;
    let stalled = false;
    if (info.outcome !== "fail") await this.#conclude(term, ref, load, info);
    else if (info.err instanceof PermanentError) {
      stalled = await this.#stall(term, ref, load, info.err);
    } else {
      if (load.stalledGeneration !== undefined) {
        // Retrying again: a restart's owed pass must find the object.
        await term.store.objects.setStalledGeneration(ref, undefined).catch((error) => {
          if (!(error instanceof NotFoundError)) {
            log.warn("beehive: lifting a stall failed", { kind: kindName(ref), id, error });
          }
        });
      }
      await this.#markRetrying(term, ref, load.object.conditions, info.err);
    }
    const outcome = ran(info, false, stalled);
    if (!deleting) return outcome;
    const collected = await this.#collect(term, id, info);
    if (collected.gone) return { ...outcome, gone: true, stalled: false };
    return stalled ? { ...collected, stalled, report: "stalled", error: info.err } : collected;
  }

  /** Whether `error` ended a pass over `id` because its term is over (see `Engine.termOver`). */
  #termOver(term: Term, id: ObjectId, error: unknown): boolean {
    return this.#engine.termOver(term, error, { kind: kindName(this.gk), id });
  }

  /**
   * Records a permanent failure in one transaction: the owed count and the
   * dependency watermark the pass consumed, the stalled generation, the
   * `Stalled` condition and the `Warning` event. Resolves to whether it
   * committed; a pass whose stall did not land takes the retry ladder.
   */
  async #stall(
    term: Term,
    ref: ObjectRef,
    load: ReconcileLoad,
    err: PermanentError,
  ): Promise<boolean> {
    const raw = load.object;
    // Bounded: an error message is not the controller's to size, and the stall must land.
    const message = err.message.slice(0, MAX_STALL_MESSAGE).toWellFormed();
    const reason = clipText(err.reason, this.#engine.options.limits.fieldBytes);
    try {
      await term.store.within(async (tx) => {
        if (raw.reconcileOwed !== 0) await tx.reconcileOwed.decrement(ref, raw.reconcileOwed);
        if (load.hasDependencies) await tx.dependencies.watermarkSet(ref.id, load.cursor);
        await tx.objects.setStalledGeneration(ref, raw.generation);
        await tx.conditions.set(ref, [
          { type: STALLED, status: "True", reason, message },
          ...(holds(raw.conditions, RETRYING) ? [RECOVERED_FROM_RETRY] : []),
        ]);
        await tx.events.add(ref, { type: "Warning", reason, message });
      });
    } catch (error) {
      if (!(error instanceof NotFoundError)) {
        this.#engine.log.warn("beehive: recording a stalled object failed; retrying with backoff", {
          kind: kindName(ref),
          id: ref.id,
          error,
        });
      }
      return false;
    }
    this.#engine.writes.kindWritten(ref);
    this.#engine.writes.eventsWritten(ref.id);
    return true;
  }

  /**
   * Records that a pass failed and the object is on the retry ladder: the
   * `Retrying` condition `True`, its message the error's (cut to the stall
   * message's bound). Written only when it changes, so a failure that
   * repeats costs no write; a failed write is logged and the ladder goes on.
   */
  async #markRetrying(
    term: Term,
    ref: ObjectRef,
    conditions: readonly RawCondition[],
    err: unknown,
  ): Promise<void> {
    const text = err instanceof Error ? err.message : String(err);
    const message = text.slice(0, MAX_STALL_MESSAGE).toWellFormed();
    const now = conditions.find((c) => c.type === RETRYING);
    if (now?.status === "True" && now.reason === RETRY_REASON && now.message === message) return;
    try {
      await term.store.conditions.set(ref, [{
        type: RETRYING,
        status: "True",
        reason: RETRY_REASON,
        message,
      }]);
    } catch (error) {
      if (!(error instanceof NotFoundError) && !this.#termOver(term, ref.id, error)) {
        this.#engine.log.warn("beehive: recording a retrying object failed", {
          kind: kindName(ref),
          id: ref.id,
          error,
        });
      }
      return;
    }
    this.#engine.writes.kindWritten(ref);
  }

  /** Owed decrement, then watermark, then the generation handshake: the order is load-bearing. */
  async #conclude(
    term: Term,
    ref: ObjectRef,
    load: ReconcileLoad,
    info: ResultInfo,
  ): Promise<void> {
    const store = term.store;
    const log = this.#engine.log;
    const raw = load.object;
    const warn = (step: string, error: unknown) => {
      if (this.#termOver(term, ref.id, error)) return;
      if (!(error instanceof NotFoundError)) {
        log.warn(`beehive: concluding a pass failed at ${step}`, {
          kind: kindName(ref),
          id: ref.id,
          error,
        });
      }
    };
    if (raw.reconcileOwed !== 0) {
      await store.reconcileOwed.decrement(ref, raw.reconcileOwed).catch((e) =>
        warn("decrement", e)
      );
    }
    if (load.hasDependencies) {
      await store.dependencies.watermarkSet(ref.id, load.cursor).catch((e) => warn("watermark", e));
    }
    if (load.stalledGeneration !== undefined) {
      await store.objects.setStalledGeneration(ref, undefined).catch((e) => warn("unstall", e));
    }
    // A recovery from retrying and from a stall is one write of both conditions.
    const recovered: ConditionWrite[] = [];
    if (holds(raw.conditions, RETRYING)) recovered.push(RECOVERED_FROM_RETRY);
    if (info.outcome === "settled" && holds(raw.conditions, STALLED)) {
      recovered.push(RECOVERED_FROM_STALL);
    }
    if (recovered.length > 0) {
      try {
        await store.conditions.set(ref, recovered);
        this.#engine.writes.kindWritten(ref);
      } catch (e) {
        warn("the recovered conditions", e);
      }
    }
    if (
      info.outcome === "settled" &&
      (raw.observedGeneration === undefined || raw.observedGeneration < raw.generation)
    ) {
      // The generation handed to the controller, never a fresh read.
      try {
        if (await store.objects.setObservedGeneration(ref, raw.generation)) {
          this.#engine.writes.kindWritten(ref);
        }
      } catch (e) {
        warn("the generation handshake", e);
      }
    }
  }

  async #collect(term: Term, id: ObjectId, info: ResultInfo | undefined): Promise<PassOutcome> {
    try {
      const removed = await collect(this.#engine, term.store, id);
      if (removed) return GONE;
      return ran(info ?? SETTLED_INFO);
    } catch (error) {
      if (error instanceof NotFoundError) return GONE;
      return ran(info?.outcome === "fail" ? info : resultInfo(fail(error))!);
    }
  }
}

/** Tells a feed nothing more will be pulled; a feed whose `return()` misbehaves cannot hold up stop. */
function endFeed(it: AsyncIterator<unknown>): void {
  try {
    Promise.resolve(it.return?.()).catch(() => {});
  } catch {
    // The feed's own return() threw: there is nothing left to end.
  }
}

const SETTLED_INFO: ResultInfo = { outcome: "settled", requeueAfter: undefined, err: undefined };

const EXCLUDE_STALLED = Object.freeze({ excludeStalled: true });

/** The `Retrying` condition's reason while the object is on the retry ladder. */
const RETRY_REASON = "ReconcileFailed";

/** What a pass that does not fail (or a stall) sets over a `Retrying=True`. */
const RECOVERED_FROM_RETRY = Object.freeze({
  type: RETRYING,
  status: "False" as const,
  reason: "Recovered",
  message: "A later pass did not fail",
});

/** What a pass that settles sets over a `Stalled=True`. */
const RECOVERED_FROM_STALL = Object.freeze({
  type: STALLED,
  status: "False" as const,
  reason: "Recovered",
  message: "A later pass settled",
});

function describe(value: unknown): string {
  if (value === undefined) return "undefined";
  if (value === null) return "null";
  if (typeof value === "object") return "an object";
  return typeof value;
}
