/**
 * The user-facing Client: creates and the name-keyed table, updates, reads and
 * relation loads, deletes, lazy lookups, event reads, requeue and schedule,
 * lifecycle and argument checking. (Watches are covered elsewhere.)
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  Beehive,
  DeletionPendingError,
  eventDetail,
  fail,
  InvalidNameError,
  InvalidOptionError,
  NameTakenError,
  NoControllerError,
  NotFoundError,
  NotLoadedError,
  settled,
  StoreClosedError,
  StoreError,
} from "../mod.ts";
import type {
  BeehiveOptions,
  Client,
  Controller,
  GroupKind,
  Logger,
  Migrator,
  ObjectRef,
} from "../mod.ts";
import { openTestStore } from "./_sqlite_driver.ts";
import type { TestStore } from "./_sqlite_driver.ts";
import { installFakeTime } from "./_fake_time.ts";
import type { FakeClock } from "./_fake_time.ts";
import { test } from "./_test.ts";
import { countingObjectCalls, withHarness } from "./_beehive_harness.ts";

interface Spec {
  n: number;
  tag?: string;
}
interface Status {
  ready: boolean;
}

const Thing: GroupKind = { group: "test.beehive.dev", kind: "Thing" };
const Other: GroupKind = { group: "test.beehive.dev", kind: "Other" };

interface LogEntry {
  level: string;
  message: string;
  attributes: Record<string, unknown> | undefined;
}

function captureLogger(): { logger: Logger; logs: LogEntry[] } {
  const logs: LogEntry[] = [];
  const at = (level: string) => (message: string, attributes?: Record<string, unknown>) => {
    logs.push({ level, message, attributes });
  };
  return {
    logs,
    logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") },
  };
}

interface Hive {
  store: TestStore;
  bh: Beehive;
  things: Client<Spec, Status>;
  others: Client<Spec, Status>;
  logs: LogEntry[];
}

interface HiveSetup {
  /** Registers controllers before anything else happens. */
  register?: (bh: Beehive) => void;
  options?: BeehiveOptions;
}

/** A never-started Beehive over a fresh in-memory store, closed afterwards. */
async function withHive(fn: (h: Hive) => Promise<void>, setup: HiveSetup = {}): Promise<void> {
  const store = await openTestStore(":memory:");
  try {
    const { logger, logs } = captureLogger();
    const bh = new Beehive(store, { logger, ...setup.options });
    setup.register?.(bh);
    await fn({
      store,
      bh,
      things: bh.client<Spec, Status>(Thing),
      others: bh.client<Spec, Status>(Other),
      logs,
    });
  } finally {
    await store.close();
  }
}

interface Running extends Hive {
  clock: FakeClock;
}

/**
 * A started Beehive under fake time. The owed pass is an hour apart, so a
 * reconcile seen within a few ticks came from a push.
 */
async function withRunning(
  register: (bh: Beehive) => void,
  fn: (h: Running) => Promise<void>,
  options?: BeehiveOptions,
): Promise<void> {
  const clock = installFakeTime();
  try {
    await withHive(async (h) => {
      const stop = await h.bh.start();
      try {
        await fn({ ...h, clock });
      } finally {
        await stop();
      }
    }, { register, options: { owedPassInterval: 3_600_000, gcInterval: 3_600_000, ...options } });
  } finally {
    clock.uninstall();
  }
}

/** Advances fake time by 0 ms repeatedly (running promise chains) until `cond` holds. */
async function until(clock: FakeClock, cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await clock.tickAsync(0);
  assert.ok(cond(), `expected ${what}`);
}

/** Lets any pending work run without advancing time past timers. */
async function drain(clock: FakeClock): Promise<void> {
  for (let i = 0; i < 50; i++) await clock.tickAsync(0);
}

const noop: Controller<Spec, Status> = () => settled();

function ref(gk: GroupKind, id: number): ObjectRef {
  return { group: gk.group, kind: gk.kind, id };
}

function cyclic(): Spec {
  const spec: Spec & { self?: unknown } = { n: 1 };
  spec.self = spec;
  return spec;
}

const LONE_SURROGATES = ["\uD800", "a\uDC00b", "\uDBFF"];

// ---------------------------------------------------------------------------
// create

test("Client.create returns a fresh object: id, kind, name, spec, generation 1, no status", async () => {
  await withHive(async ({ things }) => {
    const before = Date.now();
    const obj = await things.create("prod", { n: 3 });
    assert.ok(Number.isSafeInteger(obj.id) && obj.id > 0);
    assert.equal(obj.group, Thing.group);
    assert.equal(obj.kind, Thing.kind);
    assert.equal(obj.name, "prod");
    assert.deepEqual(obj.spec, { n: 3 });
    assert.equal(obj.generation, 1);
    assert.equal(obj.status, undefined);
    assert.equal(obj.observedGeneration, undefined);
    assert.equal(obj.observedAt, undefined);
    assert.equal(obj.deletionRequestedAt, undefined);
    assert.deepEqual(obj.finalizers, []);
    assert.deepEqual(obj.conditions, []);
    assert.ok(obj.resourceVersion > 0);
    assert.ok(obj.createdAt instanceof Date && obj.createdAt.getTime() >= before);
    assert.ok(obj.updatedAt instanceof Date);
    const second = await things.create("staging", { n: 1 });
    assert.notEqual(second.id, obj.id);
    assert.ok(second.resourceVersion > obj.resourceVersion);
    assert.deepEqual(await things.get(obj.id), obj);
  });
});

test("Client.create with no owner and no onCreate is one store write outside any transaction, and its object is reconciled at once", async () => {
  const calls = new Map<string, number>();
  await withHarness({ wrap: countingObjectCalls(calls) }, async (h) => {
    await h.start();
    calls.clear();
    const obj = await h.things.create("a", {});
    assert.equal(calls.get("create"), 1);
    assert.equal(calls.get("within"), undefined, "no transaction");
    await h.flush();
    assert.deepEqual(h.passes.map((p) => p.id), [obj.id]);
    // An owner or a hook still takes a transaction: the edge and the hook commit with the row.
    let ran = 0;
    await h.things.create("b", {}, { owner: obj.id });
    await h.things.create("c", {}, { onCreate: () => void ran++ });
    assert.equal(calls.get("within"), 2);
    assert.equal(ran, 1);
  });
});

test("Client.update on a kind with no status conversions and a client with no namespace is one store write outside any transaction", async () => {
  const calls = new Map<string, number>();
  await withHarness({ wrap: countingObjectCalls(calls) }, async (h) => {
    await h.start();
    const obj = await h.things.create("a", { n: 1 });
    await h.flush();
    calls.clear();
    const updated = await h.things.update(obj.id, { n: 2 });
    assert.deepEqual(updated.spec, { n: 2 });
    assert.equal(updated.generation, 2);
    assert.equal(calls.get("updateSpec"), 1);
    assert.equal(calls.get("within"), undefined, "no transaction");
    await h.flush();
    assert.deepEqual(h.passes.map((p) => [p.id, p.generation]), [[obj.id, 1], [obj.id, 2]]);
  });
});

test("Client.create accepts any JSON value as the spec, including null", async () => {
  await withHive(async ({ bh }) => {
    const raw = bh.client<unknown>(Thing);
    for (const [i, spec] of [null, 0, "text", [1, "two"], { nested: { deep: [true] } }].entries()) {
      const obj = await raw.create(`v${i}`, spec);
      assert.deepEqual(obj.spec, spec);
      assert.deepEqual((await raw.get(obj.id)).spec, spec);
    }
  });
});

test("Client.create with an owner writes the owned_by edge with the row", async () => {
  await withHive(async ({ things, others }) => {
    const owner = await others.create("owner", { n: 0 });
    const child = await things.create("child", { n: 1 }, { owner: owner.id });
    assert.deepEqual(await things.getOwner(child.id), ref(Other, owner.id));
    assert.deepEqual(await things.listOwned(owner.id), [ref(Thing, child.id)]);
    const loaded = await things.get(child.id, { load: ["owner"] });
    assert.deepEqual(loaded.owner(), ref(Other, owner.id));
  });
});

test("Client.create with a missing owner rejects with NotFoundError and rolls the row back", async () => {
  await withHive(async ({ store, things }) => {
    let ran = 0;
    const rv = await store.getLatestResourceVersion();
    await assert.rejects(
      things.create("orphan", { n: 1 }, { owner: 999_999, onCreate: () => void ran++ }),
      NotFoundError,
    );
    assert.deepEqual(await things.list(), []);
    await assert.rejects(things.getByName("orphan"), NotFoundError);
    assert.equal(ran, 0);
    // The name is free: nothing of the failed create survived.
    const obj = await things.create("orphan", { n: 2 });
    assert.equal(obj.generation, 1);
    assert.equal(await things.getOwner(obj.id), undefined);
    assert.ok(rv <= obj.resourceVersion);
  });
});

