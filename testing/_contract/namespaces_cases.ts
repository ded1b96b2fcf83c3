/**
 * Store contract cases: namespaces on the objects family — a name is unique
 * per (group, kind, namespace), name-keyed calls and pages take a namespace,
 * the namespace is on every read and in the write log's images, and an owner
 * is in its child's namespace or cluster-scoped.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  InvalidNameError,
  InvalidOptionError,
  NameTakenError,
  NotFoundError,
} from "../../src/model/errors.ts";
import type { Store } from "../../src/store.ts";
import { type ContractCase, footprint, Gadget, logCount, ref, Widget } from "./harness.ts";

function inNs(s: Store, namespace: string, name: string, labels?: Record<string, string>) {
  return s.objects.create(Widget, { name, namespace, spec: `{"ns":"${namespace}"}`, labels });
}

export const namespacesCases: ContractCase[] = [
  {
    name: "create without a namespace stores the cluster scope, and every read returns it as ''",
    async fn(h) {
      const s = await h.open();
      const o = await s.objects.create(Widget, { name: "a", spec: "{}" });
      assert.equal(o.namespace, "");
      assert.equal((await s.objects.get(o.id)).namespace, "");
      assert.equal((await s.objects.getMeta(o.id)).namespace, "");
      assert.equal((await s.objects.getByName({ ...Widget, name: "a" })).namespace, "");
      assert.deepEqual((await s.objects.list(Widget)).map((x) => x.namespace), [""]);
    },
  },
  {
    name: "a name is unique per namespace: the same name in two namespaces is two objects",
    async fn(h) {
      const s = await h.open();
      const a = await inNs(s, "team-a", "web");
      const b = await inNs(s, "team-b", "web");
      const c = await s.objects.create(Widget, { name: "web", spec: "{}" });
      assert.equal(new Set([a.id, b.id, c.id]).size, 3);
      assert.deepEqual([a.namespace, b.namespace, c.namespace], ["team-a", "team-b", ""]);
      await assert.rejects(inNs(s, "team-a", "web"), (e: Error) => {
        assert.ok(e instanceof NameTakenError);
        assert.match(e.message, /"web" in namespace "team-a"/);
        return true;
      });
    },
  },
  {
    name:
      "getByName, getMetaByName, updateSpecByName and createByName find a name only in its namespace",
    async fn(h) {
      const s = await h.open();
      const a = await inNs(s, "team-a", "web");
      const b = await inNs(s, "team-b", "web");
      const got = await s.objects.getByName({ ...Widget, name: "web", namespace: "team-b" });
      assert.equal(got.id, b.id);
      assert.equal(
        (await s.objects.getMetaByName({ ...Widget, name: "web", namespace: "team-a" })).id,
        a.id,
      );
      await assert.rejects(s.objects.getByName({ ...Widget, name: "web" }), NotFoundError);
      await assert.rejects(
        s.objects.getMetaByName({ ...Widget, name: "web", namespace: "team-c" }),
        (e: Error) => e instanceof NotFoundError && /namespace "team-c"/.test(e.message),
      );
      const r = await s.objects.updateSpecByName(
        { ...Widget, name: "web", namespace: "team-a" },
        { spec: '{"v":2}' },
      );
      assert.equal(r.object.id, a.id);
      assert.equal((await s.objects.get(b.id)).spec, '{"ns":"team-b"}');
      const d = await s.deletionRequests.createByName({
        ...Widget,
        name: "web",
        namespace: "team-b",
      });
      assert.equal(d.id, b.id);
      assert.equal((await s.objects.get(a.id)).deletionRequestedAt, undefined);
    },
  },
  {
    name:
      "list and snapshot take one namespace or span them all; a selector and a page apply within it",
    async fn(h) {
      const s = await h.open();
      const a1 = await inNs(s, "team-a", "one", { app: "web" });
      const b1 = await inNs(s, "team-b", "one", { app: "web" });
      const a2 = await inNs(s, "team-a", "two");
      const c = await s.objects.create(Widget, { name: "top", spec: "{}" });
      const ids = (xs: { id: number }[]) => xs.map((x) => x.id);
      assert.deepEqual(ids(await s.objects.list(Widget)), [a1.id, b1.id, a2.id, c.id]);
      assert.deepEqual(ids(await s.objects.list(Widget, { namespace: "team-a" })), [
        a1.id,
        a2.id,
      ]);
      assert.deepEqual(ids(await s.objects.list(Widget, { namespace: "" })), [c.id]);
      assert.deepEqual(
        ids(await s.objects.list(Widget, { namespace: "team-a", after: a1.id, limit: 1 })),
        [a2.id],
      );
      const web = [{ key: "app", operator: "In" as const, values: ["web"] }];
      assert.deepEqual(
        ids(await s.objects.list(Widget, { namespace: "team-b", labelSelector: web })),
        [b1.id],
      );
      assert.deepEqual(
        ids((await s.objectWrites.snapshot(Widget, { namespace: "team-a" })).items),
        [a1.id, a2.id],
      );
      assert.deepEqual(
        ids(
          (await s.objectWrites.snapshot(Widget, { namespace: "team-a", labelSelector: web }))
            .items,
        ),
        [a1.id],
      );
    },
  },
  {
    name: "listByIncomingEdge with a namespace lists only the children in it",
    async fn(h) {
      const s = await h.open();
      const owner = await s.objects.create(Widget, { name: "owner", spec: "{}" });
      const a = await inNs(s, "team-a", "x");
      const b = await inNs(s, "team-b", "x");
      for (const child of [a, b]) {
        await s.edges.add({ fromId: child.id, toId: owner.id, relation: "owned_by" });
      }
      const edge = { toId: owner.id, relation: "owned_by" as const };
      assert.deepEqual(
        (await s.objects.listByIncomingEdge(Widget, edge, { namespace: "team-b" })).map((o) =>
          o.id
        ),
        [b.id],
      );
      assert.equal((await s.objects.listByIncomingEdge(Widget, edge)).length, 2);
    },
  },
  {
    name:
      "an owner in another namespace is refused with InvalidOptionError; same or cluster-scoped is taken",
    async fn(h) {
      const s = await h.open();
      const a = await inNs(s, "team-a", "parent");
      const a2 = await inNs(s, "team-a", "child");
      const b = await inNs(s, "team-b", "child");
      const top = await s.objects.create(Widget, { name: "top", spec: "{}" });
      await s.edges.add({ fromId: a2.id, toId: a.id, relation: "owned_by" });
      await s.edges.add({ fromId: b.id, toId: top.id, relation: "owned_by" });
      const before = await footprint(s, ref(Widget, b.id));
      await assert.rejects(
        s.edges.add({ fromId: b.id, toId: a.id, relation: "owned_by" }),
        (e: Error) => e instanceof InvalidOptionError && /namespace "team-b"/.test(e.message),
      );
      // A cluster-scoped child may not be owned by a namespaced object.
      await assert.rejects(
        s.edges.add({ fromId: top.id, toId: a.id, relation: "owned_by" }),
        InvalidOptionError,
      );
      assert.deepEqual(await footprint(s, ref(Widget, b.id)), before);
      assert.deepEqual(
        (await s.edges.listOutgoing(b.id, "owned_by")).map((r) => r.id),
        [top.id],
      );
      // depends_on crosses namespaces freely.
      await s.edges.add({ fromId: b.id, toId: a.id, relation: "depends_on" });
    },
  },
  {
    name: "a malformed namespace is refused with InvalidNameError before anything is written",
    async fn(h) {
      const s = await h.open();
      const bad = [
        "Team-A",
        "-a",
        "a-",
        "a.b",
        "a_b",
        "x".repeat(64),
        "ü",
        "a\u0000",
      ];
      const logged = await logCount(s, Widget);
      for (const namespace of bad) {
        await assert.rejects(
          s.objects.create(Widget, { name: "a", spec: "{}", namespace }),
          (e: Error) => e instanceof InvalidNameError && /namespace/.test(e.message),
          namespace,
        );
        await assert.rejects(
          s.objects.getByName({ ...Widget, name: "a", namespace }),
          InvalidNameError,
        );
        await assert.rejects(s.objects.list(Widget, { namespace }), InvalidNameError);
      }
      await assert.rejects(
        s.objects.create(Widget, {
          name: "a",
          spec: "{}",
          namespace: 7 as unknown as string,
        }),
        InvalidNameError,
      );
      assert.equal(await logCount(s, Widget), logged);
      assert.deepEqual(await s.objects.list(Widget), []);
      // 63 characters is the bound, and taken.
      const edge = "a".repeat(63);
      assert.equal((await inNs(s, edge, "a")).namespace, edge);
    },
  },
  {
    name: "a delete entry's row image carries the namespace",
    async fn(h) {
      const s = await h.open();
      const o = await inNs(s, "team-a", "gone");
      await s.objects.delete(o.id);
      const { writes } = await s.objectWrites.listSince(Widget, { after: 0, limit: 10 });
      const entry = writes.find((w) => w.op === "delete")!;
      assert.equal(entry.final?.namespace, "team-a");
    },
  },
  {
    name: "an event run carries its object's namespace on every read",
    async fn(h) {
      const s = await h.open();
      const o = await inNs(s, "team-a", "web");
      const top = await s.objects.create(Widget, { name: "top", spec: "{}" });
      for (const x of [o, top]) {
        await s.events.add(ref(Widget, x.id), { type: "Normal", reason: "Made" });
      }
      assert.deepEqual((await s.events.list(o.id)).map((e) => e.namespace), ["team-a"]);
      assert.equal((await s.events.getLatest(o.id, ""))?.namespace, "team-a");
      assert.deepEqual(
        (await s.events.listSince(o.id, { after: 0, limit: 10 })).events.map((e) => e.namespace),
        ["team-a"],
      );
      assert.deepEqual((await s.events.snapshot(o.id)).items.map((e) => e.namespace), [
        "team-a",
      ]);
      assert.deepEqual((await s.events.list(top.id)).map((e) => e.namespace), [""]);
    },
  },
  {
    name:
      "listNamespaces lists the namespaces holding a kind's objects, each once, in code-unit order, without the cluster scope",
    async fn(h) {
      const s = await h.open();
      assert.deepEqual(await s.objects.listNamespaces(Widget), []);
      await s.objects.create(Widget, { name: "top", spec: "{}" });
      assert.deepEqual(await s.objects.listNamespaces(Widget), []);
      for (const [ns, name] of [["team-b", "a"], ["team-a", "a"], ["team-b", "b"], ["a-z", "a"]]) {
        await inNs(s, ns, name);
      }
      const gone = await inNs(s, "zz", "gone");
      await s.objects.create(Gadget, { name: "g", spec: "{}", namespace: "other" });
      assert.deepEqual(await s.objects.listNamespaces(Widget), ["a-z", "team-a", "team-b", "zz"]);
      await s.objects.delete(gone.id);
      assert.deepEqual(await s.objects.listNamespaces(Widget), ["a-z", "team-a", "team-b"]);
      assert.deepEqual(await s.objects.listNamespaces(Gadget), ["other"]);
      await assert.rejects(s.objects.listNamespaces({ group: "", kind: "" }), InvalidOptionError);
    },
  },
];
