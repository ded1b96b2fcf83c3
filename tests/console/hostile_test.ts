/**
 * The console against hostile requests: malformed methods, hosts and targets
 * through the Node adapter, the `Host` check, `authorize`, generic 500s,
 * malformed paths, an encoded base path, and the live-feed cap and sharing.
 *
 * @module
 */
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import type { Store } from "../../store/mod.ts";
import { consoleHandler } from "../../console/mod.ts";
import { withNodeServer } from "../_loopback_server.ts";
import { test } from "../_test.ts";
import { withStore } from "./_console_harness.ts";

const Cluster = { group: "kstack.sh", kind: "Cluster" };

/** One raw request (any method, any Host), read to its end. */
function raw(
  port: number,
  options: { method?: string; path?: string; host?: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: "127.0.0.1",
      port,
      method: options.method ?? "GET",
      path: options.path ?? "/",
      headers: { host: options.host ?? `localhost:${port}`, connection: "close" },
      setHost: false,
    }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode!, body }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

test("toNodeListener answers a method fetch refuses with 501, another with the handler's 405", async () => {
  await withStore(async (store) => {
    await withNodeServer(consoleHandler({ store }), async ({ port }) => {
      const trace = await raw(port, { method: "TRACE" });
      assert.equal(trace.status, 501);
      assert.match(trace.body, /Not Implemented: the TRACE method/);
      // Deno's HTTP parser refuses TRACK itself (400); Node's hands it over (501).
      const track = await raw(port, { method: "TRACK" });
      assert.ok([400, 501].includes(track.status), String(track.status));
      assert.equal((await raw(port, { method: "PROPFIND" })).status, 405);
      assert.equal((await raw(port, {})).status, 200, "still serving");
    });
  });
});

test("toNodeListener answers a Host that makes no URL with 400 and keeps serving", async () => {
  await withStore(async (store) => {
    await withNodeServer(consoleHandler({ store }), async ({ port }) => {
      for (const host of ["a b", "[::1", "x:99999", "a/b", "u@localhost"]) {
        const r = await raw(port, { host });
        assert.equal(r.status, 400, host);
        assert.match(r.body, /Bad Request/);
      }
      assert.equal((await raw(port, {})).status, 200, "still serving");
    });
  });
});

test("toNodeListener answers a handler that throws or rejects with a generic 500", async () => {
  const secret = "password=hunter2";
  for (
    const handler of [
      () => Promise.reject(new Error(secret)),
      () => {
        throw new Error(secret);
      },
    ]
  ) {
    await withNodeServer(handler as (r: Request) => Promise<Response>, async ({ port }) => {
      const r = await raw(port, {});
      assert.equal(r.status, 500);
      assert.doesNotMatch(r.body, /hunter2/);
      assert.equal((await raw(port, {})).status, 500, "still serving");
    });
  }
});

test("consoleHandler answers a store failure with a generic 500 and logs the details", async () => {
  await withStore(async (store) => {
    const failing = new Proxy(store, {
      get(target, key, receiver) {
        if (key === "objects") {
          return new Proxy(target.objects, {
            get(o, k) {
              if (k === "list") return () => Promise.reject(new Error("disk I/O error at /secret"));
              const v = Reflect.get(o, k);
              return typeof v === "function" ? v.bind(o) : v;
            },
          });
        }
        const v = Reflect.get(target, key, receiver);
        return typeof v === "function" ? v.bind(target) : v;
      },
    }) as Store;
    const logged: Record<string, unknown>[] = [];
    const logger = {
      debug() {},
      info() {},
      warn() {},
      error(_m: string, a?: Record<string, unknown>) {
        logged.push(a ?? {});
      },
    };
    const handle = consoleHandler({ store: failing, logger });
    const r = await handle(new Request("http://localhost/kinds/Cluster.kstack.sh"));
    assert.equal(r.status, 500);
    const body = await r.text();
    assert.equal(body, "Internal Server Error\n");
    assert.equal(logged.length, 1);
    assert.match(String((logged[0].error as Error).message), /\/secret/);
  });
});

