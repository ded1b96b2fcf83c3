/**
 * The console's fetch handler: pages and status codes, escaping of hostile
 * names, specs and messages, unknown paths, the read-only rule, the live
 * feeds, the Node HTTP adapter, and a console over a read-only open.
 *
 * @module
 */
import assert from "node:assert/strict";
import { consoleHandler } from "../../console/mod.ts";
import { listenNode } from "../_loopback_server.ts";
import { Beehive } from "../../mod.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";
import { tempDir } from "../_beehive_harness.ts";
import { test } from "../_test.ts";
import { readUntil, withStore } from "./_console_harness.ts";

const Cluster = { group: "kstack.sh", kind: "Cluster" };
const Node = { group: "kstack.sh", kind: "Node" };
const HOSTILE = `<script>alert("x")</script>`;
const ATTR = `"><img src=x onerror=alert(1)>`;

async function get(
  handle: (r: Request) => Promise<Response>,
  path: string,
  init?: RequestInit,
): Promise<{ status: number; body: string; headers: Headers }> {
  const response = await handle(new Request(`http://localhost${path}`, init));
  return { status: response.status, body: await response.text(), headers: response.headers };
}

test("consoleHandler's kind page shows the kind's printer columns after Name, escaped, and its feed rows carry them", async () => {
  await withStore(async (store, bh) => {
    await store.kinds.put({
      ...Cluster,
      plural: "clusters",
      singular: "cluster",
      shortNames: [],
      namespaced: false,
      columns: JSON.stringify([
        { name: "Replicas", jsonPath: ".spec.replicas", type: "integer" },
        { name: "Zone", jsonPath: ".spec.zone" },
        { name: "Since", jsonPath: ".metadata.creationTimestamp", type: "date" },
      ]),
      specSchema: undefined,
      statusSchema: undefined,
    });
    await bh.client(Cluster).create("prod", { replicas: 3, zone: HOSTILE });
    const handle = consoleHandler({ store });
    const page = await get(handle, "/kinds/Cluster.kstack.sh");
    assert.equal(page.status, 200);
    assert.match(
      page.body,
      /<th>Name<\/th>\s*<th data-column="Replicas">Replicas<\/th>\s*<th data-column="Zone">Zone<\/th>/,
    );
    assert.match(page.body, /<td data-column="Replicas">3<\/td>/);
    assert.match(page.body, /<td data-column="Zone">&lt;script&gt;/);
    assert.match(page.body, /<td data-column="Since">\d+s<\/td>/);
    assert.ok(!page.body.includes(HOSTILE));

    const abort = new AbortController();
    const response = await handle(
      new Request("http://localhost/kinds/Cluster.kstack.sh/live", { signal: abort.signal }),
    );
    const reader = response.body!.getReader();
    try {
      await readUntil(reader, (t) => t.includes("retry: 2000"));
      await bh.client(Cluster).updateByName("prod", { replicas: 4, zone: "eu" });
      const text = await readUntil(reader, (t) => t.includes("data-column"));
      assert.match(text, /data-column=\\"Replicas\\">4</);
    } finally {
      abort.abort();
      await reader.cancel().catch(() => {});
    }
  });
});

