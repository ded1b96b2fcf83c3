/**
 * A fault-injecting {@linkcode Store}: wraps any store (and every transaction
 * handle its `within` hands out) and fails chosen calls on demand with a
 * `StoreError` — by `family.method` name, for the next N matching calls, or
 * every call until cleared — and can make the whole database read as closed
 * (every call rejects with `StoreClosedError`). Everything not faulted goes
 * to the wrapped store untouched.
 *
 * ```ts ignore
 * const faults = new FaultInjector();
 * const store = new FaultStore(await openSqliteStore(":memory:"), faults);
 * const fault = faults.fail("objects.listIds", { count: 2 });
 * // ... the next two objects.listIds calls reject with StoreError
 * fault.clear();
 * ```
 *
 * @module
 */
import { StoreClosedError, StoreError } from "../../src/model/errors.ts";
import type {
  Conditions,
  DeletionRequests,
  Dependencies,
  DriverCursors,
  Edges,
  Events,
  Fence,
  Kinds,
  Leases,
  Objects,
  ObjectWrites,
  ReconcileOwed,
  Store,
} from "../../src/store.ts";

/** The table families of a {@linkcode Store}. */
export type FamilyName =
  | "objects"
  | "conditions"
  | "edges"
  | "deletionRequests"
  | "dependencies"
  | "driverCursors"
  | "kinds"
  | "events"
  | "objectWrites"
  | "reconcileOwed"
  | "leases";

/** The families the campaigns fault, in declaration order. */
export const FAMILIES: readonly FamilyName[] = [
  "objects",
  "conditions",
  "edges",
  "deletionRequests",
  "dependencies",
  "driverCursors",
  "events",
  "objectWrites",
  "reconcileOwed",
];

/** The store-level members that return a promise (and so can be faulted). */
export type RootMethod = "within" | "getLatestResourceVersion" | "reclaimSpace";

/** A call that can be faulted: `"family.method"` or a store-level member. */
export type FaultTarget =
  | { [F in FamilyName]: `${F}.${keyof Store[F] & string}` }[FamilyName]
  | RootMethod;

/** Whether a call came through the root store or a transaction handle. */
export type CallScope = "root" | "tx";

/** Which calls a fault applies to and what it rejects with. */
export interface FaultSpec {
  /** Fail only this many matching calls, then stop; omitted = every matching call until cleared. */
  readonly count?: number;
  /** Let this many matching calls through before failing any. @default {0} */
  readonly skip?: number;
  /** Only calls through the root store, or only through transaction handles. @default any */
  readonly scope?: CallScope;
  /** Only calls whose arguments satisfy this. */
  readonly when?: (args: readonly unknown[]) => boolean;
  /** The error to reject with; @default a `StoreError` naming the call. */
  readonly error?: (target: FaultTarget, call: number) => Error;
}

/** One call through a {@linkcode FaultStore}. */
export interface CallRecord {
  readonly target: FaultTarget;
  readonly scope: CallScope;
  /** `Date.now()` at the call (fake time in the engine tests). */
  readonly at: number;
  /** Whether the call was failed on purpose, and how. */
  readonly injected: "fault" | "closed" | undefined;
  readonly args: readonly unknown[];
}

/** A fault that is armed; `clear()` disarms it. */
export class Fault {
  readonly target: FaultTarget;
  readonly #spec: FaultSpec;
  #skipped = 0;
  #injected = 0;
  #cleared = false;
  readonly #owner: FaultInjector;

  /** Use {@linkcode FaultInjector.fail}. */
  constructor(owner: FaultInjector, target: FaultTarget, spec: FaultSpec) {
    const { count, skip } = spec;
    if (count !== undefined && (!Number.isSafeInteger(count) || count < 1)) {
      throw new TypeError(`Cannot arm a fault: count is ${count}, expected an integer >= 1`);
    }
    if (skip !== undefined && (!Number.isSafeInteger(skip) || skip < 0)) {
      throw new TypeError(`Cannot arm a fault: skip is ${skip}, expected an integer >= 0`);
    }
    this.#owner = owner;
    this.target = target;
    this.#spec = spec;
  }

  /** How many calls this fault has failed. */
  get injected(): number {
    return this.#injected;
  }

