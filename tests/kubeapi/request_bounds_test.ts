/**
 * What one request may make the server hold, in-process: a JSON patch is
 * bounded while it applies (a copy bomb is 422 before it builds the copies,
 * also from a token limited to one namespace), a body is bounded in depth
 * (a merge patch nested 13,000 deep is 400, never 500) and in size, one
 * limit for every verb (`maxBodyBytes`, 3 MiB by default, 413 above it).
 *
 * @module
 */
import assert from "node:assert/strict";
import { Beehive, defineKind, InvalidOptionError } from "../../mod.ts";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import { copyBomb, deepMergePatch } from "./_attacks.ts";
import { call, Cluster, CLUSTERS, withStore } from "./_kubeapi_harness.ts";

const JSON_PATCH = "application/json-patch+json";
const MERGE_PATCH = "application/merge-patch+json";

const send = (method: string, body: string, type = "application/json", more = {}) => ({
  method,
  headers: { "content-type": type, ...more },
  body,
});

test("kubeApiHandler refuses a JSON patch copy bomb with 422 naming the object size limit, and writes nothing", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", { replicas: 1 });
    const handle = kubeApiHandler({ store });
    const bomb = JSON.stringify(copyBomb("/spec"));
    assert.ok(bomb.length < 8192, `the bomb is ${bomb.length} bytes`);
    const answer = await call(handle, `${CLUSTERS}/prod`, send("PATCH", bomb, JSON_PATCH));
    assert.equal(answer.status, 422, JSON.stringify(answer.body));
    assert.equal(answer.body.reason, "Invalid");
    assert.match(String(answer.body.message), /grows the object by more than 1572864 bytes/);
    assert.deepEqual((await bh.client(Cluster).getByName("prod")).spec, { replicas: 1 });
  });
});

test("kubeApiHandler refuses the copy bomb from a token limited to one namespace, on its own object", async () => {
  const Team = defineKind<Record<string, unknown>, unknown>({
    group: "kstack.sh",
    kind: "Team",
    namespaced: true,
  });
  await withStore(async (store, bh) => {
    await (await new Beehive(store, { kinds: [Team] }).start())();
    await bh.client(Team, { namespace: "team-a" }).create("red", { size: 1 });
    const token = "team-a-token-0001";
    const handle = kubeApiHandler({
      store,
      auth: { tokens: [{ token, user: "tenant", namespaces: ["team-a"] }] },
    });
    const answer = await call(
      handle,
      "/apis/kstack.sh/v1/namespaces/team-a/teams/red",
      send("PATCH", JSON.stringify(copyBomb("/spec")), JSON_PATCH, {
        authorization: `Bearer ${token}`,
      }),
    );
    assert.equal(answer.status, 422, JSON.stringify(answer.body));
    assert.deepEqual((await bh.client(Team, { namespace: "team-a" }).getByName("red")).spec, {
      size: 1,
    });
  });
});

test("kubeApiHandler applies a JSON patch that grows the object within the limit, and gives back what a remove frees", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const handle = kubeApiHandler({ store });
    const big = "x".repeat(600_000);
    const ops = [
      { op: "add", path: "/spec/a", value: big },
      { op: "copy", from: "/spec/a", path: "/spec/b" },
      { op: "remove", path: "/spec/a" },
      { op: "move", from: "/spec/b", path: "/spec/c" },
      { op: "copy", from: "/spec/c", path: "/spec/d" },
      { op: "remove", path: "/spec/c" },
    ];
    const answer = await call(
      handle,
      `${CLUSTERS}/prod`,
      send("PATCH", JSON.stringify(ops), JSON_PATCH),
    );
    assert.equal(answer.status, 200, JSON.stringify(answer.body).slice(0, 300));
    assert.deepEqual((await bh.client(Cluster).getByName("prod")).spec, { d: big });
  });
});

