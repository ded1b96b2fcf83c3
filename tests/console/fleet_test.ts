/**
 * The console at fleet scale: a kind's page is paged (`limit`, `after`) and
 * filtered (name prefix, state) with a bounded read, a malformed query is a
 * 400, the kind feed carries the changed row, and the kinds page has a feed
 * of its own carrying counts.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Beehive } from "../../mod.ts";
import { consoleHandler } from "../../console/mod.ts";
import { SCAN_MAX } from "../../console/_kind_query.ts";
import { test } from "../_test.ts";
import { readUntil, withStore } from "./_console_harness.ts";

const Cluster = { group: "kstack.sh", kind: "Cluster" };

async function get(handle: (r: Request) => Promise<Response>, path: string) {
  const response = await handle(new Request(`http://localhost${path}`));
  return { status: response.status, body: await response.text() };
}

/** The names of a kind page's rows, in order. */
function rowNames(body: string): string[] {
  return [...body.matchAll(/<tr data-id="\d+" data-name="([^"]*)"/g)].map((m) => m[1]);
}

function nextHref(body: string): string | undefined {
  return /<a href="([^"]*)" rel="next">/.exec(body)?.[1].replaceAll("&amp;", "&");
}

async function seed(store: Parameters<Parameters<typeof withStore>[0]>[0], n: number) {
  await store.within(async (tx) => {
    const clusters = new Beehive(tx).client(Cluster);
    for (let i = 0; i < n; i++) await clusters.create(`c-${String(i).padStart(4, "0")}`, {});
  });
}

test("consoleHandler pages a kind by limit and after, ending with no next link", async () => {
  await withStore(async (store) => {
    await seed(store, 25);
    const handle = consoleHandler({ store });
    const first = await get(handle, "/kinds/Cluster.kstack.sh?limit=10");
    assert.equal(first.status, 200);
    assert.deepEqual(rowNames(first.body), Array.from({ length: 10 }, (_, i) => `c-000${i}`));
    const seen = [...rowNames(first.body)];
    let href = nextHref(first.body);
    while (href !== undefined) {
      const page = await get(handle, href);
      seen.push(...rowNames(page.body));
      href = nextHref(page.body);
      if (href === undefined) assert.match(page.body, /end of list/);
    }
    assert.equal(seen.length, 25);
    assert.equal(new Set(seen).size, 25);
    assert.equal(rowNames((await get(handle, "/kinds/Cluster.kstack.sh")).body).length, 25);
  });
});

test("consoleHandler filters a kind by name prefix and by state (retrying included)", async () => {
  await withStore(async (store, bh) => {
    await seed(store, 30);
    const c12 = await bh.client(Cluster).getByName("c-0012");
    await bh.adminClient(Cluster).setCondition(c12.id, { type: "Stalled", status: "True" });
    const handle = consoleHandler({ store });
    const prefixed = await get(handle, "/kinds/Cluster.kstack.sh?prefix=c-001");
    assert.deepEqual(rowNames(prefixed.body), Array.from({ length: 10 }, (_, i) => `c-001${i}`));
    assert.match(prefixed.body, /<input name="prefix" value="c-001"/);
    const stalled = await get(handle, "/kinds/Cluster.kstack.sh?state=stalled");
    assert.deepEqual(rowNames(stalled.body), ["c-0012"]);
    // What a controller's failing pass leaves: the console reads Retrying, not Pending.
    const c07 = await bh.client(Cluster).getByName("c-0007");
    await bh.adminClient(Cluster).setCondition(c07.id, {
      type: "Retrying",
      status: "True",
      reason: "ReconcileFailed",
    });
    const retrying = await get(handle, "/kinds/Cluster.kstack.sh?state=retrying");
    assert.deepEqual(rowNames(retrying.body), ["c-0007"]);
    assert.match(retrying.body, /data-state="retrying"/);
    assert.match(retrying.body, /<td>Retrying<\/td>/);
    const pending = await get(handle, "/kinds/Cluster.kstack.sh?state=pending&limit=5");
    assert.equal(rowNames(pending.body).length, 5);
    assert.match(nextHref(pending.body) ?? "", /state=pending&limit=5&after=\d+/);
    const none = await get(handle, "/kinds/Cluster.kstack.sh?prefix=zzz");
    assert.deepEqual(rowNames(none.body), []);
    assert.match(none.body, /No objects on this page match/);
  });
});