test("consoleHandler serves the kinds, a kind's objects and an object's detail", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", { replicas: 3 });
    await bh.adminClient(Cluster).updateStatus(prod.id, { ready: true });
    await bh.adminClient(Cluster).setCondition(prod.id, {
      type: "Ready",
      status: "True",
      reason: "Provisioned",
      message: "all up",
    });
    await bh.adminClient(Cluster).addEvent(prod.id, { type: "Warning", reason: "Slow" });
    const n1 = await bh.client(Node).create("n1", {}, { owner: prod.id });
    await bh.adminClient(Node).addDependency(n1.id, prod.id);
    const handle = consoleHandler({
      store,
      basePath: "/console",
      kinds: [{ group: "", kind: "Idle" }],
    });

    const kinds = await get(handle, "/console");
    assert.equal(kinds.status, 200);
    assert.equal(kinds.headers.get("content-type"), "text/html; charset=utf-8");
    assert.match(kinds.headers.get("content-security-policy")!, /script-src 'self'/);
    assert.match(kinds.body, /<a href="\/console\/kinds\/Cluster\.kstack\.sh">Cluster<\/a>/);
    assert.match(kinds.body, /<a href="\/console\/kinds\/Idle">Idle<\/a>/);
    assert.equal((await get(handle, "/console/")).status, 200);

    const list = await get(handle, "/console/kinds/Cluster.kstack.sh");
    assert.equal(list.status, 200);
    assert.match(list.body, /data-live="\/console\/kinds\/Cluster\.kstack\.sh\/live"/);
    assert.match(list.body, new RegExp(`<a href="/console/objects/${prod.id}">prod</a>`));
    assert.match(list.body, /data-condition="Ready" data-status="True"/);

    const detail = await get(handle, `/console/objects/${prod.id}`);
    assert.equal(detail.status, 200);
    assert.match(detail.body, /&quot;replicas&quot;: 3/);
    assert.match(detail.body, /&quot;ready&quot;: true/);
    assert.match(detail.body, /<td data-field="reason">Provisioned<\/td>\s*<td>all up<\/td>/);
    // Both clocks of the condition: transitioned and updated.
    const row = detail.body.slice(detail.body.indexOf('<tr data-condition="Ready"'));
    assert.equal(row.slice(0, row.indexOf("</tr>")).match(/<time /g)?.length, 2);
    assert.match(detail.body, /class="Warning">Warning<\/td>\s*<td>Slow<\/td>/);
    assert.match(
      detail.body,
      new RegExp(`<a href="/console/objects/${n1.id}">Node.kstack.sh/n1</a>`),
    );
    const node = await get(handle, `/console/objects/${n1.id}`);
    assert.match(
      node.body,
      new RegExp(
        `<dt>Owner</dt>\\s*<dd><a href="/console/objects/${prod.id}">Cluster.kstack.sh/prod</a>`,
      ),
    );
    assert.match(node.body, /<dt>Dependencies<\/dt>\s*<dd><a href=/);

    const fragment = await get(handle, `/console/objects/${prod.id}?fragment=main`);
    assert.ok(fragment.body.trimStart().startsWith("<h1>"), fragment.body.slice(0, 40));
    assert.doesNotMatch(fragment.body, /<html/);
    const script = await get(handle, "/console/console.js");
    assert.equal(script.headers.get("content-type"), "text/javascript; charset=utf-8");
    assert.match(script.body, /EventSource/);
    assert.equal((await get(handle, "/console/console.css")).status, 200);
  });
});

test("consoleHandler escapes hostile names, specs, statuses, conditions and events", async () => {
  await withStore(async (store, bh) => {
    const kind = { group: "evil.test", kind: `K${HOSTILE}` };
    const obj = await bh.client(kind).create(HOSTILE, { html: HOSTILE, attr: ATTR });
    await bh.adminClient(kind).updateStatus(obj.id, { note: `</pre>${HOSTILE}` });
    await bh.adminClient(kind).setCondition(obj.id, {
      type: `Ready${ATTR}`,
      status: "False",
      reason: ATTR,
      message: HOSTILE,
    });
    await bh.adminClient(kind).addEvent(obj.id, {
      type: "Normal",
      reason: "R",
      message: HOSTILE,
      category: ATTR,
    });
    const handle = consoleHandler({ store });
    const kindPath = `/kinds/${encodeURIComponent(`K${HOSTILE}.evil.test`)}`;
    for (const path of ["/", kindPath, `/objects/${obj.id}`]) {
      const { status, body } = await get(handle, path);
      assert.equal(status, 200, path);
      assert.ok(!body.includes("<script>alert"), `${path} holds a raw script tag`);
      assert.ok(!body.includes("<img"), `${path} holds a raw img tag`);
      assert.match(body, /&lt;script&gt;alert\(&quot;x&quot;\)&lt;\/script&gt;/, path);
    }
    const detail = (await get(handle, `/objects/${obj.id}`)).body;
    assert.match(detail, /&lt;\/pre&gt;/);
    assert.match(detail, /&quot;&gt;&lt;img src=x onerror=alert\(1\)&gt;/);
    // Every script the page loads is the console's own.
    assert.deepEqual([...detail.matchAll(/<script[^>]*>/g)].map((m) => m[0]), [
      '<script src="/console.js" defer>',
    ]);
  });
});

test("consoleHandler answers unknown paths, kinds and objects with 404 and writes with 405", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", {});
    const handle = consoleHandler({ store, basePath: "/c/" });
    for (
      const path of [
        "/",
        "/elsewhere",
        "/cx",
        "/c/nope",
        "/c/kinds",
        "/c/kinds/.x",
        "/c/kinds/Cluster.kstack.sh/extra",
        "/c/objects/abc",
        "/c/objects/0",
        "/c/objects/-1",
        "/c/objects/99999",
        "/c/objects/99999/live",
        "/c/objects/1e3",
        "/c/%E0%A4%A",
      ]
    ) {
      const r = await get(handle, path);
      assert.equal(r.status, 404, path);
      assert.match(r.body, /<h1>Not found<\/h1>/, path);
    }
    // A kind with no objects is an empty page, not an error.
    assert.match((await get(handle, "/c/kinds/Nothing.x")).body, /No objects\./);
    for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
      const r = await get(handle, `/c/objects/${prod.id}`, { method });
      assert.equal(r.status, 405, method);
      assert.equal(r.headers.get("allow"), "GET, HEAD");
    }
    const head = await handle(
      new Request(`http://localhost/c/objects/${prod.id}`, { method: "HEAD" }),
    );
    assert.equal(head.status, 200);
    assert.equal(head.body, null);
    assert.equal((await store.objects.get(prod.id)).generation, 1, "nothing written");
  });
});

