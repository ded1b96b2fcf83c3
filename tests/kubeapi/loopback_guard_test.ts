/**
 * What keeps a web page out of a tokenless loopback server: only loopback
 * `Host` names are answered (`allowedHosts`, as the console's; a page that
 * rebinds its own name to 127.0.0.1 sends its own name), and a body must come
 * in a content type Kubernetes accepts (a `text/plain`, form or multipart POST,
 * which a page may send cross-origin without asking, is 415 and writes nothing).
 *
 * @module
 */
import assert from "node:assert/strict";
import { InvalidOptionError } from "../../mod.ts";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import { call, Cluster, CLUSTERS, withStore } from "./_kubeapi_harness.ts";

const created = JSON.stringify({ metadata: { name: "evil" }, spec: { owned: true } });

test("kubeApiHandler without auth answers only loopback Host names, 403 to any other", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const handle = kubeApiHandler({ store });
    for (const host of ["localhost:6443", "127.0.0.1:1", "[::1]:6443", "LOCALHOST", "localhost."]) {
      const answer = await call(handle, CLUSTERS, { headers: { host } });
      assert.equal(answer.status, 200, host);
    }
    for (const host of ["evil.example", "localhost.evil.example", "127.0.0.2", "evil.example:80"]) {
      const read = await call(handle, CLUSTERS, { headers: { host } });
      assert.equal(read.status, 403, host);
      assert.equal(read.body.reason, "Forbidden");
      assert.match(String(read.body.message), /Host .* allowedHosts/);
      const write = await call(handle, CLUSTERS, {
        method: "POST",
        headers: { host, "content-type": "application/json" },
        body: created,
      });
      assert.equal(write.status, 403, host);
    }
    assert.deepEqual((await bh.client(Cluster).list()).map((o) => o.name), ["prod"]);
  });
});

test("kubeApiHandler answers the Host names allowedHosts lists, and any with auth unless it is given", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const named = kubeApiHandler({ store, allowedHosts: ["kube.example"] });
    assert.equal((await call(named, CLUSTERS, { headers: { host: "kube.example" } })).status, 200);
    assert.equal((await call(named, CLUSTERS, { headers: { host: "localhost" } })).status, 403);
    const any = kubeApiHandler({ store, allowedHosts: "*" });
    assert.equal((await call(any, CLUSTERS, { headers: { host: "evil.example" } })).status, 200);
    const token = "admin-token-0001";
    const authed = kubeApiHandler({ store, auth: { tokens: [{ token, user: "admin" }] } });
    const headers = { host: "kube.example", authorization: `Bearer ${token}` };
    assert.equal((await call(authed, CLUSTERS, { headers })).status, 200);
    for (const allowedHosts of [["http://x"], ["a b"], "all", [1]]) {
      assert.throws(
        () => kubeApiHandler({ store, allowedHosts: allowedHosts as string[] }),
        InvalidOptionError,
      );
    }
  });
});

test("kubeApiHandler answers 415 to a text/plain, form or multipart POST, or one without a content type, and writes nothing", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const handle = kubeApiHandler({ store });
    const form = new FormData();
    form.set("metadata", created);
    const bodies: [string, RequestInit][] = [
      ["text/plain", { headers: { "content-type": "text/plain;charset=UTF-8" }, body: created }],
      ["form", { body: new URLSearchParams({ [created]: "" }) }],
      ["multipart", { body: form }],
      ["no content type", { body: new Blob([created]) }],
    ];
    for (const [what, init] of bodies) {
      const answer = await call(handle, CLUSTERS, { method: "POST", ...init });
      assert.equal(answer.status, 415, what);
      assert.equal(answer.body.reason, "UnsupportedMediaType");
      const put = await call(handle, `${CLUSTERS}/prod`, { method: "PUT", ...init });
      assert.equal(put.status, 415, `PUT ${what}`);
      const deleted = await call(handle, `${CLUSTERS}/prod`, {
        method: "DELETE",
        headers: { "content-type": "text/plain" },
        body: "{}",
      });
      assert.equal(deleted.status, 415, `DELETE ${what}`);
    }
    assert.deepEqual((await bh.client(Cluster).list()).map((o) => o.name), ["prod"]);
    assert.equal((await bh.client(Cluster).getByName("prod")).deletionRequestedAt, undefined);
    const types = ["application/json", "application/json; charset=utf-8", "APPLICATION/JSON"];
    for (const [i, type] of types.entries()) {
      const answer = await call(handle, CLUSTERS, {
        method: "POST",
        headers: { "content-type": type },
        body: JSON.stringify({ metadata: { name: `ok-${i}` } }),
      });
      assert.equal(answer.status, 201, type);
    }
    const stray = await call(handle, CLUSTERS, { headers: { "content-type": "text/plain" } });
    assert.equal(stray.status, 200, "a GET has no body to decode, whatever type it names");
    const plainDelete = await call(handle, `${CLUSTERS}/prod`, { method: "DELETE" });
    assert.equal(plainDelete.status, 200, "a DELETE without a body needs no content type");
  });
});