test("Client.create with finalizers on a registered kind stores them in order", async () => {
  await withHive(async ({ things }) => {
    const obj = await things.create("f", { n: 1 }, { finalizers: ["b.dev/two", "a.dev/one"] });
    assert.deepEqual(obj.finalizers, ["b.dev/two", "a.dev/one"]);
    assert.deepEqual((await things.getByName("f")).finalizers, ["b.dev/two", "a.dev/one"]);
  }, { register: (bh) => bh.register(Thing, noop) });
});

test("Client.create with finalizers on a client-only kind rejects with InvalidOptionError and writes nothing", async () => {
  await withHive(async ({ store, things, others }) => {
    const rv = await store.getLatestResourceVersion();
    await assert.rejects(
      things.create("f", { n: 1 }, { finalizers: ["x.dev/f"] }),
      InvalidOptionError,
    );
    assert.equal(await store.getLatestResourceVersion(), rv);
    assert.deepEqual(await things.list(), []);
    // Registration of another kind does not count.
    await assert.rejects(
      others.create("g", { n: 1 }, { finalizers: ["x.dev/f"] }),
      InvalidOptionError,
    );
    // Without the option a client-only kind creates normally, and an empty list is fine.
    await things.create("plain", { n: 1 });
    await things.create("empty", { n: 1 }, { finalizers: [] });
    assert.equal((await things.list()).length, 2);
  }, { register: (bh) => bh.register({ group: "elsewhere.dev", kind: "Thing" }, noop) });
});

test("Client.create rejects malformed finalizers with InvalidOptionError even on a registered kind", async () => {
  await withHive(async ({ things }) => {
    for (const finalizers of [[""], ["\uD800"], ["ok", 3]] as unknown as string[][]) {
      await assert.rejects(things.create("f", { n: 1 }, { finalizers }), InvalidOptionError);
    }
    assert.deepEqual(await things.list(), []);
  }, { register: (bh) => bh.register(Thing, noop) });
});

test("Client.getOrCreate checks finalizers eagerly, even when the row exists", async () => {
  await withHive(async ({ store, things }) => {
    await assert.rejects(
      things.getOrCreate("absent", { n: 1 }, { finalizers: ["x.dev/f"] }),
      InvalidOptionError,
    );
    await assert.rejects(things.getByName("absent"), NotFoundError);
    const existing = await things.create("present", { n: 1 });
    const rv = await store.getLatestResourceVersion();
    await assert.rejects(
      things.getOrCreate("present", { n: 1 }, { finalizers: ["x.dev/f"] }),
      InvalidOptionError,
    );
    assert.equal(await store.getLatestResourceVersion(), rv);
    // Without the option the found branch returns the row.
    const found = await things.getOrCreate("present", { n: 1 });
    assert.equal(found.created, false);
    assert.equal(found.object.id, existing.id);
  });
});

test("Client.createOrUpdate checks finalizers eagerly on both branches", async () => {
  await withHive(async ({ things }) => {
    await assert.rejects(
      things.createOrUpdate("absent", { n: 1 }, { finalizers: ["x.dev/f"] }),
      InvalidOptionError,
    );
    await assert.rejects(things.getByName("absent"), NotFoundError);
    await things.create("present", { n: 1 });
    await assert.rejects(
      things.createOrUpdate("present", { n: 2 }, { finalizers: ["x.dev/f"] }),
      InvalidOptionError,
    );
    assert.deepEqual((await things.getByName("present")).spec, { n: 1 });
  });
});

test("Client.create runs onCreate once, after the commit, before it resolves", async () => {
  await withHive(async ({ store, things }) => {
    const seen: string[] = [];
    const obj = await things.create("hooked", { n: 1 }, {
      onCreate: async () => {
        // Runs after the commit: the row is visible to a read outside the transaction.
        const row = await store.objects.getByName({ ...Thing, name: "hooked" });
        seen.push(`committed ${row.id}`);
      },
    });
    assert.deepEqual(seen, [`committed ${obj.id}`]);
    await things.update(obj.id, { n: 2 });
    await things.delete(obj.id);
    assert.deepEqual(seen, [`committed ${obj.id}`]);
  });
});

test("Client.create resolves when onCreate throws: the hook is reported and the commit stands", async () => {
  const { logger, logs } = captureLogger();
  const store = await openTestStore(":memory:", { logger });
  try {
    const things = new Beehive(store).client<Spec, Status>(Thing);
    const obj = await things.create("hooked", { n: 1 }, {
      onCreate: () => {
        throw new Error("side effect failed");
      },
    });
    assert.deepEqual(await things.getByName("hooked"), obj);
    assert.ok(
      logs.some((l) => l.level === "warn" || l.level === "error"),
      "the hook's failure is logged",
    );
  } finally {
    await store.close();
  }
});

test("Client.create inside a transaction runs onCreate only after the outermost commit", async () => {
  const order: string[] = [];
  const Parent: GroupKind = { group: "test.beehive.dev", kind: "Parent" };
  await withRunning((bh) => {
    bh.register<Spec, Status>(Parent, async (obj, cc) => {
      await cc.within(async (tx) => {
        await tx.within(async (inner) => {
          const child = await inner.client<Spec, Status>(Thing).create(`child-${obj.spec.n}`, {
            n: obj.spec.n,
          }, { onCreate: () => void order.push("onCreate") });
          order.push(`created ${child.name}`);
        });
        order.push("inner frame done");
        await tx.client<Spec, Status>(Thing).getOrCreate("other-child", { n: 0 }, {
          onCreate: () => void order.push("onCreate 2"),
        });
        order.push("outer fn done");
      });
      order.push("within resolved");
      return settled();
    });
  }, async ({ bh, things, clock }) => {
    await bh.client<Spec, Status>(Parent).create("p", { n: 7 });
    await until(clock, () => order.includes("within resolved"), "the pass to finish");
    assert.deepEqual(order, [
      "created child-7",
      "inner frame done",
      "outer fn done",
      "onCreate",
      "onCreate 2",
      "within resolved",
    ]);
    assert.equal((await things.getByName("child-7")).spec.n, 7);
  });
});

test("Client.create inside a transaction that rolls back leaves no row and never runs onCreate", async () => {
  let onCreate = 0;
  let created = false;
  let outcome: unknown;
  const Parent: GroupKind = { group: "test.beehive.dev", kind: "Parent" };
  await withRunning((bh) => {
    bh.register<Spec, Status>(Parent, async (_obj, cc) => {
      outcome = await cc.within(async (tx) => {
        const r = await tx.client<Spec, Status>(Thing).getOrCreate("doomed", { n: 1 }, {
          onCreate: () => void onCreate++,
        });
        created = r.created;
        await tx.client<Spec, Status>(Thing).create("doomed-too", { n: 2 }, {
          onCreate: () => void onCreate++,
        });
        throw new Error("roll back");
      }).catch((e: Error) => e.message);
      return settled();
    });
  }, async ({ bh, things, clock }) => {
    await bh.client<Spec, Status>(Parent).create("p", { n: 1 });
    await until(clock, () => outcome !== undefined, "the pass to finish");
    assert.equal(outcome, "roll back");
    assert.equal(created, true, "created is provisional inside the transaction");
    await drain(clock);
    assert.equal(onCreate, 0);
    await assert.rejects(things.getByName("doomed"), NotFoundError);
    await assert.rejects(things.getByName("doomed-too"), NotFoundError);
    assert.deepEqual(await things.list(), []);
  });
});

test("Client.create rejects NameTakenError for a name a live row holds, leaving one row", async () => {
  await withHive(async ({ store, things, others }) => {
    const first = await things.create("dup", { n: 1 });
    const rv = await store.getLatestResourceVersion();
    let ran = 0;
    await assert.rejects(
      things.create("dup", { n: 2 }, { onCreate: () => void ran++ }),
      NameTakenError,
    );
    assert.equal(ran, 0);
    assert.equal(await store.getLatestResourceVersion(), rv);
    const all = await things.list();
    assert.deepEqual(all.map((o) => [o.id, o.spec.n]), [[first.id, 1]]);
    // Names are unique within a kind, not across kinds.
    const other = await others.create("dup", { n: 3 });
    assert.notEqual(other.id, first.id);
  });
});

test("Client.create rejects NameTakenError for a name a deletion-pending row holds", async () => {
  await withHive(async ({ things }) => {
    const first = await things.create("tomb", { n: 1 }, { finalizers: ["x.dev/hold"] });
    await things.delete(first.id);
    await assert.rejects(things.create("tomb", { n: 2 }), NameTakenError);
    const row = await things.getByName("tomb");
    assert.equal(row.id, first.id);
    assert.ok(row.deletionRequestedAt instanceof Date);
  }, { register: (bh) => bh.register(Thing, noop) });
});

