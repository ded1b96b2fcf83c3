/**
 * Labels and annotations through the clients: written on create, merged by
 * `updateMetadata` (client and controller side), selected by `list` and
 * `listOwnedObjects`; a metadata write moves `resourceVersion`, not
 * `generation`, and owes no pass.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ConflictError, InvalidMetadataError, InvalidOptionError, NotFoundError } from "../mod.ts";
import type { CreateOptions } from "../mod.ts";
import { checkMetadata, MAX_REMEMBERED } from "../src/model/labels.ts";
import { Other, withHarness } from "./_beehive_harness.ts";
import { test } from "./_test.ts";

test("Client.create stores labels and annotations: the object carries them frozen, keys sorted, {} when none", async () => {
  await withHarness({}, async (h) => {
    const a = await h.things.create("a", {}, {
      labels: { tier: "web", app: "shop" },
      annotations: { "example.com/note": "hello" },
    });
    assert.deepEqual(Object.keys(a.labels), ["app", "tier"]);
    assert.deepEqual(a.annotations, { "example.com/note": "hello" });
    assert.ok(Object.isFrozen(a.labels) && Object.isFrozen(a.annotations));
    const read = await h.things.getByName("a");
    assert.deepEqual([read.labels, read.annotations], [a.labels, a.annotations]);
    const bare = await h.things.create("bare", {});
    assert.deepEqual([bare.labels, bare.annotations], [{}, {}]);
    assert.throws(() => {
      (bare.labels as Record<string, string>).x = "y";
    }, TypeError);
  });
});

test("objects read with the same labels share one frozen labels map, which stays correct as labels change", async () => {
  await withHarness({}, async (h) => {
    await h.things.create("a", {}, { labels: { app: "shop", tier: "web" } });
    await h.things.create("b", {}, { labels: { tier: "web", app: "shop" } });
    const [a, b] = [await h.things.getByName("a"), await h.things.getByName("b")];
    assert.equal(a.labels, b.labels);
    assert.ok(Object.isFrozen(a.labels));
    await h.things.updateMetadata(b.id, { labels: { tier: "db" } });
    assert.deepEqual((await h.things.getByName("b")).labels, { app: "shop", tier: "db" });
    assert.deepEqual((await h.things.getByName("a")).labels, { app: "shop", tier: "web" });
  });
});

test("checkMetadata passes a map it returned straight through, and still checks any other map", () => {
  const checked = checkMetadata({ tier: "web", app: "shop" }, "labels");
  assert.equal(checkMetadata(checked, "labels"), checked);
  assert.throws(
    () => checkMetadata(Object.freeze({ "bad key": "x" }), "labels"),
    InvalidMetadataError,
  );
  // Annotations allow values labels do not: a checked annotations map is not taken as labels.
  const note = checkMetadata({ "example.com/note": "hello, world" }, "annotations");
  assert.throws(() => checkMetadata(note, "labels"), InvalidMetadataError);
});

test("checkMetadata remembers well-formed keys and label values without ever letting a malformed one through, past its bound too", () => {
  const good = checkMetadata({ app: "web", "example.com/team": "shop" }, "labels");
  assert.deepEqual(good, { app: "web", "example.com/team": "shop" });
  // An annotation's value is never remembered as a label value.
  checkMetadata({ app: "hello, world" }, "annotations");
  assert.throws(() => checkMetadata({ app: "hello, world" }, "labels"), InvalidMetadataError);
  for (let i = 0; i < MAX_REMEMBERED + 10; i++) {
    checkMetadata({ [`k${i}`]: `v${i}` }, "labels");
    assert.throws(() => checkMetadata({ [`k${i}`]: `v${i}!` }, "labels"), InvalidMetadataError);
    assert.throws(() => checkMetadata({ [`k${i}/`]: `v${i}` }, "labels"), InvalidMetadataError);
  }
  assert.deepEqual(checkMetadata({ app: "web" }, "labels"), { app: "web" });
  assert.throws(() => checkMetadata({ "-app": "web" }, "labels"), InvalidMetadataError);
});

test("Client.create rejects a malformed label or annotation with InvalidMetadataError naming the key, creating nothing", async () => {
  await withHarness({}, async (h) => {
    const latest = await h.store.getLatestResourceVersion();
    const bad: CreateOptions[] = [
      { labels: { "bad key": "x" } },
      { labels: { app: "not a value" } },
      { annotations: { "-x": "y" } },
      { annotations: { big: "x".repeat(256 * 1024) } },
    ];
    for (const options of bad) {
      await assert.rejects(h.things.create("a", {}, options), InvalidMetadataError);
      await assert.rejects(h.things.getOrCreate("a", {}, options), InvalidMetadataError);
      await assert.rejects(h.things.createOrUpdate("a", {}, options), InvalidMetadataError);
    }
    await assert.rejects(
      h.things.create("a", {}, { labels: { "bad key": "x" } }),
      (e: unknown) =>
        e instanceof InvalidMetadataError && e.key === "bad key" && e.field === "labels" &&
        /label "bad key"/.test(e.message),
    );
    assert.equal(await h.store.getLatestResourceVersion(), latest);
    assert.deepEqual(await h.things.list(), []);
  });
});

test("Client.getOrCreate checks labels even when the name is held, and leaves a found object's labels alone", async () => {
  await withHarness({}, async (h) => {
    await h.things.create("a", {}, { labels: { app: "web" } });
    await assert.rejects(
      h.things.getOrCreate("a", {}, { labels: { "bad key": "x" } }),
      InvalidMetadataError,
    );
    const r = await h.things.getOrCreate("a", {}, { labels: { app: "db" } });
    assert.equal(r.created, false);
    assert.deepEqual(r.object.labels, { app: "web" });
  });
});

test("Client.createOrUpdate merges labels and annotations into an object it finds; a metadata-only change owes no pass", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const a = await h.create("a", { n: 1 }, {});
    await h.bh.client(Other).create("other", {});
    await h.things.updateMetadata(a.id, { labels: { keep: "yes" } });
    await h.flush();
    const passes = h.passes.length;
    const r = await h.things.createOrUpdate("a", { n: 1 }, {
      labels: { app: "web" },
      annotations: { note: "n" },
    });
    assert.equal(r.created, false);
    assert.deepEqual(r.object.labels, { app: "web", keep: "yes" });
    assert.deepEqual(r.object.annotations, { note: "n" });
    assert.equal(r.object.generation, 1);
    await h.flush();
    assert.equal(h.passes.length, passes);
    // A spec change with labels: one pass, for the spec.
    const moved = await h.things.createOrUpdate("a", { n: 2 }, { labels: { app: "api" } });
    assert.deepEqual([moved.object.generation, moved.object.labels.app], [2, "api"]);
    await h.flush();
    assert.equal(h.passes.length, passes + 1);
    const created = await h.things.createOrUpdate("b", { n: 1 }, { labels: { app: "web" } });
    assert.deepEqual([created.created, created.object.labels], [true, { app: "web" }]);
  });
});

test("Client.updateMetadata merges (null removes), bumps resourceVersion, never generation, and owes no pass", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const a = await h.create("a", { n: 1 }, {});
    const passes = h.passes.length;
    const updated = await h.things.updateMetadata(a.id, {
      labels: { app: "web", tier: "front" },
      annotations: { "example.com/note": "x" },
    });
    assert.deepEqual(updated.labels, { app: "web", tier: "front" });
    assert.ok(updated.resourceVersion > a.resourceVersion);
    assert.equal(updated.generation, a.generation);
    const again = await h.things.updateMetadata(a.id, { labels: { tier: null } }, {
      resourceVersion: updated.resourceVersion,
    });
    assert.deepEqual(again.labels, { app: "web" });
    assert.deepEqual(again.annotations, { "example.com/note": "x" });
    await assert.rejects(
      h.things.updateMetadata(a.id, { labels: { x: "y" } }, {
        resourceVersion: updated.resourceVersion,
      }),
      (e: unknown) => e instanceof ConflictError && e.resourceVersion === again.resourceVersion,
    );
    // Nothing to change writes nothing.
    const same = await h.things.updateMetadata(a.id, { labels: { app: "web" } });
    assert.equal(same.resourceVersion, again.resourceVersion);
    await h.flush();
    assert.equal(h.passes.length, passes);
    const other = await h.bh.client(Other).create("o", {});
    await assert.rejects(h.things.updateMetadata(other.id, { labels: {} }), NotFoundError);
    await assert.rejects(h.things.updateMetadata(a.id, null as never), TypeError);
    await assert.rejects(
      h.things.updateMetadata(a.id, { labels: { app: "bad value" } }),
      (e: unknown) => e instanceof InvalidMetadataError && e.key === "app",
    );
    assert.equal((await h.things.get(a.id)).resourceVersion, again.resourceVersion);
  });
});

test("ControllerClient.updateMetadata merges the pass's object's labels without a pass of its own", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const a = await h.create("a", {}, {});
    await h.things.updateMetadata(a.id, { labels: { app: "web" } });
    await h.pass(a.id, async (_obj, cc) => {
      await cc.updateMetadata({ labels: { phase: "ready" }, annotations: { note: "seen" } });
      await cc.updateMetadata({ labels: { phase: "ready" } });
      await assert.rejects(cc.updateMetadata({ labels: { "bad key": "x" } }), InvalidMetadataError);
      await assert.rejects(cc.updateMetadata(5 as never), TypeError);
    });
    const passes = h.passes.length;
    await h.flush();
    await h.tick(60_000);
    assert.equal(h.passes.length, passes);
    const read = await h.things.get(a.id);
    assert.deepEqual(read.labels, { app: "web", phase: "ready" });
    assert.deepEqual(read.annotations, { note: "seen" });
    assert.equal(read.generation, 1);
  });
});

test("Client.list and listOwnedObjects take a labelSelector in either spelling, and page through the selection", async () => {
  await withHarness({}, async (h) => {
    const owner = await h.bh.client(Other).create("owner", {});
    const make = (name: string, labels: Record<string, string>, owned = false) =>
      h.things.create(name, {}, { labels, ...(owned ? { owner: owner.id } : {}) });
    await make("web-prod", { app: "web", env: "prod" }, true);
    await make("web-dev", { app: "web", env: "dev" }, true);
    await make("db-prod", { app: "db", env: "prod", legacy: "true" });
    await make("bare", {}, true);
    const names = async (labelSelector: unknown) =>
      (await h.things.list({ labelSelector } as never)).map((o) => o.name);
    assert.deepEqual(await names("app=web"), ["web-prod", "web-dev"]);
    assert.deepEqual(await names("app==web,env!=dev"), ["web-prod"]);
    assert.deepEqual(await names("env in (prod, qa)"), ["web-prod", "db-prod"]);
    assert.deepEqual(await names("env notin (prod)"), ["web-dev", "bare"]);
    assert.deepEqual(await names("legacy"), ["db-prod"]);
    assert.deepEqual(await names("!legacy,env"), ["web-prod", "web-dev"]);
    assert.deepEqual(await names(""), ["web-prod", "web-dev", "db-prod", "bare"]);
    assert.deepEqual(
      await names({
        matchLabels: { env: "prod" },
        matchExpressions: [{ key: "app", operator: "NotIn", values: ["db"] }],
      }),
      ["web-prod"],
    );
    const first = await h.things.list({ labelSelector: "env", limit: 1 });
    const second = await h.things.list({ labelSelector: "env", limit: 5, after: first[0].id });
    assert.deepEqual([...first, ...second].map((o) => o.name), ["web-prod", "web-dev", "db-prod"]);
    const owned = await h.things.listOwnedObjects(owner.id, { labelSelector: "app=web" });
    assert.deepEqual(owned.map((o) => o.name), ["web-prod", "web-dev"]);
    for (const bad of ["app in web", "app=web,", 5, { matchLabels: { "bad key": "x" } }]) {
      await assert.rejects(h.things.list({ labelSelector: bad } as never), InvalidOptionError);
      await assert.rejects(
        h.things.listOwnedObjects(owner.id, { labelSelector: bad } as never),
        InvalidOptionError,
      );
    }
  });
});

test("Client.update and updateByName with labels and annotations write them with the spec as one version", async () => {
  await withHarness({}, async (h) => {
    const a = await h.things.create("a", { n: 1 }, { labels: { app: "shop", tier: "web" } });
    const b = await h.things.update(a.id, { n: 2 }, {
      labels: { tier: null, env: "prod" },
      annotations: { note: "x" },
      resourceVersion: a.resourceVersion,
    });
    assert.deepEqual(b.labels, { app: "shop", env: "prod" });
    assert.deepEqual(b.annotations, { note: "x" });
    assert.equal(b.generation, a.generation + 1);
    const { writes } = await h.store.objectWrites.listSince(h.things.kind, {
      after: a.resourceVersion,
      limit: 10,
    });
    assert.deepEqual(writes.map((w) => w.resourceVersion), [b.resourceVersion]);
    // The same spec with new labels: the generation stays, no pass is owed.
    const c = await h.things.updateByName("a", { n: 2 }, { labels: { env: "dev" } });
    assert.equal(c.generation, b.generation);
    assert.ok(c.resourceVersion > b.resourceVersion);
    assert.deepEqual(c.labels, { app: "shop", env: "dev" });
    await assert.rejects(
      h.things.update(a.id, { n: 3 }, { labels: { "bad key": "x" } }),
      InvalidMetadataError,
    );
    assert.deepEqual((await h.things.get(a.id)).spec, { n: 2 });
  });
});