test("consoleHandler answers a Host outside allowedHosts with 403, loopback names by default", async () => {
  await withStore(async (store) => {
    const handle = consoleHandler({ store });
    for (const host of ["localhost", "localhost:8080", "127.0.0.1:1", "[::1]:9", "LOCALHOST"]) {
      const r = await handle(new Request(`http://${host}/`));
      assert.equal(r.status, 200, host);
      await r.body?.cancel();
    }
    for (
      const host of ["evil.example", "evil.example:8080", "127.0.0.2", "localhost.evil.example"]
    ) {
      const r = await handle(new Request(`http://${host}/`));
      assert.equal(r.status, 403, host);
      assert.match(await r.text(), /allowedHosts/);
    }
    // The Host header wins over the URL when a server passes both.
    const rebound = await handle(
      new Request("http://localhost/", { headers: { host: "attacker.example" } }),
    );
    assert.equal(rebound.status, 403);
    await rebound.body?.cancel();

    const named = consoleHandler({ store, allowedHosts: ["console.internal"] });
    assert.equal((await named(new Request("http://console.internal:8080/"))).status, 200);
    assert.equal((await named(new Request("http://localhost/"))).status, 403);
    const any = consoleHandler({ store, allowedHosts: "*" });
    assert.equal((await any(new Request("http://anything.example/"))).status, 200);
    for (const allowedHosts of [["a:80"], [""], "localhost", [1]]) {
      assert.throws(
        () => consoleHandler({ store, allowedHosts: allowedHosts as never }),
        { name: "InvalidOptionError" },
      );
    }
  });
});

test("consoleHandler answers 403 when authorize returns false and serves when it returns true", async () => {
  await withStore(async (store) => {
    const seen: string[] = [];
    const handle = consoleHandler({
      store,
      authorize: (request) => {
        seen.push(new URL(request.url).pathname);
        return Promise.resolve(request.headers.get("authorization") === "Bearer ok");
      },
    });
    const refused = await handle(new Request("http://localhost/console.css"));
    assert.equal(refused.status, 403);
    assert.equal(await refused.text(), "Forbidden\n");
    const served = await handle(
      new Request("http://localhost/", { headers: { authorization: "Bearer ok" } }),
    );
    assert.equal(served.status, 200);
    await served.body?.cancel();
    assert.deepEqual(seen, ["/console.css", "/"]);
    // A throwing authorize is a generic 500, never a pass.
    const broken = consoleHandler({
      store,
      authorize: () => {
        throw new Error("token store down");
      },
    });
    const r = await broken(new Request("http://localhost/"));
    assert.equal(r.status, 500);
    assert.doesNotMatch(await r.text(), /token store/);
    assert.throws(() => consoleHandler({ store, authorize: true as never }), {
      name: "InvalidOptionError",
    });
  });
});

test("consoleHandler answers a path holding NUL or a control character, or a kind above the limits, with 404", async () => {
  await withStore(async (store) => {
    const handle = consoleHandler({ store });
    for (
      const path of [
        "/kinds/%00.x",
        "/kinds/A.%00",
        "/kinds/%1B%5B2J.x",
        "/objects/%00",
        `/kinds/${"K".repeat(2_000)}.x/live`,
      ]
    ) {
      const r = await handle(new Request(`http://localhost${path}`));
      assert.equal(r.status, 404, path);
      await r.body?.cancel();
    }
  });
});

test("consoleHandler serves under a basePath that needs percent-encoding", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    for (const basePath of ["/my console/é", "/my%20console/%C3%A9"]) {
      const handle = consoleHandler({ store, basePath });
      const home = await handle(new Request("http://localhost/my%20console/%C3%A9/"));
      assert.equal(home.status, 200, basePath);
      const body = await home.text();
      assert.match(body, /href="\/my%20console\/%C3%A9\/console\.css"/);
      assert.match(body, /href="\/my%20console\/%C3%A9\/kinds\/Cluster\.kstack\.sh"/);
      const kind = await handle(
        new Request("http://localhost/my%20console/%c3%a9/kinds/Cluster.kstack.sh"),
      );
      assert.equal(kind.status, 200);
      await kind.body?.cancel();
      const outside = await handle(new Request("http://localhost/my%20console/"));
      assert.equal(outside.status, 404);
      await outside.body?.cancel();
    }
  });
});

