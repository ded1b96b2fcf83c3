/**
 * The cost of checking a write against a kind's stored JSON Schema: a create
 * from a writer without the kind's validator, of a kind whose definition
 * carries a draft 2020-12 schema, beside the same create of a kind with none
 * (both read the definition at most once a second; the schema is compiled
 * once). In-memory SQLite, one small spec.
 *
 * Run with `deno bench -A bench/stored_schema_bench.ts`.
 *
 * @module
 */
import { Beehive } from "../mod.ts";
import { openSqliteStore } from "../store/sqlite/mod.ts";

const store = await openSqliteStore(":memory:");
const checked = { group: "bench.beehive", kind: "Checked" };
const plain = { group: "bench.beehive", kind: "Plain" };
await store.kinds.put({
  ...checked,
  plural: "checkeds",
  singular: "checked",
  shortNames: [],
  namespaced: false,
  columns: "[]",
  specSchema: JSON.stringify({
    type: "object",
    required: ["replicas", "image"],
    properties: {
      replicas: { type: "integer", minimum: 0 },
      image: { type: "string", minLength: 1 },
      env: { type: "object", additionalProperties: { type: "string" } },
    },
  }),
  statusSchema: undefined,
});
const bh = new Beehive(store);
const spec = { replicas: 3, image: "nginx:1.27", env: { TIER: "web" } };
let n = 0;

Deno.bench(
  "create, kind without a stored schema",
  { group: "create", baseline: true },
  async () => {
    await bh.client(plain).create(`o${n++}`, spec);
  },
);
Deno.bench("create, checked against the stored JSON Schema", { group: "create" }, async () => {
  await bh.client(checked).create(`o${n++}`, spec);
});
