/**
 * toNodeListener's request bodies: forwarded on methods that carry one, read
 * at the handler's pace, absent on GET; the server keeps serving after a
 * handler stops reading a large body part-way; a streamed response's head
 * goes out before its first chunk.
 *
 * @module
 */
import assert from "node:assert/strict";
import { withNodeServer } from "../_loopback_server.ts";
import { test } from "../_test.ts";

test("toNodeListener forwards the request body of DELETE, POST, PUT and PATCH to the handler", async () => {
  await withNodeServer(async (request) => {
    return new Response(`${request.method} ${await request.text()}`);
  }, async ({ url }) => {
    for (const method of ["DELETE", "POST", "PUT", "PATCH"]) {
      const response = await fetch(`${url}/x`, { method, body: `{"from":"${method}"}` });
      assert.equal(await response.text(), `${method} {"from":"${method}"}`);
    }
  });
});

test("toNodeListener gives a GET request no body", async () => {
  await withNodeServer((request) => {
    return Promise.resolve(new Response(String(request.body === null)));
  }, async ({ url }) => {
    assert.equal(await (await fetch(`${url}/x`)).text(), "true");
  });
});

test("toNodeListener keeps serving after a handler stops reading a large body part-way", async () => {
  let seen = 0;
  await withNodeServer(async (request) => {
    const reader = request.body!.getReader();
    const first = await reader.read();
    seen = first.value?.byteLength ?? 0;
    await reader.cancel();
    return new Response("enough", { status: 413 });
  }, async ({ url }) => {
    const big = new Uint8Array(8 * 1024 * 1024);
    const response = await fetch(`${url}/x`, { method: "POST", body: big }).catch(() => undefined);
    if (response !== undefined) {
      assert.equal(response.status, 413);
      await response.body?.cancel();
    }
    assert.ok(seen > 0 && seen < big.byteLength, `the handler saw ${seen} bytes of the first read`);
    const after = await fetch(`${url}/x`, { method: "POST", body: "small" });
    assert.equal(after.status, 413);
    await after.body?.cancel();
  });
});

test("toNodeListener sends a streamed response's status and headers before its first chunk", async () => {
  const release = Promise.withResolvers<void>();
  await withNodeServer(() => {
    // The body's first chunk waits for the client to have the head: held back until a chunk,
    // the head would never come.
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await release.promise;
        controller.enqueue(new TextEncoder().encode("late"));
        controller.close();
      },
    }, { highWaterMark: 0 });
    return Promise.resolve(new Response(body, { status: 202, headers: { "x-head": "early" } }));
  }, async ({ url }) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const noHead = new Promise<never>((_, reject) => {
      // A bound on the failure only: a head that is sent arrives in milliseconds.
      timer = setTimeout(() => reject(new Error("no status line or headers within 10 s")), 10_000);
    });
    try {
      const response = await Promise.race([fetch(`${url}/watch`), noHead]);
      assert.equal(response.status, 202);
      assert.equal(response.headers.get("x-head"), "early");
      release.resolve();
      assert.equal(await response.text(), "late");
    } finally {
      clearTimeout(timer);
      release.resolve();
    }
  });
});
