/**
 * The cost of checking a write against a kind's stored JSON Schema: a create
 * from a writer without the kind's validator, of a kind whose definition
 * carries a draft 2020-12 schema, beside the same create of a kind with none
 * (both read the definition at most once a second; the schema is compiled
 * once), and a create of a kind whose stored schema declares defaults the
 * spec leaves out (filled before the check: the cost of defaulting).
 * In-memory SQLite, one small spec.
 *
 * Run with `deno bench -A bench/stored_schema_bench.ts` (and with
 * `BENCH_ORDER=reverse` for the rows in the other order).
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

const cases: [string, { group: string; kind: string }][] = [
  ["create, kind without a stored schema", plain],
  ["create, checked against the stored JSON Schema", checked],
  ["create, defaulted (two defaults filled) and checked against the stored JSON Schema", defaulted],
];
// BENCH_ORDER=reverse runs the rows last to first: quote runs of both orders.
if (Deno.env.get("BENCH_ORDER") === "reverse") cases.reverse();
for (const [name, gk] of cases) {
  Deno.bench(name, { group: "create", baseline: gk === plain }, async () => {
    await bh.client(gk).create(`o${n++}`, spec);
  });
}
