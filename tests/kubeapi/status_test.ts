/**
 * kubeApiHandler failures: every answer a Kubernetes Status with its reason
 * and code, deletes (object while it remains, preconditions, policies), bounds on what the client sends, and no internals leaked.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Store } from "../../store/mod.ts";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import { call, Cluster, CLUSTERS, withStore } from "./_kubeapi_harness.ts";

async function failure(
  store: Store,
  path: string,
  init?: RequestInit,
): Promise<{ code: number; reason: unknown; message: string; details: unknown }> {
  const answer = await call(kubeApiHandler({ store }), path, init);
  assert.equal(answer.body.kind, "Status");
  assert.equal(answer.body.status, "Failure");
  assert.equal(answer.body.code, answer.status);
  return {
    code: answer.status,
    reason: answer.body.reason,
    message: answer.body.message as string,
    details: answer.body.details,
  };
}

test("kubeApiHandler answers NotFound 404 for a missing object, kind or path", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const missing = await failure(store, `${CLUSTERS}/nope`);
    assert.equal(missing.code, 404);
    assert.equal(missing.reason, "NotFound");
    assert.equal(missing.message, 'clusters.kstack.sh "nope" not found');
    assert.deepEqual(missing.details, { name: "nope", group: "kstack.sh", kind: "clusters" });
    for (
      const path of [
        "/apis/kstack.sh/v1/widgets",
        "/openapi/v4",
        "/apis/kstack.sh/v1/namespaces/default/clusters",
        `${CLUSTERS}/prod/scale`,
      ]
    ) {
      assert.equal((await failure(store, path)).reason, "NotFound", path);
    }
  });
});

test("kubeApiHandler answers MethodNotAllowed 405 for writes it does not serve yet", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    for (
      const [method, path] of [
        ["PUT", CLUSTERS],
        ["POST", `${CLUSTERS}/prod`],
        ["POST", "/version"],
      ]
    ) {
      const f = await failure(store, path, {
        method,
        headers: { "content-type": "application/json" },
        body: method === "DELETE" ? null : "{}",
      });
      assert.equal(f.code, 405, `${method} ${path}`);
      assert.equal(f.reason, "MethodNotAllowed");
    }
  });
});

test("kubeApiHandler answers UnsupportedMediaType 415 to strategic-merge and CBOR apply patches", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    for (const type of ["application/strategic-merge-patch+json", "application/apply-patch+cbor"]) {
      const f = await failure(store, `${CLUSTERS}/prod`, {
        method: "PATCH",
        headers: { "content-type": type },
        body: "{}",
      });
      assert.equal(f.code, 415, type);
      assert.equal(f.reason, "UnsupportedMediaType");
    }
  });
});

test("kubeApiHandler answers BadRequest 400 for every malformed or oversized request part", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const long = "x".repeat(5000);
    for (
      const path of [
        `${CLUSTERS}?limit=abc`,
        `${CLUSTERS}?limit=-1`,
        `${CLUSTERS}?limit=99999999999999999`,
        `${CLUSTERS}?watch=maybe`,
        `${CLUSTERS}?watch=true&resourceVersion=abc`,
        `${CLUSTERS}?fieldSelector=${long}`,
        `${CLUSTERS}?includeObject=All`,
        `${CLUSTERS}/%E0%A4%A`,
        `${CLUSTERS}/${long}`,
        `${CLUSTERS}/prod?dryRun=Some`,
      ]
    ) {
      const method = path.includes("dryRun") ? "DELETE" : "GET";
      const f = await failure(store, path, { method });
      assert.equal(f.code, 400, path.slice(0, 80));
      assert.equal(f.reason, "BadRequest");
    }
    const notJson = await failure(store, `${CLUSTERS}/prod`, {
      method: "DELETE",
      headers: { "content-type": "application/json" },
      body: "{",
    });
    assert.equal(notJson.reason, "BadRequest");
  });
});

test("kubeApiHandler answers NotAcceptable 406 when the client takes only what it cannot give", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const f = await failure(store, CLUSTERS, {
      headers: { accept: "application/vnd.kubernetes.protobuf" },
    });
    assert.equal(f.code, 406);
    assert.equal(f.reason, "NotAcceptable");
  });
});

test("kubeApiHandler answers RequestEntityTooLarge 413 for a body over its bound", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const f = await failure(store, `${CLUSTERS}/prod`, {
      method: "DELETE",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ kind: "DeleteOptions", pad: "x".repeat(3 * 1024 * 1024) }),
    });
    assert.equal(f.code, 413);
    assert.equal(f.reason, "RequestEntityTooLarge");
    assert.equal((await bh.client(Cluster).getByName("prod")).deletionRequestedAt, undefined);
  });
});

test("kubeApiHandler delete answers the object with its deletionTimestamp while it remains", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", {});
    await store.objects.addFinalizer(prod, "kstack.sh/cleanup");
    const answer = await call(kubeApiHandler({ store }), `${CLUSTERS}/prod`, {
      method: "DELETE",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ propagationPolicy: "Background" }),
    });
    assert.equal(answer.status, 200);
    assert.equal(answer.body.kind, "Cluster");
    const meta = answer.body.metadata as Record<string, unknown>;
    assert.equal(typeof meta.deletionTimestamp, "string");
    assert.deepEqual(meta.finalizers, ["kstack.sh/cleanup"]);
    assert.notEqual((await bh.client(Cluster).get(prod.id)).deletionRequestedAt, undefined);
  });
});

test("kubeApiHandler delete answers Conflict 409 for a stale precondition, writing nothing", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", {});
    await bh.client(Cluster).update(prod.id, { moved: true });
    for (
      const preconditions of [{ resourceVersion: String(prod.resourceVersion) }, { uid: "12345" }]
    ) {
      const f = await failure(store, `${CLUSTERS}/prod`, {
        method: "DELETE",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ preconditions }),
      });
      assert.equal(f.code, 409, JSON.stringify(preconditions));
      assert.equal(f.reason, "Conflict");
    }
    assert.equal((await bh.client(Cluster).get(prod.id)).deletionRequestedAt, undefined);
  });
});

test("kubeApiHandler delete answers Invalid 422 for an unknown propagationPolicy, writing nothing", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", {});
    const f = await failure(store, `${CLUSTERS}/prod`, {
      method: "DELETE",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ propagationPolicy: "Eventually" }),
    });
    assert.equal(f.code, 422);
    assert.equal(f.reason, "Invalid");
    const causes = (f.details as { causes: { field: string }[] }).causes;
    assert.equal(causes[0].field, "propagationPolicy");
    assert.equal((await bh.client(Cluster).get(prod.id)).deletionRequestedAt, undefined);
  });
});

test("kubeApiHandler answers a closed store with ServiceUnavailable 503 and never with internals", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const handle = kubeApiHandler({ store });
    await store.close();
    const answer = await call(handle, `${CLUSTERS}/prod`);
    assert.equal(answer.body.kind, "Status");
    assert.equal(answer.status, 503);
    assert.equal(answer.body.reason, "ServiceUnavailable");
    assert.doesNotMatch(answer.body.message as string, /sqlite|at |\.ts/i);
  });
});
