/**
 * What the events watches make the server do: watches of one scope (the same
 * namespace and field selector) share one reader that reads the events once
 * per poll for all of them, and a watcher whose client does not read is
 * ended once its backlog passes `WATCH_BACKLOG` while the others keep
 * receiving.
 *
 * @module
 */
import assert from "node:assert/strict";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import { WATCH_BACKLOG } from "../../kubeapi/_watch_backlog.ts";
import { test } from "../_test.ts";
import { Cluster, eventsOf, intercept, withStore } from "./_kubeapi_harness.ts";

const EVENTS = "http://localhost/api/v1/namespaces/default/events?watch=true";

test("kubeApiHandler events watches of one scope share one reader: twenty watches read each object's events once", async () => {
  await withStore(async (store, bh) => {
    const admin = bh.adminClient(Cluster);
    for (const name of ["a", "b", "c"]) {
      const obj = await bh.client(Cluster).create(name, {});
      await admin.addEvent(obj.id, { type: "Normal", reason: "Made", message: name });
    }
    let reads = 0;
    const counted = intercept(store, { family: "events", method: "list" }, (list, ...args) => {
      reads++;
      return list(...args);
    });
    // No poll falls due during the test: only the reads the watches start take place.
    const handle = kubeApiHandler({ store: counted, pollInterval: 3_600_000 });
    const abort = new AbortController();
    const watches = await Promise.all(
      Array.from({ length: 20 }, () => handle(new Request(EVENTS, { signal: abort.signal }))),
    );
    const streams = watches.map(eventsOf);
    try {
      for (const events of streams) {
        const messages: string[] = [];
        for (let i = 0; i < 3; i++) {
          const e = await events.next();
          assert.equal(e?.type, "ADDED");
          messages.push((e!.object as { message: string }).message);
        }
        assert.deepEqual(messages.sort(), ["a", "b", "c"]);
      }
      assert.equal(reads, 3, "one read of each object's events for the twenty watches");
    } finally {
      abort.abort();
      await Promise.all(streams.map((s) => s.cancel()));
    }
  });
});

test("kubeApiHandler ends an events watch whose client stops reading once its backlog is full, while another keeps receiving every event", async () => {
  await withStore(async (store, bh) => {
    const admin = bh.adminClient(Cluster);
    const objects = [];
    for (let i = 0; i < 10; i++) objects.push(await bh.client(Cluster).create(`o${i}`, {}));
    for (const obj of objects) await admin.addEvent(obj.id, { type: "Normal", reason: "Seen" });
    const handle = kubeApiHandler({ store, pollInterval: 5 });
    const abort = new AbortController();
    const reading = eventsOf(await handle(new Request(EVENTS, { signal: abort.signal })));
    for (let i = 0; i < 10; i++) assert.equal((await reading.next())?.type, "ADDED");
    const stalled = (await handle(new Request(EVENTS, { signal: abort.signal }))).body!
      .pipeThrough(new TextDecoderStream()).getReader();
    try {
      // Each round observes every run again; the reading watcher takes the ten before the next.
      const rounds = Math.ceil(WATCH_BACKLOG / 10) + 20;
      for (let round = 0; round < rounds; round++) {
        for (const obj of objects) {
          await admin.addEvent(obj.id, { type: "Normal", reason: "Seen", message: `${round}` });
        }
        for (let i = 0; i < 10; i++) {
          const e = await reading.next();
          assert.equal(e?.type, "MODIFIED");
          assert.equal((e!.object as { message: string }).message, `${round}`);
        }
      }
      // The stalled watcher holds what the response had buffered before it stopped reading, then
      // ends: the rest of its backlog was dropped with it.
      let text = "";
      for (;;) {
        const { done, value } = await stalled.read();
        if (done) break;
        text += value;
      }
      const types = text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l).type);
      assert.deepEqual(types.slice(0, 10), Array(10).fill("ADDED"));
      assert.ok(types.length <= 10 + 10 * 2, `the stalled watcher got ${types.length} lines`);
      await admin.addEvent(objects[0].id, { type: "Warning", reason: "After" });
      const after = await reading.next();
      assert.equal((after!.object as { reason: string }).reason, "After");
    } finally {
      abort.abort();
      await reading.cancel();
      await stalled.cancel();
    }
  });
});
