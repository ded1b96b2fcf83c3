/**
 * Store contract cases: labels and annotations on the objects family —
 * written on create and by `updateMetadata`, read back on every read, and
 * selected by label requirements on `list`, `listByIncomingEdge` and
 * `objectWrites.snapshot`.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  ConflictError,
  InvalidMetadataError,
  InvalidOptionError,
  NotFoundError,
  WrongKindError,
} from "../../src/model/errors.ts";
import type { LabelRequirement, ObjectRef, Store } from "../../src/store.ts";
import { type ContractCase, footprint, Gadget, logCount, make, ref, Widget } from "./harness.ts";

async function labelled(
  s: Store,
  name: string,
  labels: Record<string, string>,
  gk = Widget,
): Promise<ObjectRef> {
  return ref(gk, (await s.objects.create(gk, { name, spec: "{}", labels })).id);
}

async function names(s: Store, labelSelector: LabelRequirement[], gk = Widget) {
  return (await s.objects.list(gk, { labelSelector })).map((o) => o.name);
}

const eq = (key: string, value: string): LabelRequirement => ({
  key,
  operator: "In",
  values: [value],
});

export const labelsCases: ContractCase[] = [
  {
    reopens: true,
    name:
      "a label set another open dropped and made again is found anew: creates through both opens stay selectable",
    async fn(h) {
      const path = h.tempPath("x.db");
      const first = await h.openPath(path);
      const second = await h.openPath(path);
      const web = { app: "web", tier: "front" };
      const a = await labelled(first, "a", web);
      // The second open deletes the set's only object (dropping the set), then makes it again.
      await second.objects.delete(a.id);
      await labelled(second, "b", web);
      await labelled(first, "c", web);
      await first.objects.create(Widget, { name: "d", spec: "{}", labels: { ...web } });
      for (const s of [first, second]) {
        assert.deepEqual(await names(s, [eq("app", "web")]), ["b", "c", "d"]);
        assert.deepEqual(await names(s, [eq("tier", "front")]), ["b", "c", "d"]);
      }
    },
  },
  {
    name:
      "a label set made inside a rolled-back write is made again by the next create: it stays selectable",
    async fn(h) {
      const s = await h.open();
      const web = { app: "web" };
      await assert.rejects(
        s.within(async (tx) => {
          await labelled(tx, "a", web);
          throw new Error("roll back");
        }),
        /roll back/,
      );
      await assert.rejects(
        s.within(async (tx) => {
          await tx.within(async (inner) => {
            await labelled(inner, "b", web);
            throw new Error("unwind");
          }).catch(() => {});
          await labelled(tx, "c", web);
          await tx.objects.delete((await labelled(tx, "d", { app: "db" })).id);
          await labelled(tx, "e", { app: "db" });
          throw new Error("roll back");
        }),
        /roll back/,
      );
      await labelled(s, "f", web);
      await labelled(s, "g", { app: "db" });
      assert.deepEqual(await names(s, [eq("app", "web")]), ["f"]);
      assert.deepEqual(await names(s, [eq("app", "db")]), ["g"]);
    },
  },
  {
    name:
      "create stores labels and annotations frozen with sorted keys, and every read returns them; none read as {}",
    async fn(h) {
      const s = await h.open();
      const o = await s.objects.create(Widget, {
        name: "a",
        spec: "{}",
        labels: { tier: "web", "app.kubernetes.io/name": "shop", empty: "" },
        annotations: { "example.com/note": "any text at all: ünïcode, spaces", b: "" },
      });
      assert.deepEqual(Object.keys(o.labels), ["app.kubernetes.io/name", "empty", "tier"]);
      assert.deepEqual(o.annotations, {
        b: "",
        "example.com/note": "any text at all: ünïcode, spaces",
      });
      assert.ok(Object.isFrozen(o.labels) && Object.isFrozen(o.annotations));
      const got = await s.objects.get(o.id);
      assert.deepEqual(got, o);
      assert.deepEqual(Object.keys(got.labels), Object.keys(o.labels));
      assert.ok(Object.isFrozen(got.labels) && Object.isFrozen(got.annotations));
      assert.deepEqual((await s.objects.getByName({ ...Widget, name: "a" })).labels, o.labels);
      assert.deepEqual((await s.objects.getMeta(o.id)).annotations, o.annotations);
      assert.deepEqual((await s.objects.getForReconcile(o.id)).object.labels, o.labels);
      assert.deepEqual((await s.objects.listByIds(Widget, [o.id]))[0].labels, o.labels);
      assert.deepEqual((await s.objectWrites.snapshot(Widget)).items[0].annotations, o.annotations);
      const bare = await s.objects.create(Widget, { name: "bare", spec: "{}" });
      assert.deepEqual(bare.labels, {});
      assert.deepEqual((await s.objects.get(bare.id)).annotations, {});
      assert.ok(Object.isFrozen((await s.objects.get(bare.id)).labels));
    },
  },
  {
    name:
      "create refuses a malformed label key or value, or annotations above 256 KiB, with InvalidMetadataError naming the key, writing nothing",
    async fn(h) {
      const s = await h.open();
      const before = await s.getLatestResourceVersion();
      const bad: [Record<string, unknown>, string, string][] = [
        [{ labels: { "-app": "x" } }, "labels", "-app"],
        [{ labels: { "Example.com/app": "x" } }, "labels", "Example.com/app"],
        [{ labels: { "/app": "x" } }, "labels", "/app"],
        [{ labels: { "a/b/c": "x" } }, "labels", "a/b/c"],
        [{ labels: { ["k".repeat(64)]: "x" } }, "labels", "k".repeat(64)],
        [{ labels: { [`${"p".repeat(254)}/k`]: "x" } }, "labels", `${"p".repeat(254)}/k`],
        [{ labels: { app: "web app" } }, "labels", "app"],
        [{ labels: { app: "v".repeat(64) } }, "labels", "app"],
        [{ labels: { app: "-web" } }, "labels", "app"],
        [{ labels: { app: 5 } }, "labels", "app"],
        [{ annotations: { "bad key": "x" } }, "annotations", "bad key"],
        [{ annotations: { note: "a\u0000b" } }, "annotations", "note"],
        [{ annotations: { note: null } }, "annotations", "note"],
        [{ annotations: { big: "x".repeat(256 * 1024) } }, "annotations", ""],
        [{ labels: ["app"] }, "labels", ""],
      ];
      for (const [input, field, key] of bad) {
        await assert.rejects(
          s.objects.create(Widget, { name: "a", spec: "{}", ...input }),
          (e: unknown) =>
            e instanceof InvalidMetadataError && e.field === field && e.key === key &&
            (key === "" || e.message.includes(JSON.stringify(key).slice(0, 20))),
          JSON.stringify(input).slice(0, 80),
        );
      }
      assert.equal(await s.getLatestResourceVersion(), before);
      assert.deepEqual(await s.objects.list(Widget), []);
      // At the bound exactly is fine: keys and values count in UTF-8 bytes.
      const fits = "x".repeat(256 * 1024 - "big".length);
      const o = await s.objects.create(Widget, {
        name: "a",
        spec: "{}",
        annotations: { big: fits },
      });
      assert.equal(o.annotations.big.length, fits.length);
    },
  },
  {
    name:
      "updateMetadata merges (a string sets, null removes, unnamed keys stay), bumps resourceVersion and logs an update, never generation",
    async fn(h) {
      const s = await h.open();
      const a = await labelled(s, "a", { app: "web", tier: "front" });
      const before = await s.objects.get(a.id);
      const logged = await logCount(s, Widget);
      const r = await s.objects.updateMetadata(a, {
        labels: { tier: null, env: "prod" },
        annotations: { "example.com/owner": "team-a" },
      });
      assert.equal(r.changed, true);
      assert.deepEqual(r.object.labels, { app: "web", env: "prod" });
      assert.deepEqual(Object.keys(r.object.labels), ["app", "env"]);
      assert.deepEqual(r.object.annotations, { "example.com/owner": "team-a" });
      assert.equal(r.object.generation, before.generation);
      assert.ok(r.object.resourceVersion > before.resourceVersion);
      assert.deepEqual(r.object, await s.objects.get(a.id));
      const writes =
        (await s.objectWrites.listSince(Widget, { after: before.resourceVersion, limit: 9 }))
          .writes;
      assert.deepEqual(writes.map((w) => [w.id, w.op, w.resourceVersion]), [
        [a.id, "update", r.object.resourceVersion],
      ]);
      assert.equal(await logCount(s, Widget), logged + 1);
      // Removing a key that is not there, and setting what is there, change nothing.
      const same = await s.objects.updateMetadata(a, {
        labels: { app: "web", gone: null },
        annotations: {},
      });
      assert.equal(same.changed, false);
      assert.equal(same.object.resourceVersion, r.object.resourceVersion);
      assert.equal(await logCount(s, Widget), logged + 1);
      const cleared = await s.objects.updateMetadata(a, { labels: { app: null, env: null } });
      assert.deepEqual(cleared.object.labels, {});
      assert.deepEqual(cleared.object.annotations, { "example.com/owner": "team-a" });
    },
  },
  {
    name:
      "updateSpec with labels and annotations writes spec and metadata as one version and one update entry",
    async fn(h) {
      const s = await h.open();
      const a = await labelled(s, "a", { app: "web", tier: "front" });
      const before = await s.objects.get(a.id);
      const logged = await logCount(s, Widget);
      const r = await s.objects.updateSpec(a, {
        spec: '{"v":2}',
        labels: { tier: null, env: "prod" },
        annotations: { note: "x" },
      });
      assert.equal(r.changed, true);
      assert.equal(r.specChanged, true);
      assert.equal(r.object.generation, before.generation + 1);
      assert.deepEqual(r.object.labels, { app: "web", env: "prod" });
      assert.deepEqual(r.object.annotations, { note: "x" });
      assert.deepEqual(r.object, await s.objects.get(a.id));
      const writes =
        (await s.objectWrites.listSince(Widget, { after: before.resourceVersion, limit: 9 }))
          .writes;
      assert.deepEqual(writes.map((w) => [w.id, w.op, w.resourceVersion]), [
        [a.id, "update", r.object.resourceVersion],
      ]);
      assert.equal(await logCount(s, Widget), logged + 1);
      assert.deepEqual(await names(s, [eq("env", "prod")]), ["a"]);
      assert.deepEqual(await names(s, [eq("tier", "front")]), []);
      // The same spec with new labels: one metadata write, the generation unmoved.
      const relabelled = await s.objects.updateSpecByName({ ...Widget, name: "a" }, {
        spec: '{"v":2}',
        labels: { env: "dev" },
      });
      assert.equal(relabelled.changed, true);
      assert.equal(relabelled.specChanged, false);
      assert.equal(relabelled.object.generation, r.object.generation);
      assert.deepEqual(relabelled.object.labels, { app: "web", env: "dev" });
      assert.equal(await logCount(s, Widget), logged + 2);
      // Nothing new: nothing written.
      const same = await s.objects.updateSpec(a, { spec: '{"v":2}', labels: { env: "dev" } });
      assert.equal(same.changed, false);
      assert.equal(same.specChanged, false);
      assert.equal(same.object.resourceVersion, relabelled.object.resourceVersion);
      assert.equal(await logCount(s, Widget), logged + 2);
      // A refused label writes neither half.
      await assert.rejects(
        s.objects.updateSpec(a, { spec: '{"v":3}', labels: { "bad key": "x" } }),
        (e: unknown) => e instanceof InvalidMetadataError && e.key === "bad key",
      );
      assert.equal((await s.objects.get(a.id)).spec, '{"v":2}');
    },
  },
  {
    name:
      "updateMetadata checks NotFound and WrongKind, then the precondition (ConflictError carrying the row's), then the merged size, writing nothing when refused",
    async fn(h) {
      const s = await h.open();
      const a = await labelled(s, "a", { app: "web" });
      const g = await make(s, Gadget, "g");
      await assert.rejects(
        s.objects.updateMetadata({ ...Widget, id: 9_999 }, { labels: { x: "y" } }),
        NotFoundError,
      );
      await assert.rejects(
        s.objects.updateMetadata({ ...Widget, id: g.id }, { labels: { x: "y" } }),
        WrongKindError,
      );
      const rv = (await s.objects.get(a.id)).resourceVersion;
      await s.objects.updateSpec(a, { spec: '{"n":1}' });
      const before = await footprint(s, a);
      await assert.rejects(
        s.objects.updateMetadata(a, { labels: { x: "y" }, resourceVersion: rv }),
        (e: unknown) =>
          e instanceof ConflictError && e.resourceVersion === before.object.resourceVersion,
      );
      // Each half fits alone; merged they do not.
      const half = "x".repeat(150 * 1024);
      await s.objects.updateMetadata(a, { annotations: { one: half } });
      const grown = await footprint(s, a);
      await assert.rejects(
        s.objects.updateMetadata(a, { annotations: { two: half } }),
        (e: unknown) => e instanceof InvalidMetadataError && e.field === "annotations",
      );
      await assert.rejects(
        s.objects.updateMetadata(a, { labels: { "bad key": "x" } }),
        (e: unknown) => e instanceof InvalidMetadataError && e.key === "bad key",
      );
      await assert.rejects(
        s.objects.updateMetadata(a, { labels: { app: "bad value" } }),
        (e: unknown) => e instanceof InvalidMetadataError && e.key === "app",
      );
      assert.deepEqual(await footprint(s, a), grown);
      const ok = await s.objects.updateMetadata(a, {
        labels: { x: "y" },
        resourceVersion: grown.object.resourceVersion,
      });
      assert.equal(ok.changed, true);
    },
  },
  {
    name:
      "list with a labelSelector: In, NotIn (absent counts), Exists, DoesNotExist, all ANDed, only the kind's rows, in id order",
    async fn(h) {
      const s = await h.open();
      await labelled(s, "web-prod", { app: "web", env: "prod" });
      await labelled(s, "web-dev", { app: "web", env: "dev" });
      await labelled(s, "db-prod", { app: "db", env: "prod", legacy: "true" });
      await labelled(s, "bare", {});
      await labelled(s, "other-kind", { app: "web", env: "prod" }, Gadget);
      assert.deepEqual(await names(s, [eq("app", "web")]), ["web-prod", "web-dev"]);
      assert.deepEqual(await names(s, [eq("app", "web")], Gadget), ["other-kind"]);
      assert.deepEqual(
        await names(s, [{ key: "env", operator: "In", values: ["prod", "staging"] }]),
        ["web-prod", "db-prod"],
      );
      assert.deepEqual(
        await names(s, [{ key: "env", operator: "NotIn", values: ["prod"] }]),
        ["web-dev", "bare"],
      );
      assert.deepEqual(
        await names(s, [{ key: "legacy", operator: "Exists", values: [] }]),
        ["db-prod"],
      );
      assert.deepEqual(
        await names(s, [{ key: "legacy", operator: "DoesNotExist", values: [] }]),
        ["web-prod", "web-dev", "bare"],
      );
      assert.deepEqual(
        await names(s, [
          { key: "env", operator: "Exists", values: [] },
          eq("env", "prod"),
          { key: "app", operator: "NotIn", values: ["db"] },
        ]),
        ["web-prod"],
      );
      assert.deepEqual(await names(s, [eq("app", "web"), eq("env", "qa")]), []);
      assert.deepEqual(await names(s, [eq("nothing", "here")]), []);
      assert.deepEqual(await names(s, []), ["web-prod", "web-dev", "db-prod", "bare"]);
      // Pages of a selection: ids above after, at most limit.
      const all = await s.objects.list(Widget, { labelSelector: [eq("app", "web")] });
      const page = await s.objects.list(Widget, {
        labelSelector: [{ key: "app", operator: "Exists", values: [] }],
        after: all[0].id,
        limit: 1,
      });
      assert.deepEqual(page.map((o) => o.name), ["web-dev"]);
    },
  },
  {
    name:
      "a selector's requirements on prefixed and dotted keys hold both as the driving one and as a filter",
    async fn(h) {
      const s = await h.open();
      const k = "example.com/tier.name";
      await labelled(s, "a", { app: "web", [k]: "front" });
      await labelled(s, "b", { app: "web", [k]: "back" });
      await labelled(s, "c", { app: "web" });
      await labelled(s, "d", { [k]: "front" });
      assert.deepEqual(await names(s, [eq(k, "front")]), ["a", "d"]);
      assert.deepEqual(await names(s, [eq("app", "web"), eq(k, "front")]), ["a"]);
      assert.deepEqual(
        await names(s, [eq("app", "web"), { key: k, operator: "NotIn", values: ["front", "x"] }]),
        ["b", "c"],
      );
      assert.deepEqual(
        await names(s, [eq("app", "web"), { key: k, operator: "Exists", values: [] }]),
        ["a", "b"],
      );
      assert.deepEqual(
        await names(s, [eq("app", "web"), { key: k, operator: "DoesNotExist", values: [] }]),
        ["c"],
      );
      assert.deepEqual(
        await names(s, [{ key: k, operator: "In", values: ["back", "front"] }, eq("app", "web")]),
        ["a", "b"],
      );
      assert.deepEqual(
        await names(s, [{ key: "app", operator: "NotIn", values: ["web"] }]),
        ["d"],
      );
    },
  },
  {
    name:
      "a selector follows metadata writes: a changed or removed label stops matching, a new one starts",
    async fn(h) {
      const s = await h.open();
      const a = await labelled(s, "a", { app: "web", tier: "front" });
      const b = await labelled(s, "b", {});
      await s.objects.updateMetadata(a, { labels: { app: "api", tier: null } });
      await s.objects.updateMetadata(b, { labels: { app: "web", tier: "front" } });
      assert.deepEqual(await names(s, [eq("app", "web")]), ["b"]);
      assert.deepEqual(await names(s, [eq("app", "api")]), ["a"]);
      assert.deepEqual(
        await names(s, [{ key: "tier", operator: "Exists", values: [] }]),
        ["b"],
      );
      // Annotations are not labels: a selector never sees them.
      await s.objects.updateMetadata(a, { annotations: { tier: "front" } });
      assert.deepEqual(
        await names(s, [{ key: "tier", operator: "Exists", values: [] }]),
        ["b"],
      );
    },
  },
  {
    name:
      "listByIncomingEdge and snapshot take a labelSelector; a collected row leaves the selection and its delete image keeps its labels",
    async fn(h) {
      const s = await h.open();
      const owner = await make(s, Gadget, "owner");
      const a = await labelled(s, "a", { role: "worker" });
      const b = await labelled(s, "b", { role: "leader" });
      await labelled(s, "c", { role: "worker" });
      for (const child of [a, b]) {
        await s.edges.add({ fromId: child.id, toId: owner.id, relation: "owned_by" });
      }
      const owned = await s.objects.listByIncomingEdge(
        Widget,
        { toId: owner.id, relation: "owned_by" },
        { labelSelector: [eq("role", "worker")] },
      );
      assert.deepEqual(owned.map((o) => o.name), ["a"]);
      const snap = await s.objectWrites.snapshot(Widget, { labelSelector: [eq("role", "worker")] });
      assert.deepEqual(snap.items.map((o) => o.name), ["a", "c"]);
      assert.equal(snap.resourceVersion, await s.objectWrites.maxVersion(Widget));
      await s.edges.delete({ fromId: a.id, toId: owner.id, relation: "owned_by" });
      await s.objects.delete(a.id);
      assert.deepEqual(await names(s, [eq("role", "worker")]), ["c"]);
      const { writes } = await s.objectWrites.listSince(Widget, { after: 0, limit: 100 });
      const gone = writes.find((w) => w.op === "delete" && w.id === a.id)!;
      assert.deepEqual(gone.final!.labels, { role: "worker" });
      // A new row may take the freed name; it does not inherit the old labels.
      const again = await s.objects.create(Widget, { name: "a", spec: "{}" });
      assert.deepEqual(again.labels, {});
      assert.deepEqual(await names(s, [eq("role", "worker")]), ["c"]);
    },
  },
  {
    name: "a malformed labelSelector rejects with InvalidOptionError before reading",
    async fn(h) {
      const s = await h.open();
      await labelled(s, "a", { app: "web" });
      const bad: unknown[] = [
        "app=web",
        [{ key: "bad key", operator: "Exists", values: [] }],
        [{ key: "app", operator: "Equals", values: ["web"] }],
        [{ key: "app", operator: "In", values: [] }],
        [{ key: "app", operator: "Exists", values: ["x"] }],
        [{ key: "app", operator: "In", values: ["bad value"] }],
        [{ key: "app", operator: "In", values: [5] }],
        [null],
      ];
      for (const labelSelector of bad) {
        await assert.rejects(
          s.objects.list(Widget, { labelSelector } as never),
          InvalidOptionError,
          JSON.stringify(labelSelector),
        );
        await assert.rejects(
          s.objectWrites.snapshot(Widget, { labelSelector } as never),
          InvalidOptionError,
        );
      }
    },
  },
];
