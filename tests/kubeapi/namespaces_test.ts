/**
 * kubeApiHandler over a kind defined `namespaced: true`: its objects are
 * served under `/apis/<group>/v1/namespaces/<ns>/<plural>`, listed across
 * namespaces at the cluster-wide path, refused by name outside a namespace,
 * their events served in their namespace, and a token's namespaces scope them.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Beehive, defineKind, NotFoundError, type Store } from "../../mod.ts";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import { installFakeTime } from "../_fake_time.ts";
import { STORED_SCHEMA_TTL } from "../../src/engine/_stored_schemas.ts";
import {
  call,
  Cluster as ClusterGK,
  CLUSTERS,
  eventsOf,
  TABLE,
  withStore,
} from "./_kubeapi_harness.ts";

const Team = defineKind<Record<string, unknown>, unknown>({
  group: "kstack.sh",
  kind: "Team",
  namespaced: true,
});
const TEAMS = "/apis/kstack.sh/v1/teams";
const teamsIn = (ns: string) => `/apis/kstack.sh/v1/namespaces/${ns}/teams`;

/** Stores Team's definition as the app's process would when it starts. */
async function defineTeam(store: Store): Promise<void> {
  await (await new Beehive(store, { kinds: [Team] }).start())();
}

const json = (method: string, body: unknown, type = "application/json") => ({
  method,
  headers: { "content-type": type },
  body: JSON.stringify(body),
});
type Meta = { name: string; namespace?: string };

test("kubeApiHandler serves a namespaced kind's objects in the namespace their path names", async () => {
  await withStore(async (store, bh) => {
    await defineTeam(store);
    await bh.client(Team, { namespace: "a" }).create("red", { size: 1 });
    await bh.client(Team, { namespace: "b" }).create("red", { size: 2 });
    const handle = kubeApiHandler({ store });

    const a = await call(handle, `${teamsIn("a")}/red`);
    assert.equal(a.status, 200);
    assert.deepEqual(a.body.spec, { size: 1 });
    assert.equal((a.body.metadata as Meta).namespace, "a");
    const b = await call(handle, `${teamsIn("b")}/red`);
    assert.deepEqual(b.body.spec, { size: 2 });
    assert.equal((await call(handle, `${teamsIn("c")}/red`)).status, 404);

    const listA = await call(handle, teamsIn("a"));
    assert.equal(listA.status, 200);
    assert.deepEqual(
      (listA.body.items as { metadata: Meta }[]).map((i) => i.metadata.namespace),
      ["a"],
    );
    const byName = await call(handle, `${teamsIn("b")}?fieldSelector=metadata.name%3Dred`);
    assert.deepEqual((byName.body.items as { spec: unknown }[]).map((i) => i.spec), [{ size: 2 }]);
  });
});

test("kubeApiHandler lists a namespaced kind across namespaces at its cluster-wide path, namespace in each row", async () => {
  await withStore(async (store, bh) => {
    await defineTeam(store);
    await bh.client(Team, { namespace: "a" }).create("red", {});
    await bh.client(Team, { namespace: "b" }).create("red", {});
    await bh.client(Team, { namespace: "b" }).create("blue", {});
    const handle = kubeApiHandler({ store });
    const list = await call(handle, TEAMS);
    assert.equal(list.status, 200);
    assert.deepEqual(
      (list.body.items as { metadata: Meta }[]).map((i) => [i.metadata.namespace, i.metadata.name]),
      [["a", "red"], ["b", "red"], ["b", "blue"]],
    );
    // A name selects in every namespace; metadata.namespace narrows it.
    const named = await call(handle, `${TEAMS}?fieldSelector=metadata.name%3Dred`);
    assert.equal((named.body.items as unknown[]).length, 2);
    const one = await call(
      handle,
      `${TEAMS}?fieldSelector=${encodeURIComponent("metadata.name=red,metadata.namespace=b")}`,
    );
    assert.deepEqual(
      (one.body.items as { metadata: Meta }[]).map((i) => i.metadata.namespace),
      ["b"],
    );
    const table = await call(handle, TEAMS, { headers: { accept: TABLE } });
    const rows = table.body.rows as { object: { metadata: Meta } }[];
    assert.deepEqual(rows.map((r) => r.object.metadata.namespace), ["a", "b", "b"]);
  });
});

