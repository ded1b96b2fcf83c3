/**
 * The console and labels: a kind's page filtered by a label selector (read
 * through the store's label index), a malformed selector answered with a 400
 * page, labels on rows and labels and annotations on an object's page, all
 * escaped, and a filtered page's feed dropping an object that stops matching.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Beehive } from "../../mod.ts";
import type { Store } from "../../store/mod.ts";
import { consoleHandler } from "../../console/mod.ts";
import { test } from "../_test.ts";
import { readUntil, withStore } from "./_console_harness.ts";

const Cluster = { group: "kstack.sh", kind: "Cluster" };

async function get(handle: (r: Request) => Promise<Response>, path: string) {
  const response = await handle(new Request(`http://localhost${path}`));
  return {
    status: response.status,
    type: response.headers.get("content-type"),
    body: await response.text(),
  };
}

function rowNames(body: string): string[] {
  return [...body.matchAll(/<tr data-id="\d+" data-name="([^"]*)"/g)].map((m) => m[1]);
}

async function seed(store: Store, n: number) {
  await store.within(async (tx) => {
    const clusters = new Beehive(tx).client(Cluster);
    for (let i = 0; i < n; i++) {
      await clusters.create(`c-${String(i).padStart(3, "0")}`, {}, {
        labels: { tier: i % 10 === 0 ? "db" : "web", ...(i % 2 === 0 ? { even: "yes" } : {}) },
      });
    }
  });
}

test("consoleHandler filters a kind page by a labels selector in Kubernetes syntax", async () => {
  await withStore(async (store) => {
    await seed(store, 40);
    const handle = consoleHandler({ store });
    const db = await get(handle, "/kinds/Cluster.kstack.sh?labels=tier%3Ddb");
    assert.equal(db.status, 200);
    assert.deepEqual(rowNames(db.body), ["c-000", "c-010", "c-020", "c-030"]);
    assert.match(db.body, /<input name="labels" value="tier=db"/);
    const set = await get(
      handle,
      `/kinds/Cluster.kstack.sh?labels=${encodeURIComponent("tier in (db),!even")}`,
    );
    assert.deepEqual(rowNames(set.body), []);
    const webEven = await get(
      handle,
      `/kinds/Cluster.kstack.sh?prefix=c-01&labels=${encodeURIComponent("tier!=db,even")}`,
    );
    assert.deepEqual(rowNames(webEven.body), ["c-012", "c-014", "c-016", "c-018"]);
  });
});

test("consoleHandler pages a labels-filtered kind with next links that keep the selector", async () => {
  await withStore(async (store) => {
    await seed(store, 40);
    const handle = consoleHandler({ store });
    const first = await get(handle, "/kinds/Cluster.kstack.sh?labels=even&limit=15");
    assert.equal(rowNames(first.body).length, 15);
    const next = /<a href="([^"]*)" rel="next">/.exec(first.body)![1].replaceAll("&amp;", "&");
    assert.match(next, /labels=even&limit=15&after=\d+/);
    const second = await get(handle, next);
    assert.deepEqual(rowNames(second.body), ["c-030", "c-032", "c-034", "c-036", "c-038"]);
    assert.match(second.body, /end of list/);
  });
});

test("consoleHandler reads a labels-only page through the label index, not a scan", async () => {
  await withStore(async (store) => {
    await seed(store, 20);
    const seen: Array<{ limit?: number; selector: boolean }> = [];
    const list = store.objects.list.bind(store.objects);
    store.objects.list = (gk, options) => {
      seen.push({ limit: options?.limit, selector: options?.labelSelector !== undefined });
      return list(gk, options);
    };
    const handle = consoleHandler({ store });
    const page = await get(handle, "/kinds/Cluster.kstack.sh?labels=tier%3Ddb&limit=5");
    assert.deepEqual(rowNames(page.body), ["c-000", "c-010"]);
    assert.deepEqual(seen, [{ limit: 6, selector: true }]);
  });
});

test("consoleHandler answers a malformed labels selector with a 400 page saying what is wrong", async () => {
  await withStore(async (store) => {
    await seed(store, 3);
    const handle = consoleHandler({ store });
    for (
      const selector of [
        "tier in (db",
        "=db",
        "tier=<script>alert(1)</script>",
        "a".repeat(9_000),
        "tier notin ()",
      ]
    ) {
      const r = await get(
        handle,
        `/kinds/Cluster.kstack.sh?labels=${encodeURIComponent(selector)}`,
      );
      assert.equal(r.status, 400, selector.slice(0, 40));
      assert.equal(r.type, "text/html; charset=utf-8");
      assert.match(r.body, /<p class="error" role="alert">Bad Request: /);
      assert.match(r.body, /<input name="labels"/, "the form is there to fix it");
      assert.ok(!r.body.includes("<script>alert"), "the selector is escaped");
      assert.deepEqual(rowNames(r.body), []);
    }
    const feed = await get(handle, "/kinds/Cluster.kstack.sh/live?labels=tier%20in");
    assert.equal(feed.status, 400);
  });
});

// Keys cannot carry markup (the store refuses them); values of annotations can.
test("consoleHandler shows labels on rows and labels and annotations on an object page, escaped", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", {}, {
      labels: { "example.com/team": "a-b_c.d", tier: "web" },
      annotations: { "example.com/html": "<script>alert(1)</script>", note: `"quoted" & <i>` },
    });
    const handle = consoleHandler({ store });
    const kind = await get(handle, "/kinds/Cluster.kstack.sh");
    assert.match(kind.body, /<th>Labels<\/th>/);
    assert.match(kind.body, /<span class="label">example\.com\/team=a-b_c\.d<\/span>/);
    assert.match(kind.body, /<span class="label">tier=web<\/span>/);
    const object = await get(handle, `/objects/${prod.id}`);
    assert.match(object.body, /<dt>Labels<\/dt>/);
    assert.match(object.body, /<span class="label">tier=web<\/span>/);
    assert.match(object.body, /<dt>Annotations<\/dt>/);
    assert.ok(!object.body.includes("<script>alert"), "annotation values are escaped");
    assert.match(
      object.body,
      /example\.com\/html:<\/span> &lt;script&gt;alert\(1\)&lt;\/script&gt;/,
    );
    assert.match(object.body, /&quot;quoted&quot; &amp; &lt;i&gt;/);
  });
});

test("consoleHandler labels-filtered feed drops an object that stops matching and adds one that starts", async () => {
  await withStore(async (store, bh) => {
    const clusters = bh.client(Cluster);
    const a = await clusters.create("a", {}, { labels: { tier: "web" } });
    const b = await clusters.create("b", {}, { labels: { tier: "db" } });
    const handle = consoleHandler({ store, pollInterval: 20 });
    const page = await get(handle, "/kinds/Cluster.kstack.sh?labels=tier%3Dweb");
    assert.deepEqual(rowNames(page.body), ["a"]);
    assert.match(page.body, /data-live="\/kinds\/Cluster\.kstack\.sh\/live\?labels=tier%3Dweb"/);
    const feed = await handle(
      new Request("http://localhost/kinds/Cluster.kstack.sh/live?labels=tier%3Dweb"),
    );
    const reader = feed.body!.getReader();
    try {
      await readUntil(reader, (t) => t.includes("retry:"));
      await clusters.updateMetadata(a.id, { labels: { tier: "db" } });
      let text = await readUntil(reader, (t) => t.includes("event: change"));
      const left = JSON.parse(/event: change\ndata: (.*)\n/.exec(text)![1]);
      assert.equal(left.id, a.id);
      assert.equal(left.row, undefined, "no row: the page removes it");
      assert.equal(left.matches, false);
      await clusters.updateMetadata(b.id, { labels: { tier: "web" } });
      text = await readUntil(reader, (t) => t.includes("event: change"));
      const joined = JSON.parse(/event: change\ndata: (.*)\n/.exec(text)![1]);
      assert.equal(joined.id, b.id);
      assert.match(joined.row, /^<tr data-id="\d+" data-name="b"/);
    } finally {
      await reader.cancel();
    }
  });
});