test("Client name-keyed calls reject InvalidNameError for the empty name and lone surrogates", async () => {
  await withHive(async ({ store, things }) => {
    await things.create("kept", { n: 1 });
    const rv = await store.getLatestResourceVersion();
    for (const name of ["", ...LONE_SURROGATES]) {
      const calls: [string, () => Promise<unknown>][] = [
        ["create", () => things.create(name, { n: 1 })],
        ["getOrCreate", () => things.getOrCreate(name, { n: 1 })],
        ["createOrUpdate", () => things.createOrUpdate(name, { n: 1 })],
        ["updateByName", () => things.updateByName(name, { n: 1 })],
        ["getByName", () => things.getByName(name)],
        ["deleteByName", () => things.deleteByName(name)],
      ];
      for (const [method, call] of calls) {
        await assert.rejects(call(), InvalidNameError, `${method}(${JSON.stringify(name)})`);
      }
    }
    assert.equal(await store.getLatestResourceVersion(), rv);
    assert.equal((await things.list()).length, 1);
  });
});

test("Client.create checks the name before the spec: an empty name with a bad spec is InvalidNameError", async () => {
  await withHive(async ({ things }) => {
    await assert.rejects(
      things.create("", { n: 1n } as unknown as Spec),
      InvalidNameError,
    );
    await assert.rejects(things.updateByName("", cyclic()), InvalidNameError);
  });
});

test("Client spec writes reject TypeError for a BigInt, cyclic or undefined spec and write nothing", async () => {
  await withHive(async ({ store, things }) => {
    const existing = await things.create("existing", { n: 1 });
    const rv = await store.getLatestResourceVersion();
    const bad: unknown[] = [{ n: 1n }, cyclic(), undefined, () => 1, Symbol("s")];
    for (const spec of bad) {
      const s = spec as Spec;
      const calls: [string, () => Promise<unknown>][] = [
        ["create", () => things.create("new", s)],
        ["getOrCreate", () => things.getOrCreate("new", s)],
        ["getOrCreate found", () => things.getOrCreate("existing", s)],
        ["createOrUpdate", () => things.createOrUpdate("new", s)],
        ["createOrUpdate found", () => things.createOrUpdate("existing", s)],
        ["update", () => things.update(existing.id, s)],
        ["updateByName", () => things.updateByName("existing", s)],
      ];
      for (const [method, call] of calls) {
        await assert.rejects(call(), TypeError, `${method} with ${String(typeof spec)}`);
      }
    }
    assert.equal(await store.getLatestResourceVersion(), rv);
    assert.deepEqual((await things.list()).map((o) => o.name), ["existing"]);
    assert.deepEqual(await things.get(existing.id), existing);
  });
});

// ---------------------------------------------------------------------------
// The name-keyed table

test("Client name-keyed writes on a name held by nothing: create, getOrCreate and createOrUpdate create; updateByName is NotFoundError", async () => {
  await withHive(async ({ things }) => {
    const a = await things.create("a", { n: 1 });
    assert.equal(a.generation, 1);

    const b = await things.getOrCreate("b", { n: 2 });
    assert.equal(b.created, true);
    assert.equal(b.object.generation, 1);
    assert.deepEqual(b.object.spec, { n: 2 });

    await assert.rejects(things.updateByName("c", { n: 3 }), NotFoundError);
    await assert.rejects(things.getByName("c"), NotFoundError);

    const d = await things.createOrUpdate("d", { n: 4 });
    assert.equal(d.created, true);
    assert.equal(d.object.generation, 1);
    assert.deepEqual(d.object.spec, { n: 4 });

    assert.deepEqual((await things.list()).map((o) => o.name), ["a", "b", "d"]);
  });
});

test("Client name-keyed writes on a live row: create is NameTakenError, getOrCreate returns it untouched, updateByName and createOrUpdate write the spec", async () => {
  await withHive(async ({ things }) => {
    const live = await things.create("live", { n: 1 });

    await assert.rejects(things.create("live", { n: 9 }), NameTakenError);

    const got = await things.getOrCreate("live", { n: 9 });
    assert.equal(got.created, false);
    assert.deepEqual(got.object, live);

    const updated = await things.updateByName("live", { n: 2 });
    assert.equal(updated.id, live.id);
    assert.deepEqual(updated.spec, { n: 2 });
    assert.equal(updated.generation, 2);

    const upserted = await things.createOrUpdate("live", { n: 3 });
    assert.equal(upserted.created, false);
    assert.equal(upserted.object.id, live.id);
    assert.deepEqual(upserted.object.spec, { n: 3 });
    assert.equal(upserted.object.generation, 3);

    assert.deepEqual(await things.get(live.id), upserted.object);
    assert.equal((await things.list()).length, 1);
  });
});

test("Client name-keyed writes on a deletion-pending row: create is NameTakenError, getOrCreate returns it untouched, updateByName and createOrUpdate are DeletionPendingError", async () => {
  await withHive(async ({ store, things }) => {
    const obj = await things.create("pending", { n: 1 });
    await things.delete(obj.id);
    const tomb = await things.get(obj.id);
    assert.ok(tomb.deletionRequestedAt instanceof Date);
    const rv = await store.getLatestResourceVersion();

    await assert.rejects(things.create("pending", { n: 9 }), NameTakenError);

    const got = await things.getOrCreate("pending", { n: 9 });
    assert.equal(got.created, false);
    assert.deepEqual(got.object, tomb);

    await assert.rejects(things.updateByName("pending", { n: 9 }), DeletionPendingError);
    await assert.rejects(things.updateByName("pending", { n: 1 }), DeletionPendingError);
    await assert.rejects(things.createOrUpdate("pending", { n: 9 }), DeletionPendingError);
    await assert.rejects(things.createOrUpdate("pending", { n: 1 }), DeletionPendingError);

    assert.equal(await store.getLatestResourceVersion(), rv);
    assert.deepEqual(await things.get(obj.id), tomb);
  });
});

test("Client.getOrCreate racing itself on one name creates one row and runs onCreate once", async () => {
  await withHive(async ({ things }) => {
    let onCreate = 0;
    const results = await Promise.all([
      things.getOrCreate("race", { n: 1 }, { onCreate: () => void onCreate++ }),
      things.getOrCreate("race", { n: 2 }, { onCreate: () => void onCreate++ }),
      things.getOrCreate("race", { n: 3 }, { onCreate: () => void onCreate++ }),
    ]);
    assert.equal(results.filter((r) => r.created).length, 1);
    assert.equal(onCreate, 1);
    const ids = new Set(results.map((r) => r.object.id));
    assert.equal(ids.size, 1);
    const winner = results.find((r) => r.created)!;
    const all = await things.list();
    assert.equal(all.length, 1);
    assert.deepEqual(all[0].spec, winner.object.spec);
    for (const r of results) assert.deepEqual(r.object.spec, winner.object.spec);
  });
});

test("Client.getOrCreate honours its options only when it inserts", async () => {
  await withHive(async ({ things, others }) => {
    const owner = await others.create("owner", { n: 0 });
    let onCreate = 0;
    const first = await things.getOrCreate("child", { n: 1 }, {
      owner: owner.id,
      onCreate: () => void onCreate++,
    });
    assert.equal(first.created, true);
    assert.equal(onCreate, 1);
    assert.deepEqual(await things.getOwner(first.object.id), ref(Other, owner.id));

    const plain = await things.create("plain", { n: 1 });
    const second = await things.getOrCreate("plain", { n: 2 }, {
      owner: owner.id,
      onCreate: () => void onCreate++,
    });
    assert.equal(second.created, false);
    assert.equal(onCreate, 1);
    assert.deepEqual(second.object, plain);
    assert.equal(await things.getOwner(plain.id), undefined);
  });
});

test("Client.createOrUpdate creates, then updates, and never re-parents", async () => {
  await withHive(async ({ things, others }) => {
    const owner1 = await others.create("owner-1", { n: 0 });
    const owner2 = await others.create("owner-2", { n: 0 });
    let onCreate = 0;
    const created = await things.createOrUpdate("c", { n: 1 }, {
      owner: owner1.id,
      onCreate: () => void onCreate++,
    });
    assert.equal(created.created, true);
    assert.equal(onCreate, 1);
    assert.deepEqual(await things.getOwner(created.object.id), ref(Other, owner1.id));

    const updated = await things.createOrUpdate("c", { n: 2 }, {
      owner: owner2.id,
      onCreate: () => void onCreate++,
    });
    assert.equal(updated.created, false);
    assert.equal(updated.object.id, created.object.id);
    assert.deepEqual(updated.object.spec, { n: 2 });
    assert.equal(updated.object.generation, 2);
    assert.ok(updated.object.resourceVersion > created.object.resourceVersion);
    assert.equal(onCreate, 1);
    assert.deepEqual(await things.getOwner(created.object.id), ref(Other, owner1.id));
    assert.deepEqual(await things.listOwned(owner2.id), []);
  });
});

