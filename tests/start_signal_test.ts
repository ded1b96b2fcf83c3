/**
 * `bh.start({ signal })`: a bounded startup, and an aborted start that leaves
 * the Beehive startable with nothing held.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Beehive, settled } from "../mod.ts";
import type { Store } from "../store/mod.ts";
import { openTestStore } from "./_sqlite_driver.ts";
import { test } from "./_test.ts";

const Thing = { group: "test.beehive.dev", kind: "Thing" };

/**
 * `store` with one call gated: `path` (e.g. `["leases", "hold"]`) waits for
 * `open()` before it runs. Each gated call reports on `entered`.
 */
function gated(store: Store, family: string, method: string) {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const entered = Promise.withResolvers<void>();
  let armed = true;
  const wrapped = new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop !== family) return typeof value === "function" ? value.bind(target) : value;
      return new Proxy(value as object, {
        get(fam, m) {
          const fn = Reflect.get(fam, m, fam);
          if (typeof fn !== "function") return fn;
          if (m !== method) return fn.bind(fam);
          return async (...args: unknown[]) => {
            if (armed) {
              armed = false;
              entered.resolve();
              await gate;
            }
            return fn.apply(fam, args);
          };
        },
      });
    },
  });
  return { store: wrapped, open: () => release(), entered: entered.promise };
}

test("Beehive.start with an aborted signal rejects with its reason and starts nothing", async () => {
  const store = await openTestStore(":memory:");
  try {
    const bh = new Beehive(store);
    const reason = new Error("gave up");
    await assert.rejects(bh.start({ signal: AbortSignal.abort(reason) }), (e) => e === reason);
    assert.equal(bh.isLeader, false);
    assert.equal((await bh.leadership()).holder, undefined);
    const stop = await bh.start();
    assert.equal(bh.isLeader, true);
    await stop();
  } finally {
    await store.close();
  }
});

test("Beehive.start aborted while taking the lease rejects at once and leaves the Beehive startable", async () => {
  const raw = await openTestStore(":memory:");
  try {
    const g = gated(raw, "leases", "hold");
    const bh = new Beehive(g.store);
    bh.register(Thing, () => settled());
    const control = new AbortController();
    const starting = bh.start({ signal: control.signal });
    await g.entered;
    const reason = new Error("startup took too long");
    control.abort(reason);
    await assert.rejects(starting, (e) => e === reason);
    // The next start waits for the abandoned hold to be undone, then starts.
    const again = bh.start();
    g.open();
    const stop = await again;
    assert.equal(bh.isLeader, true);
    const lease = await bh.leadership();
    assert.equal(lease.self, true);
    await bh.client(Thing).create("a", {});
    await stop();
    assert.equal((await raw.leases.get("beehive"))?.holder, undefined);
  } finally {
    await raw.close();
  }
});

test("Beehive.start aborted while opening its term releases the lease and leaves the Beehive startable", async () => {
  const raw = await openTestStore(":memory:");
  try {
    const g = gated(raw, "objectWrites", "maxVersionAll");
    const bh = new Beehive(g.store);
    bh.register(Thing, () => settled());
    const control = new AbortController();
    const starting = bh.start({ signal: control.signal });
    await g.entered;
    control.abort();
    await assert.rejects(starting, { name: "AbortError" });
    g.open();
    const stop = await bh.start();
    assert.equal(bh.isLeader, true);
    await stop();
    // A second Beehive can take the store: nothing was left held.
    const other = new Beehive(raw);
    const stopOther = await other.start();
    await stopOther();
  } finally {
    await raw.close();
  }
});

test("Beehive.start refuses malformed options with TypeError", async () => {
  const store = await openTestStore(":memory:");
  try {
    const bh = new Beehive(store);
    await assert.rejects(bh.start(5 as never), TypeError);
    await assert.rejects(bh.start({ signal: {} as AbortSignal }), TypeError);
    const stop = await bh.start({ signal: new AbortController().signal });
    await stop();
  } finally {
    await store.close();
  }
});
