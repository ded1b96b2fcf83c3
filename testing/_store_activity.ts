/**
 * Store calls started and in flight, so fake-time steps know when the engine
 * has gone quiet (`_fake_time.ts`): a pass, a wake or a sweep always calls
 * the store, and a store whose I/O completes on the event loop (PostgreSQL),
 * not in promise callbacks like SQLite's, must be waited for. `track` wraps a
 * store so every promise its members return is counted.
 *
 * @module
 */
import type { HeldLease, Store } from "../src/store.ts";

let pending = 0;
let started = 0;
let waiters: (() => void)[] = [];

/** Store calls started and not yet settled. */
export function pendingStoreCalls(): number {
  return pending;
}

/** Store calls started in this process so far: a count that moves whenever the engine works. */
export function storeCallsStarted(): number {
  return started;
}

/** Resolves when a store call settles, or after `ms` of real time, whichever is first. */
export function storeProgress(ms: number, realSetTimeout: typeof setTimeout): Promise<void> {
  const { promise, resolve } = Promise.withResolvers<void>();
  const timer = realSetTimeout(resolve, ms);
  waiters.push(() => {
    clearRealTimeout(timer);
    resolve();
  });
  return promise;
}

let clearRealTimeout: (id: ReturnType<typeof setTimeout>) => void = clearTimeout;

/** Records the real `clearTimeout` (before fake time is installed). */
export function useRealClearTimeout(fn: typeof clearTimeout): void {
  clearRealTimeout = fn;
}

function settled(): void {
  pending--;
  const ws = waiters;
  waiters = [];
  for (const w of ws) w();
}

function count<T>(value: T): T {
  if (value instanceof Promise) {
    pending++;
    started++;
    value.then(settled, settled);
  }
  return value;
}

/** A held lease whose `release()` is counted too (stop awaits it: a round trip on a server). */
function countedHold(held: HeldLease): HeldLease {
  return { lease: held.lease, release: () => count(held.release()) };
}

function wrapObject<T extends object>(target: T): T {
  return new Proxy(target, {
    get(t, prop) {
      const value = Reflect.get(t, prop, t);
      if (typeof value !== "function") return value;
      if (prop === "hold") {
        return (...args: unknown[]) =>
          count((value.apply(t, args) as Promise<HeldLease>).then(countedHold));
      }
      return (...args: unknown[]) => count(value.apply(t, args));
    },
  });
}

const FAMILIES = new Set([
  "objects",
  "conditions",
  "edges",
  "deletionRequests",
  "dependencies",
  "driverCursors",
  "events",
  "objectWrites",
  "reconcileOwed",
  "leases",
  "kinds",
]);

/** `store` with every call counted, transaction and fenced handles included. */
export function track<S extends Store>(store: S): S {
  const families = new Map<string, unknown>();
  return new Proxy(store, {
    get(target, prop) {
      if (typeof prop === "string" && FAMILIES.has(prop)) {
        let f = families.get(prop);
        if (f === undefined) {
          families.set(prop, f = wrapObject(Reflect.get(target, prop) as object));
        }
        return f;
      }
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (prop === "within") {
        return (fn: (tx: Store) => Promise<unknown>) => count(target.within((tx) => fn(track(tx))));
      }
      if (prop === "fenced") return (fence: never) => track(target.fenced(fence));
      return (...args: unknown[]) => count(value.apply(target, args));
    },
  });
}
