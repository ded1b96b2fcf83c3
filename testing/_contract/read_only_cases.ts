/**
 * Store contract cases: read-only opens. A read-only open reads what writable
 * opens wrote, refuses every write with a `StoreError` and changes nothing, is
 * refused where no store exists (creating none), and reads a liveness
 * condition as alive exactly while the open that wrote it is.
 *
 * @module
 */
import assert from "node:assert/strict";
import { StoreError } from "../../src/model/errors.ts";
import type { Store } from "../../src/store.ts";
import { type ContractCase, make, Widget } from "./harness.ts";

/** Resolves once `store` hears another open's commit. */
function nextCommit(store: Store): Promise<void> {
  const { promise, resolve } = Promise.withResolvers<void>();
  const off = store.watchCommits(() => {
    off();
    resolve();
  });
  return promise;
}

function isReadOnlyRefusal(error: unknown): boolean {
  return error instanceof StoreError && /opened read-only/.test(error.message);
}

export const readOnlyCases: ContractCase[] = [
  {
    reopens: true,
    readOnly: true,
    name: "a read-only open reads what a writable open wrote, and refuses every write",
    async fn(h) {
      const path = h.tempPath("store.db");
      const writer = await h.openPath(path);
      const w = await make(writer, Widget, "w");
      const latest = await writer.getLatestResourceVersion();
      const store = await h.openReadOnly(path);
      assert.equal((await store.objects.getByName({ ...Widget, name: "w" })).id, w.id);
      assert.equal(await store.getLatestResourceVersion(), latest);
      const refused = [
        store.objects.create(Widget, { name: "x", spec: "{}" }),
        store.objects.updateSpec(w, { spec: "{}" }),
        store.conditions.set(w, [{ type: "A", status: "True" }]),
        store.events.add(w, { type: "Normal", reason: "R" }),
        store.within(() => Promise.resolve(1)),
        store.leases.acquire({ name: "l", holder: "h", duration: 1000 }),
        store.leases.hold("beehive", "h"),
        store.reclaimSpace(10),
      ];
      for (const [i, call] of refused.entries()) {
        await assert.rejects(call, isReadOnlyRefusal, `call ${i}`);
      }
      assert.equal(await writer.getLatestResourceVersion(), latest);
      assert.equal((await writer.objects.list(Widget)).length, 1);
    },
  },
  {
    reopens: true,
    readOnly: true,
    name: "a read-only open where no store exists is refused, and creates none",
    async fn(h) {
      const path = h.tempPath("none.db");
      await assert.rejects(h.openReadOnly(path), StoreError);
      await assert.rejects(h.openReadOnly(path), StoreError, "the first refusal created nothing");
    },
  },
  {
    reopens: true,
    readOnly: true,
    name:
      "a read-only open reads a liveness condition True while the open that wrote it lives, whatever else opens the store, and Unknown once it closed",
    async fn(h) {
      const path = h.tempPath("live.db");
      const live = await h.openPath(path);
      const w = await make(live, Widget, "w");
      await live.conditions.set(w, [{ type: "Connected", status: "True", liveness: true }]);
      const status = async (s: Store) => {
        const [c] = (await s.objects.get(w.id)).conditions;
        return c.unconfirmed ? "Unknown" : c.status;
      };
      const observer = await h.openReadOnly(path);
      assert.equal(await status(live), "True");
      assert.equal(await status(observer), "True", "opening the observer downgraded nothing");
      // A client's writable open (the CLI's apply) that commits downgrades nothing either.
      const client = await h.openPath(path);
      const heardClient = nextCommit(observer);
      await make(client, Widget, "applied");
      await heardClient;
      await client.close();
      assert.equal(await status(observer), "True", "another writable open downgraded nothing");
      assert.equal(await status(live), "True");
      await live.close();
      assert.equal(await status(observer), "Unknown", "the writer is gone");
      const restarted = await h.openPath(path);
      assert.equal(await status(restarted), "Unknown");
      const heard = nextCommit(observer);
      await make(restarted, Widget, "after-restart");
      await heard;
      assert.equal(await status(observer), "Unknown");
      const confirmed = nextCommit(observer);
      await restarted.conditions.set(w, [{ type: "Connected", status: "True", liveness: true }]);
      await confirmed;
      assert.equal(await status(observer), "True");
    },
  },
];
