/**
 * What every open SQL store's core shares: its lifecycle (closing refuses new
 * work, closed refuses all), failure reporting, the translation of anything a
 * driver threw into a store error, and the fence refusal.
 *
 * @module
 */
import { BeehiveError, FencedError, StoreClosedError, StoreError } from "../../src/model/errors.ts";
import type { Logger } from "../../src/telemetry/logger.ts";
import type { Fence } from "../../src/store.ts";
import type { Row } from "./_rows.ts";
import { quote } from "../../src/model/_values.ts";

/** The fence check's read: the lease row a fenced write is checked against. */
export const FENCE_SQL = "SELECT epoch, holder FROM leases WHERE name = ?";

/**
 * Refuses a write from a term that is over, given the lease row (or none).
 * @throws {FencedError}
 */
export function refuseStaleFence(fence: Fence, row: Row | undefined): void {
  const epoch = row === undefined ? 0 : Number(row.epoch);
  if (epoch > fence.epoch) {
    throw new FencedError(
      `Cannot write: lease ${quote(fence.lease)} is at epoch ${epoch} (held by ${
        row!.holder === null ? "nobody" : quote(String(row!.holder))
      }), and this write carries epoch ${fence.epoch} from a term that is over`,
    );
  }
}

/** The refusal of a write on a store opened read-only; `store` names it ("the SQLite store at …"). */
export function readOnlyError(store: string): StoreError {
  return new StoreError(`Cannot write to ${store}: it was opened read-only`);
}

/** What an open knows of itself once opened. */
export interface StoreOpen {
  /** This open's number (`store_epoch`); 0 for a read-only open. */
  readonly epoch: number;
  readonly logger: Logger | undefined;
  /** What a read-only open names itself in its refusals; absent for an open that writes. */
  readonly readOnlyAt?: string;
}

/** The lifecycle and error handling one open store's handles share. */
export abstract class StoreState {
  readonly logger: Logger | undefined;
  /**
   * What a read-only open names itself in its refusals; `undefined` for an
   * open that writes. A read-only open writes nothing, not even its epoch.
   */
  readonly readOnlyAt: string | undefined;
  /**
   * This open's number (`store_epoch`): the writer its condition rows record
   * and the write log's origin. A read-only open has none (0).
   */
  readonly epoch: number;
  #closing = false;
  #closed = false;

  constructor(open: StoreOpen) {
    this.epoch = open.epoch;
    this.logger = open.logger;
    this.readOnlyAt = open.readOnlyAt;
  }

  /** The refusal of a write on a read-only open, else `undefined`. */
  readOnlyRefusal(): StoreError | undefined {
    return this.readOnlyAt === undefined ? undefined : readOnlyError(this.readOnlyAt);
  }

  get closing(): boolean {
    return this.#closing;
  }

  /** Refuses new work; work already running may finish. */
  markClosing(): void {
    this.#closing = true;
  }

  /** The connections are gone: every call is refused. */
  markClosed(): void {
    this.#closed = true;
  }

  /** Rejects new work once close was called. */
  assertOpen(): void {
    if (this.#closing) throw new StoreClosedError("Cannot use the store: it is closed");
  }

  /** A rejection for new work once close was called (a closed store's error), else undefined. */
  refusal(): Promise<never> | undefined {
    return this.#closing
      ? Promise.reject(new StoreClosedError("Cannot use the store: it is closed"))
      : undefined;
  }

  /** Rejects work once the connections are gone. */
  assertConnected(): void {
    if (this.#closed) throw new StoreClosedError("Cannot use the store: it is closed");
  }

  /** Reports a failure from a hook or another place with no caller to reject. */
  report(message: string, error: unknown): void {
    this.logger?.error(message, { error });
  }

  /**
   * Translates anything a driver threw into a {@linkcode BeehiveError}.
   * Beehive errors pass through untouched.
   */
  translate(error: unknown): BeehiveError {
    if (error instanceof BeehiveError) return error;
    if (this.#closed || this.#closing) {
      return new StoreClosedError("Cannot use the store: it is closed", { cause: error });
    }
    return new StoreError(this.describeFailure(error), { cause: error });
  }

  /** The message of a store error wrapping a driver's `error`. */
  protected abstract describeFailure(error: unknown): string;
}
