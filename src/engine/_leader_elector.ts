/**
 * The candidate loop of leader election: acquire the timed lease, renew it
 * every `renewInterval`, and give it up at once when a renewal says another
 * holder has it or no renewal succeeded before the local deadline. Every term
 * it wins has an epoch above the last one's, even when the lease still names
 * it when it campaigns again.
 *
 * @module
 */
import type { Logger } from "../telemetry/logger.ts";
import type { ResolvedLeaderElection } from "./options.ts";
import { sleep } from "./_sleep.ts";
import type { Store } from "../store.ts";

/** What the elector tells its Beehive. */
export interface ElectorHooks {
  /** This candidate won the lease at `epoch`: start a term. */
  elected(epoch: number): void;
  /** The term is over: stop it; resolves once it has drained. */
  deposed(reason: string): Promise<void>;
}

/** One candidate for a timed lease. */
export class LeaderElector {
  readonly #store: Store;
  readonly #opts: ResolvedLeaderElection;
  readonly #log: Logger;
  readonly #hooks: ElectorHooks;
  #leading = false;
  #epoch = 0;
  /** Resolves once the last term has drained. */
  #drained: Promise<void> = Promise.resolve();
  #deadline: ReturnType<typeof setTimeout> | undefined;

  constructor(store: Store, opts: ResolvedLeaderElection, log: Logger, hooks: ElectorHooks) {
    this.#store = store;
    this.#opts = opts;
    this.#log = log;
    this.#hooks = hooks;
  }

  /** Whether this candidate holds the lease now. */
  get leading(): boolean {
    return this.#leading;
  }

  /**
   * Campaigns until `signal` aborts; then ends the term, waits for it to
   * drain, and releases the lease so a standby takes over at its next try.
   */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      if (this.#leading) await this.#renew();
      else {
        await this.#drained;
        if (signal.aborted) break;
        await this.#acquire();
      }
      await sleep(this.#opts.renewInterval, signal);
    }
    if (!this.#leading) return await this.#drained;
    const epoch = this.#epoch;
    this.#lose("the Beehive is stopping");
    await this.#drained;
    const { leaseName: name, identity: holder } = this.#opts;
    try {
      await this.#store.leases.release({ name, holder, epoch });
      this.#log.info("beehive: released the leader lease", { lease: name, epoch });
    } catch (error) {
      this.#log.warn("beehive: releasing the leader lease failed; it lapses on its own", {
        lease: name,
        error,
      });
    }
  }

  /** Gives up the term at `epoch` now, if it still runs (a write proved another holder leads). */
  depose(epoch: number, reason: string): void {
    if (this.#leading && this.#epoch === epoch) this.#lose(reason);
  }

  async #acquire(): Promise<void> {
    const { leaseName: name, identity: holder, leaseDuration: duration } = this.#opts;
    const started = Date.now();
    try {
      let { acquired, lease } = await this.#store.leases.acquire({ name, holder, duration });
      if (acquired && lease.epoch <= this.#epoch) {
        // The lease still names this candidate from a term that has ended, and the store
        // keeps the epoch of a holder's own renewal. A new term must never share a fence
        // with the old one: give that term up and take the lease afresh, at a new epoch.
        await this.#store.leases.release({ name, holder, epoch: lease.epoch });
        ({ acquired, lease } = await this.#store.leases.acquire({ name, holder, duration }));
        if (acquired && lease.epoch <= this.#epoch) {
          throw new Error(`the store kept epoch ${lease.epoch} across a release`);
        }
      }
      if (!acquired) return;
      this.#leading = true;
      this.#epoch = lease.epoch;
      this.#armDeadline(started);
      this.#log.info("beehive: leading", { lease: name, identity: holder, epoch: lease.epoch });
      this.#hooks.elected(lease.epoch);
    } catch (error) {
      this.#log.warn("beehive: acquiring the leader lease failed; retrying", {
        lease: name,
        error,
      });
    }
  }

  async #renew(): Promise<void> {
    const { leaseName: name, identity: holder, leaseDuration: duration } = this.#opts;
    const epoch = this.#epoch;
    const started = Date.now();
    try {
      const lease = await this.#store.leases.renew({ name, holder, epoch, duration });
      // Deposed by the deadline while the renewal was in flight: that term is over.
      if (!this.#leading || this.#epoch !== epoch) return;
      if (lease === undefined) return this.#lose("another holder has the lease");
      this.#armDeadline(started);
    } catch (error) {
      this.#log.warn("beehive: renewing the leader lease failed; retrying until the deadline", {
        lease: name,
        error,
      });
    }
  }

  /** A renewal issued at `started` keeps the lease until `started + leaseDuration` at best. */
  #armDeadline(started: number): void {
    clearTimeout(this.#deadline);
    const wait = Math.max(0, started + this.#opts.leaseDuration - Date.now());
    this.#deadline = setTimeout(
      () => this.#lose("no renewal succeeded before the lease deadline"),
      wait,
    );
  }

  #lose(reason: string): void {
    if (!this.#leading) return;
    clearTimeout(this.#deadline);
    this.#deadline = undefined;
    this.#leading = false;
    this.#log.info("beehive: no longer leading", {
      lease: this.#opts.leaseName,
      epoch: this.#epoch,
      reason,
    });
    this.#drained = this.#hooks.deposed(reason);
  }
}