  /** Whether it can still fail a call. */
  get active(): boolean {
    const count = this.#spec.count;
    return !this.#cleared && (count === undefined || this.#injected < count);
  }

  /** Disarms the fault: later calls go through. */
  clear(): void {
    this.#cleared = true;
    this.#owner.forget(this);
  }

  /** Decides one call: the error to reject with, or `undefined` to let it through. */
  take(scope: CallScope, args: readonly unknown[]): Error | undefined {
    if (!this.active) return undefined;
    const spec = this.#spec;
    if (spec.scope !== undefined && spec.scope !== scope) return undefined;
    if (spec.when !== undefined && !spec.when(args)) return undefined;
    if (this.#skipped < (spec.skip ?? 0)) {
      this.#skipped++;
      return undefined;
    }
    this.#injected++;
    return spec.error?.(this.target, this.#injected) ??
      new StoreError(`injected fault: ${this.target} (${scope}, #${this.#injected})`);
  }
}

/**
 * The switchboard of one or more {@linkcode FaultStore}s: arms and clears
 * faults, simulates a closed database, and records every call.
 */
export class FaultInjector {
  readonly #faults: Fault[] = [];
  readonly #calls: CallRecord[] = [];
  readonly #ok = new Map<FaultTarget, number>();
  #closed = false;

  /**
   * Arms a fault on `target`: every matching call rejects until cleared, or
   * only the next `spec.count` matching calls.
   */
  fail(target: FaultTarget, spec: FaultSpec = {}): Fault {
    const fault = new Fault(this, target, spec);
    this.#faults.push(fault);
    return fault;
  }

  /** Clears the faults on `target`, or every fault (and a simulated close) when omitted. */
  clear(target?: FaultTarget): void {
    for (const f of [...this.#faults]) if (target === undefined || f.target === target) f.clear();
    if (target === undefined) this.#closed = false;
  }

  /** @internal Drops a cleared fault. */
  forget(fault: Fault): void {
    const i = this.#faults.indexOf(fault);
    if (i >= 0) this.#faults.splice(i, 1);
  }

  /** From now on every call rejects with `StoreClosedError`, until {@linkcode reopenDatabase}. */
  closeDatabase(): void {
    this.#closed = true;
  }

  /** Ends a simulated close. */
  reopenDatabase(): void {
    this.#closed = false;
  }

  /** Whether a close is being simulated. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Every call made, oldest first (optionally only to `target`). */
  calls(target?: FaultTarget): CallRecord[] {
    return target === undefined ? [...this.#calls] : this.#calls.filter((c) => c.target === target);
  }

  /** How many calls were failed on purpose (optionally only calls to `target`). */
  injected(target?: FaultTarget): number {
    let n = 0;
    for (const c of this.#calls) {
      if (c.injected !== undefined && (target === undefined || c.target === target)) n++;
    }
    return n;
  }

  /** How many calls to `target` went through and resolved. */
  succeeded(target: FaultTarget): number {
    return this.#ok.get(target) ?? 0;
  }

  /** Forgets the call records and success counts (armed faults stay armed). */
  resetCounts(): void {
    this.#calls.length = 0;
    this.#ok.clear();
  }

  /** @internal Runs one call through the switchboard. */
  invoke<T>(
    target: FaultTarget,
    scope: CallScope,
    args: readonly unknown[],
    run: () => Promise<T>,
  ): Promise<T> {
    let error: Error | undefined;
    let injected: CallRecord["injected"];
    if (this.#closed) {
      injected = "closed";
      error = new StoreClosedError(`Cannot use the store: it is closed (simulated: ${target})`);
    } else {
      for (const f of this.#faults) {
        if (f.target !== target) continue;
        error = f.take(scope, args);
        if (error !== undefined) {
          injected = "fault";
          break;
        }
      }
    }
    this.#calls.push({ target, scope, at: Date.now(), injected, args });
    if (error !== undefined) return Promise.reject(error);
    let p: Promise<T>;
    try {
      p = run();
    } catch (e) {
      // The contract forbids a synchronous throw; keep the wrapper honest either way.
      return Promise.reject(e);
    }
    return p.then((value) => {
      this.#ok.set(target, (this.#ok.get(target) ?? 0) + 1);
      return value;
    });
  }
}

function wrapFamily<T extends object>(
  family: T,
  name: FamilyName,
  faults: FaultInjector,
  scope: CallScope,
): T {
  const methods = new Map<PropertyKey, unknown>();
  return new Proxy(family, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function" || typeof prop !== "string") return value;
      let wrapped = methods.get(prop);
      if (wrapped === undefined) {
        const key = `${name}.${prop}` as FaultTarget;
        wrapped = (...args: unknown[]) =>
          faults.invoke(key, scope, args, () => value.apply(target, args));
        methods.set(prop, wrapped);
      }
      return wrapped;
    },
  });
}

/**
 * A {@linkcode Store} over `inner` whose calls pass through a
 * {@linkcode FaultInjector}. Transaction handles handed to `within`'s `fn`
 * are wrapped too, so a fault reaches calls made inside a transaction (and
 * rolls it back). `afterCommit` and `close` always go to the wrapped store.
 */
export class FaultStore implements Store {
  readonly identity: string;
  readonly origin: number;
  readonly objects: Objects;
  readonly conditions: Conditions;
  readonly edges: Edges;
  readonly deletionRequests: DeletionRequests;
  readonly dependencies: Dependencies;
  readonly driverCursors: DriverCursors;
  readonly events: Events;
  readonly objectWrites: ObjectWrites;
  readonly reconcileOwed: ReconcileOwed;
  readonly leases: Leases;
  readonly kinds: Kinds;
  /** The switchboard. */
  readonly faults: FaultInjector;
  readonly #inner: Store;
  readonly #scope: CallScope;

