/**
 * The background checkpointer: once a store has committed
 * {@linkcode CHECKPOINT_EVERY} times, a worker thread with its own connection
 * copies the WAL back into the database file (`PRAGMA wal_checkpoint(PASSIVE)`)
 * after every further {@linkcode CHECKPOINT_EVERY} commits, so the checkpoint's
 * two fsyncs and its page copies stop landing inside a commit on the event
 * loop's thread. A passive checkpoint never blocks a writer or a reader. The
 * writer's own automatic checkpoint stays on as a fallback, at
 * {@linkcode FALLBACK_AUTOCHECKPOINT} pages while the worker runs (SQLite's
 * 1,000 before it starts and after it fails).
 *
 * Only for the `node:sqlite` driver: the worker must use the very SQLite
 * library the store's connections use, or its locks and theirs would not
 * know about each other (POSIX locks are per process, and SQLite keeps the
 * table that reconciles them per library copy). `node:sqlite` is built into
 * the runtime, so both threads share it.
 *
 * @module
 */
import { Worker } from "node:worker_threads";
import type { Logger } from "../../src/telemetry/logger.ts";

/** What the checkpointer needs of the writer connection: to set its own checkpoint threshold. */
export interface PragmaTarget {
  exec(sql: string): void;
}

/** Commits between two checkpoint requests (and before the worker starts). */
export const CHECKPOINT_EVERY = 64;

/** The writer's automatic-checkpoint threshold, in pages, while the worker runs. */
export const FALLBACK_AUTOCHECKPOINT = 4_000;

/** SQLite's default automatic-checkpoint threshold, in pages. */
const DEFAULT_AUTOCHECKPOINT = 1_000;

/**
 * The worker: one connection, a passive checkpoint per request (one queued
 * behind a slow checkpoint finds little left to copy), and a clean close on
 * "close".
 * An ES module in a data URL, so it loads the same on Deno and Node and from a
 * published package, with nothing to resolve beside it.
 */
const WORKER_SOURCE = `
import { parentPort, workerData } from "node:worker_threads";
import { DatabaseSync } from "node:sqlite";
import process from "node:process";
const db = new DatabaseSync(workerData.path);
db.exec("PRAGMA busy_timeout = 0");
const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
parentPort.on("message", (message) => {
  if (message === "close") {
    db.close();
    process.exit(0);
  }
  try {
    const { log, checkpointed } = checkpoint.get();
    parentPort.postMessage({ log, checkpointed });
  } catch (error) {
    // Busy (another checkpoint runs): the next request retries.
    if (error?.errcode === 5 || error?.errcode === 6) return;
    parentPort.postMessage({ error: String(error?.message ?? error) });
  }
});
`;

/** The worker's module as a `data:` URL. */
export function workerUrl(source: string): URL {
  return new URL(`data:text/javascript,${encodeURIComponent(source)}`);
}

const WORKER_URL = workerUrl(WORKER_SOURCE);

/** The module workers start from; a test swaps in one that fails. */
let workerModule = WORKER_URL;

/** @internal Makes new checkpointers start `url` instead (`undefined`: the real worker). For tests. */
export function useCheckpointWorker(url: URL | undefined): void {
  workerModule = url ?? WORKER_URL;
}

/** What one background checkpoint reports: WAL frames, and how many of them are in the file. */
export interface CheckpointResult {
  readonly log: number;
  readonly checkpointed: number;
}

export class Checkpointer {
  readonly #path: string;
  readonly #writer: PragmaTarget;
  readonly #logger: Logger | undefined;
  #commits = 0;
  #worker: Worker | undefined;
  #exited: Promise<void> | undefined;
  /** Set once the worker failed or the store closed: no worker again. */
  #done = false;
  readonly #waiters: PromiseWithResolvers<CheckpointResult>[] = [];

  constructor(path: string, writer: PragmaTarget, logger: Logger | undefined) {
    this.#path = path;
    this.#writer = writer;
    this.#logger = logger;
  }

  /** Counts a commit; every {@linkcode CHECKPOINT_EVERY}th asks the worker (starting it the first time). */
  committed(): void {
    if (++this.#commits < CHECKPOINT_EVERY || this.#done) return;
    this.#commits = 0;
    if (this.#worker === undefined) this.#start();
    // Queued until the worker listens: a busy caller may not yield to the event loop for a while.
    this.#worker?.postMessage("checkpoint");
  }

  #start(): void {
    let worker: Worker;
    try {
      worker = new Worker(workerModule, { workerData: { path: this.#path } });
    } catch (error) {
      this.#fail(error);
      return;
    }
    this.#worker = worker;
    // An idle store must not keep the process alive (only someone awaiting a report does).
    if (this.#waiters.length === 0) worker.unref();
    this.#exited = new Promise((resolve) => worker.once("exit", () => resolve()));
    this.#autocheckpoint(FALLBACK_AUTOCHECKPOINT);
    worker.on("message", (message: CheckpointResult | { error: string }) => {
      if ("error" in message) this.#fail(new Error(message.error));
      else {
        const waiters = this.#waiters.splice(0);
        if (waiters.length > 0 && !this.#done) worker.unref();
        for (const w of waiters) w.resolve(message);
      }
    });
    worker.on("error", (error) => this.#fail(error));
  }

  #autocheckpoint(pages: number): void {
    try {
      this.#writer.exec(`PRAGMA wal_autocheckpoint = ${pages}`);
    } catch {
      // The store is closing; its last close checkpoints anyway.
    }
  }

  /** The worker failed: the writer checkpoints by itself again, as before it started. */
  #fail(error: unknown): void {
    if (this.#done) return;
    this.#done = true;
    this.#logger?.warn(
      "beehive store: the background checkpointer failed; the writer checkpoints",
      {
        error,
      },
    );
    this.#autocheckpoint(DEFAULT_AUTOCHECKPOINT);
    void this.#worker?.terminate();
    for (const w of this.#waiters.splice(0)) w.reject(error);
  }

  /** Whether the worker runs (it starts after {@linkcode CHECKPOINT_EVERY} commits). */
  get running(): boolean {
    return this.#worker !== undefined && !this.#done;
  }

  /** Resolves with the next checkpoint the worker reports (for tests). */
  next(): Promise<CheckpointResult> {
    const waiter = Promise.withResolvers<CheckpointResult>();
    if (this.#done) waiter.reject(new Error("The background checkpointer is not running"));
    else {
      this.#worker?.ref();
      this.#waiters.push(waiter);
    }
    return waiter.promise;
  }

  /** Ends the worker (closing its connection) before the store's own connections close. */
  async close(): Promise<void> {
    this.#done = true;
    const closed = new Error("The store closed");
    for (const w of this.#waiters.splice(0)) w.reject(closed);
    const worker = this.#worker;
    if (worker === undefined) return;
    // Held open until it has gone: the close awaits it.
    worker.ref();
    worker.postMessage("close");
    await this.#exited;
  }
}
