/**
 * Field sets as server-side apply tracks them: leaf paths in the `FieldsV1`
 * spelling, lists atomic unless the schema names a list type (`map` by its
 * keys, `set` by value), the `FieldsV1` tree and back, and how an applied
 * configuration merges over a live object.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  FieldSet,
  fieldSetOf,
  fromFieldsV1,
  mergeApplied,
  removeAt,
  toFieldsV1,
  valueAt,
} from "../../kubeapi/_field_sets.ts";
import { test } from "../_test.ts";

const SCHEMA = {
  type: "object",
  properties: {
    spec: {
      type: "object",
      properties: {
        ports: {
          type: "array",
          "x-kubernetes-list-type": "map",
          "x-kubernetes-list-map-keys": ["name"],
          items: { type: "object", properties: { name: { type: "string" }, port: {} } },
        },
        tags: { type: "array", "x-kubernetes-list-type": "set", items: { type: "string" } },
        args: { type: "array", items: { type: "string" } },
        selector: { type: "object", "x-kubernetes-map-type": "atomic" },
      },
    },
  },
};

test("fieldSetOf tracks labels, annotations and spec leaves; lists atomic unless typed map or set", () => {
  const set = fieldSetOf({
    metadata: { name: "x", labels: { app: "a" }, annotations: { n: "1" } },
    spec: {
      ports: [{ name: "http", port: 80 }],
      tags: ["a", "b"],
      args: ["-v"],
      selector: { a: "b" },
      free: { deep: 1 },
    },
    status: { ignored: true },
  }, SCHEMA);
  const paths = [...set].map((p) => p.join(" ")).sort();
  assert.deepEqual(paths, [
    "f:metadata f:annotations f:n",
    "f:metadata f:labels f:app",
    "f:spec f:args",
    "f:spec f:free f:deep",
    'f:spec f:ports k:{"name":"http"}',
    'f:spec f:ports k:{"name":"http"} f:name',
    'f:spec f:ports k:{"name":"http"} f:port',
    "f:spec f:selector",
    'f:spec f:tags v:"a"',
    'f:spec f:tags v:"b"',
  ]);
  const tree = toFieldsV1(set);
  assert.deepEqual((tree["f:spec"] as Record<string, unknown>)["f:ports"], {
    'k:{"name":"http"}': { ".": {}, "f:name": {}, "f:port": {} },
  });
  assert.ok(fromFieldsV1(tree).equals(set));
  assert.equal(fromFieldsV1({ "f:a": "not an object", "x:y": {} }).size, 0);
});

test("mergeApplied merges maps by member, map lists by key, sets by value, and replaces atomic lists", () => {
  const live = {
    spec: {
      ports: [{ name: "http", port: 80 }, { name: "ssh", port: 22 }],
      tags: ["a"],
      args: ["-v"],
      keep: 1,
    },
  };
  const merged = mergeApplied(live, {
    spec: { ports: [{ name: "http", port: 8080 }], tags: ["b"], args: ["-q"], gone: null },
  }, SCHEMA) as { spec: Record<string, unknown> };
  assert.deepEqual(merged.spec, {
    ports: [{ name: "http", port: 8080 }, { name: "ssh", port: 22 }],
    tags: ["a", "b"],
    args: ["-q"],
    keep: 1,
  });
  assert.deepEqual(live.spec.ports[0], { name: "http", port: 80 });
  assert.equal(valueAt(merged, ["f:spec", "f:ports", 'k:{"name":"ssh"}', "f:port"]).value, 22);
  removeAt(merged, ["f:spec", "f:ports", 'k:{"name":"ssh"}']);
  removeAt(merged, ["f:spec", "f:tags", 'v:"a"']);
  assert.deepEqual(merged.spec.ports, [{ name: "http", port: 8080 }]);
  assert.deepEqual(merged.spec.tags, ["b"]);
  assert.equal(FieldSet.of([["f:a"]]).hasUnder(["f:a"]), true);
});