test("kubeApiHandler refuses a JSON patch that copies and compares more than twice the object size limit, however much it removes again", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", { a: Array.from({ length: 60_000 }, (_, i) => i) });
    const handle = kubeApiHandler({ store });
    const churn: unknown[] = [];
    for (let i = 0; i < 499; i++) {
      churn.push({ op: "copy", from: "/spec/a", path: "/spec/b" }, {
        op: "remove",
        path: "/spec/b",
      });
    }
    const answer = await call(
      handle,
      `${CLUSTERS}/prod`,
      send("PATCH", JSON.stringify(churn), JSON_PATCH),
    );
    assert.equal(answer.status, 422, JSON.stringify(answer.body).slice(0, 300));
    assert.match(String(answer.body.message), /copies and compares more than 3145728 bytes/);
    const ordered = await call(
      handle,
      `${CLUSTERS}/prod`,
      send(
        "PATCH",
        JSON.stringify([
          { op: "add", path: "/spec/m", value: { x: 1, y: [1, { z: 2 }] } },
          { op: "test", path: "/spec/m", value: { y: [1, { z: 2 }], x: 1 } },
        ]),
        JSON_PATCH,
      ),
    );
    assert.equal(ordered.status, 200, "test compares members in any order");
  });
});

test("kubeApiHandler answers a merge patch nested 13,000 deep with 400, never 500, and writes nothing", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", { replicas: 1 });
    const handle = kubeApiHandler({ store });
    const answer = await call(
      handle,
      `${CLUSTERS}/prod`,
      send("PATCH", deepMergePatch(13_000), MERGE_PATCH),
    );
    assert.equal(answer.status, 400, JSON.stringify(answer.body));
    assert.match(String(answer.body.message), /nests deeper than 72 levels/);
    for (const method of ["POST", "PUT"]) {
      const path = method === "POST" ? CLUSTERS : `${CLUSTERS}/prod`;
      const body = `{"metadata":{"name":"prod"},${deepMergePatch(13_000).slice(1)}`;
      assert.equal((await call(handle, path, send(method, body))).status, 400, method);
    }
    const strings = `{"spec":{"a":"${"[{".repeat(5000)}"}}`;
    const shallow = await call(handle, `${CLUSTERS}/prod`, send("PATCH", strings, MERGE_PATCH));
    assert.equal(shallow.status, 200, "brackets inside strings do not count as depth");
    assert.deepEqual((await bh.client(Cluster).getByName("prod")).spec, {
      replicas: 1,
      a: "[{".repeat(5000),
    });
  });
});

test("kubeApiHandler reads bodies up to maxBodyBytes on every verb and answers 413 above it", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const handle = kubeApiHandler({ store });
    const pad = (bytes: number) => "x".repeat(bytes);
    // 1 MiB passes every verb: the old 64 KiB limit refused it.
    const item = `${CLUSTERS}/prod`;
    const mib = pad(1 << 20);
    const created = await call(
      handle,
      CLUSTERS,
      send("POST", JSON.stringify({ metadata: { name: "big" }, spec: { pad: mib } })),
    );
    assert.equal(created.status, 201);
    const merged = await call(
      handle,
      item,
      send("PATCH", JSON.stringify({ spec: { pad: mib } }), MERGE_PATCH),
    );
    assert.equal(merged.status, 200);
    const over = pad(3 * 1024 * 1024);
    for (
      const [method, path, type] of [
        ["POST", CLUSTERS, "application/json"],
        ["PUT", item, "application/json"],
        ["PATCH", item, MERGE_PATCH],
        ["PATCH", item, JSON_PATCH],
        ["DELETE", item, "application/json"],
      ]
    ) {
      const answer = await call(handle, path, send(method, JSON.stringify({ over }), type));
      assert.equal(answer.status, 413, `${method} ${type}`);
      assert.match(String(answer.body.message), /over 3145728 bytes/);
    }
    const small = kubeApiHandler({ store, maxBodyBytes: 2048 });
    const refused = await call(
      small,
      item,
      send("PATCH", JSON.stringify({ pad: pad(3000) }), MERGE_PATCH),
    );
    assert.equal(refused.status, 413);
    assert.ok(await bh.client(Cluster).getByName("prod"));
  });
});

test("kubeApiHandler refuses a maxBodyBytes that is not an integer of at least 1,024", async () => {
  await withStore((store) => {
    for (const maxBodyBytes of [0, 1023, 1.5, -1, Number.NaN, "1mb"]) {
      assert.throws(
        () => kubeApiHandler({ store, maxBodyBytes: maxBodyBytes as number }),
        InvalidOptionError,
      );
    }
    return Promise.resolve();
  });
});
