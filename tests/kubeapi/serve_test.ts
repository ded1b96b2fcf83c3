/**
 * serveKubeApi: the real kubectl over HTTPS with a generated CA and a bearer
 * token (get, 401 with a wrong token, 403 outside the grant, auth can-i), a
 * plain-HTTP loopback server on port 0, the refused non-loopback bind without
 * TLS and tokens, and close through the signal.
 *
 * @module
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Beehive, InvalidOptionError } from "../../mod.ts";
import { serveKubeApi } from "../../kubeapi/mod.ts";
import { openSqliteStore } from "../_sqlite_driver.ts";
import { test } from "../_test.ts";
import { Cluster, KUBECTL, kubectlIn, withStore } from "./_kubeapi_harness.ts";

test("serveKubeApi over generated TLS with tokens: kubectl gets with a token, is refused 401 with a wrong one and 403 outside its grant", async () => {
  assert.ok(existsSync(KUBECTL), `${KUBECTL} is missing: this test drives the real kubectl`);
  const dir = await mkdtemp(join(tmpdir(), "beehive-serve-"));
  const store = await openSqliteStore(":memory:");
  const bh = new Beehive(store, { gcInterval: 50, watchFloorInterval: 100 });
  const stop = await bh.start();
  const server = await serveKubeApi({
    store,
    port: 0,
    pollInterval: 100,
    tls: true,
    tokens: [
      { token: "reader-token-0123456789", user: "reader", verbs: ["get", "list", "watch"] },
      { token: "admin-token-0123456789", user: "admin" },
    ],
  });
  try {
    assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    await bh.client(Cluster).create("prod", {});
    const reader = join(dir, "reader");
    await writeFile(reader, server.kubeconfig());
    const admin = join(dir, "admin");
    await writeFile(admin, server.kubeconfig({ token: "admin-token-0123456789" }));
    const wrong = join(dir, "wrong");
    await writeFile(
      wrong,
      server.kubeconfig().replace("reader-token-0123456789", "wrong-token-0123456789"),
    );

    const got = await kubectlIn(dir, reader)("get", "clusters", "--no-headers");
    assert.equal(got.code, 0, got.stderr);
    assert.match(got.stdout, /^prod\s/);

    const refused = await kubectlIn(dir, wrong)("get", "clusters");
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /Unauthorized|must be logged in/);

    const forbidden = await kubectlIn(dir, reader)("delete", "cluster", "prod");
    assert.notEqual(forbidden.code, 0);
    assert.match(
      forbidden.stderr,
      /Error from server \(Forbidden\): clusters\.kstack\.sh "prod" is forbidden: User "reader" cannot delete/,
    );
    const canI = await kubectlIn(dir, reader)("auth", "can-i", "delete", "clusters.kstack.sh");
    assert.match(canI.stdout.trim(), /^no\b/, canI.stderr);
    const adminCan = await kubectlIn(dir, admin)("auth", "can-i", "delete", "clusters.kstack.sh");
    assert.equal(adminCan.stdout.trim(), "yes", adminCan.stderr);
    const deleted = await kubectlIn(dir, admin)("delete", "cluster", "prod");
    assert.equal(deleted.code, 0, deleted.stderr);
  } finally {
    await server.close();
    await stop();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test("serveKubeApi on loopback without TLS picks a free port for port 0 and closes when its signal aborts", async () => {
  await withStore(async (store) => {
    const abort = new AbortController();
    const server = await serveKubeApi({ store, port: 0, signal: abort.signal });
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const version = await fetch(`${server.url}/version`);
    assert.equal(version.status, 200);
    await version.body?.cancel();
    assert.doesNotMatch(server.kubeconfig(), /token|certificate-authority/);
    abort.abort();
    await server.close();
    await assert.rejects(fetch(`${server.url}/version`));
  });
});

test("serveKubeApi refuses a non-loopback address without both TLS and tokens", async () => {
  await withStore(async (store) => {
    const token = [{ token: "admin-token-0123456789", user: "admin" }];
    for (
      const options of [
        { hostname: "0.0.0.0" },
        { hostname: "0.0.0.0", tls: true as const },
        { hostname: "0.0.0.0", tokens: token },
        { hostname: "::" },
      ]
    ) {
      await assert.rejects(
        serveKubeApi({ store, port: 0, ...options }),
        (error: Error) =>
          error instanceof InvalidOptionError && /needs both tls and tokens/.test(error.message),
      );
    }
  });
});

test("serveKubeApi's kubeconfig refuses a token the server does not accept", async () => {
  await withStore(async (store) => {
    const server = await serveKubeApi({
      store,
      port: 0,
      tokens: [{ token: "admin-token-0123456789", user: "admin" }],
    });
    try {
      assert.throws(
        () => server.kubeconfig({ token: "other-token-0123456789" }),
        InvalidOptionError,
      );
      assert.match(server.kubeconfig(), /token: "admin-token-0123456789"/);
    } finally {
      await server.close();
    }
  });
});