test("Client.createOrUpdate is kind-scoped: another kind holding the name does not block it", async () => {
  await withHive(async ({ things, others }) => {
    const other = await others.create("shared", { n: 1 });
    const r = await things.createOrUpdate("shared", { n: 2 });
    assert.equal(r.created, true);
    assert.notEqual(r.object.id, other.id);
    assert.deepEqual(await others.get(other.id), other);
  });
});

test("Client.createOrUpdate with a byte-identical spec writes nothing", async () => {
  await withHive(async ({ store, things }) => {
    const obj = await things.create("same", { n: 1, tag: "x" });
    const rv = await store.getLatestResourceVersion();
    const r = await things.createOrUpdate("same", { n: 1, tag: "x" });
    assert.equal(r.created, false);
    assert.deepEqual(r.object, obj);
    assert.equal(await store.getLatestResourceVersion(), rv);
  });
});

// ---------------------------------------------------------------------------
// update / updateByName

test("Client.update bumps generation and resourceVersion and returns the new spec", async () => {
  await withHive(async ({ things }) => {
    const obj = await things.create("u", { n: 1 });
    const updated = await things.update(obj.id, { n: 2, tag: "new" });
    assert.equal(updated.id, obj.id);
    assert.equal(updated.generation, 2);
    assert.ok(updated.resourceVersion > obj.resourceVersion);
    assert.deepEqual(updated.spec, { n: 2, tag: "new" });
    assert.equal(updated.createdAt.getTime(), obj.createdAt.getTime());
    assert.deepEqual(await things.get(obj.id), updated);
    const again = await things.update(obj.id, { n: 3 });
    assert.equal(again.generation, 3);
  });
});

test("Client.update with a byte-identical spec writes nothing", async () => {
  await withHive(async ({ store, things }) => {
    const obj = await things.create("u", { n: 1, tag: "x" });
    const rv = await store.getLatestResourceVersion();
    const same = await things.update(obj.id, { n: 1, tag: "x" });
    assert.deepEqual(same, obj);
    assert.equal(same.generation, 1);
    assert.equal(same.resourceVersion, obj.resourceVersion);
    assert.equal(await store.getLatestResourceVersion(), rv);
    assert.deepEqual(await things.get(obj.id), obj);
  });
});

test("Client.updateByName bumps generation, and a byte-identical spec writes nothing", async () => {
  await withHive(async ({ store, things }) => {
    const obj = await things.create("u", { n: 1 });
    const updated = await things.updateByName("u", { n: 2 });
    assert.equal(updated.id, obj.id);
    assert.equal(updated.generation, 2);
    assert.ok(updated.resourceVersion > obj.resourceVersion);
    const rv = await store.getLatestResourceVersion();
    const same = await things.updateByName("u", { n: 2 });
    assert.deepEqual(same, updated);
    assert.equal(await store.getLatestResourceVersion(), rv);
  });
});

test("Client.update of a deletion-pending row rejects with DeletionPendingError, even for identical bytes", async () => {
  await withHive(async ({ store, things }) => {
    const obj = await things.create("p", { n: 1 });
    await things.delete(obj.id);
    const tomb = await things.get(obj.id);
    const rv = await store.getLatestResourceVersion();
    await assert.rejects(things.update(obj.id, { n: 2 }), DeletionPendingError);
    await assert.rejects(things.update(obj.id, { n: 1 }), DeletionPendingError);
    assert.equal(await store.getLatestResourceVersion(), rv);
    assert.deepEqual(await things.get(obj.id), tomb);
  });
});

test("Client.update rejects NotFoundError for a missing id and for another kind's id, leaving that row alone", async () => {
  await withHive(async ({ store, things, others }) => {
    const other = await others.create("o", { n: 1 });
    const rv = await store.getLatestResourceVersion();
    await assert.rejects(things.update(other.id, { n: 2 }), NotFoundError);
    await assert.rejects(things.update(other.id + 1000, { n: 2 }), NotFoundError);
    assert.equal(await store.getLatestResourceVersion(), rv);
    assert.deepEqual(await others.get(other.id), other);
  });
});

test("Client.updateByName is kind-scoped: another kind's row holding the name is NotFoundError", async () => {
  await withHive(async ({ things, others }) => {
    const other = await others.create("shared", { n: 1 });
    await assert.rejects(things.updateByName("shared", { n: 2 }), NotFoundError);
    assert.deepEqual(await others.get(other.id), other);
  });
});

test("Client.update on a reused name acts on its own incarnation only", async () => {
  await withHive(async ({ store, things }) => {
    const old = await things.create("reused", { n: 1 });
    await things.delete(old.id);
    await store.objects.delete(old.id); // collected
    const fresh = await things.create("reused", { n: 2 });
    assert.notEqual(fresh.id, old.id);
    assert.ok(fresh.id > old.id, "ids are never reused");
    await assert.rejects(things.update(old.id, { n: 3 }), NotFoundError);
    await assert.rejects(things.get(old.id), NotFoundError);
    const byName = await things.updateByName("reused", { n: 4 });
    assert.equal(byName.id, fresh.id);
  });
});

// ---------------------------------------------------------------------------
// get / getByName / load / plain data

test("Client.get is kind-scoped: a missing id and another kind's id are NotFoundError", async () => {
  await withHive(async ({ things, others }) => {
    const other = await others.create("o", { n: 1 });
    await assert.rejects(things.get(other.id), NotFoundError);
    await assert.rejects(things.get(other.id + 1000), NotFoundError);
    assert.equal((await others.get(other.id)).name, "o");
  });
});

test("Client.getByName is kind-scoped: a name held only by another kind is NotFoundError", async () => {
  await withHive(async ({ things, others }) => {
    await others.create("shared", { n: 1 });
    await assert.rejects(things.getByName("shared"), NotFoundError);
    await assert.rejects(things.getByName("nobody"), NotFoundError);
    const mine = await things.create("shared", { n: 2 });
    assert.deepEqual(await things.getByName("shared"), mine);
  });
});

test("Client.get with load attaches owner, dependencies, dependents, owned and events", async () => {
  await withHive(async ({ bh, things, others }) => {
    const a = await things.create("a", { n: 1 });
    const b = await things.create("b", { n: 2 }, { owner: a.id });
    const c = await others.create("c", { n: 3 });
    const d = await others.create("d", { n: 4 });
    const admin = bh.adminClient(Thing);
    await admin.addDependency(a.id, d.id);
    await admin.addDependency(a.id, c.id);
    await admin.addDependency(b.id, a.id);
    await admin.addEvent(a.id, { type: "Normal", reason: "Hello", detail: { x: 1 } });

    const all = await things.get(a.id, {
      load: ["owner", "dependencies", "dependents", "owned", "events"],
    });
    assert.equal(all.owner(), undefined);
    assert.deepEqual(all.dependencies(), [ref(Other, c.id), ref(Other, d.id)]);
    assert.deepEqual(all.dependents(), [ref(Thing, b.id)]);
    assert.deepEqual(all.owned(), [ref(Thing, b.id)]);
    const events = all.events();
    assert.equal(events.length, 1);
    assert.equal(events[0].reason, "Hello");
    assert.equal(events[0].objectId, a.id);
    assert.deepEqual(events[0].detail, { x: 1 });

    const child = await things.get(b.id, { load: ["owner"] });
    assert.deepEqual(child.owner(), ref(Thing, a.id));
    assert.throws(() => child.dependencies(), NotLoadedError);
    assert.throws(() => child.events(), NotLoadedError);

    const empty = await things.get(b.id, { load: ["owned", "dependents", "events"] });
    assert.deepEqual(empty.owned(), []);
    assert.deepEqual(empty.dependents(), []);
    assert.deepEqual(empty.events(), []);
  });
});

test("Client.getByName and Client.list attach loaded relations too", async () => {
  await withHive(async ({ things }) => {
    const a = await things.create("a", { n: 1 });
    const b = await things.create("b", { n: 2 }, { owner: a.id });
    const byName = await things.getByName("b", { load: ["owner"] });
    assert.deepEqual(byName.owner(), ref(Thing, a.id));
    assert.throws(() => byName.owned(), NotLoadedError);
    const listed = await things.list({ load: ["owner", "owned"] });
    assert.deepEqual(listed.map((o) => o.owner()), [undefined, ref(Thing, a.id)]);
    assert.deepEqual(listed.map((o) => o.owned()), [[ref(Thing, b.id)], []]);
    assert.throws(() => listed[0].dependencies(), NotLoadedError);
  });
});

test("Client.get without load leaves every relation accessor throwing NotLoadedError", async () => {
  await withHive(async ({ things }) => {
    const a = await things.create("a", { n: 1 });
    await things.create("b", { n: 2 }, { owner: a.id });
    for (
      const obj of [await things.get(a.id), await things.getByName("a"), (await things.list())[0]]
    ) {
      assert.throws(() => obj.owner(), NotLoadedError);
      assert.throws(() => obj.dependencies(), NotLoadedError);
      assert.throws(() => obj.dependents(), NotLoadedError);
      assert.throws(() => obj.owned(), NotLoadedError);
      assert.throws(() => obj.events(), NotLoadedError);
    }
    // The created object itself has nothing loaded either.
    const c = await things.create("c", { n: 3 });
    assert.throws(() => c.owner(), NotLoadedError);
  });
});

