/**
 * Logs and error messages a person can act on: a healthy, idle Beehive logs
 * nothing at warn or above; passes log structured attributes; errors name the
 * kind, id or name and the value at fault.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  Beehive,
  InvalidNameError,
  InvalidOptionError,
  NameTakenError,
  NotFoundError,
  settled,
} from "../mod.ts";
import { openTestStore } from "./_sqlite_driver.ts";
import { installFakeTime } from "./_fake_time.ts";
import { recordingLogger } from "./_beehive_harness.ts";
import { test } from "./_test.ts";

const App = { group: "logs.beehive.dev", kind: "App" };
const Config = { group: "logs.beehive.dev", kind: "Config" };

test("Beehive logs nothing at warn or above on a healthy, idle system", async () => {
  const clock = installFakeTime();
  const store = await openTestStore(":memory:");
  const logger = recordingLogger();
  try {
    const bh = new Beehive(store, { logger, logLevel: "debug" });
    const configs = bh.client<{ v: number }>(Config);
    bh.register<{ config: string }>(App, async (obj, cc) => {
      const c = await configs.getByName(obj.spec.config);
      await cc.addDependency(c.id);
      await cc.updateStatus({ v: c.spec.v });
      await cc.setCondition({ type: "Ready", status: "True", liveness: true });
      await cc.addEvent({ type: "Normal", reason: "Synced" });
      return settled();
    });
    const stop = await bh.start();
    const apps = bh.client(App);
    const c = await configs.create("c", { v: 1 });
    for (let i = 0; i < 5; i++) await apps.create(`app-${i}`, { config: "c" });
    const watch = await apps.watchList();
    await clock.tickAsync(2_000);
    await configs.update(c.id, { v: 2 });
    await clock.tickAsync(5 * 60_000); // five idle minutes: owed, GC and stale passes all run
    watch.close();
    await stop();
    const loud = logger.lines.filter((l) => l.level === "warn" || l.level === "error");
    assert.deepEqual(loud, []);
    assert.ok(logger.lines.some((l) => l.message === "beehive: pass finished"));
  } finally {
    await store.close();
    clock.uninstall();
  }
});

test("Beehive logs each pass at debug with kind, id, outcome and duration", async () => {
  const clock = installFakeTime();
  const store = await openTestStore(":memory:");
  const logger = recordingLogger();
  try {
    const bh = new Beehive(store, { logger, logLevel: "debug" });
    bh.register(App, () => settled());
    const stop = await bh.start();
    const a = await bh.client(App).create("a", {});
    await clock.tickAsync(100);
    await stop();
    const line = logger.lines.find((l) => l.message === "beehive: pass finished");
    assert.ok(line !== undefined);
    assert.equal(line.level, "debug");
    assert.deepEqual(
      { ...line.attributes, duration: typeof line.attributes?.duration },
      {
        driver: "reconcile",
        kind: "App.logs.beehive.dev",
        id: a.id,
        outcome: "settled",
        duration: "number",
      },
    );
  } finally {
    await store.close();
    clock.uninstall();
  }
});

test("error messages name the kind, id or name and the value at fault", async () => {
  const store = await openTestStore(":memory:");
  try {
    const bh = new Beehive(store);
    const apps = bh.client(App);
    await apps.create("web", {});
    await assert.rejects(apps.create("web", {}), (e: Error) => {
      assert.ok(e instanceof NameTakenError);
      assert.match(e.message, /App\.logs\.beehive\.dev/);
      assert.match(e.message, /"web"/);
      return true;
    });
    await assert.rejects(apps.get(4242), (e: Error) => {
      assert.ok(e instanceof NotFoundError);
      assert.match(e.message, /4242/);
      return true;
    });
    await assert.rejects(apps.getByName("nope"), (e: Error) => {
      assert.ok(e instanceof NotFoundError);
      assert.match(e.message, /App\.logs\.beehive\.dev "nope"/);
      return true;
    });
    await assert.rejects(apps.create("", {}), InvalidNameError);
    assert.throws(() => new Beehive(store, { gcInterval: 0 }), (e: Error) => {
      assert.ok(e instanceof InvalidOptionError);
      assert.match(e.message, /gcInterval/);
      assert.match(e.message, /current value is 0/);
      return true;
    });
    await assert.rejects(apps.create("x", {}, { finalizers: ["f"] }), (e: Error) => {
      assert.ok(e instanceof InvalidOptionError);
      assert.match(e.message, /finalizers/);
      assert.match(e.message, /App\.logs\.beehive\.dev/);
      return true;
    });
  } finally {
    await store.close();
  }
});