test("kubeApiHandler answers 404 for a namespaced kind by name without a namespace and a cluster-scoped kind inside one", async () => {
  await withStore(async (store, bh) => {
    await defineTeam(store);
    await bh.client(Team, { namespace: "a" }).create("red", {});
    await bh.client(ClusterGK).create("prod", {});
    const handle = kubeApiHandler({ store });
    const notFound = async (path: string, init?: RequestInit) => {
      const answer = await call(handle, path, init);
      assert.equal(answer.status, 404, path);
      assert.equal(answer.body.reason, "NotFound", path);
    };
    await notFound(`${TEAMS}/red`);
    await notFound(`${TEAMS}/red/status`);
    await notFound(`${TEAMS}/red`, { method: "DELETE" });
    await notFound(`/apis/kstack.sh/v1/namespaces/a/clusters`);
    await notFound(`/apis/kstack.sh/v1/namespaces/a/clusters/prod`);
    await notFound(`/apis/kstack.sh/v1/namespaces/Not_A_Label/teams`);
    await notFound(`/apis/kstack.sh/v1/namespaces/a`);
    assert.equal((await call(handle, `${CLUSTERS}/prod`)).status, 200);
    // Creating needs a namespace: the cluster-wide path only lists and watches.
    const post = await call(handle, TEAMS, json("POST", { metadata: { name: "x" }, spec: {} }));
    assert.equal(post.status, 405);
  });
});

test("kubeApiHandler watches a namespaced kind in the path's namespace, or across namespaces at the cluster-wide path", async () => {
  await withStore(async (store, bh) => {
    await defineTeam(store);
    const handle = kubeApiHandler({ store, pollInterval: 50 });
    const watch = async (path: string) => {
      const abort = new AbortController();
      const response = await handle(
        new Request(`http://localhost${path}?watch=true&resourceVersion=0`, {
          signal: abort.signal,
        }),
      );
      assert.equal(response.status, 200);
      return { events: eventsOf(response), abort };
    };
    const inA = await watch(teamsIn("a"));
    const all = await watch(TEAMS);
    await bh.client(Team, { namespace: "b" }).create("blue", {});
    await bh.client(Team, { namespace: "a" }).create("red", {});
    const seen = async (w: typeof inA) => {
      const event = await w.events.next();
      const { name, namespace } = (event!.object as { metadata: Meta }).metadata;
      return [event!.type, namespace, name];
    };
    // The watch in "a" skips blue: its first event is red's.
    assert.deepEqual(await seen(inA), ["ADDED", "a", "red"]);
    assert.deepEqual(await seen(all), ["ADDED", "b", "blue"]);
    assert.deepEqual(await seen(all), ["ADDED", "a", "red"]);
    for (const w of [inA, all]) {
      w.abort.abort();
      assert.equal(await w.events.next(), undefined);
    }
  });
});

test("kubeApiHandler creates, replaces, patches and deletes in the path's namespace, refusing a body naming another", async () => {
  await withStore(async (store, bh) => {
    await defineTeam(store);
    const handle = kubeApiHandler({ store });
    const created = await call(
      handle,
      teamsIn("a"),
      json("POST", { metadata: { name: "red", labels: { tier: "1" } }, spec: { size: 1 } }),
    );
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal((created.body.metadata as Meta).namespace, "a");
    const same = await call(
      handle,
      teamsIn("b"),
      json("POST", { metadata: { name: "red", namespace: "b" }, spec: { size: 9 } }),
    );
    assert.equal(same.status, 201, JSON.stringify(same.body));

    const elsewhere = await call(
      handle,
      teamsIn("a"),
      json("POST", { metadata: { name: "blue", namespace: "b" }, spec: {} }),
    );
    assert.equal(elsewhere.status, 400);
    assert.equal(elsewhere.body.reason, "BadRequest");
    assert.match(String(elsewhere.body.message), /namespace of the provided object does not match/);
    const moved = await call(
      handle,
      `${teamsIn("a")}/red`,
      json("PATCH", { metadata: { namespace: "b" } }, "application/merge-patch+json"),
    );
    assert.equal(moved.status, 400);

    const replaced = await call(
      handle,
      `${teamsIn("a")}/red`,
      json("PUT", { metadata: { name: "red", namespace: "a" }, spec: { size: 2 } }),
    );
    assert.equal(replaced.status, 200, JSON.stringify(replaced.body));
    const patched = await call(
      handle,
      `${teamsIn("a")}/red`,
      json("PATCH", { spec: { size: 3 } }, "application/merge-patch+json"),
    );
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.deepEqual((await bh.client(Team, { namespace: "a" }).getByName("red")).spec, {
      size: 3,
    });
    assert.deepEqual((await bh.client(Team, { namespace: "b" }).getByName("red")).spec, {
      size: 9,
    });

    const deleted = await call(handle, `${teamsIn("a")}/red`, { method: "DELETE" });
    assert.equal(deleted.status, 200);
    // Nothing holds it: the delete finishes before it answers.
    await assert.rejects(bh.client(Team, { namespace: "a" }).getByName("red"), NotFoundError);
    const kept = await bh.client(Team, { namespace: "b" }).getByName("red");
    assert.equal(kept.deletionRequestedAt, undefined);
  });
});