test("Client.get rejects an unknown load key with TypeError", async () => {
  await withHive(async ({ things }) => {
    const a = await things.create("a", { n: 1 });
    const bad = { load: ["ownr"] } as unknown as { load: [] };
    await assert.rejects(things.get(a.id, bad), TypeError);
    await assert.rejects(things.getByName("a", bad), TypeError);
    await assert.rejects(things.list(bad), TypeError);
    await assert.rejects(things.listOwnedObjects(a.id, bad), TypeError);
  });
});

test("Client.get returns plain data: JSON.stringify gives exactly the data fields", async () => {
  await withHive(async ({ bh, things }) => {
    const created = await things.create("plain", { n: 1 });
    const obj = await things.get(created.id, { load: ["owner", "owned", "events"] });
    const fields = [
      "id",
      "group",
      "kind",
      "name",
      "namespace",
      "spec",
      "status",
      "generation",
      "observedGeneration",
      "observedAt",
      "resourceVersion",
      "deletionRequestedAt",
      "finalizers",
      "conditions",
      "createdAt",
      "updatedAt",
      "labels",
      "annotations",
    ];
    assert.deepEqual(Object.keys(obj).sort(), [...fields].sort());
    assert.deepEqual(JSON.parse(JSON.stringify(obj)), {
      id: created.id,
      group: Thing.group,
      kind: Thing.kind,
      name: "plain",
      namespace: "",
      spec: { n: 1 },
      generation: 1,
      resourceVersion: created.resourceVersion,
      finalizers: [],
      conditions: [],
      createdAt: created.createdAt.toISOString(),
      updatedAt: created.updatedAt.toISOString(),
      labels: {},
      annotations: {},
    });
    // Loaded relations stay off the data.
    assert.equal(JSON.stringify(obj), JSON.stringify(await things.get(created.id)));

    await bh.adminClient<Status>(Thing).updateStatus(created.id, { ready: true });
    await bh.adminClient<Status>(Thing).setCondition(created.id, { type: "Ready", status: "True" });
    await things.delete(created.id);
    const full = JSON.parse(JSON.stringify(await things.get(created.id)));
    assert.deepEqual(full.status, { ready: true });
    assert.equal(typeof full.deletionRequestedAt, "string");
    assert.equal(full.conditions.length, 1);
    assert.deepEqual(Object.keys(full.conditions[0]).sort(), [
      "liveness",
      "message",
      "reason",
      "status",
      "transitionedAt",
      "type",
      "unconfirmed",
      "updatedAt",
    ]);
    assert.equal(full.conditions[0].reason, "");
    assert.equal(full.conditions[0].liveness, false);
    assert.equal(full.conditions[0].unconfirmed, false);
  });
});

test("Client.get returns a copy: mutating a returned object does not change the next read", async () => {
  await withHive(async ({ things }) => {
    const obj = await things.create("m", { n: 1 }, {});
    obj.finalizers.push("x");
    (obj.spec as Spec).n = 99;
    const again = await things.get(obj.id);
    assert.deepEqual(again.finalizers, []);
    assert.equal(again.spec.n, 1);
  });
});

// ---------------------------------------------------------------------------
// list / listOwnedObjects / decode quarantine

test("Client.list returns this kind's objects ordered by id", async () => {
  await withHive(async ({ things, others }) => {
    assert.deepEqual(await things.list(), []);
    const b = await things.create("b", { n: 1 });
    await others.create("x", { n: 0 });
    const a = await things.create("a", { n: 2 });
    const c = await things.create("c", { n: 3 });
    const listed = await things.list();
    assert.deepEqual(listed.map((o) => o.id), [b.id, a.id, c.id]);
    assert.deepEqual(listed.map((o) => o.name), ["b", "a", "c"]);
    assert.ok(listed.every((o) => o.kind === Thing.kind));
  });
});

/** A migrator at spec version 1 that cannot convert anything older. */
const brokenMigrator: Migrator = {
  specVersion: 1,
  statusVersion: 0,
  convertSpec(from) {
    throw new Error(`no conversion from version ${from}`);
  },
  convertStatus: (_from, value) => value,
};

test("Client.list skips and logs a row that does not decode", async () => {
  await withHive(async ({ store, things, logs }) => {
    const good1 = await things.create("good-1", { n: 1 });
    const bad = await store.objects.create(Thing, { name: "bad", spec: '{"n":0}', specVersion: 0 });
    const good2 = await things.create("good-2", { n: 2 });
    const listed = await things.list();
    assert.deepEqual(listed.map((o) => o.id), [good1.id, good2.id]);
    const warning = logs.find((l) => l.level === "warn" && l.attributes?.id === bad.id);
    assert.ok(warning, `expected a warning naming id ${bad.id}: ${JSON.stringify(logs)}`);
  }, { register: (bh) => bh.register(Thing, noop, { migrator: brokenMigrator }) });
});

test("Client.list of only undecodable rows resolves empty", async () => {
  await withHive(async ({ store, things }) => {
    await store.objects.create(Thing, { name: "bad", spec: '{"n":0}', specVersion: 0 });
    assert.deepEqual(await things.list(), []);
  }, { register: (bh) => bh.register(Thing, noop, { migrator: brokenMigrator }) });
});

test("Client.get and Client.getByName of a row that does not decode reject with StoreError", async () => {
  await withHive(async ({ store, things }) => {
    const bad = await store.objects.create(Thing, { name: "bad", spec: '{"n":0}', specVersion: 0 });
    const fromNewer = await store.objects.create(Thing, {
      name: "newer",
      spec: '{"n":0}',
      specVersion: 2,
    });
    await assert.rejects(things.get(bad.id), StoreError);
    await assert.rejects(things.getByName("bad"), StoreError);
    await assert.rejects(things.get(fromNewer.id), StoreError);
    // A row this build can read is unaffected.
    const good = await things.create("good", { n: 1 });
    assert.deepEqual((await things.get(good.id)).spec, { n: 1 });
  }, { register: (bh) => bh.register(Thing, noop, { migrator: brokenMigrator }) });
});

test("Client.get converts a row written at an older spec version through the migrator", async () => {
  const migrator: Migrator = {
    specVersion: 2,
    statusVersion: 0,
    convertSpec: (from, value) => ({ n: (value as { count: number }).count, tag: `from-${from}` }),
    convertStatus: (_from, value) => value,
  };
  await withHive(async ({ store, things }) => {
    const old = await store.objects.create(Thing, {
      name: "old",
      spec: '{"count":5}',
      specVersion: 1,
    });
    assert.deepEqual((await things.get(old.id)).spec, { n: 5, tag: "from-1" });
    assert.deepEqual((await things.list()).map((o) => o.spec), [{ n: 5, tag: "from-1" }]);
  }, { register: (bh) => bh.register(Thing, noop, { migrator }) });
});

test("Client.listOwnedObjects returns this kind's children of an owner, ordered by id, pending ones included", async () => {
  await withHive(async ({ things, others }) => {
    const owner = await others.create("owner", { n: 0 });
    const c1 = await things.create("c1", { n: 1 }, { owner: owner.id });
    await others.create("c2", { n: 2 }, { owner: owner.id });
    await things.create("loose", { n: 3 });
    const c3 = await things.create("c3", { n: 4 }, { owner: owner.id });
    const elsewhere = await others.create("elsewhere", { n: 0 });
    await things.create("c4", { n: 5 }, { owner: elsewhere.id });
    await things.delete(c3.id);

    const children = await things.listOwnedObjects(owner.id);
    assert.deepEqual(children.map((o) => o.id), [c1.id, c3.id]);
    assert.equal(children[0].deletionRequestedAt, undefined);
    assert.ok(children[1].deletionRequestedAt instanceof Date);
    assert.throws(() => children[0].owner(), NotLoadedError);

    const loaded = await things.listOwnedObjects(owner.id, { load: ["owner"] });
    assert.deepEqual(loaded.map((o) => o.owner()), [ref(Other, owner.id), ref(Other, owner.id)]);

    assert.deepEqual(await things.listOwnedObjects(999_999), []);
    assert.deepEqual(await things.listOwnedObjects(c1.id), []);
  });
});

test("Client.listOwnedObjects skips a child that does not decode", async () => {
  await withHive(async ({ store, things, others }) => {
    const owner = await others.create("owner", { n: 0 });
    const good = await things.create("good", { n: 1 }, { owner: owner.id });
    const bad = await store.objects.create(Thing, { name: "bad", spec: '{"n":0}', specVersion: 0 });
    await store.edges.add({ fromId: bad.id, toId: owner.id, relation: "owned_by" });
    assert.deepEqual((await things.listOwnedObjects(owner.id)).map((o) => o.id), [good.id]);
  }, { register: (bh) => bh.register(Thing, noop, { migrator: brokenMigrator }) });
});

