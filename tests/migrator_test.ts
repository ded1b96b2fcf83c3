/**
 * Schema-version migration: lazy convert-on-read per column, stamp-on-write
 * per column, never downward, and rows from a newer build quarantined on every
 * read path. Everything runs under fake time over a real SQLite store.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type Migrator, SchemaVersionDowngradeError, settled, StoreError } from "../mod.ts";
import { test } from "./_test.ts";
import { type Harness, Thing, withHarness } from "./_beehive_harness.ts";

/** One converter call. */
type Call = [column: "spec" | "status", from: number, value: unknown];

/**
 * A migrator at spec version 2 and status version 1. Spec v0/v1 was
 * `{ count }`, now `{ n }`; status v0 was `{ ok }`, now `{ ready }`.
 */
function recordingMigrator(calls: Call[]): Migrator {
  return {
    specVersion: 2,
    statusVersion: 1,
    convertSpec(from, value) {
      calls.push(["spec", from, value]);
      return { n: (value as { count: number }).count };
    },
    convertStatus(from, value) {
      calls.push(["status", from, value]);
      return { ready: (value as { ok: boolean }).ok };
    },
  };
}

/** Writes a Thing row straight to the store, at the given versions. */
async function rawRow(
  h: Harness,
  name: string,
  spec: { text: string; version: number },
  status?: { text: string; version: number },
): Promise<number> {
  const raw = await h.store.objects.create(Thing, {
    name,
    spec: spec.text,
    specVersion: spec.version,
  });
  if (status !== undefined) {
    await h.store.objects.updateStatus({ ...Thing, id: raw.id }, {
      status: status.text,
      statusVersion: status.version,
    });
  }
  return raw.id;
}

async function versions(h: Harness, id: number): Promise<[number, number]> {
  const raw = await h.store.objects.getMeta(id);
  return [raw.specVersion, raw.statusVersion];
}

const OLD_SPEC = { text: '{"count":5}', version: 1 };
const OLD_STATUS = { text: '{"ok":true}', version: 0 };

// ---------------------------------------------------------------------------
// Convert on read

test("Migrator converts an older spec and status on read, and rewrites nothing", async () => {
  const calls: Call[] = [];
  await withHarness({ register: { migrator: recordingMigrator(calls) } }, async (h) => {
    const id = await rawRow(h, "old", OLD_SPEC, OLD_STATUS);
    const before = await h.store.objects.getMeta(id);
    const obj = await h.things.get(id);
    assert.deepEqual(obj.spec, { n: 5 });
    assert.deepEqual(obj.status, { ready: true });
    assert.deepEqual(calls, [["spec", 1, { count: 5 }], ["status", 0, { ok: true }]]);
    // Lazy: the row keeps its bytes, versions and resource version.
    const after = await h.store.objects.getMeta(id);
    assert.deepEqual(
      [after.spec, after.status, after.specVersion, after.statusVersion, after.resourceVersion],
      [before.spec, before.status, 1, 0, before.resourceVersion],
    );
    // And converts again on every read.
    assert.deepEqual((await h.things.list()).map((o) => o.spec), [{ n: 5 }]);
    assert.equal(calls.length, 4);
  });
});

test("Migrator converts each column on its own: a column at the current version passes through", async () => {
  const calls: Call[] = [];
  await withHarness({ register: { migrator: recordingMigrator(calls) } }, async (h) => {
    const oldSpec = await rawRow(h, "old-spec", OLD_SPEC, { text: '{"ready":false}', version: 1 });
    const oldStatus = await rawRow(h, "old-status", { text: '{"n":7}', version: 2 }, OLD_STATUS);
    const a = await h.things.get(oldSpec);
    assert.deepEqual([a.spec, a.status], [{ n: 5 }, { ready: false }]);
    assert.deepEqual(calls, [["spec", 1, { count: 5 }]]);
    calls.length = 0;
    const b = await h.things.get(oldStatus);
    assert.deepEqual([b.spec, b.status], [{ n: 7 }, { ready: true }]);
    assert.deepEqual(calls, [["status", 0, { ok: true }]]);
  });
});

test("Migrator a column whose current version is 0 is not versioned: any stored version passes through", async () => {
  const calls: Call[] = [];
  const migrator = { ...recordingMigrator(calls), specVersion: 0 };
  await withHarness({ register: { migrator } }, async (h) => {
    const id = await rawRow(h, "any", { text: '{"count":5}', version: 9 });
    assert.deepEqual((await h.things.get(id)).spec, { count: 5 });
    assert.deepEqual(calls, []);
  });
});

test("Migrator converters are synchronous and receive parsed JSON; the pass gets what they return", async () => {
  const received: unknown[] = [];
  const migrator: Migrator = {
    specVersion: 1,
    statusVersion: 0,
    convertSpec(_from, value) {
      received.push(value);
      return { wrapped: value };
    },
    convertStatus: (_from, value) => value,
  };
  await withHarness({ register: { migrator } }, async (h) => {
    const seen: unknown[] = [];
    h.fallback = (obj) => {
      seen.push(obj.spec);
      return settled();
    };
    await rawRow(h, "a", { text: '{"list":[1,2],"nested":{"x":null}}', version: 0 });
    await h.start();
    assert.deepEqual(received, [{ list: [1, 2], nested: { x: null } }]);
    assert.equal(typeof received[0], "object");
    assert.deepEqual(seen, [{ wrapped: { list: [1, 2], nested: { x: null } } }]);
  });
});

