/**
 * Informers of the real `@kubernetes/client-node` (a list, then a watch from
 * its resourceVersion, as every informer holds them) against `serveKubeApi`
 * and `beehive <store> serve` alone: one add per create, one update per write
 * (an apply changing labels and spec is one), one delete when an object is
 * collected, and a label-selected informer sees no delete of an object it
 * never showed.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serveKubeApi } from "../../kubeapi/mod.ts";
import { Beehive } from "../../mod.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";
import { test } from "../_test.ts";
import { whileServing } from "../cli/_cli_harness.ts";
import { informerOf, type Recorded } from "./_informer.ts";
import { Cluster, CLUSTERS, withStore } from "./_kubeapi_harness.ts";

const JSON_HEADERS = { "content-type": "application/json" };

/** The API writes the tests make: create, server-side apply, merge patch, delete. */
function writesTo(url: string) {
  const send = async (path: string, init: RequestInit, expected: number[]) => {
    const response = await fetch(`${url}${path}`, init);
    const text = await response.text();
    assert.ok(expected.includes(response.status), `${init.method} ${path}: ${text}`);
  };
  return {
    create: (name: string, labels: Record<string, string> = {}) =>
      send(CLUSTERS, {
        method: "POST",
        headers: JSON_HEADERS,
        body: JSON.stringify({
          apiVersion: "kstack.sh/v1",
          kind: "Cluster",
          metadata: { name, labels },
          spec: {},
        }),
      }, [201]),
    apply: (name: string, labels: Record<string, string>, spec: unknown) =>
      send(`${CLUSTERS}/${name}?fieldManager=test&force=true`, {
        method: "PATCH",
        headers: { "content-type": "application/apply-patch+yaml" },
        body: JSON.stringify({
          apiVersion: "kstack.sh/v1",
          kind: "Cluster",
          metadata: { name, labels },
          spec,
        }),
      }, [200, 201]),
    patch: (name: string, body: unknown) =>
      send(`${CLUSTERS}/${name}`, {
        method: "PATCH",
        headers: { "content-type": "application/merge-patch+json" },
        body: JSON.stringify(body),
      }, [200]),
    remove: (name: string) => send(`${CLUSTERS}/${name}`, { method: "DELETE" }, [200, 202]),
  };
}

/** The counts every informer test checks: one add, update and delete per create, write and collection. */
async function countsThrough(url: string): Promise<Recorded> {
  const informer = await informerOf(url);
  try {
    await informer.until("add seed");
    const api = writesTo(url);
    // Each write waits for the informer to hear the one before: the API's watch reads the
    // store's write log, which keeps the latest state of an object, so writes that land between
    // two reads of it arrive as one MODIFIED (see guide 14).
    await api.create("a");
    await informer.until("add a");
    await api.apply("a", { env: "prod", team: "core" }, { replicas: 3, zone: "b" });
    await informer.until("update a");
    await api.patch("a", { spec: { replicas: 4 } });
    await informer.until("update a", 2);
    await api.remove("a");
    await api.create("marker");
    await informer.until("add marker");
    assert.deepEqual(informer.seen, [
      "add seed",
      "add a",
      "update a", // the apply of labels and spec: one write
      "update a",
      "delete a",
      "add marker",
    ]);
    assert.equal(informer.informer.get("a"), undefined);
  } finally {
    await informer.stop();
  }
  return informer;
}

const COUNTS =
  "client-node informer sees one add per create, one update per write (an apply of labels and spec is one) and one delete per collected object";
const SERVE_ALONE = "client-node informer counts the same against beehive serve alone on a store";
const SELECTED =
  "client-node label-selected informer sees no delete of an object it never showed, live and when started after a relist";

test(COUNTS, async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("seed", {});
    const server = await serveKubeApi({ store, port: 0, pollInterval: 50 });
    let informer: Recorded | undefined;
    try {
      informer = await countsThrough(server.url);
    } finally {
      await server.close();
      await informer?.stopped;
    }
  });
});

test(SERVE_ALONE, async () => {
  const dir = await mkdtemp(join(tmpdir(), "beehive-informer-"));
  try {
    const store = await openSqliteStore(join(dir, "beehive.db"));
    await new Beehive(store).client(Cluster).create("seed", {});
    await store.close();
    let informer: Recorded | undefined;
    await whileServing(join(dir, "beehive.db"), dir, async (url) => {
      informer = await countsThrough(url);
    });
    await informer?.stopped;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test(SELECTED, async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("seed", {});
    const server = await serveKubeApi({ store, port: 0, pollInterval: 50 });
    const api = writesTo(server.url);
    const informers: Recorded[] = [];
    try {
      await api.create("shown", { env: "prod" });
      await api.create("hidden", { env: "dev" });
      const live = await informerOf(server.url, "env=prod");
      informers.push(live);
      await live.until("add shown");
      await api.create("devonly", { env: "dev" });
      await api.patch("hidden", { spec: { replicas: 2 } });
      await api.remove("hidden");
      await api.create("marker", { env: "prod" });
      await live.until("add marker");
      // A second informer lists, then watches from the list's version, over the same writes.
      const relisted = await informerOf(server.url, "env=prod");
      informers.push(relisted);
      await relisted.until("add marker");
      await api.create("devonly2", { env: "dev" });
      await api.patch("shown", { metadata: { labels: { env: "dev" } } });
      await api.create("marker2", { env: "prod" });
      await live.until("add marker2");
      await relisted.until("add marker2");
      assert.deepEqual(live.seen, [
        "add shown",
        "add marker",
        "delete shown", // relabelled out of the selection: a true delete
        "add marker2",
      ]);
      assert.deepEqual(relisted.seen, ["add shown", "add marker", "delete shown", "add marker2"]);
    } finally {
      for (const informer of informers) await informer.stop();
      await server.close();
      for (const informer of informers) await informer.stopped;
    }
  });
});