// ---------------------------------------------------------------------------
// delete / deleteByName

test("Client.delete marks the object and leaves it readable", async () => {
  await withHive(async ({ things }) => {
    const obj = await things.create("d", { n: 1 });
    const before = Date.now();
    assert.equal(await things.delete(obj.id), undefined);
    const marked = await things.get(obj.id);
    assert.ok(marked.deletionRequestedAt instanceof Date);
    assert.ok(marked.deletionRequestedAt.getTime() >= before);
    assert.ok(marked.resourceVersion > obj.resourceVersion);
    assert.equal(marked.generation, 1);
    assert.deepEqual(marked.spec, { n: 1 });
    assert.deepEqual((await things.list()).map((o) => o.id), [obj.id]);
  });
});

test("Client.delete is idempotent: a second delete writes nothing", async () => {
  await withHive(async ({ store, things }) => {
    const obj = await things.create("d", { n: 1 });
    await things.delete(obj.id);
    const marked = await things.get(obj.id);
    const rv = await store.getLatestResourceVersion();
    assert.equal(await things.delete(obj.id), undefined);
    assert.equal(await store.getLatestResourceVersion(), rv);
    assert.deepEqual(await things.get(obj.id), marked);
  });
});

test("Client.delete rejects NotFoundError for a missing id and for another kind's id, leaving that row alone", async () => {
  await withHive(async ({ things, others }) => {
    const other = await others.create("o", { n: 1 });
    await assert.rejects(things.delete(other.id), NotFoundError);
    await assert.rejects(things.delete(other.id + 1000), NotFoundError);
    const after = await others.get(other.id);
    assert.equal(after.deletionRequestedAt, undefined);
    assert.deepEqual(after, other);
  });
});

test("Client.deleteByName resolves undefined for an absent name and marks a live row", async () => {
  await withHive(async ({ store, things }) => {
    const rv = await store.getLatestResourceVersion();
    assert.equal(await things.deleteByName("absent"), undefined);
    assert.equal(await store.getLatestResourceVersion(), rv);
    const obj = await things.create("present", { n: 1 });
    assert.equal(await things.deleteByName("present"), undefined);
    assert.ok((await things.get(obj.id)).deletionRequestedAt instanceof Date);
  });
});

test("Client.deleteByName is idempotent: a second call writes nothing", async () => {
  await withHive(async ({ store, things }) => {
    const obj = await things.create("x", { n: 1 });
    await things.deleteByName("x");
    const marked = await things.get(obj.id);
    const rv = await store.getLatestResourceVersion();
    assert.equal(await things.deleteByName("x"), undefined);
    assert.equal(await store.getLatestResourceVersion(), rv);
    assert.deepEqual(await things.get(obj.id), marked);
  });
});

test("Client.deleteByName is kind-scoped: another kind's row holding the name is left alone", async () => {
  await withHive(async ({ things, others }) => {
    const other = await others.create("shared", { n: 1 });
    assert.equal(await things.deleteByName("shared"), undefined);
    assert.deepEqual(await others.get(other.id), other);
  });
});

// ---------------------------------------------------------------------------
// Lazy lookups

test("Client.getOwner returns the owner's ref, or undefined for an unowned or missing id", async () => {
  await withHive(async ({ things, others }) => {
    const owner = await others.create("owner", { n: 0 });
    const child = await things.create("child", { n: 1 }, { owner: owner.id });
    const loose = await things.create("loose", { n: 2 });
    assert.deepEqual(await things.getOwner(child.id), ref(Other, owner.id));
    assert.equal(await things.getOwner(loose.id), undefined);
    assert.equal(await things.getOwner(999_999), undefined);
  });
});

test("Client lazy lookups read a missing id as empty and do not check the kind", async () => {
  await withHive(async ({ bh, things, others }) => {
    for (const read of [things.listDependencies, things.listDependents, things.listOwned]) {
      assert.deepEqual(await read.call(things, 999_999), []);
    }
    // Edges among another kind's objects, read through this kind's client.
    const o1 = await others.create("o1", { n: 1 });
    const o2 = await others.create("o2", { n: 2 });
    const o3 = await others.create("o3", { n: 3 }, { owner: o1.id });
    const o4 = await others.create("o4", { n: 4 }, { owner: o1.id });
    const admin = bh.adminClient(Other);
    await admin.addDependency(o1.id, o3.id);
    await admin.addDependency(o1.id, o2.id);
    await admin.addDependency(o4.id, o2.id);
    await admin.addDependency(o3.id, o2.id);
    assert.deepEqual(await things.getOwner(o3.id), ref(Other, o1.id));
    assert.deepEqual(await things.listOwned(o1.id), [ref(Other, o3.id), ref(Other, o4.id)]);
    assert.deepEqual(await things.listDependencies(o1.id), [ref(Other, o2.id), ref(Other, o3.id)]);
    assert.deepEqual(await things.listDependents(o2.id), [
      ref(Other, o1.id),
      ref(Other, o3.id),
      ref(Other, o4.id),
    ]);
    assert.deepEqual(await things.listDependents(o1.id), []);
  });
});

// ---------------------------------------------------------------------------
// Events

test("Client.listEvents returns runs newest first with detail parsed, and applies filters", async () => {
  const clock = installFakeTime();
  try {
    await withHive(async ({ bh, things, others }) => {
      const obj = await things.create("e", { n: 1 });
      assert.deepEqual(await things.listEvents(obj.id), []);
      const admin = bh.adminClient(Thing);
      const t0 = Date.now();
      await admin.addEvent(obj.id, {
        category: "probe",
        type: "Warning",
        reason: "Failed",
        message: "timeout",
        detail: { code: 1 },
      });
      await clock.tickAsync(1_000);
      await admin.addEvent(obj.id, {
        category: "probe",
        type: "Warning",
        reason: "Failed",
        message: "refused",
        detail: { code: 2 },
      });
      await clock.tickAsync(1_000);
      await admin.addEvent(obj.id, { category: "probe", type: "Normal", reason: "Connected" });
      await clock.tickAsync(1_000);
      await admin.addEvent(obj.id, { type: "Normal", reason: "Created", detail: [1, "two"] });

      const runs = await things.listEvents(obj.id);
      assert.deepEqual(runs.map((e) => e.reason), ["Created", "Connected", "Failed"]);
      const [created, connected, failed] = runs;
      assert.equal(created.category, "");
      assert.deepEqual(created.detail, [1, "two"]);
      assert.deepEqual(eventDetail(created), [1, "two"]);
      assert.equal(connected.detail, undefined);
      assert.equal(connected.message, "");
      assert.equal(failed.objectId, obj.id);
      assert.equal(failed.category, "probe");
      assert.equal(failed.type, "Warning");
      assert.equal(failed.count, 2);
      assert.equal(failed.message, "refused");
      assert.deepEqual(failed.detail, { code: 2 });
      assert.equal(failed.firstAt.getTime(), t0);
      assert.equal(failed.lastAt.getTime(), t0 + 1_000);
      assert.ok(connected.resourceVersion > 0);

      const reasons = async (o: Parameters<typeof things.listEvents>[1]) =>
        (await things.listEvents(obj.id, o)).map((e) => e.reason);
      assert.deepEqual(await reasons({ category: "probe" }), ["Connected", "Failed"]);
      assert.deepEqual(await reasons({ category: "" }), ["Created"]);
      assert.deepEqual(await reasons({ type: "Warning" }), ["Failed"]);
      assert.deepEqual(await reasons({ reason: "Connected" }), ["Connected"]);
      assert.deepEqual(await reasons({ limit: 2 }), ["Created", "Connected"]);
      assert.deepEqual(await reasons({ since: new Date(t0 + 1_500) }), ["Created", "Connected"]);
      assert.deepEqual(await reasons({ category: "probe", type: "Normal" }), ["Connected"]);
      assert.deepEqual(await reasons({ category: "none" }), []);

      // Not kind-scoped: any object's log reads through any client.
      const other = await others.create("o", { n: 1 });
      await bh.adminClient(Other).addEvent(other.id, { type: "Normal", reason: "Elsewhere" });
      assert.deepEqual((await things.listEvents(other.id)).map((e) => e.reason), ["Elsewhere"]);
      await assert.rejects(things.listEvents(999_999), NotFoundError);
    });
  } finally {
    clock.uninstall();
  }
});

