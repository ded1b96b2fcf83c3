/**
 * Cross-replica commit wakes: from open to close, one dedicated connection
 * runs `LISTEN` on the store's channel (so a listener subscribed after open
 * hears every later commit, with no set-up race). Every write transaction sends a
 * `NOTIFY` carrying its store open's origin and the counter it published,
 * delivered at commit; the counter tells the core's kind tails which commit
 * is the newest, and this open's own commits wake no listener. A writable open
 * also holds its live-open lock on this connection (`./_open_locks.ts`). Idle,
 * it costs no write and no query. A lost connection is re-established with
 * backoff, and listeners are called once it is back (notifications sent
 * meanwhile were missed, and the core is told it was not listening).
 *
 * @module
 */
import pg from "pg";
import type { Core } from "./_core.ts";
import { pgTypes, readCommitPayload } from "./_core.ts";
import { LOCK_OPEN } from "./_open_locks.ts";
import { StoreError } from "../../src/model/errors.ts";

/** The longest wait between reconnect attempts, in ms. */
const MAX_BACKOFF = 2000;

export class CommitListener {
  readonly #core: Core;
  readonly #listeners = new Set<() => void>();
  #client: pg.Client | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #clearTimer: typeof clearTimeout = clearTimeout;
  #backoff = 50;
  #closed = false;
  /** Connections being ended: close awaits them. */
  readonly #ending = new Set<Promise<void>>();

  constructor(core: Core) {
    this.#core = core;
  }

  /** Calls `listener` after each commit another store open makes. */
  subscribe(listener: () => void): () => void {
    if (typeof listener !== "function" || this.#closed) return () => {};
    const entry = () => listener();
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  /** Connects and listens; resolves once `LISTEN` is in effect. */
  start(): Promise<void> {
    return this.#connect(false);
  }

  #connect(reconnect: boolean): Promise<void> {
    const client = new pg.Client({ ...this.#core.connection, types: pgTypes });
    this.#client = client;
    const lost = (error?: unknown) => {
      if (this.#client !== client) return;
      this.#client = undefined;
      this.#core.listening(false);
      this.#end(client);
      if (error !== undefined) {
        this.#core.report("beehive store: the commit listener lost its connection", error);
      }
      this.#retry();
    };
    client.on("error", lost);
    client.on("end", () => lost());
    client.on("notification", (msg) => {
      const core = this.#core;
      const { epoch, published } = readCommitPayload(msg.payload ?? "");
      // A payload with no counter leaves this open unsure which commit is the newest.
      if (published === undefined) core.unsure();
      else core.sawCommit(published);
      // This open's own commits wake no listener (a read-only open has no epoch of its own).
      if (core.readOnlyAt === undefined && epoch === core.epoch) return;
      this.#fire();
    });
    return client.connect()
      .then(() => client.query(`LISTEN "${this.#core.channel}"`))
      .then(() => this.#lockOpen(client))
      .then(() => {
        if (this.#client !== client) return;
        this.#core.listening(true);
        this.#backoff = 50;
        if (reconnect) this.#fire();
      }, (error) => {
        if (!reconnect) {
          this.#client = undefined;
          this.#end(client);
          throw error;
        }
        lost(error);
      });
  }

  /**
   * A writable open holds its live-open lock on this connection: its liveness
   * rows read as alive while it is up. Not yet free on a reconnect (the server
   * has not noticed the last connection is gone), it fails this connection,
   * which is retried with backoff.
   */
  async #lockOpen(client: pg.Client): Promise<void> {
    const core = this.#core;
    if (core.readOnlyAt !== undefined) return;
    const r = await client.query(LOCK_OPEN, core.liveOpens.lockParams(core.epoch));
    if (r.rows[0].got !== true) {
      throw new StoreError(
        `Cannot take this open's live-open lock (epoch ${core.epoch}): an earlier connection still holds it`,
      );
    }
  }

  #retry(): void {
    if (this.#closed || this.#timer !== undefined) return;
    // Cleared with the matching function: fake timers may be installed or removed meanwhile.
    this.#clearTimer = globalThis.clearTimeout;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#closed) return;
      void this.#connect(true);
    }, this.#backoff);
    this.#backoff = Math.min(this.#backoff * 2, MAX_BACKOFF);
  }

  #fire(): void {
    for (const fn of [...this.#listeners]) {
      try {
        fn();
      } catch (error) {
        this.#core.report("beehive store: a commit listener threw", error);
      }
    }
  }

  #end(client: pg.Client): void {
    const done = client.end().catch(() => {}).then(() => {
      this.#ending.delete(done);
    });
    this.#ending.add(done);
  }

  #stop(): void {
    this.#core.listening(false);
    if (this.#timer !== undefined) this.#clearTimer(this.#timer);
    this.#timer = undefined;
    const client = this.#client;
    this.#client = undefined;
    if (client !== undefined) this.#end(client);
  }

  /** Stops listening and closes the connection. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#stop();
    await Promise.all([...this.#ending]);
  }
}
