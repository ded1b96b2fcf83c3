/**
 * Namespaces through the clients: `bh.client(Kind, { namespace })` scopes
 * name-keyed calls, lists and watches to one namespace; without it a
 * namespaced kind's reads span every namespace and its name-keyed calls
 * reject; a cluster-scoped kind refuses a namespace; an owner is in its
 * child's namespace or cluster-scoped; a pass's clients work in its object's
 * namespace.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  Beehive,
  defineKind,
  InvalidNameError,
  InvalidOptionError,
  NameTakenError,
  NotFoundError,
  settled,
} from "../mod.ts";
import { test } from "./_test.ts";
import { openTestStore } from "./_sqlite_driver.ts";
import { withBeehive } from "./_plain.ts";

const App = defineKind<{ image: string }, never>({
  group: "test.beehive.dev",
  kind: "App",
  namespaced: true,
});
const Node = defineKind<{ zone: string }, never>({ group: "test.beehive.dev", kind: "Node" });

test("Client with a namespace creates in it, and a name is unique per namespace", async () => {
  await withBeehive(undefined, async (bh) => {
    const a = await bh.client(App, { namespace: "team-a" }).create("web", { image: "a" });
    const b = await bh.client(App, { namespace: "team-b" }).create("web", { image: "b" });
    assert.deepEqual([a.namespace, b.namespace], ["team-a", "team-b"]);
    assert.notEqual(a.id, b.id);
    await assert.rejects(
      bh.client(App, { namespace: "team-a" }).create("web", { image: "c" }),
      NameTakenError,
    );
    const n = await bh.client(Node).create("n1", { zone: "z" });
    assert.equal(n.namespace, "");
  });
});

test("Client with a namespace reads, updates and deletes by name only in its namespace", async () => {
  await withBeehive(undefined, async (bh) => {
    const teamA = bh.client(App, { namespace: "team-a" });
    const teamB = bh.client(App, { namespace: "team-b" });
    const a = await teamA.create("web", { image: "a" });
    const b = await teamB.create("web", { image: "b" });
    assert.equal((await teamB.getByName("web")).id, b.id);
    await teamA.updateByName("web", { image: "a2" });
    assert.equal((await teamB.getByName("web")).spec.image, "b");
    const r = await teamB.getOrCreate("web", { image: "ignored" });
    assert.deepEqual([r.created, r.object.id], [false, b.id]);
    const u = await teamA.createOrUpdate("web", { image: "a3" });
    assert.deepEqual([u.created, u.object.id, u.object.spec.image], [false, a.id, "a3"]);
    await assert.rejects(bh.client(App, { namespace: "team-c" }).getByName("web"), NotFoundError);
    await teamB.deleteByName("web");
    assert.ok((await teamB.get(b.id)).deletionRequestedAt !== undefined);
    assert.equal((await teamA.get(a.id)).deletionRequestedAt, undefined);
  });
});

test("Client without a namespace lists a namespaced kind across every namespace; with one, only it", async () => {
  await withBeehive(undefined, async (bh) => {
    const a1 = await bh.client(App, { namespace: "team-a" }).create("one", { image: "" }, {
      labels: { app: "web" },
    });
    const b1 = await bh.client(App, { namespace: "team-b" }).create("one", { image: "" }, {
      labels: { app: "web" },
    });
    const a2 = await bh.client(App, { namespace: "team-a" }).create("two", { image: "" });
    const ids = (xs: { id: number }[]) => xs.map((x) => x.id);
    assert.deepEqual(ids(await bh.client(App).list()), [a1.id, b1.id, a2.id]);
    assert.deepEqual(ids(await bh.client(App, { namespace: "team-a" }).list()), [a1.id, a2.id]);
    assert.deepEqual(
      ids(await bh.client(App, { namespace: "team-b" }).list({ labelSelector: "app=web" })),
      [b1.id],
    );
    assert.deepEqual(ids(await bh.client(App, { namespace: "team-a" }).list({ limit: 1 })), [
      a1.id,
    ]);
    // Reads by id span namespaces without one; with one, another namespace's id is not found.
    assert.equal((await bh.client(App).get(b1.id)).namespace, "team-b");
    await assert.rejects(
      bh.client(App, { namespace: "team-a" }).get(b1.id),
      (e: unknown) => e instanceof NotFoundError && /namespace "team-b"/.test(String(e)),
    );
  });
});

test("Client without a namespace refuses name-keyed calls of a namespaced kind with InvalidOptionError, writing nothing", async () => {
  await withBeehive(undefined, async (bh, store) => {
    const apps = bh.client(App);
    const latest = await store.getLatestResourceVersion();
    const calls = [
      () => apps.create("web", { image: "" }),
      () => apps.getOrCreate("web", { image: "" }),
      () => apps.createOrUpdate("web", { image: "" }),
      () => apps.updateByName("web", { image: "" }),
      () => apps.deleteByName("web"),
      () => apps.getByName("web"),
    ];
    for (const call of calls) {
      await assert.rejects(
        call(),
        (e: unknown) => e instanceof InvalidOptionError && /namespace/.test(String(e)),
      );
    }
    assert.equal(await store.getLatestResourceVersion(), latest);
  });
});

test("Client of a namespace refuses writes and event reads by id of another namespace's object, writing nothing", async () => {
  await withBeehive(undefined, async (bh, store) => {
    const b = await bh.client(App, { namespace: "team-b" }).create("web", { image: "b" });
    const teamA = bh.client(App, { namespace: "team-a" });
    const latest = await store.getLatestResourceVersion();
    await assert.rejects(teamA.update(b.id, { image: "x" }), NotFoundError);
    await assert.rejects(teamA.updateMetadata(b.id, { labels: { x: "y" } }), NotFoundError);
    await assert.rejects(teamA.delete(b.id), NotFoundError);
    await assert.rejects(teamA.listEvents(b.id), NotFoundError);
    await assert.rejects(teamA.getLatestEvent(b.id, ""), NotFoundError);
    assert.equal(await store.getLatestResourceVersion(), latest);
    const read = await bh.client(App).get(b.id);
    assert.deepEqual([read.spec.image, read.labels, read.deletionRequestedAt], [
      "b",
      {},
      undefined,
    ]);
  });
});

test("Client of a namespace refuses relation reads and event watches of another namespace's object as not found", async () => {
  await withBeehive(undefined, async (bh) => {
    bh.register(App, () => settled());
    const teamB = bh.client(App, { namespace: "team-b" });
    const owner = await teamB.create("web", { image: "b" });
    await teamB.create("worker", { image: "b" }, { owner: owner.id });
    const teamA = bh.client(App, { namespace: "team-a" });
    await assert.rejects(teamA.getOwner(owner.id), NotFoundError);
    await assert.rejects(teamA.listOwned(owner.id), NotFoundError);
    await assert.rejects(teamA.listDependencies(owner.id), NotFoundError);
    await assert.rejects(teamA.listDependents(owner.id), NotFoundError);
    await assert.rejects(teamA.watchEvents(owner.id), NotFoundError);
    assert.equal((await teamB.listOwned(owner.id)).length, 1);
  });
});

test("Client of a namespace refuses the schedule of another namespace's object as not found, and reads an unknown id's as nothing scheduled", async () => {
  await withBeehive(undefined, async (bh) => {
    bh.register(App, () => settled());
    const b = await bh.client(App, { namespace: "team-b" }).create("web", { image: "b" });
    const teamA = bh.client(App, { namespace: "team-a" });
    await assert.rejects(teamA.getSchedule(b.id), NotFoundError);
    await assert.rejects(teamA.watchSchedule(b.id), NotFoundError);
    assert.deepEqual(await teamA.getSchedule(999_999), { nextRequeueAt: undefined });
    const unknown = await teamA.watchSchedule(999_999);
    unknown.close();
    const own = await bh.client(App, { namespace: "team-b" }).watchSchedule(b.id);
    own.close();
    assert.ok("nextRequeueAt" in await bh.client(App).getSchedule(b.id));
  });
});

test("bh.client refuses a namespace for a cluster-scoped kind and a malformed namespace with InvalidOptionError", async () => {
  await withBeehive(undefined, async (bh, store) => {
    assert.throws(() => bh.client(Node, { namespace: "team-a" }), InvalidOptionError);
    for (const namespace of ["Team-A", "-a", "a.b", "x".repeat(64), "", 7]) {
      assert.throws(
        () => bh.client(App, { namespace: namespace as string }),
        (e: unknown) => e instanceof InvalidOptionError && /namespace/.test(String(e)),
        String(namespace),
      );
    }
    assert.throws(() => bh.client(App, "team-a" as never), InvalidOptionError);
    // A plain { group, kind } learns its scope from the store: none stored is cluster-scoped.
    const plain = bh.client({ group: "test.beehive.dev", kind: "Plain" }, { namespace: "a" });
    await assert.rejects(plain.create("x", {}), InvalidOptionError);
    await assert.rejects(plain.list(), InvalidOptionError);
    assert.equal(await store.getLatestResourceVersion(), 0);
  });
});

test("a plain { group, kind } client follows the stored definition's scope", async () => {
  const store = await openTestStore(":memory:");
  try {
    await (await new Beehive(store, { kinds: [App] }).start())();
    const bh = new Beehive(store);
    const plain = { group: App.group, kind: App.kind };
    await assert.rejects(bh.client(plain).create("web", {}), InvalidOptionError);
    const o = await bh.client(plain, { namespace: "team-a" }).create("web", { image: "x" });
    assert.equal(o.namespace, "team-a");
  } finally {
    await store.close();
  }
});

test("Client.create refuses an owner in another namespace with InvalidOptionError, creating nothing; same or cluster-scoped is taken", async () => {
  await withBeehive(undefined, async (bh, store) => {
    const parent = await bh.client(App, { namespace: "team-a" }).create("parent", { image: "" });
    const node = await bh.client(Node).create("n1", { zone: "" });
    const teamB = bh.client(App, { namespace: "team-b" });
    await assert.rejects(
      teamB.create("child", { image: "" }, { owner: parent.id }),
      (e: unknown) => e instanceof InvalidOptionError && /owner/.test(String(e)),
    );
    await assert.rejects(teamB.getByName("child"), NotFoundError);
    // A cluster-scoped child cannot have a namespaced owner.
    await assert.rejects(
      bh.client(Node).create("n2", { zone: "" }, { owner: parent.id }),
      InvalidOptionError,
    );
    const latest = await store.getLatestResourceVersion();
    const same = await bh.client(App, { namespace: "team-a" }).create("child", { image: "" }, {
      owner: parent.id,
    });
    const cluster = await teamB.create("child", { image: "" }, { owner: node.id });
    assert.ok(await store.getLatestResourceVersion() > latest);
    assert.equal(await bh.client(App).getOwner(same.id).then((r) => r?.id), parent.id);
    assert.equal(await bh.client(App).getOwner(cluster.id).then((r) => r?.id), node.id);
  });
});

test("Client.watchList with a namespace streams only that namespace's objects", async () => {
  await withBeehive(undefined, async (bh) => {
    const teamA = bh.client(App, { namespace: "team-a" });
    const teamB = bh.client(App, { namespace: "team-b" });
    const before = await teamA.create("old", { image: "" });
    await teamB.create("old", { image: "" });
    const controller = new AbortController();
    const stream = await teamA.watchList({ signal: controller.signal });
    try {
      assert.deepEqual(stream.objects.map((o) => o.id), [before.id]);
      await teamB.create("new", { image: "" });
      const mine = await teamA.create("new", { image: "" });
      const it = stream[Symbol.asyncIterator]();
      const first = await it.next();
      assert.equal(first.value.id, mine.id);
      assert.equal(first.value.object?.namespace, "team-a");
    } finally {
      controller.abort();
    }
  });
});

test("a pass's transaction client creates a namespaced child in its object's namespace", async () => {
  const store = await openTestStore(":memory:");
  try {
    const bh = new Beehive(store);
    const Part = defineKind<{ of: string }, never>({
      group: "test.beehive.dev",
      kind: "Part",
      namespaced: true,
    });
    const made = Promise.withResolvers<void>();
    bh.register(App, async (app, cc) => {
      await cc.within(async (tx) => {
        await tx.client(Part).getOrCreate(`${app.name}-part`, { of: app.name }, {
          owner: app.id,
        });
        // A cluster-scoped kind ignores the inherited namespace.
        await tx.client(Node).getOrCreate(`${app.name}-node`, { zone: app.namespace });
      });
      made.resolve();
      return settled();
    });
    const stop = await bh.start();
    try {
      await bh.client(App, { namespace: "team-a" }).create("web", { image: "" });
      await made.promise;
    } finally {
      await stop();
    }
    const part = await bh.client(Part, { namespace: "team-a" }).getByName("web-part");
    assert.equal(part.namespace, "team-a");
    assert.equal((await bh.client(Node).getByName("web-node")).namespace, "");
  } finally {
    await store.close();
  }
});

test("Client.listEvents: an event carries its object's namespace", async () => {
  const store = await openTestStore(":memory:");
  try {
    const bh = new Beehive(store);
    const seen = Promise.withResolvers<void>();
    bh.register(App, async (_app, cc) => {
      await cc.addEvent({ type: "Normal", reason: "Seen" });
      seen.resolve();
      return settled();
    });
    const stop = await bh.start();
    let id: number;
    try {
      id = (await bh.client(App, { namespace: "team-a" }).create("web", { image: "" })).id;
      await seen.promise;
    } finally {
      await stop();
    }
    const events = await bh.client(App, { namespace: "team-a" }).listEvents(id);
    assert.deepEqual(events.map((e) => [e.reason, e.namespace]), [["Seen", "team-a"]]);
  } finally {
    await store.close();
  }
});

test("a store refuses a malformed namespace with InvalidNameError", async () => {
  await withBeehive(undefined, async (_bh, store) => {
    await assert.rejects(
      store.objects.create(App, { name: "x", spec: "{}", namespace: "Bad" }),
      InvalidNameError,
    );
  });
});