test("Client.getLatestEvent returns the newest run of a category, or undefined", async () => {
  await withHive(async ({ bh, things }) => {
    const obj = await things.create("e", { n: 1 });
    assert.equal(await things.getLatestEvent(obj.id, ""), undefined);
    const admin = bh.adminClient(Thing);
    await admin.addEvent(obj.id, { category: "probe", type: "Warning", reason: "Failed" });
    await admin.addEvent(obj.id, {
      category: "probe",
      type: "Normal",
      reason: "Connected",
      detail: { ms: 12 },
    });
    await admin.addEvent(obj.id, { type: "Normal", reason: "Created" });
    const probe = await things.getLatestEvent(obj.id, "probe");
    assert.equal(probe?.reason, "Connected");
    assert.deepEqual(probe?.detail, { ms: 12 });
    assert.equal((await things.getLatestEvent(obj.id, ""))?.reason, "Created");
    assert.equal(await things.getLatestEvent(obj.id, "none"), undefined);
    assert.equal(await things.getLatestEvent(999_999, ""), undefined);
  });
});

// ---------------------------------------------------------------------------
// Requeue and schedule

test("Client.requeue rejects NotFoundError for a missing or foreign id, and NoControllerError for a client-only kind", async () => {
  await withHive(async ({ things, others }) => {
    const thing = await things.create("t", { n: 1 });
    const other = await others.create("o", { n: 1 });
    await assert.rejects(things.requeue(999_999), NotFoundError);
    await assert.rejects(things.requeue(other.id), NotFoundError);
    await assert.rejects(others.requeue(other.id), NoControllerError);
    // The kind check comes first.
    await assert.rejects(others.requeue(thing.id), NotFoundError);
    await assert.rejects(others.requeue(999_999), NotFoundError);
    assert.equal(await things.requeue(thing.id), undefined);
  }, { register: (bh) => bh.register(Thing, noop) });
});

test("Client.requeue queues a pass now", async () => {
  const passes: number[] = [];
  await withRunning((bh) => {
    bh.register<Spec, Status>(Thing, (obj) => {
      passes.push(obj.id);
      return settled();
    });
  }, async ({ things, clock }) => {
    const obj = await things.create("r", { n: 1 });
    await until(clock, () => passes.length === 1, "the create's pass");
    await drain(clock);
    assert.equal(passes.length, 1);
    await things.requeue(obj.id);
    await until(clock, () => passes.length === 2, "the requeued pass");
    assert.deepEqual(passes, [obj.id, obj.id]);
  });
});

test("Client.requeue keeps the retry ladder unless resetBackoff is set", async () => {
  let passes = 0;
  await withRunning((bh) => {
    bh.register<Spec, Status>(Thing, () => {
      passes++;
      return fail(new Error("still broken"));
    });
  }, async ({ things, clock }) => {
    const obj = await things.create("r", { n: 1 });
    const delay = async () => {
      const { nextRequeueAt } = await things.getSchedule(obj.id);
      assert.ok(nextRequeueAt instanceof Date, "a retry is scheduled");
      return nextRequeueAt.getTime() - Date.now();
    };
    await until(clock, () => passes === 1, "the first pass");
    await drain(clock);
    assert.equal(await delay(), 1_000);
    await clock.tickAsync(1_000);
    await until(clock, () => passes === 2, "the first retry");
    await drain(clock);
    assert.equal(await delay(), 2_000);

    await things.requeue(obj.id);
    await until(clock, () => passes === 3, "the requeued pass");
    await drain(clock);
    assert.equal(await delay(), 4_000, "a plain requeue keeps the ladder");

    await things.requeue(obj.id, { resetBackoff: true });
    await until(clock, () => passes === 4, "the reset pass");
    await drain(clock);
    assert.equal(await delay(), 1_000, "resetBackoff starts the ladder over");
  });
});

test("Client.getSchedule reads nothing scheduled for unknown, foreign and client-only ids", async () => {
  await withHive(async ({ things, others }) => {
    const other = await others.create("o", { n: 1 });
    const thing = await things.create("t", { n: 1 });
    assert.deepEqual(await things.getSchedule(999_999), { nextRequeueAt: undefined });
    assert.deepEqual(await things.getSchedule(other.id), { nextRequeueAt: undefined });
    assert.deepEqual(await others.getSchedule(other.id), { nextRequeueAt: undefined });
    assert.deepEqual(await others.getSchedule(thing.id), { nextRequeueAt: undefined });
  }, { register: (bh) => bh.register(Thing, noop) });
});

test("Client.getSchedule reports a pending requeue delay", async () => {
  let passes = 0;
  await withRunning((bh) => {
    bh.register<Spec, Status>(Thing, () => {
      passes++;
      return settled().requeueAfter(5_000);
    });
  }, async ({ things, clock }) => {
    const obj = await things.create("s", { n: 1 });
    await until(clock, () => passes === 1, "the first pass");
    await drain(clock);
    const { nextRequeueAt } = await things.getSchedule(obj.id);
    assert.equal(nextRequeueAt?.getTime(), Date.now() + 5_000);
  });
});

// ---------------------------------------------------------------------------
// Pushes

test("Client.create pushes the new object's first reconcile", async () => {
  const seen: number[] = [];
  await withRunning((bh) => {
    bh.register<Spec, Status>(Thing, (obj) => {
      seen.push(obj.id);
      return settled();
    });
  }, async ({ things, clock }) => {
    const obj = await things.create("pushed", { n: 1 });
    await until(clock, () => seen.includes(obj.id), "a reconcile of the new object");
    const r = await things.getOrCreate("pushed-2", { n: 1 });
    await until(clock, () => seen.includes(r.object.id), "a reconcile of getOrCreate's row");
    const u = await things.createOrUpdate("pushed-3", { n: 1 });
    await until(clock, () => seen.includes(u.object.id), "a reconcile of createOrUpdate's row");
  });
});

test("Client.update pushes a reconcile for a real change and none for identical bytes", async () => {
  const seen: number[] = [];
  await withRunning((bh) => {
    bh.register<Spec, Status>(Thing, (obj) => {
      seen.push(obj.spec.n);
      return settled();
    });
  }, async ({ things, clock }) => {
    const obj = await things.create("u", { n: 1 });
    await until(clock, () => seen.length === 1, "the create's pass");
    await drain(clock);
    await things.update(obj.id, { n: 1 });
    await things.updateByName("u", { n: 1 });
    await things.createOrUpdate("u", { n: 1 });
    await things.getOrCreate("u", { n: 5 });
    await drain(clock);
    assert.deepEqual(seen, [1]);
    await things.update(obj.id, { n: 2 });
    await until(clock, () => seen.length === 2, "the update's pass");
    assert.deepEqual(seen, [1, 2]);
    await things.updateByName("u", { n: 3 });
    await until(clock, () => seen.length === 3, "the updateByName's pass");
    assert.deepEqual(seen, [1, 2, 3]);
  });
});

test("Client.delete pushes a reconcile of the object it marked, and a repeat pushes nothing", async () => {
  const seen: { id: number; deleting: boolean }[] = [];
  await withRunning((bh) => {
    bh.register<Spec, Status>(Thing, (obj) => {
      seen.push({ id: obj.id, deleting: obj.deletionRequestedAt !== undefined });
      return settled();
    });
  }, async ({ things, clock }) => {
    const obj = await things.create("d", { n: 1 }, { finalizers: ["x.dev/hold"] });
    await until(clock, () => seen.length === 1, "the create's pass");
    await drain(clock);
    await things.delete(obj.id);
    await until(clock, () => seen.length === 2, "the delete's pass");
    assert.deepEqual(seen[1], { id: obj.id, deleting: true });
    await clock.tickAsync(2_000); // past the floor
    await things.delete(obj.id);
    await things.deleteByName("d");
    await drain(clock);
    assert.equal(seen.length, 2);
  });
});

test("Client.create under a deletion-pending owner pushes the owner, and under a live owner does not", async () => {
  const Parent: GroupKind = { group: "test.beehive.dev", kind: "Parent" };
  const parentPasses: boolean[] = [];
  await withRunning((bh) => {
    bh.register<Spec, Status>(Parent, (obj) => {
      parentPasses.push(obj.deletionRequestedAt !== undefined);
      return settled();
    });
  }, async ({ bh, things, clock }) => {
    const parents = bh.client<Spec, Status>(Parent);
    const live = await parents.create("live", { n: 1 });
    const pending = await parents.create("pending", { n: 2 }, { finalizers: ["x.dev/hold"] });
    await until(clock, () => parentPasses.length === 2, "the parents' first passes");
    await parents.delete(pending.id);
    await until(clock, () => parentPasses.length === 3, "the deleted parent's pass");
    await clock.tickAsync(2_000); // past the floor
    await drain(clock);
    assert.equal(parentPasses.length, 3);

    await things.create("under-live", { n: 1 }, { owner: live.id });
    await drain(clock);
    assert.equal(parentPasses.length, 3, "a live owner is not pushed");

    await things.create("under-pending", { n: 1 }, { owner: pending.id });
    await until(clock, () => parentPasses.length === 4, "the pending owner's pass");
    assert.equal(parentPasses[3], true);
  });
});