test("kubeApiHandler serves a namespaced object's events in its namespace, a cluster-scoped one's in default", async () => {
  await withStore(async (store, bh) => {
    await defineTeam(store);
    const red = await bh.client(Team, { namespace: "a" }).create("red", {});
    const prod = await bh.client(ClusterGK).create("prod", {});
    await bh.adminClient(Team).addEvent(red.id, {
      type: "Normal",
      reason: "Formed",
      message: "red",
    });
    await bh.adminClient(ClusterGK).addEvent(prod.id, {
      type: "Normal",
      reason: "Scaled",
      message: "prod",
    });
    const handle = kubeApiHandler({ store });
    type Ev = { metadata: Meta; involvedObject: Meta; reason: string };
    const reasons = async (path: string) =>
      ((await call(handle, path)).body.items as Ev[]).map((e) => e.reason).sort();
    assert.deepEqual(await reasons("/api/v1/events"), ["Formed", "Scaled"]);
    assert.deepEqual(await reasons("/api/v1/namespaces/a/events"), ["Formed"]);
    assert.deepEqual(await reasons("/api/v1/namespaces/default/events"), ["Scaled"]);
    assert.deepEqual(await reasons("/api/v1/namespaces/b/events"), []);

    const selector = encodeURIComponent(
      `involvedObject.name=red,involvedObject.namespace=a,involvedObject.kind=Team,involvedObject.uid=${red.id}`,
    );
    const described = await call(handle, `/api/v1/namespaces/a/events?fieldSelector=${selector}`);
    const [event] = described.body.items as Ev[];
    assert.equal(event.metadata.namespace, "a");
    assert.equal(event.involvedObject.namespace, "a");
    assert.equal(event.involvedObject.name, "red");
    const acrossAll = await call(handle, `/api/v1/events?fieldSelector=${selector}`);
    assert.equal((acrossAll.body.items as Ev[]).length, 1);
    const wrong = encodeURIComponent("involvedObject.name=red,involvedObject.namespace=b");
    assert.deepEqual(await reasons(`/api/v1/events?fieldSelector=${wrong}`), []);
  });
});

test('kubeApiHandler forbids a token a namespaced kind outside its namespaces, and the cluster scope without "*"', async () => {
  await withStore(async (store, bh) => {
    await defineTeam(store);
    await bh.client(Team, { namespace: "a" }).create("red", {});
    await bh.client(Team, { namespace: "b" }).create("red", {});
    const token = "team-a-token-0001";
    const handle = kubeApiHandler({
      store,
      auth: { tokens: [{ token, user: "alice", namespaces: ["a"] }] },
    });
    const as = { headers: { authorization: `Bearer ${token}` } };
    assert.equal((await call(handle, `${teamsIn("a")}/red`, as)).status, 200);
    assert.equal((await call(handle, teamsIn("a"), as)).status, 200);
    const outside = await call(handle, `${teamsIn("b")}/red`, as);
    assert.equal(outside.status, 403);
    assert.match(String(outside.body.message), /in the namespace "b"/);
    assert.equal((await call(handle, TEAMS, as)).status, 403);
    assert.equal((await call(handle, "/api/v1/events", as)).status, 403);
    assert.equal((await call(handle, "/api/v1/namespaces/a/events", as)).status, 200);
  });
});

