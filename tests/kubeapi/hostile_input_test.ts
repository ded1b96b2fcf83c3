/**
 * kubeApiHandler under arbitrary requests: whatever the path, method, query
 * and Accept header, the answer is a 2xx or a 4xx `Status`, never a
 * rejection or a 500, and nothing is written unless it was a delete.
 *
 * @module
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import { test } from "../_test.ts";
import { Cluster, withStore } from "./_kubeapi_harness.ts";

const SEED = 20_261_202;

const segment = fc.oneof(
  fc.constantFrom("apis", "api", "version", "kstack.sh", "v1", "clusters", "prod", "status"),
  fc.constantFrom("namespaces", "..", "%", "%zz", "%2F", "watch", "openapi", ""),
  fc.string({ maxLength: 12 }),
);
const KNOWN = ["apis", "kstack.sh", "v1", "clusters", "prod", "status"];
/** A known prefix of a real route, then arbitrary segments. */
const path = fc.tuple(
  fc.integer({ min: 0, max: KNOWN.length }),
  fc.array(segment, { maxLength: 3 }),
)
  .map(([known, rest]) => [...KNOWN.slice(0, known), ...rest]);
const query = fc.array(
  fc.tuple(
    fc.constantFrom(
      "watch",
      "limit",
      "continue",
      "resourceVersion",
      "fieldSelector",
      "labelSelector",
      "includeObject",
      "timeoutSeconds",
      "sendInitialEvents",
      "resourceVersionMatch",
      "dryRun",
    ),
    fc.oneof(
      fc.string({ maxLength: 20 }),
      fc.constantFrom("true", "0", "-1", "1e9", "metadata.name=prod"),
    ),
  ),
  { maxLength: 4 },
);
const accept = fc.constantFrom(
  undefined,
  "application/json",
  "application/json;as=Table;v=v1;g=meta.k8s.io",
  "application/vnd.kubernetes.protobuf",
  ";;,=,as=",
);

test("kubeApiHandler answers any request with a 2xx or a 4xx Status, never a 500", async () => {
  await withStore(async (store, bh) => {
    await bh.client(Cluster).create("prod", {});
    const handle = kubeApiHandler({ store });
    const codes = new Set<number>();
    await fc.assert(
      fc.asyncProperty(
        path,
        query,
        fc.constantFrom("GET", "HEAD", "POST", "PUT", "PATCH", "OPTIONS"),
        accept,
        async (segments, params, method, type) => {
          const search = new URLSearchParams(params).toString();
          // Watches are not read here: a non-watch request is answered whole.
          if (params.some(([k, v]) => k === "watch" && (v === "true" || v === "1"))) return;
          const abort = new AbortController();
          const response = await handle(
            new Request(`http://localhost/${segments.join("/")}?${search}`, {
              method,
              headers: {
                ...(type === undefined ? {} : { accept: type }),
                "content-type": "application/json",
              },
              body: method === "GET" || method === "HEAD" ? null : "{}",
              signal: abort.signal,
            }),
          );
          abort.abort();
          const text = method === "HEAD" ? "" : await response.text();
          codes.add(response.status);
          assert.ok(response.status < 500, `${response.status} ${text}`);
          if (response.status >= 400 && method !== "HEAD") {
            const status = JSON.parse(text);
            assert.equal(status.kind, "Status");
            assert.equal(status.code, response.status);
          }
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
    // The campaign reached real routes, not only the front door.
    for (const code of [200, 400, 404, 405]) {
      assert.ok(codes.has(code), `no ${code} in ${[...codes]}`);
    }
    const prod = await bh.client(Cluster).getByName("prod");
    assert.equal(prod.deletionRequestedAt, undefined);
  });
});