test("Migrator a converter that returns a promise is a decode failure, not a spec", async () => {
  const migrator: Migrator = {
    specVersion: 1,
    statusVersion: 0,
    convertSpec: (_from, value) => Promise.resolve(value),
    convertStatus: (_from, value) => value,
  };
  await withHarness({ register: { migrator } }, async (h) => {
    const id = await rawRow(h, "a", { text: '{"v":1}', version: 0 });
    await assert.rejects(h.things.get(id), (e: unknown) => {
      assert.ok(e instanceof StoreError);
      assert.match(e.message, /synchronous/);
      return true;
    });
    await h.start();
    // The reconcile loop quarantines it rather than handing the controller a promise.
    assert.deepEqual(h.passes, []);
  });
});

// ---------------------------------------------------------------------------
// Stamp on write

test("Migrator a spec write stamps this build's spec version and leaves the status version", async () => {
  const calls: Call[] = [];
  await withHarness({ register: { migrator: recordingMigrator(calls) } }, async (h) => {
    const id = await rawRow(h, "a", OLD_SPEC, OLD_STATUS);
    const updated = await h.things.update(id, { n: 6 });
    assert.deepEqual(updated.spec, { n: 6 });
    assert.deepEqual(await versions(h, id), [2, 0]);
    assert.equal((await h.store.objects.getMeta(id)).spec, '{"n":6}');
    calls.length = 0;
    await h.things.get(id);
    assert.deepEqual(calls, [["status", 0, { ok: true }]], "only the status still converts");
  });
});

test("Migrator a create stamps this build's spec version on the new row", async () => {
  await withHarness({ register: { migrator: recordingMigrator([]) } }, async (h) => {
    const obj = await h.things.create("a", { n: 1 });
    assert.deepEqual(await versions(h, obj.id), [2, 0]);
  });
});

test("Migrator a status write stamps this build's status version and leaves the spec version", async () => {
  const calls: Call[] = [];
  await withHarness({ register: { migrator: recordingMigrator(calls) } }, async (h) => {
    const id = await rawRow(h, "a", OLD_SPEC, OLD_STATUS);
    await h.start();
    await h.pass(id, async (_obj, cc) => {
      await cc.updateStatus({ ready: false });
    });
    assert.deepEqual(await versions(h, id), [1, 1]);
    const raw = await h.store.objects.getMeta(id);
    assert.equal(raw.spec, OLD_SPEC.text, "the spec bytes are untouched");
    assert.equal(raw.status, '{"ready":false}');
  });
});

test("Migrator a status write of the converted value re-stamps the column even when it encodes the same", async () => {
  const migrator: Migrator = {
    specVersion: 0,
    statusVersion: 3,
    convertSpec: (_from, value) => value,
    convertStatus: (_from, value) => value,
  };
  await withHarness({ register: { migrator } }, async (h) => {
    const id = await rawRow(h, "a", { text: "{}", version: 0 }, { text: '{"same":1}', version: 2 });
    await h.start();
    const rv = (await h.store.objects.getMeta(id)).resourceVersion;
    await h.pass(id, async (obj, cc) => {
      await cc.updateStatus(obj.status);
    });
    const raw = await h.store.objects.getMeta(id);
    assert.equal(raw.status, '{"same":1}');
    assert.equal(raw.statusVersion, 3);
    assert.ok(raw.resourceVersion > rv);
  });
});

// ---------------------------------------------------------------------------
// Never downward

test("Migrator never stamps downward: a spec write below the stored version rejects SchemaVersionDowngradeError", async () => {
  await withHarness({ register: { migrator: recordingMigrator([]) } }, async (h) => {
    const id = await rawRow(h, "a", { text: '{"n":1}', version: 2 }, {
      text: '{"ready":true}',
      version: 1,
    });
    const ref = { ...Thing, id };
    const before = await h.store.objects.getMeta(id);
    await assert.rejects(
      h.store.objects.updateSpec(ref, { spec: '{"n":2}', specVersion: 1 }),
      SchemaVersionDowngradeError,
    );
    await assert.rejects(
      h.store.objects.updateSpecByName({ ...Thing, name: "a" }, {
        spec: '{"n":3}',
        specVersion: 1,
      }),
      SchemaVersionDowngradeError,
    );
    const after = await h.store.objects.getMeta(id);
    assert.deepEqual(after, before);
  });
});