test("consoleHandler caps live feeds at maxLiveFeeds with a 503 and frees a slot when one ends", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", {});
    const handle = consoleHandler({ store, maxLiveFeeds: 2 });
    const first = await handle(new Request("http://localhost/kinds/Cluster.kstack.sh/live"));
    const second = await handle(new Request(`http://localhost/objects/${prod.id}/live`));
    assert.equal(first.status, 200);
    assert.equal(second.status, 200);
    const over = await handle(new Request("http://localhost/kinds/Cluster.kstack.sh/live"));
    assert.equal(over.status, 503);
    assert.equal(over.headers.get("retry-after"), "5");
    assert.match(await over.text(), /2 live feeds are open.*maxLiveFeeds/);
    // A HEAD opens no feed.
    const head = await handle(
      new Request("http://localhost/kinds/Cluster.kstack.sh/live", { method: "HEAD" }),
    );
    assert.equal(head.status, 200);
    await first.body!.cancel();
    const again = await handle(new Request("http://localhost/kinds/Cluster.kstack.sh/live"));
    assert.equal(again.status, 200);
    await again.body!.cancel();
    await second.body!.cancel();
    assert.throws(() => consoleHandler({ store, maxLiveFeeds: 0 }), {
      name: "InvalidOptionError",
    });
  });
});

/** `store` with a count of the calls made to each member (objects.* as "objects.<name>"). */
function counting(store: Store): { store: Store; calls: Map<string, number> } {
  const calls = new Map<string, number>();
  const count = (name: string) => calls.set(name, (calls.get(name) ?? 0) + 1);
  const wrap = <T extends object>(target: T, prefix: string): T =>
    new Proxy(target, {
      get(t, key) {
        const v = Reflect.get(t, key);
        if (key === "objects" && prefix === "") return wrap(v as object, "objects.");
        if (typeof v !== "function") return v;
        return (...args: unknown[]) => {
          if (typeof key === "string") count(prefix + key);
          return v.apply(t, args);
        };
      },
    });
  return { store: wrap(store, ""), calls };
}

test("consoleHandler kind feeds share one watch from the current version and read no object", async () => {
  await withStore(async (store, bh) => {
    const things = bh.client(Cluster);
    for (let i = 0; i < 200; i++) await things.create(`c${i}`, { i });
    const { store: counted, calls } = counting(store);
    const handle = consoleHandler({ store: counted, maxLiveFeeds: 400 });
    const feeds: { reader: ReadableStreamDefaultReader<Uint8Array> }[] = [];
    let afterFirst = "";
    for (let i = 0; i < 300; i++) {
      const r = await handle(new Request("http://localhost/kinds/Cluster.kstack.sh/live"));
      assert.equal(r.status, 200);
      feeds.push({ reader: r.body!.getReader() });
      if (i === 0) afterFirst = JSON.stringify([...calls]);
    }
    assert.equal(
      JSON.stringify([...calls]),
      afterFirst,
      "the later feeds joined the first's watch",
    );
    for (const key of calls.keys()) {
      assert.ok(!/^objects\.(list|get)/.test(key), `no object read: ${key}`);
    }
    const c0 = await things.getByName("c0");
    await things.update(c0.id, { i: -1 });
    const decoder = new TextDecoder();
    for (const { reader } of feeds) {
      let text = "";
      while (!text.includes("event: change")) {
        const { value, done } = await reader.read();
        assert.equal(done, false);
        text += decoder.decode(value);
      }
      assert.match(text, new RegExp(`"id":${c0.id}`));
    }
    for (const { reader } of feeds) {
      await reader.cancel();
      assert.equal((await reader.read()).done, true);
    }
    // The last listener stopped the watch: the next feed starts a new one.
    const before = calls.get("getLatestResourceVersion")!;
    const next = await handle(new Request("http://localhost/kinds/Cluster.kstack.sh/live"));
    assert.ok(calls.get("getLatestResourceVersion")! > before);
    await next.body!.cancel();
  });
});

test("consoleHandler renders a deeply nested stored spec within a bound", async () => {
  await withStore(async (store) => {
    let spec: unknown = {};
    for (let i = 0; i < 2_235; i++) spec = { a: spec };
    const text = JSON.stringify(spec);
    // Written through the store port, below the engine's nesting limit: an old row, say.
    const raw = await store.objects.create(Cluster, { name: "deep", spec: text, specVersion: 1 });
    const r = await consoleHandler({ store })(new Request(`http://localhost/objects/${raw.id}`));
    assert.equal(r.status, 200);
    const body = await r.text();
    assert.ok(body.length < 4 * text.length * 2 + 1_048_576, `${body.length} characters`);
  });
});
