/**
 * The store-contract harness: a case is a named async function over a
 * {@linkcode Harness}, runnable against any Store factory on any runtime.
 *
 * @module
 */
import FakeTimers from "@sinonjs/fake-timers";
import type { GroupKind, ObjectRef, Store } from "../../../src/store.ts";

/** Opens stores for one case and closes whatever the case left open. */
export interface StoreFactory {
  /** A short label for test names, e.g. "sqlite". */
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
  readonly fn: (h: Harness) => Promise<void>;
}

/** Temp-directory plumbing the runner supplies (runtime-specific). */
export interface TempDirs {
  make(): string;
  remove(dir: string): void;
  join(dir: string, name: string): string;
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
      const s = await factory.open();
      stores.push(s);
      return s;
    },
    async openPath(path) {
      if (factory.openPath === undefined) throw new Error(`${factory.name} has no paths`);
      const s = await factory.openPath(path);
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