test("Migrator never stamps downward: a status write below the stored version rejects SchemaVersionDowngradeError", async () => {
  await withHarness({ register: { migrator: recordingMigrator([]) } }, async (h) => {
    const id = await rawRow(h, "a", { text: '{"n":1}', version: 2 }, {
      text: '{"ready":true}',
      version: 4,
    });
    const before = await h.store.objects.getMeta(id);
    await assert.rejects(
      h.store.objects.updateStatus({ ...Thing, id }, {
        status: '{"ready":false}',
        statusVersion: 1,
      }),
      SchemaVersionDowngradeError,
    );
    assert.deepEqual(await h.store.objects.getMeta(id), before);
  });
});

test("Migrator: Client.update of a row whose stored status does not convert rejects and writes nothing", async () => {
  const migrator: Migrator = {
    ...recordingMigrator([]),
    convertStatus() {
      throw new Error("no way from version 0");
    },
  };
  await withHarness({ register: { migrator } }, async (h) => {
    const id = await rawRow(h, "a", { text: '{"n":1}', version: 2 }, {
      text: '{"ok":true}',
      version: 0,
    });
    const before = await h.store.objects.getMeta(id);
    await assert.rejects(h.things.update(id, { n: 2 }), /status/);
    assert.deepEqual(await h.store.objects.getMeta(id), before, "the spec write rolled back");
  });
});

test("Migrator an older build's spec write to a row from a newer build rejects SchemaVersionDowngradeError", async () => {
  await withHarness({ register: { migrator: recordingMigrator([]) } }, async (h) => {
    const id = await rawRow(h, "future", { text: '{"n":1,"extra":true}', version: 3 });
    const before = await h.store.objects.getMeta(id);
    await assert.rejects(h.things.update(id, { n: 2 }), SchemaVersionDowngradeError);
    await assert.rejects(h.things.updateByName("future", { n: 2 }), SchemaVersionDowngradeError);
    await assert.rejects(
      h.things.createOrUpdate("future", { n: 2 }),
      SchemaVersionDowngradeError,
    );
    assert.deepEqual(await h.store.objects.getMeta(id), before);
  });
});

// ---------------------------------------------------------------------------
// Rows from a newer build: quarantined

test("Migrator a row from a newer build is skipped by list, and logged", async () => {
  await withHarness({ register: { migrator: recordingMigrator([]) } }, async (h) => {
    const good = await h.things.create("good", { n: 1 });
    const future = await rawRow(h, "future", { text: '{"n":1}', version: 3 });
    const futureStatus = await rawRow(h, "future-status", { text: '{"n":1}', version: 2 }, {
      text: '{"ready":true}',
      version: 2,
    });
    assert.deepEqual((await h.things.list()).map((o) => o.id), [good.id]);
    const warned = h.logger.lines.filter((l) => l.level === "warn").map((l) => l.attributes?.id);
    assert.deepEqual(warned, [future, futureStatus]);
  });
});

test("Migrator a row from a newer build is an error from get and getByName", async () => {
  await withHarness({ register: { migrator: recordingMigrator([]) } }, async (h) => {
    const id = await rawRow(h, "future", { text: '{"n":1}', version: 3 });
    const newer = (e: unknown) => {
      assert.ok(e instanceof StoreError);
      assert.match(e.message, /newer/);
      return true;
    };
    await assert.rejects(h.things.get(id), newer);
    await assert.rejects(h.things.getByName("future"), newer);
  });
});

test("Migrator a row from a newer build is a no-op pass: never handed to the controller, never retried under backoff", async () => {
  await withHarness({
    beehive: { owedPassInterval: 5_000 },
    register: { migrator: recordingMigrator([]) },
  }, async (h) => {
    const spec = await rawRow(h, "future-spec", { text: '{"n":1}', version: 3 });
    const status = await rawRow(h, "future-status", { text: '{"n":1}', version: 2 }, {
      text: '{"ready":true}',
      version: 2,
    });
    await h.start();
    const warns = (id: number) =>
      h.logger.lines.filter((l) => l.level === "warn" && l.attributes?.id === id).length;
    assert.equal(warns(spec), 1);
    assert.equal(warns(status), 1);
    assert.deepEqual(h.passes, []);
    for (const id of [spec, status]) {
      assert.deepEqual(await h.things.getSchedule(id), { nextRequeueAt: undefined });
      assert.equal((await h.store.objects.getMeta(id)).observedGeneration, undefined);
    }
    // Still unsettled: each owed pass finds it again and warns again, deliberately.
    await h.tick(4_999);
    assert.equal(warns(spec), 1);
    await h.tick(1);
    assert.equal(warns(spec), 2);
    assert.equal(warns(status), 2);
    assert.deepEqual(h.passes, []);
  });
});

test("Migrator a deletion-pending row from a newer build is still collected", async () => {
  await withHarness({ register: { migrator: recordingMigrator([]) } }, async (h) => {
    const id = await rawRow(h, "future", { text: '{"n":1}', version: 3 });
    await h.start();
    await h.things.delete(id);
    await h.flush();
    assert.deepEqual(h.passes, []);
    await assert.rejects(h.store.objects.getMeta(id), (e: unknown) => {
      assert.equal((e as Error).name, "NotFoundError");
      return true;
    });
  });
});
