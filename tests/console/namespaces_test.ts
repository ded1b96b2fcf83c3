/**
 * The console and namespaces: a kind's page filtered to one namespace (read
 * through the store's namespace index), rows naming their namespace, a
 * malformed namespace answered with a 400 page, and a namespace-filtered
 * page's feed keeping only that namespace's rows.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Beehive, defineKind } from "../../mod.ts";
import type { Store } from "../../store/mod.ts";
import { consoleHandler } from "../../console/mod.ts";
import { test } from "../_test.ts";
import { readUntil, withStore } from "./_console_harness.ts";

const Team = defineKind({ group: "org.example", kind: "Team", namespaced: true });

async function get(handle: (r: Request) => Promise<Response>, path: string) {
  const response = await handle(new Request(`http://localhost${path}`));
  return { status: response.status, body: await response.text() };
}

function rows(body: string): string[] {
  return [
    ...body.matchAll(
      /<tr data-id="\d+" data-name="([^"]*)"[^>]*>\s*<td>(?:\s*<span class="namespace">([^<]*)\/<\/span>\s*)?/g,
    ),
  ]
    .map((m) => `${m[2] ?? ""}/${m[1]}`);
}

async function seed(store: Store): Promise<void> {
  const bh = new Beehive(store);
  for (const ns of ["red", "blue"]) {
    const teams = bh.client(Team, { namespace: ns });
    for (const name of ["alpha", "beta"]) await teams.create(name, {});
  }
}

test("consoleHandler filters a kind page to one namespace, and rows name their namespace", async () => {
  await withStore(async (store) => {
    await seed(store);
    const handle = consoleHandler({ store });
    const all = await get(handle, "/kinds/Team.org.example");
    assert.equal(all.status, 200);
    assert.deepEqual(rows(all.body), ["red/alpha", "red/beta", "blue/alpha", "blue/beta"]);
    const blue = await get(handle, "/kinds/Team.org.example?namespace=blue");
    assert.equal(blue.status, 200);
    assert.deepEqual(rows(blue.body), ["blue/alpha", "blue/beta"]);
    assert.match(blue.body, /<input name="namespace" value="blue"/);
    assert.match(blue.body, /data-live="\/kinds\/Team\.org\.example\/live\?namespace=blue"/);
    const prefixed = await get(handle, "/kinds/Team.org.example?namespace=red&prefix=b");
    assert.deepEqual(rows(prefixed.body), ["red/beta"]);
  });
});

test("consoleHandler answers a malformed namespace with a 400 page and its feed with a 400", async () => {
  await withStore(async (store) => {
    await seed(store);
    const handle = consoleHandler({ store });
    for (const bad of ["Blue", "a_b", "-x", "x".repeat(64), "<b>"]) {
      const page = await get(
        handle,
        `/kinds/Team.org.example?namespace=${encodeURIComponent(bad)}`,
      );
      assert.equal(page.status, 400, bad);
      assert.match(page.body, /Bad Request: namespace: /);
      assert.doesNotMatch(page.body, /<b>/);
      const feed = await get(
        handle,
        `/kinds/Team.org.example/live?namespace=${encodeURIComponent(bad)}`,
      );
      assert.equal(feed.status, 400, bad);
    }
  });
});

test("consoleHandler namespace-filtered feed sends rows of its namespace only", async () => {
  await withStore(async (store, bh) => {
    const red = bh.client(Team, { namespace: "red" });
    const blue = bh.client(Team, { namespace: "blue" });
    const handle = consoleHandler({ store, pollInterval: 20 });
    const feed = await handle(
      new Request("http://localhost/kinds/Team.org.example/live?namespace=red"),
    );
    const reader = feed.body!.getReader();
    try {
      await readUntil(reader, (t) => t.includes("retry:"));
      const other = await blue.create("gamma", {});
      let text = await readUntil(reader, (t) => t.includes("event: change"));
      const skipped = JSON.parse(/event: change\ndata: (.*)\n/.exec(text)![1]);
      assert.equal(skipped.id, other.id);
      assert.equal(skipped.row, undefined);
      assert.equal(skipped.matches, false);
      const mine = await red.create("delta", {});
      text = await readUntil(reader, (t) => t.includes("event: change"));
      const shown = JSON.parse(/event: change\ndata: (.*)\n/.exec(text)![1]);
      assert.equal(shown.id, mine.id);
      assert.match(shown.row, /data-name="delta"/);
      assert.match(shown.row, /<span class="namespace">red\/<\/span>/);
    } finally {
      await reader.cancel();
    }
  });
});