  constructor(
    inner: Store,
    faults: FaultInjector = new FaultInjector(),
    scope: CallScope = "root",
  ) {
    this.#inner = inner;
    this.faults = faults;
    this.#scope = scope;
    this.identity = inner.identity;
    this.origin = inner.origin;
    this.objects = wrapFamily(inner.objects, "objects", faults, scope);
    this.conditions = wrapFamily(inner.conditions, "conditions", faults, scope);
    this.edges = wrapFamily(inner.edges, "edges", faults, scope);
    this.deletionRequests = wrapFamily(inner.deletionRequests, "deletionRequests", faults, scope);
    this.dependencies = wrapFamily(inner.dependencies, "dependencies", faults, scope);
    this.driverCursors = wrapFamily(inner.driverCursors, "driverCursors", faults, scope);
    this.events = wrapFamily(inner.events, "events", faults, scope);
    this.objectWrites = wrapFamily(inner.objectWrites, "objectWrites", faults, scope);
    this.reconcileOwed = wrapFamily(inner.reconcileOwed, "reconcileOwed", faults, scope);
    this.leases = wrapFamily(inner.leases, "leases", faults, scope);
    this.kinds = wrapFamily(inner.kinds, "kinds", faults, scope);
  }

  /** A fenced view of the wrapped store, with the same switchboard. */
  fenced(fence: Fence): Store {
    return new FaultStore(this.#inner.fenced(fence), this.faults, this.#scope);
  }

  watchCommits(listener: () => void): () => void {
    return this.#inner.watchCommits(listener);
  }

  within<T>(fn: (tx: Store) => Promise<T>): Promise<T> {
    return this.faults.invoke(
      "within",
      this.#scope,
      [fn],
      () => this.#inner.within((tx) => fn(new FaultStore(tx, this.faults, "tx"))),
    );
  }

  afterCommit(fn: () => void | Promise<void>): void {
    this.#inner.afterCommit(fn);
  }

  getLatestResourceVersion(): Promise<number> {
    return this.faults.invoke(
      "getLatestResourceVersion",
      this.#scope,
      [],
      () => this.#inner.getLatestResourceVersion(),
    );
  }

  reclaimSpace(maxPages: number): Promise<number> {
    return this.faults.invoke(
      "reclaimSpace",
      this.#scope,
      [maxPages],
      () => this.#inner.reclaimSpace(maxPages),
    );
  }

  /** Closes the wrapped store for real (a simulated close does not stop this). */
  close(): Promise<void> {
    return this.#inner.close();
  }
}