test("Client.delete pushes the deletion-pending target its mark unblocks", async () => {
  const Target: GroupKind = { group: "test.beehive.dev", kind: "Target" };
  const targetPasses: number[] = [];
  await withRunning((bh) => {
    bh.register<Spec, Status>(Target, (obj) => {
      targetPasses.push(obj.id);
      return settled();
    });
  }, async ({ bh, things, clock }) => {
    const targets = bh.client<Spec, Status>(Target);
    const target = await targets.create("t", { n: 1 }, { finalizers: ["x.dev/hold"] });
    const referrer = await things.create("r", { n: 1 });
    await bh.adminClient(Thing).addDependency(referrer.id, target.id);
    await until(clock, () => targetPasses.length === 1, "the target's first pass");
    await targets.delete(target.id);
    await until(clock, () => targetPasses.length === 2, "the target's delete pass");
    await clock.tickAsync(2_000); // past the floor
    await drain(clock);
    assert.equal(targetPasses.length, 2);

    await things.delete(referrer.id);
    await until(clock, () => targetPasses.length === 3, "the unblocked target's pass");
    assert.equal(targetPasses[2], target.id);
  });
});

// ---------------------------------------------------------------------------
// Lifecycle

test("Client calls work on a Beehive that was never started", async () => {
  await withHive(async ({ store, things }) => {
    const obj = await things.create("n", { n: 1 }, { finalizers: ["x.dev/f"] });
    await things.update(obj.id, { n: 2 });
    assert.equal((await things.get(obj.id)).generation, 2);
    const owed = async () => (await store.objects.getForReconcile(obj.id)).object.reconcileOwed;
    const before = await owed();
    await things.requeue(obj.id);
    assert.equal(await owed(), before + 1, "requeue stamped the object owed a pass");
    await things.delete(obj.id);
    assert.equal((await things.list()).length, 1);
  }, { register: (bh) => bh.register(Thing, noop) });
});

test("Client calls work on a stopped Beehive while the store is open", async () => {
  const reconciled = Promise.withResolvers<void>();
  await withHive(async ({ bh, things }) => {
    const first = await things.create("first", { n: 0 });
    const stop = await bh.start();
    // The startup owed pass finds the unsettled object: the loops are up.
    await reconciled.promise;
    await stop();
    assert.deepEqual((await things.get(first.id)).spec, { n: 0 });
    const obj = await things.create("s", { n: 1 }, { finalizers: ["x.dev/f"] });
    const r = await things.getOrCreate("s", { n: 9 });
    assert.equal(r.created, false);
    await things.updateByName("s", { n: 2 });
    assert.equal((await things.getByName("s")).generation, 2);
    await things.requeue(obj.id);
    await things.deleteByName("s");
    assert.ok((await things.get(obj.id)).deletionRequestedAt instanceof Date);
    assert.deepEqual(await things.listOwned(obj.id), []);
    assert.deepEqual((await things.list()).map((o) => o.name), ["first", "s"]);
  }, {
    register: (bh) =>
      bh.register(Thing, () => {
        reconciled.resolve();
        return settled();
      }),
  });
});

test("Client calls reject with StoreClosedError once the store is closed", async () => {
  await withHive(async ({ store, things }) => {
    const obj = await things.create("c", { n: 1 });
    await store.close();
    const calls: [string, () => Promise<unknown>][] = [
      ["create", () => things.create("new", { n: 1 })],
      ["getOrCreate", () => things.getOrCreate("c", { n: 1 })],
      ["createOrUpdate", () => things.createOrUpdate("c", { n: 2 })],
      ["update", () => things.update(obj.id, { n: 2 })],
      ["updateByName", () => things.updateByName("c", { n: 2 })],
      ["get", () => things.get(obj.id)],
      ["getByName", () => things.getByName("c")],
      ["list", () => things.list()],
      ["listOwnedObjects", () => things.listOwnedObjects(obj.id)],
      ["delete", () => things.delete(obj.id)],
      ["deleteByName", () => things.deleteByName("c")],
      ["getOwner", () => things.getOwner(obj.id)],
      ["listDependencies", () => things.listDependencies(obj.id)],
      ["listDependents", () => things.listDependents(obj.id)],
      ["listOwned", () => things.listOwned(obj.id)],
      ["listEvents", () => things.listEvents(obj.id)],
      ["getLatestEvent", () => things.getLatestEvent(obj.id, "")],
      ["requeue", () => things.requeue(obj.id)],
    ];
    for (const [method, call] of calls) {
      await assert.rejects(call(), StoreClosedError, method);
    }
  }, { register: (bh) => bh.register(Thing, noop) });
});

// ---------------------------------------------------------------------------
// Argument checking

test("Client async members reject (never throw synchronously) on malformed ids", async () => {
  await withHive(async ({ things }) => {
    const obj = await things.create("kept", { n: 1 });
    for (const bad of [0, -1, 1.5, "1", NaN, Infinity, 2 ** 53, undefined, null, 1n]) {
      const id = bad as unknown as number;
      const calls: [string, () => Promise<unknown>][] = [
        ["update", () => things.update(id, { n: 1 })],
        ["get", () => things.get(id)],
        ["delete", () => things.delete(id)],
        ["listOwnedObjects", () => things.listOwnedObjects(id)],
        ["getOwner", () => things.getOwner(id)],
        ["listDependencies", () => things.listDependencies(id)],
        ["listDependents", () => things.listDependents(id)],
        ["listOwned", () => things.listOwned(id)],
        ["listEvents", () => things.listEvents(id)],
        ["getLatestEvent", () => things.getLatestEvent(id, "")],
        ["requeue", () => things.requeue(id)],
        ["getSchedule", () => things.getSchedule(id)],
      ];
      if (bad !== undefined) {
        // (An undefined owner means "no owner".)
        calls.push(
          ["create with owner", () => things.create("new", { n: 1 }, { owner: id })],
          ["getOrCreate with owner", () => things.getOrCreate("new", { n: 1 }, { owner: id })],
          [
            "createOrUpdate with owner",
            () => things.createOrUpdate("new", { n: 1 }, { owner: id }),
          ],
        );
      }
      for (const [method, call] of calls) {
        let p: Promise<unknown>;
        try {
          p = call();
        } catch (error) {
          assert.fail(`${method}(${String(bad)}) threw synchronously: ${error}`);
        }
        assert.ok(p instanceof Promise, method);
        await assert.rejects(p, TypeError, `${method}(${String(bad)})`);
      }
    }
    assert.deepEqual((await things.list()).map((o) => o.id), [obj.id]);
  }, { register: (bh) => bh.register(Thing, noop) });
});

test("Client async members reject (never throw synchronously) on malformed names and options", async () => {
  await withHive(async ({ things }) => {
    const obj = await things.create("kept", { n: 1 });
    const notString = 42 as unknown as string;
    const calls: [string, () => Promise<unknown>, new (...a: never[]) => Error][] = [
      ["create(42)", () => things.create(notString, { n: 1 }), TypeError],
      ["getOrCreate(42)", () => things.getOrCreate(notString, { n: 1 }), TypeError],
      ["createOrUpdate(42)", () => things.createOrUpdate(notString, { n: 1 }), TypeError],
      ["updateByName(42)", () => things.updateByName(notString, { n: 1 }), TypeError],
      ["getByName(42)", () => things.getByName(notString), TypeError],
      ["deleteByName(42)", () => things.deleteByName(notString), TypeError],
      ["create options", () => things.create("x", { n: 1 }, "opts" as never), TypeError],
      ["onCreate", () => things.create("x", { n: 1 }, { onCreate: 1 as never }), TypeError],
      ["get options", () => things.get(obj.id, 5 as never), TypeError],
      ["list load", () => things.list({ load: "owner" as never }), TypeError],
      ["listEvents options", () => things.listEvents(obj.id, "probe" as never), TypeError],
      ["listEvents limit", () => things.listEvents(obj.id, { limit: -1 }), TypeError],
      ["listEvents since", () => things.listEvents(obj.id, { since: "x" as never }), TypeError],
      ["getLatestEvent category", () => things.getLatestEvent(obj.id, 5 as never), TypeError],
      ["requeue options", () => things.requeue(obj.id, "now" as never), TypeError],
      ["deleteByName('')", () => things.deleteByName(""), InvalidNameError],
      [
        "finalizers",
        () => things.create("x", { n: 1 }, { finalizers: "f" as never }),
        InvalidOptionError,
      ],
    ];
    for (const [what, call, type] of calls) {
      let p: Promise<unknown>;
      try {
        p = call();
      } catch (error) {
        assert.fail(`${what} threw synchronously: ${error}`);
      }
      await assert.rejects(p, type, what);
    }
    assert.deepEqual((await things.list()).map((o) => o.id), [obj.id]);
  }, { register: (bh) => bh.register(Thing, noop) });
});
