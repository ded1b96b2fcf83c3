/**
 * Dry run (`dryRun=All`) on every write of the Kubernetes API: create,
 * replace, merge and JSON patches and delete are validated and answered as
 * if written, and nothing is written — no commit, no watch line. Then the
 * real kubectl: `create` and `delete --dry-run=server` write nothing, and
 * `kubectl diff` exits 0 with no change and 1 with one.
 *
 * @module
 */
import assert from "node:assert/strict";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import type { Store } from "../../store/mod.ts";
import { test } from "../_test.ts";
import { call, Cluster, CLUSTERS, eventsOf, withKubectl, withStore } from "./_kubeapi_harness.ts";

const json = (method: string, body: unknown, type = "application/json") => ({
  method,
  headers: { "content-type": type },
  body: JSON.stringify(body),
});

/** How many writes the store has logged for Cluster. */
async function logged(store: Store): Promise<number> {
  return (await store.objectWrites.listSince(Cluster, { after: 0, limit: 10_000 })).writes.length;
}

test("kubeApiHandler answers a dryRun=All create, replace, merge and JSON patch and delete as if written, writing nothing", async () => {
  await withStore(async (store, bh) => {
    const handle = kubeApiHandler({ store });
    const prod = await bh.client(Cluster).create("prod", { replicas: 1 }, {
      labels: { env: "dev" },
    });
    const abort = new AbortController();
    const watch = await handle(
      new Request(`http://localhost${CLUSTERS}?watch=1&resourceVersion=${prod.resourceVersion}`, {
        signal: abort.signal,
      }),
    );
    const events = eventsOf(watch);
    const before = await logged(store);

    const created = await call(
      handle,
      `${CLUSTERS}?dryRun=All`,
      json("POST", { metadata: { name: "dev", labels: { env: "dev" } }, spec: { replicas: 2 } }),
    );
    assert.equal(created.status, 201);
    assert.equal((created.body.metadata as { name: string }).name, "dev");
    assert.deepEqual(created.body.spec, { replicas: 2 });
    const taken = await call(
      handle,
      `${CLUSTERS}?dryRun=All`,
      json("POST", { metadata: { name: "prod" }, spec: {} }),
    );
    assert.equal(taken.status, 409);

    const replaced = await call(
      handle,
      `${CLUSTERS}/prod?dryRun=All`,
      json("PUT", { metadata: { name: "prod", labels: { env: "prod" } }, spec: { replicas: 5 } }),
    );
    assert.equal(replaced.status, 200);
    assert.deepEqual(replaced.body.spec, { replicas: 5 });
    assert.deepEqual((replaced.body.metadata as { labels: unknown }).labels, { env: "prod" });

    const merged = await call(
      handle,
      `${CLUSTERS}/prod?dryRun=All`,
      json("PATCH", { spec: { zone: "b" } }, "application/merge-patch+json"),
    );
    assert.equal(merged.status, 200);
    assert.deepEqual(merged.body.spec, { replicas: 1, zone: "b" });

    const patched = await call(
      handle,
      `${CLUSTERS}/prod?dryRun=All`,
      json(
        "PATCH",
        [{ op: "replace", path: "/spec/replicas", value: 9 }],
        "application/json-patch+json",
      ),
    );
    assert.equal(patched.status, 200);
    assert.deepEqual(patched.body.spec, { replicas: 9 });

    const deleted = await call(
      handle,
      `${CLUSTERS}/prod?dryRun=All`,
      json("DELETE", { kind: "DeleteOptions", apiVersion: "v1" }),
    );
    assert.equal(deleted.status, 200);
    const inBody = await call(
      handle,
      `${CLUSTERS}/prod`,
      json("DELETE", { kind: "DeleteOptions", apiVersion: "v1", dryRun: ["All"] }),
    );
    assert.equal(inBody.status, 200);

    const bogus = await call(
      handle,
      `${CLUSTERS}?dryRun=Some`,
      json("POST", { metadata: { name: "qa" }, spec: {} }),
    );
    assert.equal(bogus.status, 400);

    assert.equal(await logged(store), before);
    const stored = await bh.client(Cluster).getByName("prod");
    assert.deepEqual(stored.spec, { replicas: 1 });
    assert.deepEqual(stored.labels, { env: "dev" });
    assert.equal(stored.deletionRequestedAt, undefined);
    await assert.rejects(bh.client(Cluster).getByName("dev"));
    // The first line the watch sends is the next real write's.
    await bh.client(Cluster).create("sentinel", {});
    const next = await events.next();
    assert.equal(next?.type, "ADDED");
    assert.equal((next!.object as { metadata: { name: string } }).metadata.name, "sentinel");
    abort.abort();
    await events.cancel().catch(() => {});
  });
});

test("kubeApiHandler validates a dry run as it validates a write: a refused label is 422", async () => {
  await withStore(async (store, bh) => {
    const handle = kubeApiHandler({ store });
    await bh.client(Cluster).create("prod", {});
    const before = await logged(store);
    const refused = await call(
      handle,
      `${CLUSTERS}/prod?dryRun=All`,
      json("PATCH", { metadata: { labels: { "bad key": "x" } } }, "application/merge-patch+json"),
    );
    assert.equal(refused.status, 422);
    assert.equal(await logged(store), before);
  });
});

test("kubectl create and delete --dry-run=server write nothing, and kubectl diff exits 0 with no change and 1 with one", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("seed", {});
    await withKubectl(store, async ({ kubectl, manifest }) => {
      const prod = {
        apiVersion: "kstack.sh/v1",
        kind: "Cluster",
        metadata: { name: "prod", labels: { env: "dev" } },
        spec: { replicas: 1 },
      };
      const file = await manifest("prod.json", prod);
      const before = await logged(store);
      const dry = await kubectl("create", "--dry-run=server", "-f", file);
      assert.equal(dry.code, 0, dry.stderr);
      assert.match(dry.stdout, /cluster\.kstack\.sh\/prod created \(server dry run\)/);
      assert.equal(await logged(store), before);
      await assert.rejects(bh.client(Cluster).getByName("prod"));

      const created = await kubectl("apply", "-f", file);
      assert.equal(created.code, 0, created.stderr);
      const written = await logged(store);
      const same = await kubectl("diff", "-f", file);
      assert.equal(same.code, 0, same.stdout + same.stderr);
      assert.equal(same.stdout, "");
      const changed = await kubectl(
        "diff",
        "-f",
        await manifest("changed.json", { ...prod, spec: { replicas: 4 } }),
      );
      assert.equal(changed.code, 1, changed.stderr);
      assert.match(changed.stdout, /^-\s+replicas: 1$/m);
      assert.match(changed.stdout, /^\+\s+replicas: 4$/m);
      const fresh = await kubectl(
        "diff",
        "-f",
        await manifest("new.json", { ...prod, metadata: { name: "qa" } }),
      );
      assert.equal(fresh.code, 1, fresh.stderr);
      assert.match(fresh.stdout, /^\+\s+name: qa$/m);

      const deleted = await kubectl("delete", "--dry-run=server", "cluster", "prod");
      assert.equal(deleted.code, 0, deleted.stderr);
      assert.match(deleted.stdout, /deleted \(server dry run\)/);
      assert.equal(await logged(store), written);
      const kept = await bh.client(Cluster).getByName("prod");
      assert.deepEqual(kept.spec, { replicas: 1 });
      assert.equal(kept.deletionRequestedAt, undefined);
    });
  });
});