test("kubeApiHandler serves /api/v1/namespaces: the namespaces objects use and default, one by name, 404 for another", async () => {
  await withStore(async (store, bh) => {
    await defineTeam(store);
    const handle = kubeApiHandler({ store });
    const names = (a: { body: Record<string, unknown> }) =>
      (a.body.items as { metadata: Meta }[]).map((n) => n.metadata.name);
    const empty = await call(handle, "/api/v1/namespaces");
    assert.equal(empty.status, 200);
    assert.equal(empty.body.kind, "NamespaceList");
    assert.deepEqual(names(empty), [
      "default",
    ]);
    await bh.client(Team, { namespace: "team-b" }).create("red", {});
    await bh.client(Team, { namespace: "a" }).create("red", {});
    await bh.client(ClusterGK).create("prod", {});
    const list = await call(handle, "/api/v1/namespaces");
    assert.deepEqual(names(list), [
      "a",
      "default",
      "team-b",
    ]);
    const one = await call(handle, "/api/v1/namespaces/team-b");
    assert.equal(one.status, 200);
    const namespace = one.body as { kind: string; metadata: Meta; status: { phase: string } };
    assert.deepEqual([namespace.kind, namespace.metadata.name, namespace.status.phase], [
      "Namespace",
      "team-b",
      "Active",
    ]);
    const table = await call(handle, "/api/v1/namespaces", { headers: { accept: TABLE } });
    assert.deepEqual((table.body.rows as { cells: unknown[] }[]).map((r) => r.cells), [
      ["a", "Active"],
      ["default", "Active"],
      ["team-b", "Active"],
    ]);
    const selected = await call(handle, "/api/v1/namespaces?fieldSelector=metadata.name%3Da");
    assert.deepEqual(names(selected), ["a"]);
    const missing = await call(handle, "/api/v1/namespaces/c");
    assert.deepEqual([missing.status, missing.body.reason, missing.body.message], [
      404,
      "NotFound",
      'namespaces "c" not found',
    ]);
    assert.equal((await call(handle, "/api/v1/namespaces/Bad_Name")).status, 404);
    assert.equal((await call(handle, "/api/v1/namespaces/a", { method: "POST" })).status, 405);
    const bad = await call(handle, "/api/v1/namespaces?labelSelector=a%20in%20(");
    assert.equal(bad.status, 400);
  });
});

test("kubeApiHandler follows a kind's scope changed by another process at once: the new scope's paths answer, the old ones 404, never 500", async () => {
  const clock = installFakeTime();
  try {
    await withStore(async (store, bh) => {
      const gk = { group: "kstack.sh", kind: "Team" };
      const scoped = (namespaced: boolean) =>
        store.kinds.put({
          ...gk,
          plural: "teams",
          singular: "team",
          shortNames: [],
          namespaced,
          columns: "[]",
          specSchema: undefined,
          statusSchema: undefined,
        }, { replace: true });
      await scoped(false);
      await bh.client(gk).create("red", {});
      const handle = kubeApiHandler({ store });
      const status = async (path: string, init?: RequestInit) => {
        const answer = await call(handle, path, init);
        return [answer.status, answer.body.reason];
      };
      assert.deepEqual(await status(`${TEAMS}/red`), [200, undefined]);

      await scoped(true); // within STORED_SCHEMA_TTL of every read above
      assert.deepEqual(await status(teamsIn("a")), [200, undefined]);
      assert.deepEqual(
        await status(teamsIn("a"), json("POST", { metadata: { name: "blue" }, spec: {} })),
        [201, undefined],
      );
      assert.deepEqual(await status(`${TEAMS}/red`), [404, "NotFound"]);

      await scoped(false);
      assert.deepEqual(await status(`${TEAMS}/red`), [200, undefined]);
      assert.deepEqual(await status(teamsIn("a")), [404, "NotFound"]);

      // The handler last read the kind cluster-scoped; the client reads it namespaced.
      await scoped(true);
      await clock.tickAsync(STORED_SCHEMA_TTL);
      assert.deepEqual(await status(`${TEAMS}/red`), [404, "NotFound"]);
      assert.deepEqual(await status(`${teamsIn("a")}/blue`), [200, undefined]);
    });
  } finally {
    clock.uninstall();
  }
});
