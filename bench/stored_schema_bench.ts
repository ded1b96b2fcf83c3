/**
 * The cost of checking a write against a kind's stored JSON Schema: a create
 * from a writer without the kind's validator, of a kind whose definition
 * carries a draft 2020-12 schema, beside the same create of a kind with none
 * (both read the definition at most once a second; the schema is compiled
 * once), and a create of a kind whose stored schema declares defaults the
 * spec leaves out (filled before the check: the cost of defaulting).
 * In-memory SQLite, one small spec.
 *
 * Run with `deno bench -A bench/stored_schema_bench.ts`.
 *
 * @module
 */
import { Beehive } from "../mod.ts";
import { openSqliteStore } from "../store/sqlite/mod.ts";

const store = await openSqliteStore(":memory:");
const checked = { group: "bench.beehive", kind: "Checked" };
const defaulted = { group: "bench.beehive", kind: "Defaulted" };
const plain = { group: "bench.beehive", kind: "Plain" };
const properties = {
  replicas: { type: "integer", minimum: 0 },
  image: { type: "string", minLength: 1 },
  env: { type: "object", additionalProperties: { type: "string" } },
};
for (
  const [gk, specSchema] of [
    [checked, { type: "object", required: ["replicas", "image"], properties }],
    [defaulted, {
      type: "object",
      required: ["replicas", "image", "maxAttempts"],
      properties: {
        ...properties,
        maxAttempts: { type: "integer", minimum: 1, default: 5 },
        retry: {
          type: "object",
          default: {},
          properties: { backoffMs: { type: "integer", default: 1_000 } },
        },
      },
    }],
  ] as const
) {
  await store.kinds.put({
    ...gk,
    plural: `${gk.kind.toLowerCase()}s`,
    singular: gk.kind.toLowerCase(),
    shortNames: [],
    namespaced: false,
    columns: "[]",
    specSchema: JSON.stringify(specSchema),
    statusSchema: undefined,
  });
}
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
Deno.bench(
  "create, defaulted (two defaults filled) and checked against the stored JSON Schema",
  { group: "create" },
  async () => {
    await bh.client(defaulted).create(`o${n++}`, spec);
  },
);
