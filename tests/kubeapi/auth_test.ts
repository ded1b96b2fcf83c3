/**
 * kubeApiHandler's bearer tokens: 401 without a matching token, 403 outside
 * the grant's verbs and namespaces (nothing deleted), discovery open to every
 * token, and self-subject access reviews answered from the grant.
 *
 * @module
 */
import assert from "node:assert/strict";
import { InvalidOptionError } from "../../mod.ts";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import { call, Cluster, CLUSTERS, withStore } from "./_kubeapi_harness.ts";

const ADMIN = "admin-token-0123456789";
const READER = "reader-token-0123456789";
const TENANT = "tenant-token-0123456789";
const tokens = [
  { token: ADMIN, user: "admin" },
  { token: READER, user: "reader", verbs: ["get", "list", "watch"] },
  { token: TENANT, user: "tenant", namespaces: ["team-a"] },
];
const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

test("kubeApiHandler with auth answers 401 Unauthorized to a missing, malformed or unknown token", async () => {
  await withStore(async (store) => {
    const handle = kubeApiHandler({ store, auth: { tokens } });
    for (
      const init of [
        {},
        { headers: { authorization: "Basic YWRtaW46YWRtaW4=" } },
        bearer("not-a-token-of-this-server"),
        bearer(`${ADMIN}x`),
      ]
    ) {
      const answer = await call(handle, "/apis", init);
      assert.equal(answer.status, 401);
      assert.equal(answer.body.reason, "Unauthorized");
      assert.equal(answer.body.kind, "Status");
    }
  });
});

test("kubeApiHandler with auth serves discovery and reads to any valid token", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const handle = kubeApiHandler({ store, auth: { tokens } });
    assert.equal((await call(handle, "/version", bearer(READER))).status, 200);
    assert.equal((await call(handle, "/apis", bearer(TENANT))).status, 200);
    const got = await call(handle, `${CLUSTERS}/prod`, bearer(READER));
    assert.equal(got.status, 200);
    assert.equal((got.body.metadata as { name: string }).name, "prod");
  });
});

test("kubeApiHandler with auth answers 403 Forbidden to a verb outside the grant and deletes nothing", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const handle = kubeApiHandler({ store, auth: { tokens } });
    const answer = await call(handle, `${CLUSTERS}/prod`, { method: "DELETE", ...bearer(READER) });
    assert.equal(answer.status, 403);
    assert.equal(answer.body.reason, "Forbidden");
    assert.equal(
      answer.body.message,
      'clusters.kstack.sh "prod" is forbidden: User "reader" cannot delete resource "clusters" ' +
        'in API group "kstack.sh" at the cluster scope',
    );
    const still = await bh.client(Cluster).getByName("prod");
    assert.equal(still.deletionRequestedAt, undefined);
  });
});

test("kubeApiHandler with auth forbids cluster-scoped resources to a token limited to namespaces", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const handle = kubeApiHandler({ store, auth: { tokens } });
    const list = await call(handle, CLUSTERS, bearer(TENANT));
    assert.equal(list.status, 403);
    assert.match(String(list.body.message), /cannot list resource "clusters".*cluster scope/);
  });
});

test("kubeApiHandler answers self-subject access reviews from the requester's grant", async () => {
  await withStore(async (store) => {
    const handle = kubeApiHandler({ store, auth: { tokens } });
    const review = (token: string, attributes: Record<string, string>) =>
      call(handle, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({
          apiVersion: "authorization.k8s.io/v1",
          kind: "SelfSubjectAccessReview",
          spec: { resourceAttributes: attributes },
        }),
      });
    const allowed = (a: { body: Record<string, unknown> }) =>
      (a.body.status as { allowed: boolean }).allowed;
    const del = { verb: "delete", group: "kstack.sh", resource: "clusters" };
    const r1 = await review(READER, del);
    assert.equal(r1.status, 201);
    assert.equal(allowed(r1), false);
    assert.equal(allowed(await review(ADMIN, del)), true);
    assert.equal(allowed(await review(READER, { ...del, verb: "list" })), true);
    assert.equal(allowed(await review(TENANT, { ...del, namespace: "team-a" })), true);
    assert.equal(allowed(await review(TENANT, { ...del, namespace: "team-b" })), false);
    const open = kubeApiHandler({ store });
    const r2 = await call(open, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ spec: { resourceAttributes: del } }),
    });
    assert.equal(allowed(r2), true);
  });
});

test("kubeApiHandler refuses malformed tokens with InvalidOptionError", async () => {
  await withStore((store) => {
    for (
      const bad of [
        [],
        [{ token: "short", user: "u" }],
        [{ token: ADMIN, user: "" }],
        [{ token: ADMIN, user: "a" }, { token: ADMIN, user: "b" }],
        [{ token: ADMIN, user: "a", verbs: ["fly"] }],
        [{ token: "with space in it", user: "a" }],
      ]
    ) {
      assert.throws(
        () => kubeApiHandler({ store, auth: { tokens: bad as never } }),
        InvalidOptionError,
        JSON.stringify(bad),
      );
    }
    return Promise.resolve();
  });
});
