/**
 * The small endpoints: `/healthz`, `/livez` and `/readyz` (with `?verbose`
 * and per check) and `/version` answer without a token, readiness fails when
 * the store does; `kubectl auth whoami` (SelfSubjectReview) and
 * `kubectl auth can-i --list` (SelfSubjectRulesReview) answer from the token.
 *
 * @module
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kubeApiHandler, serveKubeApi } from "../../kubeapi/mod.ts";
import { openTestStore } from "../_sqlite_driver.ts";
import { test } from "../_test.ts";
import { call, KUBECTL, kubectlIn, withStore } from "./_kubeapi_harness.ts";

const ADMIN = "admin-token-0123456789";
const TENANT = "tenant-token-0123456789";
const tokens = [
  { token: ADMIN, user: "admin" },
  { token: TENANT, user: "tenant", namespaces: ["team-a"], verbs: ["get", "list"] },
];

async function text(
  handle: (r: Request) => Promise<Response>,
  path: string,
): Promise<[number, string]> {
  const response = await handle(new Request(`http://localhost${path}`));
  return [response.status, await response.text()];
}

test("kubeApiHandler answers /healthz, /livez, /readyz (verbose and per check) and /version without a token", async () => {
  await withStore(async (store) => {
    const handle = kubeApiHandler({ store, auth: { tokens } });
    for (const path of ["/healthz", "/livez", "/readyz", "/readyz/store", "/livez/ping"]) {
      assert.deepEqual(await text(handle, path), [200, "ok"], path);
    }
    assert.deepEqual(await text(handle, "/readyz?verbose"), [
      200,
      "[+]ping ok\n[+]store ok\nreadyz check passed\n",
    ]);
    assert.equal((await text(handle, "/livez/store"))[0], 404);
    const version = await call(handle, "/version");
    assert.equal(version.status, 200);
    assert.equal(typeof version.body.gitVersion, "string");
    assert.equal((await call(handle, "/apis")).status, 401);
  });
});

test("kubeApiHandler /readyz and /healthz answer 500 once the store fails, while /livez stays ok", async () => {
  const store = await openTestStore(":memory:");
  const handle = kubeApiHandler({ store });
  await store.close();
  assert.deepEqual(await text(handle, "/readyz?verbose"), [
    500,
    "[+]ping ok\n[-]store failed: reason withheld\nreadyz check failed\n",
  ]);
  assert.equal((await text(handle, "/healthz"))[0], 500);
  assert.deepEqual(await text(handle, "/livez"), [200, "ok"]);
});

test("kubectl auth whoami and auth can-i --list answer from the token's user and grant", async () => {
  assert.ok(existsSync(KUBECTL), `${KUBECTL} is missing: this test drives the real kubectl`);
  await withStore(async (store) => {
    const dir = await mkdtemp(join(tmpdir(), "beehive-self-"));
    const server = await serveKubeApi({ store, port: 0, tls: true, tokens });
    try {
      const config = join(dir, "kubeconfig");
      await writeFile(config, server.kubeconfig({ token: TENANT }));
      const kubectl = kubectlIn(dir, config);
      const whoami = await kubectl("auth", "whoami");
      assert.equal(whoami.code, 0, whoami.stderr);
      assert.match(whoami.stdout, /Username\s+tenant\n/);
      assert.match(whoami.stdout, /Groups\s+\[system:authenticated\]/);
      const inside = await kubectl("auth", "can-i", "--list", "-n", "team-a");
      assert.equal(inside.code, 0, inside.stderr);
      assert.match(inside.stdout, /^\*\.\*\s+\[\]\s+\[\]\s+\[get list\]$/m);
      const outside = await kubectl("auth", "can-i", "--list", "-n", "team-b");
      assert.equal(outside.code, 0, outside.stderr);
      assert.doesNotMatch(outside.stdout, /^\*\.\*/m);
      assert.match(outside.stdout, /selfsubjectreviews\.authentication\.k8s\.io/);
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