test("consoleHandler refuses a malformed basePath or store", () => {
  return withStore((store) => {
    assert.throws(() => consoleHandler({ store, basePath: "console" }), TypeError);
    assert.throws(() => consoleHandler(undefined as never), TypeError);
    return Promise.resolve();
  });
});

test("consoleHandler live feeds report a kind's and an object's changes and end when cancelled", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", {});
    const handle = consoleHandler({ store, pollInterval: 50 });

    const kindFeed = await handle(new Request("http://localhost/kinds/Cluster.kstack.sh/live"));
    assert.equal(kindFeed.headers.get("content-type"), "text/event-stream; charset=utf-8");
    const objectFeed = await handle(new Request(`http://localhost/objects/${prod.id}/live`));
    const kindReader = kindFeed.body!.getReader();
    const objectReader = objectFeed.body!.getReader();
    await readUntil(kindReader, (t) => t.includes("retry: 2000"));
    await readUntil(objectReader, (t) => t.includes("retry: 2000"));

    await bh.adminClient(Cluster).setCondition(prod.id, { type: "Ready", status: "True" });
    const kindText = await readUntil(kindReader, (t) => t.includes("event: change"));
    assert.match(kindText, new RegExp(`data: \\{"type":"Modified","id":${prod.id},`));
    const objectText = await readUntil(objectReader, (t) => t.includes("event: change"));
    assert.match(objectText, /"type":"Modified"/);

    // An event bumps no object version; the object feed still notices it.
    await bh.adminClient(Cluster).addEvent(prod.id, { type: "Normal", reason: "Probed" });
    await readUntil(objectReader, (t) => t.includes('"type":"Event"'));

    await kindReader.cancel();
    assert.equal((await kindReader.read()).done, true);
    await objectReader.cancel();
  });
});

test("toNodeListener serves the console over node:http and ends a feed when the client leaves", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const server = await listenNode(consoleHandler({ store }));
    try {
      const { port } = server;
      const page = await fetch(`http://127.0.0.1:${port}/kinds/Cluster.kstack.sh`);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /data-name="prod"/);
      const missing = await fetch(`http://127.0.0.1:${port}/nope`);
      assert.equal(missing.status, 404);
      await missing.body?.cancel();
      const abort = new AbortController();
      const live = await fetch(`http://127.0.0.1:${port}/kinds/Cluster.kstack.sh/live`, {
        signal: abort.signal,
      });
      assert.equal(live.headers.get("content-type"), "text/event-stream; charset=utf-8");
      await readUntil(live.body!.getReader(), (t) => t.includes("retry:"));
      abort.abort();
    } finally {
      await server.close();
    }
  });
});

test("consoleHandler over a read-only open serves every page and the live feed of another open's writes", async () => {
  const dir = tempDir();
  const file = dir.file("beehive.db");
  const writer = await openSqliteStore(file);
  const store = await openSqliteStore(file, { readOnly: true });
  try {
    const bh = new Beehive(writer);
    const prod = await bh.client(Cluster).create("prod", {});
    await bh.adminClient(Cluster).setCondition(prod.id, {
      type: "Connected",
      status: "True",
      liveness: true,
    });
    const handle = consoleHandler({ store, pollInterval: 50 });
    assert.match((await get(handle, "/")).body, /Cluster/);
    const list = await get(handle, "/kinds/Cluster.kstack.sh");
    assert.equal(list.status, 200);
    // Liveness reads as the writing process reads it: no open of the console's downgraded it.
    assert.match(list.body, /data-condition="Connected" data-status="True"/);
    assert.equal((await get(handle, `/objects/${prod.id}`)).status, 200);
    const feed = await handle(new Request(`http://localhost/objects/${prod.id}/live`));
    const reader = feed.body!.getReader();
    await readUntil(reader, (t) => t.includes("retry: 2000"));
    await bh.adminClient(Cluster).setCondition(prod.id, { type: "Ready", status: "True" });
    await readUntil(reader, (t) => t.includes('"type":"Modified"'));
    await reader.cancel();
  } finally {
    await store.close();
    await writer.close();
    dir.remove();
  }
});
