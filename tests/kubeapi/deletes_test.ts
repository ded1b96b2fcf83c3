/**
 * Deletes through the Kubernetes API finish as the API server's do, with no
 * Beehive running on the store: an object nothing holds is gone when the
 * DELETE answers, the three propagation policies, a held object answered
 * with its deletionTimestamp, one DELETED at a watch, and the real kubectl
 * against `beehive <store> serve` alone.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Beehive, NotFoundError } from "../../mod.ts";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import { kubeconfigYaml } from "../../kubeapi/_kubeconfig.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";
import { whileServing } from "../cli/_cli_harness.ts";
import { test } from "../_test.ts";
import {
  call,
  Cluster,
  CLUSTERS,
  eventsOf,
  kubectlIn,
  Node,
  withStore,
} from "./_kubeapi_harness.ts";

const NODES = "/apis/kstack.sh/v1/nodes";
const remove = (body?: unknown) => ({
  method: "DELETE",
  ...(body === undefined
    ? {}
    : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
});

test("kubeApiHandler delete removes an object nothing holds before it answers 200 with the object", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", { replicas: 3 });
    const answer = await call(kubeApiHandler({ store }), `${CLUSTERS}/prod`, remove());
    assert.equal(answer.status, 200);
    assert.equal(answer.body.kind, "Cluster");
    const meta = answer.body.metadata as Record<string, unknown>;
    assert.equal(meta.name, "prod");
    assert.equal(meta.uid, String(prod.id));
    await assert.rejects(bh.client(Cluster).get(prod.id), NotFoundError);
  });
});

test("kubeApiHandler delete with Background or Foreground propagation removes the owned children with their owner", async () => {
  for (const propagationPolicy of ["Background", "Foreground"]) {
    await withStore(async (store, bh) => {
      const prod = await bh.client(Cluster).create("prod", {});
      const n1 = await bh.client(Node).create("n1", {}, { owner: prod.id });
      const n2 = await bh.client(Node).create("n2", {}, { owner: n1.id });
      const answer = await call(
        kubeApiHandler({ store }),
        `${CLUSTERS}/prod`,
        remove({ propagationPolicy }),
      );
      assert.equal(answer.status, 200, propagationPolicy);
      for (
        const [client, id] of [[bh.client(Cluster), prod.id], [bh.client(Node), n1.id], [
          bh.client(Node),
          n2.id,
        ]] as const
      ) {
        await assert.rejects(client.get(id), NotFoundError, `${propagationPolicy}: ${id}`);
      }
    });
  }
});

test("kubeApiHandler delete with Orphan propagation removes the owner and keeps its children without the owner edge", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", {});
    const n1 = await bh.client(Node).create("n1", {}, { owner: prod.id });
    const answer = await call(
      kubeApiHandler({ store }),
      `${CLUSTERS}/prod`,
      remove({ kind: "DeleteOptions", apiVersion: "v1", propagationPolicy: "Orphan" }),
    );
    assert.equal(answer.status, 200);
    await assert.rejects(bh.client(Cluster).get(prod.id), NotFoundError);
    const child = await bh.client(Node).get(n1.id, { load: ["owner"] });
    assert.equal(child.deletionRequestedAt, undefined);
    assert.equal(child.owner(), undefined);
    const got = await call(kubeApiHandler({ store }), `${NODES}/n1`);
    assert.equal((got.body.metadata as Record<string, unknown>).ownerReferences, undefined);
  });
});

test("kubeApiHandler delete answers an owner its held child keeps with its deletionTimestamp, and the child stays deletion-pending", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", {});
    const n1 = await bh.client(Node).create("n1", {}, { owner: prod.id });
    await store.objects.addFinalizer(n1, "kstack.sh/drain");
    const answer = await call(kubeApiHandler({ store }), `${CLUSTERS}/prod`, remove());
    assert.equal(answer.status, 200);
    assert.equal(answer.body.kind, "Cluster");
    const meta = answer.body.metadata as Record<string, unknown>;
    assert.equal(typeof meta.deletionTimestamp, "string");
    assert.notEqual((await bh.client(Node).get(n1.id)).deletionRequestedAt, undefined);
    // The store's deletion machinery collects both once the finalizer goes.
    await bh.adminClient(Node).deleteFinalizer(n1.id, "kstack.sh/drain");
    const gc = new Beehive(store, { gcInterval: 10 });
    const stop = await gc.start();
    try {
      const watch = await bh.client(Cluster).watch(prod.id);
      try {
        if (watch.object !== undefined) {
          for await (const change of watch) if (change.type === "Deleted") break;
        }
      } finally {
        watch.close();
      }
    } finally {
      await stop();
    }
    await assert.rejects(bh.client(Node).get(n1.id), NotFoundError);
  });
});

test("kubeApiHandler delete of an object nothing holds reaches a watch as one DELETED and nothing else", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    await bh.client(Cluster).create("dev", {});
    const handle = kubeApiHandler({ store, pollInterval: 50 });
    const list = await call(handle, CLUSTERS);
    const rv = (list.body.metadata as Record<string, string>).resourceVersion;
    const abort = new AbortController();
    const response = await handle(
      new Request(`http://localhost${CLUSTERS}?watch=true&resourceVersion=${rv}`, {
        signal: abort.signal,
      }),
    );
    const events = eventsOf(response);
    try {
      assert.equal((await call(handle, `${CLUSTERS}/prod`, remove())).status, 200);
      // A later write marks the end: everything the delete caused comes before it.
      await bh.client(Cluster).create("qa", {});
      const seen: string[] = [];
      for (;;) {
        const event = await events.next();
        assert.ok(event !== undefined, "the watch ended early");
        const name = (event.object as { metadata: { name: string } }).metadata.name;
        seen.push(`${event.type} ${name}`);
        if (name === "qa") break;
      }
      assert.deepEqual(seen, ["DELETED prod", "ADDED qa"]);
    } finally {
      abort.abort();
      await events.cancel();
    }
  });
});

test("kubectl delete, --cascade=orphan and --cascade=foreground finish against beehive serve with no Beehive running", async () => {
  const dir = await mkdtemp(join(tmpdir(), "beehive-kubectl-delete-"));
  try {
    const db = join(dir, "beehive.db");
    const store = await openSqliteStore(db);
    const bh = new Beehive(store);
    const prod = await bh.client(Cluster).create("prod", {});
    await bh.client(Node).create("n1", {}, { owner: prod.id });
    const dev = await bh.client(Cluster).create("dev", {});
    const n2 = await bh.client(Node).create("n2", {}, { owner: dev.id });
    await bh.client(Cluster).create("qa", {});
    await store.close();
    await whileServing(db, dir, async (url) => {
      const config = join(dir, "kubeconfig");
      await writeFile(config, kubeconfigYaml({ server: url }));
      const kubectl = kubectlIn(dir, config);
      const deleted = await kubectl("delete", "cluster", "qa", "--timeout=20s");
      assert.equal(deleted.code, 0, deleted.stderr);
      assert.match(deleted.stdout, /cluster\.kstack\.sh "qa" deleted/);
      const foreground = await kubectl(
        "delete",
        "cluster",
        "prod",
        "--cascade=foreground",
        "--timeout=20s",
      );
      assert.equal(foreground.code, 0, foreground.stderr);
      const orphan = await kubectl("delete", "cluster", "dev", "--cascade=orphan", "--timeout=20s");
      assert.equal(orphan.code, 0, orphan.stderr);
      assert.match(orphan.stdout, /cluster\.kstack\.sh "dev" deleted/);
      const left = await kubectl("get", "clusters,nodes", "-o", "name");
      assert.equal(left.code, 0, left.stderr);
      assert.equal(left.stdout, "node.kstack.sh/n2\n");
    });
    const after = await openSqliteStore(db);
    try {
      const child = await new Beehive(after).client(Node).get(n2.id, { load: ["owner"] });
      assert.equal(child.owner(), undefined);
    } finally {
      await after.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("kubeApiHandler delete with dryRun=All answers the object and removes nothing", async () => {
  await withStore(async (store, bh) => {
    const prod = await bh.client(Cluster).create("prod", {});
    await bh.client(Node).create("n1", {}, { owner: prod.id });
    const answer = await call(kubeApiHandler({ store }), `${CLUSTERS}/prod?dryRun=All`, remove());
    assert.equal(answer.status, 200);
    assert.equal((answer.body.metadata as Record<string, unknown>).name, "prod");
    assert.equal((await bh.client(Cluster).get(prod.id)).deletionRequestedAt, undefined);
    assert.equal((await bh.client(Node).getByName("n1")).deletionRequestedAt, undefined);
  });
});
