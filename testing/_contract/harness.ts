/**
 * The store-contract harness: a case is a named async function over a
 * {@linkcode Harness}, runnable against any Store factory on any runtime.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import FakeTimers from "@sinonjs/fake-timers";
import type { GroupKind, ObjectRef, Store } from "../../src/store.ts";
import { describe } from "../../src/model/_values.ts";

/** Opens stores for one case and closes whatever the case left open. */
export interface StoreFactory {
  /** A short label for test names and errors, e.g. "sqlite". */
  readonly name: string;
  /** Opens a fresh, empty store. */
  open(): Promise<Store>;
  /**
   * Opens the store at `path`, creating it when missing; for restart cases.
   * `undefined` when the adapter keeps nothing across opens.
   */
  openPath?(path: string): Promise<Store>;
  /** Opens the store at `path` read-only (`readOnly: true`); it must exist. */
  openReadOnly?(path: string): Promise<Store>;
}

/** What a case receives. */
export interface Harness {
  /** Opens a fresh store, closed after the case. */
  open(): Promise<Store>;
  /** Opens the store at `path` (closed after the case); throws when the adapter has no paths. */
  openPath(path: string): Promise<Store>;
  /** Opens the store at `path` read-only (closed after the case). */
  openReadOnly(path: string): Promise<Store>;
  /** A path inside a directory removed after the case. */
  tempPath(name: string): string;
}

/** One contract case. */
export interface ContractCase {
  readonly name: string;
  /**
   * The case opens one store by path twice (a restart, or two connections to
   * one store): it runs only on a factory with `openPath`.
   */
  readonly reopens?: boolean;
  /** The case opens a store read-only (needs the factory's `openReadOnly`). */
  readonly readOnly?: boolean;
  readonly fn: (h: Harness) => Promise<void>;
}

/** Temp-directory plumbing the runner supplies. */
export interface TempDirs {
  make(): string;
  remove(dir: string): void;
  join(dir: string, name: string): string;
}

/** Temp directories under the OS's temp directory, through `node:fs` (Deno and Node alike). */
export const nodeTempDirs: TempDirs = {
  make: () => mkdtempSync(join(tmpdir(), "beehive-test-")),
  remove: (dir) => rmSync(dir, { recursive: true, force: true }),
  join,
};

/** The Store port's families and methods: what a value must have to be taken for a Store. */
const STORE_MEMBERS = [
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
] as const;
const STORE_METHODS = [
  "within",
  "afterCommit",
  "getLatestResourceVersion",
  "reclaimSpace",
  "fenced",
  "watchCommits",
  "close",
] as const;

/**
 * `value`, checked to look like a Store (what `open` resolved to).
 * @throws {TypeError} it is not one.
 */
export function checkStore(value: unknown, factory: string, opener: string): Store {
  const s = value as Record<string, unknown> | null;
  const missing = typeof s !== "object" || s === null ? undefined : [
    ...STORE_MEMBERS.filter((m) => typeof s[m] !== "object" || s[m] === null),
    ...STORE_METHODS.filter((m) => typeof s[m] !== "function"),
  ];
  if (missing === undefined || missing.length > 0) {
    throw new TypeError(
      `Cannot run the store contract (${factory}): ${opener} resolved to ${describe(value)}, ` +
        `expected a Store${missing === undefined ? "" : ` (it lacks ${missing.join(", ")})`}`,
    );
  }
  return value as Store;
}

/** Runs one case with cleanup: every store it opened is closed, every temp dir removed. */
export async function runCase(
  factory: StoreFactory,
  dirs: TempDirs,
  c: ContractCase,
): Promise<void> {
  const stores: Store[] = [];
  const made: string[] = [];
  const h: Harness = {
    async open() {
      const s = checkStore(await factory.open(), factory.name, "open()");
      stores.push(s);
      return s;
    },
    async openPath(path) {
      if (factory.openPath === undefined) throw new Error(`${factory.name} has no paths`);
      const s = checkStore(await factory.openPath(path), factory.name, "openPath()");
      stores.push(s);
      return s;
    },
    async openReadOnly(path) {
      if (factory.openReadOnly === undefined) {
        throw new Error(`${factory.name} has no read-only opens`);
      }
      const s = await factory.openReadOnly(path);
      stores.push(s);
      return s;
    },
    tempPath(name) {
      const dir = dirs.make();
      made.push(dir);
      return dirs.join(dir, name);
    },
  };
  try {
    await c.fn(h);
  } finally {
    for (const s of stores) await s.close();
    for (const d of made) dirs.remove(d);
  }
}

/** The kinds cases use. */
export const Widget: GroupKind = { group: "test.beehive.dev", kind: "Widget" };
export const Gadget: GroupKind = { group: "test.beehive.dev", kind: "Gadget" };
export const Core: GroupKind = { group: "", kind: "Thing" };

/** A kind-scoped reference to `id`. */
export function ref(gk: GroupKind, id: number): ObjectRef {
  return { group: gk.group, kind: gk.kind, id };
}

/** Creates an object and returns its reference. */
export async function make(
  store: Store,
  gk: GroupKind,
  name: string,
  spec: unknown = {},
  finalizers?: string[],
): Promise<ObjectRef> {
  const o = await store.objects.create(gk, { name, spec: JSON.stringify(spec), finalizers });
  return ref(gk, o.id);
}

/** What a write to `a` can change (the row, the log of its kind, the latest version): equal before and after a refused call. */
export async function footprint(store: Store, a: ObjectRef) {
  return {
    object: await store.objects.get(a.id),
    log: await logCount(store, a),
    latest: await store.getLatestResourceVersion(),
  };
}

/** Counts write-log entries of `gk`. */
export async function logCount(store: Store, gk: GroupKind): Promise<number> {
  return (await store.objectWrites.listSince(gk, { after: 0, limit: 1_000_000 })).writes.length;
}

/** Runs `fn` with `Date` faked from the real current instant; always restores it. */
export async function withFakeDate(
  fn: (clock: { tick(ms: number): void; setSystemTime(now: number): void }) => Promise<void>,
): Promise<void> {
  // performance.now too: a timed lease lapses by the time an open has seen it unchanged.
  const clock = FakeTimers.install({ toFake: ["Date", "performance"], now: Date.now() });
  try {
    await fn(clock);
  } finally {
    clock.uninstall();
  }
}
