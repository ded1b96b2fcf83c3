/**
 * Store contract cases: events.
 *
 * @module
 */
import assert from "node:assert/strict";
import FakeTimers from "@sinonjs/fake-timers";
import type { Clock } from "@sinonjs/fake-timers";
import {
  InvalidEventError,
  InvalidOptionError,
  NotFoundError,
  WrongKindError,
} from "../../src/model/errors.ts";
import type { ObjectRef, RawEvent, Store } from "../../src/store.ts";
import { type ContractCase, Gadget, logCount, make, ref, Widget } from "./harness.ts";

/** A fixed wall-clock instant for the cases that fake `Date`. */
const T0 = Date.UTC(2030, 0, 1);

/** Runs `fn` with only `Date` faked, starting at `now`; the clock is uninstalled however `fn` ends. */
async function withClock(now: number, fn: (clock: Clock) => Promise<void>): Promise<void> {
  const clock = FakeTimers.install({ toFake: ["Date"], now });
  try {
    await fn(clock);
  } finally {
    clock.uninstall();
  }
}

/** Adds a Normal observation with `reason` to `category`. */
function note(s: Store, r: ObjectRef, reason: string, category = ""): Promise<void> {
  return s.events.add(r, { category, type: "Normal", reason });
}

/** The one run in `category` whose reason is `reason`. */
async function run(s: Store, id: number, reason: string, category = ""): Promise<RawEvent> {
  const runs = await s.events.list(id, { category, reason });
  assert.equal(runs.length, 1, `expected one ${JSON.stringify(reason)} run`);
  return runs[0];
}

/** The horizon `listSince` reports for `category` (`undefined` = the max across timelines). */
async function horizon(s: Store, id: number, category?: string): Promise<number> {
  return (await s.events.listSince(id, { after: 0, limit: 0, category })).trimmedThrough;
}