test("consoleHandler reads at most SCAN_MAX objects for a filtered page and links the rest", async () => {
  await withStore(async (store) => {
    await seed(store, SCAN_MAX + 10);
    const handle = consoleHandler({ store });
    const page = await get(handle, "/kinds/Cluster.kstack.sh?prefix=nothing");
    assert.deepEqual(rowNames(page.body), []);
    assert.match(page.body, new RegExp(`reads at most ${SCAN_MAX} objects`));
    const rest = await get(handle, nextHref(page.body)!);
    assert.match(rest.body, /end of list/);
  });
});

test("consoleHandler answers a malformed kind page query with 400", async () => {
  await withStore(async (store) => {
    const handle = consoleHandler({ store });
    for (
      const query of [
        "limit=0",
        "limit=251",
        "limit=ten",
        "after=-1",
        "after=1e3",
        "state=busy",
        `prefix=${"p".repeat(1_025)}`,
      ]
    ) {
      const r = await get(handle, `/kinds/Cluster.kstack.sh?${query}`);
      assert.equal(r.status, 400, query);
      assert.match(r.body, /<p class="error" role="alert">Bad Request: /);
    }
  });
});

test("consoleHandler kind feed carries the changed row, escaped, and no list", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", {});
    const handle = consoleHandler({ store, pollInterval: 50 });
    const feed = await handle(new Request("http://localhost/kinds/Cluster.kstack.sh/live"));
    const reader = feed.body!.getReader();
    try {
      await readUntil(reader, (t) => t.includes("retry:"));
      await bh.adminClient(Cluster).setCondition(prod.id, {
        type: "Ready",
        status: "True",
        message: "<b>up</b>",
      });
      const text = await readUntil(reader, (t) => t.includes("event: change"));
      const data = JSON.parse(/event: change\ndata: (.*)\n/.exec(text)![1]);
      assert.equal(data.type, "Modified");
      assert.equal(data.id, prod.id);
      assert.match(data.row, /^<tr data-id="\d+" data-name="prod" data-state="pending">/);
      assert.match(data.row, /data-condition="Ready" data-status="True"/);
      assert.ok(!data.row.includes("<b>"), "the message is escaped");
      assert.ok(text.length < 2_000, `one row, not a list: ${text.length} bytes`);
    } finally {
      await reader.cancel();
    }
  });
});

test("consoleHandler kinds feed sends a kind's new count and row after a write", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("a", {});
    const handle = consoleHandler({ store, pollInterval: 20 });
    const page = await get(handle, "/");
    assert.match(page.body, /data-live="\/live"/);
    assert.match(page.body, /<td data-field="objects">1<\/td>/);
    const feed = await handle(new Request("http://localhost/live"));
    assert.equal(feed.headers.get("content-type"), "text/event-stream; charset=utf-8");
    const reader = feed.body!.getReader();
    try {
      await readUntil(reader, (t) => t.includes("retry:"));
      await bh.client(Cluster).create("b", {});
      const text = await readUntil(reader, (t) => t.includes("event: kind"));
      const data = JSON.parse(/event: kind\ndata: (.*)\n/.exec(text)![1]);
      assert.equal(data.kind, "Cluster.kstack.sh");
      assert.equal(data.objects, 2);
      assert.match(data.row, /^<tr data-kind="Cluster\.kstack\.sh">/);
    } finally {
      await reader.cancel();
    }
  });
});