export const eventsCases: ContractCase[] = [
  {
    reopens: true,
    name: "event ids are never reused, even after the newest run is deleted with its object",
    async fn(h) {
      const path = h.tempPath("event-ids.db");
      const first = await h.openPath(path);
      const a = await make(first, Widget, "a");
      const b = await make(first, Widget, "b");
      await note(first, a, "First");
      await note(first, b, "Newest");
      const newest = await run(first, b.id, "Newest");
      await first.objects.delete(b.id);
      await first.close();
      const s = await h.openPath(path);
      await note(s, a, "Later");
      const later = await run(s, a.id, "Later");
      assert.ok(later.id > newest.id, `event id ${later.id} reused at or below ${newest.id}`);
    },
  },
  {
    name: "the first add starts a run: count 1, firstAt equals lastAt, an id and a version",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const created = await s.objects.get(a.id);
      await withClock(T0, async () => {
        await s.events.add(a, { type: "Normal", reason: "Started", message: "hello" });
      });
      const runs = await s.events.list(a.id);
      assert.equal(runs.length, 1);
      const e = runs[0];
      assert.ok(Number.isSafeInteger(e.id) && e.id > 0);
      assert.equal(e.objectId, a.id);
      assert.equal(e.category, "");
      assert.equal(e.type, "Normal");
      assert.equal(e.reason, "Started");
      assert.equal(e.message, "hello");
      assert.equal(e.detail, undefined);
      assert.equal(e.count, 1);
      assert.equal(e.firstAt.getTime(), T0);
      assert.equal(e.lastAt.getTime(), T0);
      assert.ok(e.resourceVersion > created.resourceVersion);
      assert.equal(e.resourceVersion, await s.getLatestResourceVersion());
    },
  },
  {
    name: "the same (category, type, reason) extends the latest run in place and re-samples it",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await withClock(T0, async (clock) => {
        const input = { category: "net", type: "Warning", reason: "Backoff" } as const;
        await s.events.add(a, { ...input, message: "first", detail: '{"n":1}' });
        const first = await s.events.getLatest(a.id, "net");
        clock.tick(1500);
        await s.events.add(a, { ...input, message: "second", detail: '{"n":2}' });
        const second = (await s.events.list(a.id))[0];
        assert.equal((await s.events.list(a.id)).length, 1);
        assert.equal(second.id, first!.id);
        assert.equal(second.count, 2);
        assert.equal(second.firstAt.getTime(), T0);
        assert.equal(second.lastAt.getTime(), T0 + 1500);
        assert.equal(second.message, "second");
        assert.equal(second.detail, '{"n":2}');
        assert.ok(second.resourceVersion > first!.resourceVersion);
        assert.equal(second.resourceVersion, await s.getLatestResourceVersion());
        // Message and detail are the latest observation's, so an omitted one clears them.
        clock.tick(1);
        await s.events.add(a, input);
        const third = (await s.events.list(a.id))[0];
        assert.equal(third.id, first!.id);
        assert.equal(third.count, 3);
        assert.equal(third.message, "");
        assert.equal(third.detail, undefined);
        assert.equal(third.firstAt.getTime(), T0);
        assert.equal(third.lastAt.getTime(), T0 + 1501);
      });
    },
  },
  {
    name: "a reason change or a type change starts a new run; only the latest run extends",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.events.add(a, { type: "Normal", reason: "A" });
      await s.events.add(a, { type: "Normal", reason: "B" });
      await s.events.add(a, { type: "Warning", reason: "B" });
      await s.events.add(a, { type: "Warning", reason: "B" });
      await s.events.add(a, { type: "Normal", reason: "A" });
      const runs = (await s.events.list(a.id)).sort((x, y) => x.id - y.id);
      assert.deepEqual(
        runs.map((e) => [e.type, e.reason, e.count]),
        [["Normal", "A", 1], ["Normal", "B", 1], ["Warning", "B", 2], ["Normal", "A", 1]],
      );
      assert.equal(new Set(runs.map((e) => e.id)).size, 4);
    },
  },
  {
    name: "categories aggregate independently even when interleaved",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await note(s, a, "Flap", "net");
      await note(s, a, "Flap", "disk");
      await note(s, a, "Flap", "net");
      await note(s, a, "Other", "disk");
      await note(s, a, "Flap", "net");
      await note(s, a, "Flap");
      const net = await s.events.list(a.id, { category: "net" });
      assert.deepEqual(net.map((e) => [e.reason, e.count]), [["Flap", 3]]);
      const disk = await s.events.list(a.id, { category: "disk" });
      assert.deepEqual(disk.map((e) => [e.reason, e.count]), [["Other", 1], ["Flap", 1]]);
      const dflt = await s.events.list(a.id, { category: "" });
      assert.deepEqual(dflt.map((e) => [e.reason, e.count]), [["Flap", 1]]);
      assert.equal((await s.events.list(a.id)).length, 4);
    },
  },
  {
    name: "add is kind-scoped: WrongKindError for a foreign kind, NotFoundError for none",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const before = await s.getLatestResourceVersion();
      await assert.rejects(
        s.events.add(ref(Gadget, a.id), { type: "Normal", reason: "R" }),
        WrongKindError,
      );
      await assert.rejects(
        s.events.add(ref(Widget, a.id + 100), { type: "Normal", reason: "R" }),
        NotFoundError,
      );
      assert.deepEqual(await s.events.list(a.id), []);
      assert.deepEqual(await s.events.list(a.id + 100), []);
      assert.equal(await s.events.maxVersion(a.id), 0);
      assert.equal(await s.getLatestResourceVersion(), before);
    },
  },
  {
    name: "add refuses a type other than Normal or Warning with InvalidEventError",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const before = await s.getLatestResourceVersion();
      for (const type of ["Info", "normal", "", undefined]) {
        await assert.rejects(
          s.events.add(a, { type: type as "Normal", reason: "R" }),
          InvalidEventError,
        );
      }
      assert.deepEqual(await s.events.list(a.id), []);
      assert.equal(await s.getLatestResourceVersion(), before);
    },
  },
  {
    name: "add refuses an empty reason with InvalidEventError",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await assert.rejects(s.events.add(a, { type: "Normal", reason: "" }), InvalidEventError);
      await assert.rejects(
        s.events.add(a, { type: "Warning", reason: undefined as unknown as string }),
        InvalidEventError,
      );
      assert.deepEqual(await s.events.list(a.id), []);
    },
  },
  {
    name: "add refuses text that is not well-formed UTF-16 in any field with InvalidEventError",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const before = await s.getLatestResourceVersion();
      const bad = "bad\uD800";
      const inputs = [
        { type: "Normal", reason: bad },
        { type: "Normal", reason: "R", message: bad },
        { type: "Normal", reason: "R", category: bad },
        { type: "Normal", reason: "R", detail: `"${bad}"` },
      ] as const;
      for (const input of inputs) {
        await assert.rejects(s.events.add(a, input), InvalidEventError);
      }
      assert.deepEqual(await s.events.list(a.id), []);
      assert.equal(await s.getLatestResourceVersion(), before);
    },
  },
  {
    name: "events bump no object version and log no object write, but move the latest version",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const before = await s.objects.get(a.id);
      const entries = await logCount(s, Widget);
      const kindPos = await s.objectWrites.maxVersion(Widget);
      const latest = await s.getLatestResourceVersion();
      await note(s, a, "R");
      const added = await run(s, a.id, "R");
      assert.ok(added.resourceVersion > latest);
      assert.equal(await s.getLatestResourceVersion(), added.resourceVersion);
      await note(s, a, "R");
      const extended = await run(s, a.id, "R");
      assert.ok(extended.resourceVersion > added.resourceVersion);
      assert.equal(await s.getLatestResourceVersion(), extended.resourceVersion);
      assert.deepEqual(await s.objects.get(a.id), before);
      assert.equal(await logCount(s, Widget), entries);
      assert.equal(await s.objectWrites.maxVersion(Widget), kindPos);
    },
  },
  {
    name: "list reads newest first by lastAt, ties broken by id",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await withClock(T0, async (clock) => {
        await note(s, a, "R", "x");
        await note(s, a, "R", "y");
        await note(s, a, "R", "z");
        const tied = await s.events.list(a.id);
        assert.deepEqual(tied.map((e) => e.category), ["z", "y", "x"]);
        assert.ok(tied[0].id > tied[1].id && tied[1].id > tied[2].id);
        clock.tick(10);
        await note(s, a, "R", "x");
        const moved = await s.events.list(a.id);
        assert.deepEqual(moved.map((e) => e.category), ["x", "z", "y"]);
      });
    },
  },
  {
    name: 'list filters by category: undefined reads every timeline, "" the default one',
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await note(s, a, "D");
      await note(s, a, "N", "net");
      await note(s, a, "K", "disk");
      assert.deepEqual((await s.events.list(a.id)).map((e) => e.reason), ["K", "N", "D"]);
      assert.deepEqual((await s.events.list(a.id, {})).map((e) => e.reason), ["K", "N", "D"]);
      assert.deepEqual(
        (await s.events.list(a.id, { category: undefined })).map((e) => e.reason),
        ["K", "N", "D"],
      );
      assert.deepEqual((await s.events.list(a.id, { category: "" })).map((e) => e.reason), ["D"]);
      assert.deepEqual(
        (await s.events.list(a.id, { category: "net" })).map((e) => e.reason),
        ["N"],
      );
      assert.deepEqual(await s.events.list(a.id, { category: "none" }), []);
    },
  },
  {
    name: "list filters by type and by reason, alone and together",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await s.events.add(a, { type: "Normal", reason: "Up" });
      await s.events.add(a, { type: "Warning", reason: "Down" });
      await s.events.add(a, { type: "Warning", reason: "Up" });
      await s.events.add(a, { type: "Normal", reason: "Down" });
      const pairs = (runs: RawEvent[]) => runs.map((e) => `${e.type}/${e.reason}`);
      assert.deepEqual(pairs(await s.events.list(a.id, { type: "Warning" })), [
        "Warning/Up",
        "Warning/Down",
      ]);
      assert.deepEqual(pairs(await s.events.list(a.id, { reason: "Up" })), [
        "Warning/Up",
        "Normal/Up",
      ]);
      assert.deepEqual(pairs(await s.events.list(a.id, { type: "Normal", reason: "Down" })), [
        "Normal/Down",
      ]);
      assert.deepEqual(await s.events.list(a.id, { reason: "Sideways" }), []);
    },
  },
  {
    name: "list limit keeps the newest N runs; 0 means no limit",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      for (const reason of ["R1", "R2", "R3", "R4"]) await note(s, a, reason);
      await note(s, a, "X", "other");
      assert.deepEqual(
        (await s.events.list(a.id, { limit: 2 })).map((e) => e.reason),
        ["X", "R4"],
      );
      assert.deepEqual(
        (await s.events.list(a.id, { category: "", limit: 3 })).map((e) => e.reason),
        ["R4", "R3", "R2"],
      );
      assert.equal((await s.events.list(a.id, { limit: 0 })).length, 5);
      assert.equal((await s.events.list(a.id, { limit: 50 })).length, 5);
    },
  },
  {
    name: "list since is inclusive on lastAt, and a future bound excludes everything",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await withClock(T0, async (clock) => {
        await note(s, a, "R1");
        clock.tick(1000);
        await note(s, a, "R2");
        clock.tick(1000);
        await note(s, a, "R3");
        const since = async (ms: number) =>
          (await s.events.list(a.id, { since: new Date(ms) })).map((e) => e.reason);
        assert.deepEqual(await since(T0), ["R3", "R2", "R1"]);
        assert.deepEqual(await since(T0 + 1000), ["R3", "R2"]);
        assert.deepEqual(await since(T0 + 1001), ["R3"]);
        assert.deepEqual(await since(T0 + 2000), ["R3"]);
        assert.deepEqual(await since(T0 + 2001), []);
        assert.deepEqual(await since(T0 + 86_400_000), []);
        // since bounds lastAt, not firstAt: an extended run matches by its latest observation.
        clock.tick(5000);
        await note(s, a, "R3");
        assert.deepEqual(await since(T0 + 7000), ["R3"]);
      });
    },
  },
  {
    name: "getLatest reads the newest run of a category, or undefined for none",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      assert.equal(await s.events.getLatest(a.id, ""), undefined);
      await note(s, a, "R1", "net");
      await note(s, a, "R2", "net");
      await note(s, a, "D");
      const latest = await s.events.getLatest(a.id, "net");
      assert.equal(latest?.reason, "R2");
      assert.deepEqual(latest, await run(s, a.id, "R2", "net"));
      await note(s, a, "R2", "net");
      assert.equal((await s.events.getLatest(a.id, "net"))?.count, 2);
      assert.equal((await s.events.getLatest(a.id, ""))?.reason, "D");
      assert.equal(await s.events.getLatest(a.id, "disk"), undefined);
      assert.equal(await s.events.getLatest(a.id + 100, "net"), undefined);
    },
  },
  {
    name: "listSince reads runs above the position across timelines, oldest first, within limit",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Widget, "b");
      await note(s, a, "R1");
      await note(s, a, "R2", "net");
      await note(s, b, "B1");
      await note(s, a, "R3");
      await note(s, a, "R4", "net");
      await note(s, a, "R5");
      const all = await s.events.listSince(a.id, { after: 0, limit: 100 });
      assert.deepEqual(all.events.map((e) => e.reason), ["R1", "R2", "R3", "R4", "R5"]);
      assert.equal(all.trimmedThrough, 0);
      const versions = all.events.map((e) => e.resourceVersion);
      assert.deepEqual(versions, [...versions].sort((x, y) => x - y));
      const tail = await s.events.listSince(a.id, { after: versions[1], limit: 100 });
      assert.deepEqual(tail.events.map((e) => e.reason), ["R3", "R4", "R5"]);
      const head = await s.events.listSince(a.id, { after: 0, limit: 2 });
      assert.deepEqual(head.events.map((e) => e.reason), ["R1", "R2"]);
      // Paging by the last version read walks the whole log once.
      const paged: string[] = [];
      let after = 0;
      for (;;) {
        const page = await s.events.listSince(a.id, { after, limit: 2 });
        if (page.events.length === 0) break;
        paged.push(...page.events.map((e) => e.reason));
        after = page.events.at(-1)!.resourceVersion;
      }
      assert.deepEqual(paged, ["R1", "R2", "R3", "R4", "R5"]);
    },
  },
  {
    name: "listSince returns an extended run once, at its new version",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await note(s, a, "X", "x");
      await note(s, a, "Y", "y");
      const pos = await s.events.maxVersion(a.id);
      await note(s, a, "X", "x");
      await note(s, a, "X", "x");
      const x = await run(s, a.id, "X", "x");
      const page = await s.events.listSince(a.id, { after: pos, limit: 100 });
      assert.deepEqual(page.events, [x]);
      assert.equal(page.events[0].count, 3);
      assert.ok(page.events[0].resourceVersion > pos);
      const all = await s.events.listSince(a.id, { after: 0, limit: 100 });
      assert.deepEqual(all.events.map((e) => e.reason), ["Y", "X"]);
    },
  },
  {
    name: "listSince with a non-positive limit reads nothing but still reports the horizon",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      for (const reason of ["R1", "R2", "R3"]) await note(s, a, reason);
      assert.equal(await s.events.sweep({ perTimeline: 1, maxAge: 0 }), 2);
      const kept = await run(s, a.id, "R3");
      for (const limit of [0, -1, Number.MIN_SAFE_INTEGER]) {
        const page = await s.events.listSince(a.id, { after: 0, limit });
        assert.deepEqual(page.events, []);
        assert.ok(page.trimmedThrough > 0);
        assert.ok(page.trimmedThrough < kept.resourceVersion);
      }
    },
  },
  {
    name: "listSince reports the selected category's horizon, or the max across timelines",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      for (const reason of ["A1", "A2", "A3"]) await note(s, a, reason, "a");
      for (const reason of ["B1", "B2"]) await note(s, a, reason, "b");
      await note(s, a, "C1", "c");
      const a2 = await run(s, a.id, "A2", "a");
      const b1 = await run(s, a.id, "B1", "b");
      assert.equal(await s.events.sweep({ perTimeline: 1, maxAge: 0 }), 3);
      assert.equal(await horizon(s, a.id, "a"), a2.resourceVersion);
      assert.equal(await horizon(s, a.id, "b"), b1.resourceVersion);
      assert.equal(await horizon(s, a.id, "c"), 0);
      assert.equal(await horizon(s, a.id, ""), 0);
      assert.equal(await horizon(s, a.id), Math.max(a2.resourceVersion, b1.resourceVersion));
      // The page itself is never filtered by the category.
      const page = await s.events.listSince(a.id, { after: 0, limit: 100, category: "c" });
      assert.deepEqual(page.events.map((e) => e.reason).sort(), ["A3", "B2", "C1"]);
    },
  },
  {
    name: "listSince above the head answers quietly with an empty page",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const quiet = await s.events.listSince(a.id, { after: 0, limit: 10 });
      assert.deepEqual(quiet, { events: [], trimmedThrough: 0 });
      await note(s, a, "R");
      const head = await s.events.maxVersion(a.id);
      assert.deepEqual(await s.events.listSince(a.id, { after: head, limit: 10 }), {
        events: [],
        trimmedThrough: 0,
      });
      assert.deepEqual(await s.events.listSince(a.id, { after: head + 1_000_000, limit: 10 }), {
        events: [],
        trimmedThrough: 0,
      });
    },
  },
  {
    name: "listSince for a collected object rejects NotFoundError rather than reading empty",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await note(s, a, "R");
      await s.objects.delete(a.id);
      await assert.rejects(s.events.listSince(a.id, { after: 0, limit: 10 }), NotFoundError);
      await assert.rejects(s.events.listSince(a.id, { after: 0, limit: 0 }), NotFoundError);
      await assert.rejects(
        s.events.listSince(a.id, { after: 0, limit: 10, category: "" }),
        NotFoundError,
      );
      await assert.rejects(s.events.listSince(a.id + 100, { after: 0, limit: 10 }), NotFoundError);
    },
  },
  {
    name: "snapshot is list plus the log position, and the tail above it holds nothing it did",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await note(s, a, "A1", "a");
      await note(s, a, "B1", "b");
      await note(s, a, "A2", "a");
      await note(s, a, "B2", "b");
      const snap = await s.events.snapshot(a.id, { category: "a" });
      assert.deepEqual(snap.items, await s.events.list(a.id, { category: "a" }));
      assert.deepEqual(snap.items.map((e) => e.reason), ["A2", "A1"]);
      // The position is the whole log's, not the query's.
      assert.equal(snap.resourceVersion, await s.events.maxVersion(a.id));
      assert.equal(snap.resourceVersion, (await run(s, a.id, "B2", "b")).resourceVersion);
      assert.deepEqual(
        (await s.events.listSince(a.id, { after: snap.resourceVersion, limit: 100 }))
          .events,
        [],
      );
      await note(s, a, "A2", "a");
      await note(s, a, "A3", "a");
      const tail = (await s.events.listSince(a.id, { after: snap.resourceVersion, limit: 100 }))
        .events;
      assert.deepEqual(tail.map((e) => e.reason), ["A2", "A3"]);
      const seen = new Set(snap.items.map((e) => `${e.id}@${e.resourceVersion}`));
      for (const e of tail) {
        assert.ok(e.resourceVersion > snap.resourceVersion);
        assert.equal(seen.has(`${e.id}@${e.resourceVersion}`), false);
      }
      assert.deepEqual(await s.events.snapshot(a.id, { category: "none" }), {
        items: [],
        resourceVersion: await s.events.maxVersion(a.id),
      });
      assert.deepEqual(await s.events.snapshot(a.id + 100), { items: [], resourceVersion: 0 });
    },
  },
  {
    name: "maxVersion spans categories, is scoped to the object, 0 for none, and moves on extend",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Widget, "b");
      assert.equal(await s.events.maxVersion(a.id), 0);
      assert.equal(await s.events.maxVersion(a.id + 100), 0);
      await note(s, a, "X", "x");
      await note(s, a, "Y", "y");
      const y = await run(s, a.id, "Y", "y");
      assert.equal(await s.events.maxVersion(a.id), y.resourceVersion);
      await note(s, b, "B");
      assert.equal(await s.events.maxVersion(a.id), y.resourceVersion);
      assert.equal(await s.events.maxVersion(b.id), (await run(s, b.id, "B")).resourceVersion);
      await note(s, a, "X", "x");
      const x = await run(s, a.id, "X", "x");
      assert.ok(x.resourceVersion > y.resourceVersion);
      assert.equal(await s.events.maxVersion(a.id), x.resourceVersion);
    },
  },
  {
    name: "maxVersion falls when retention removes the newest run",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await withClock(T0, async (clock) => {
        await note(s, a, "Fresh", "fresh");
        const fresh = await run(s, a.id, "Fresh", "fresh");
        // A later write stamped with an earlier clock: the newest version, the oldest lastAt.
        clock.setSystemTime(T0 - 60_000);
        await note(s, a, "Stale", "stale");
        const stale = await run(s, a.id, "Stale", "stale");
        assert.ok(stale.resourceVersion > fresh.resourceVersion);
        assert.equal(await s.events.maxVersion(a.id), stale.resourceVersion);
        clock.setSystemTime(T0);
        assert.equal(await s.events.sweep({ perTimeline: 0, maxAge: 30_000 }), 1);
        assert.equal(await s.events.maxVersion(a.id), fresh.resourceVersion);
        clock.tick(60_000);
        assert.equal(await s.events.sweep({ perTimeline: 0, maxAge: 30_000 }), 1);
        assert.equal(await s.events.maxVersion(a.id), 0);
      });
      assert.ok((await s.getLatestResourceVersion()) > 0);
    },
  },
  {
    name: "sweep caps each (object, category) timeline to its newest N runs, not observations",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Gadget, "b");
      for (const reason of ["R1", "R2", "R3", "R4"]) await note(s, a, reason, "x");
      for (let i = 0; i < 5; i++) await note(s, a, "R4", "x");
      for (const reason of ["Y1", "Y2"]) await note(s, a, reason, "y");
      for (const reason of ["B1", "B2", "B3", "B4"]) await note(s, b, reason, "x");
      assert.equal(await s.events.sweep({ perTimeline: 2, maxAge: 0 }), 4);
      const reasons = async (id: number, category: string) =>
        (await s.events.list(id, { category })).map((e) => `${e.reason}x${e.count}`);
      assert.deepEqual(await reasons(a.id, "x"), ["R4x6", "R3x1"]);
      assert.deepEqual(await reasons(a.id, "y"), ["Y2x1", "Y1x1"]);
      assert.deepEqual(await reasons(b.id, "x"), ["B4x1", "B3x1"]);
      // A converged log trims nothing.
      assert.equal(await s.events.sweep({ perTimeline: 2, maxAge: 0 }), 0);
    },
  },
  {
    name: "a flapping timeline cannot evict a quiet one, on the same object or another",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Widget, "b");
      await note(s, a, "Q1", "quiet");
      await note(s, a, "Q2", "quiet");
      await note(s, b, "Calm");
      for (let i = 0; i < 20; i++) await note(s, a, i % 2 === 0 ? "Up" : "Down", "flap");
      assert.equal((await s.events.list(a.id, { category: "flap" })).length, 20);
      assert.equal(await s.events.sweep({ perTimeline: 3, maxAge: 0 }), 17);
      const flap = await s.events.list(a.id, { category: "flap" });
      assert.deepEqual(flap.map((e) => e.reason), ["Down", "Up", "Down"]);
      assert.deepEqual(
        (await s.events.list(a.id, { category: "quiet" })).map((e) => e.reason),
        ["Q2", "Q1"],
      );
      assert.deepEqual((await s.events.list(b.id)).map((e) => e.reason), ["Calm"]);
      assert.equal(await horizon(s, a.id, "quiet"), 0);
      assert.equal(await horizon(s, b.id), 0);
    },
  },
  {
    name: "sweep maxAge drops runs whose lastAt is older than the bound, across every timeline",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Gadget, "b");
      await withClock(T0, async (clock) => {
        await note(s, a, "Kept", "k");
        await note(s, a, "Old", "o");
        await note(s, b, "Old");
        const old = await run(s, a.id, "Old", "o");
        const oldB = await run(s, b.id, "Old");
        clock.tick(10_000);
        // Extending moves lastAt: a run started long ago but seen recently stays.
        await note(s, a, "Kept", "k");
        await note(s, b, "New");
        assert.equal(await s.events.sweep({ perTimeline: 0, maxAge: 5_000 }), 2);
        const kept = await s.events.list(a.id);
        assert.deepEqual(kept.map((e) => [e.reason, e.count]), [["Kept", 2]]);
        assert.equal(kept[0].firstAt.getTime(), T0);
        assert.deepEqual((await s.events.list(b.id)).map((e) => e.reason), ["New"]);
        assert.equal(await horizon(s, a.id, "o"), old.resourceVersion);
        assert.equal(await horizon(s, a.id, "k"), 0);
        assert.equal(await horizon(s, b.id, ""), oldB.resourceVersion);
        // The bound is strict: a run exactly maxAge old stays.
        clock.tick(5_000);
        assert.equal(await s.events.sweep({ perTimeline: 0, maxAge: 5_000 }), 0);
        clock.tick(1);
        assert.equal(await s.events.sweep({ perTimeline: 0, maxAge: 5_000 }), 2);
        assert.deepEqual(await s.events.list(a.id), []);
      });
    },
  },
  {
    name: "sweep with both bounds zero trims nothing",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      for (const reason of ["R1", "R2", "R3"]) await note(s, a, reason);
      assert.equal(await s.events.sweep({ perTimeline: 0, maxAge: 0 }), 0);
      assert.equal((await s.events.list(a.id)).length, 3);
      assert.equal(await horizon(s, a.id), 0);
    },
  },
  {
    name: "sweep refuses a negative or fractional bound with InvalidOptionError, trimming nothing",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      for (const reason of ["R1", "R2", "R3"]) await note(s, a, reason);
      for (
        const bounds of [
          { perTimeline: 1.5, maxAge: 0 },
          { perTimeline: -1, maxAge: 0 },
          { perTimeline: 1, maxAge: -1 },
          { perTimeline: Number.NaN, maxAge: 0 },
        ]
      ) {
        await assert.rejects(s.events.sweep(bounds), InvalidOptionError);
      }
      assert.equal((await s.events.list(a.id)).length, 3);
      assert.equal(await horizon(s, a.id), 0);
    },
  },
  {
    name: "capBudget bounds the timelines trimmed per call, so repeated sweeps converge",
    async fn(h) {
      const s = await h.open();
      const ids: number[] = [];
      for (const name of ["a", "b", "c", "d", "e"]) {
        const r = await make(s, Widget, name);
        ids.push(r.id);
        for (const reason of ["R1", "R2", "R3"]) await note(s, r, reason);
      }
      const sweep = () => s.events.sweep({ perTimeline: 1, maxAge: 0, capBudget: 2 });
      assert.equal(await sweep(), 4);
      assert.equal(await sweep(), 4);
      assert.equal(await sweep(), 2);
      assert.equal(await sweep(), 0);
      for (const id of ids) {
        assert.deepEqual((await s.events.list(id)).map((e) => e.reason), ["R3"]);
        assert.ok((await horizon(s, id)) > 0);
      }
      // Left to the store (capBudget unset or <= 0), a small backlog goes in one call.
      for (const id of ids) await note(s, ref(Widget, id), "R4");
      assert.equal(await s.events.sweep({ perTimeline: 1, maxAge: 0 }), 5);
      for (const id of ids) await note(s, ref(Widget, id), "R5");
      assert.equal(await s.events.sweep({ perTimeline: 1, maxAge: 0, capBudget: -1 }), 5);
    },
  },
  {
    name: "the horizon covers every trimmed run, and resuming exactly on it loses nothing",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      for (const reason of ["R1", "R2", "R3", "R4", "R5"]) await note(s, a, reason);
      await note(s, a, "R2", "other");
      const before = await s.events.list(a.id, { category: "" });
      assert.equal(await s.events.sweep({ perTimeline: 2, maxAge: 0 }), 3);
      const kept = await s.events.list(a.id, { category: "" });
      const keptIds = new Set(kept.map((e) => e.id));
      const trimmed = before.filter((e) => !keptIds.has(e.id));
      assert.deepEqual(trimmed.map((e) => e.reason), ["R3", "R2", "R1"]);
      const h0 = await horizon(s, a.id, "");
      assert.equal(h0, Math.max(...trimmed.map((e) => e.resourceVersion)));
      for (const e of trimmed) assert.ok(e.resourceVersion <= h0);
      // A resume below the horizon can tell it lost runs; one sitting on it lost none.
      const page = await s.events.listSince(a.id, { after: h0, limit: 100, category: "" });
      assert.equal(page.trimmedThrough, h0);
      assert.deepEqual(
        page.events.filter((e) => e.category === "").map((e) => e.reason),
        ["R4", "R5"],
      );
    },
  },
  {
    name: "the horizon only rises, even when a later trim removes runs below it",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      await withClock(T0, async (clock) => {
        await note(s, a, "Early");
        // The clock stepped back: the next run has the newer version but the older lastAt.
        clock.setSystemTime(T0 - 10_000);
        await note(s, a, "Late");
        const early = await run(s, a.id, "Early");
        const late = await run(s, a.id, "Late");
        assert.ok(late.resourceVersion > early.resourceVersion);
        assert.equal(await s.events.sweep({ perTimeline: 1, maxAge: 0 }), 1);
        assert.deepEqual((await s.events.list(a.id)).map((e) => e.reason), ["Early"]);
        assert.equal(await horizon(s, a.id, ""), late.resourceVersion);
        clock.setSystemTime(T0 + 100_000);
        assert.equal(await s.events.sweep({ perTimeline: 0, maxAge: 50_000 }), 1);
        assert.deepEqual(await s.events.list(a.id), []);
        assert.equal(await horizon(s, a.id, ""), late.resourceVersion);
        assert.equal(await horizon(s, a.id), late.resourceVersion);
      });
    },
  },
  {
    name: "the horizon cascades away with its object",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      for (const reason of ["R1", "R2", "R3"]) await note(s, a, reason, "net");
      assert.equal(await s.events.sweep({ perTimeline: 1, maxAge: 0 }), 2);
      assert.ok((await horizon(s, a.id, "net")) > 0);
      await s.objects.delete(a.id);
      // A horizon left behind would answer with a page; a collected object's log is gone.
      await assert.rejects(
        s.events.listSince(a.id, { after: 0, limit: 10, category: "net" }),
        NotFoundError,
      );
      await assert.rejects(s.events.listSince(a.id, { after: 0, limit: 10 }), NotFoundError);
    },
  },
  {
    name: "events cascade-delete with their object, leaving other objects' logs alone",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const b = await make(s, Widget, "b");
      for (const reason of ["A1", "A2", "A3"]) await note(s, a, reason);
      await note(s, a, "N1", "net");
      await note(s, b, "B1");
      await s.objects.delete(a.id);
      assert.deepEqual(await s.events.list(a.id), []);
      assert.equal(await s.events.getLatest(a.id, "net"), undefined);
      assert.equal(await s.events.maxVersion(a.id), 0);
      assert.deepEqual(await s.events.snapshot(a.id), { items: [], resourceVersion: 0 });
      assert.deepEqual((await s.events.list(b.id)).map((e) => e.reason), ["B1"]);
      // The cascade left nothing over the cap for the sweep to find.
      assert.equal(await s.events.sweep({ perTimeline: 1, maxAge: 0 }), 0);
    },
  },
  {
    name: "detail round-trips as JSON text, byte for byte; none reads as undefined",
    async fn(h) {
      const s = await h.open();
      const a = await make(s, Widget, "a");
      const texts = ['{ "b" : [1, 2.50, "\u00e9\u{1F41D}"],\n "a": null }', "null", '"x"', "[]"];
      for (const [i, detail] of texts.entries()) {
        await s.events.add(a, { type: "Normal", reason: `R${i}`, detail });
      }
      await note(s, a, "None");
      for (const [i, detail] of texts.entries()) {
        assert.equal((await run(s, a.id, `R${i}`)).detail, detail);
      }
      assert.equal((await run(s, a.id, "None")).detail, undefined);
      const page = await s.events.listSince(a.id, { after: 0, limit: 10 });
      assert.deepEqual(page.events.map((e) => e.detail), [...texts, undefined]);
    },
  },
];
