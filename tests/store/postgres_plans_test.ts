/**
 * Every statement the PostgreSQL store names finds an object by its key, not
 * by scanning its kind: planned generically (as a named prepared statement is,
 * once PostgreSQL stops planning it per call), on a fresh, empty, never
 * analyzed schema and on one holding 100,000 objects of one kind, no plan node
 * reads rows and filters the object key (`id = $n`, `object_id = $n`, …) one
 * row at a time. A plan that read the kind's name index on `("group", kind)`
 * and filtered `id` made each settle and status write read the whole kind:
 * work growing with the square of the object count. Needs the test database
 * (`BEEHIVE_TEST_POSTGRES_URL`), under Deno and Node 22.
 *
 * @module
 */
import assert from "node:assert/strict";
import pg from "pg";
import { Beehive, settled } from "../../mod.ts";
import { namedStatements } from "../../store/postgres/_core.ts";
import { freshSchema, openPostgresStore, postgresUrl } from "../_postgres.ts";
import { test } from "../_test.ts";

const Widget = { group: "test.beehive.dev", kind: "Widget" };
const Owner = { group: "test.beehive.dev", kind: "Owner" };

/** Runs the store's per-object reads and writes once each, so their statements are named. */
async function exercise(): Promise<void> {
  const store = await openPostgresStore();
  try {
    const owner = await store.objects.create(Owner, { name: "o", spec: "{}" });
    const o = await store.objects.create(Widget, {
      name: "w",
      spec: "{}",
      labels: { app: "web" },
      namespace: "ns",
    });
    const ref = { ...Widget, id: o.id };
    const ownerRef = { ...Owner, id: owner.id };
    await store.objects.get(o.id);
    await store.objects.getMeta(o.id);
    await store.objects.getForReconcile(o.id);
    await store.objects.getByName({ ...Widget, name: "w", namespace: "ns" });
    await store.objects.listByIds(Widget, [o.id]);
    await store.objects.updateSpec(ref, { spec: '{"a":1}' });
    await store.objects.updateMetadata(ref, { labels: { app: "db" } });
    await store.objects.updateStatus(ref, { status: '{"done":true}' });
    await store.objects.updateStatus(ref, { status: '{"done":true}' });
    await store.objects.setObservedGeneration(ref, 2);
    await store.objects.setStalledGeneration(ref, 2);
    await store.objects.setStalledGeneration(ref, undefined);
    await store.objects.addFinalizer(ref, "test.beehive.dev/f");
    await store.conditions.set(ref, [{ type: "Ready", status: "True", reason: "Done" }]);
    await store.conditions.delete(ref, "Ready");
    await store.events.add(ref, { type: "Normal", reason: "Made" });
    await store.events.getLatest(o.id, "");
    await store.events.list(o.id);
    await store.edges.add({ fromId: o.id, toId: owner.id, relation: "owned_by" });
    await store.edges.listIncoming({ toId: owner.id, relation: "owned_by" });
    await store.edges.listOutgoing(o.id, "owned_by");
    await store.edges.hasIncoming(owner.id);
    await store.objects.listByIncomingEdge(Widget, { toId: owner.id, relation: "owned_by" });
    await store.objectWrites.snapshotById(Widget, o.id);
    await store.objectWrites.snapshotByOwner(Widget, owner.id);
    await store.deletionRequests.create(ref);
    await store.objects.deleteFinalizer(ref, "test.beehive.dev/f");
    await store.deletionRequests.create(ownerRef);
    await store.objects.delete(owner.id).catch(() => {});
    await store.reconcileOwed.stamp([ref]);
    await store.reconcileOwed.decrement(ref, 1);
  } finally {
    await store.close();
  }
  // The engine's own path: a controller writing a status and settling.
  const engineStore = await openPostgresStore();
  try {
    const bh = new Beehive(engineStore);
    const done = Promise.withResolvers<void>();
    let passes = 0;
    bh.register<{ n: number }, { done: boolean }>(Widget, {
      async reconcile(_obj, cc) {
        await cc.updateStatus({ done: true });
        if (++passes === 3) done.resolve();
        return settled();
      },
    });
    const stop = await bh.start();
    const client = bh.client<{ n: number }, { done: boolean }>(Widget);
    for (let i = 0; i < 3; i++) await client.create(`w${i}`, { n: i });
    await done.promise;
    await stop();
  } finally {
    await engineStore.close();
  }
}

/** Object-key columns a per-object statement binds. */
const KEY_FILTER = /\b(id|object_id|from_id|to_id) = (\$\d+|ANY \(\$\d+)/;

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Index Cond"?: string;
  Filter?: string;
  Plans?: PlanNode[];
}

/**
 * The plan nodes of `plan` that read rows and filter an object key one by one, and, in a
 * statement that binds an object key (`keyed`), those that read objects by anything but their key.
 */
function scans(plan: PlanNode, keyed: boolean): string[] {
  const found: string[] = [];
  const visit = (node: PlanNode) => {
    const table = node["Relation Name"];
    // An index condition on the key first: the primary key, or an index led by the key.
    const byKey = /^\(id = /.test(node["Index Cond"] ?? "");
    if (
      table !== undefined && node["Node Type"].endsWith("Scan") &&
      (KEY_FILTER.test(node.Filter ?? "") || (keyed && table === "objects" && !byKey))
    ) {
      found.push(
        `${node["Node Type"]} on ${table}${
          node["Index Name"] === undefined ? "" : ` using ${node["Index Name"]}`
        }${node.Filter === undefined ? "" : ` filtering ${node.Filter}`}`,
      );
    }
    for (const child of node.Plans ?? []) visit(child);
  };
  visit(plan);
  return found;
}

/** Each statement whose generic plan in `schema` filters an object key row by row, with the plan's offending nodes. */
async function scanningStatements(
  client: pg.Client,
  schema: string,
  texts: readonly string[],
): Promise<string[]> {
  await client.query(`SET search_path TO "${schema}"`);
  await client.query("SET plan_cache_mode = force_generic_plan");
  const bad: string[] = [];
  for (const [i, text] of texts.entries()) {
    const name = `plan_check_${i}`;
    await client.query(`PREPARE ${name} AS ${text}`);
    const { rows } = await client.query(
      "SELECT cardinality(parameter_types) AS n FROM pg_prepared_statements WHERE name = $1",
      [name],
    );
    const nulls = Array.from({ length: rows[0].n }, () => "NULL").join(", ");
    const explained = await client.query(
      `EXPLAIN (FORMAT JSON) EXECUTE ${name}${nulls === "" ? "" : `(${nulls})`}`,
    );
    await client.query(`DEALLOCATE ${name}`);
    const nodes = scans(explained.rows[0]["QUERY PLAN"][0].Plan, KEY_FILTER.test(text));
    if (nodes.length > 0) bad.push(`${text.replace(/\s+/g, " ")}\n    ${nodes.join("\n    ")}`);
  }
  return bad;
}

test("PostgreSQL store statements find an object by its key on an empty schema and on 100,000 objects with their rows", async () => {
  await exercise();
  const texts = namedStatements();
  assert.ok(texts.length > 40, `only ${texts.length} statements were named`);
  const schema = freshSchema();
  // A fresh schema, its tables empty and never analyzed.
  const store = await openPostgresStore({ schema });
  await store.close();
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  try {
    assert.deepEqual(await scanningStatements(client, schema, texts), []);
    await client.query(
      `INSERT INTO objects ("group", kind, name, spec, spec_version,
        resource_version, finalizers, created_at, updated_at, labels, annotations)
      SELECT $1, $2, 'w' || i, '{}', 0, i, '[]', 0, 0, '{}', '{}'
      FROM generate_series(1, 100000) AS i`,
      [Widget.group, Widget.kind],
    );
    // Each object with a condition, an event, an owner (one in ten owns
    // the nine after it)
    await client.query(`INSERT INTO conditions (object_id, type, status, open_epoch,
        transitioned_at, updated_at) SELECT id, 'Ready', 'True', 0, 0, 0 FROM objects`);
    await client.query(`INSERT INTO events (object_id, type, reason, first_at, last_at,
        resource_version) SELECT id, 'Normal', 'Made', 0, 0, 0 FROM objects`);
    await client.query(`INSERT INTO edges (from_id, to_id, relation)
      SELECT id, id - id % 10, 'owned_by' FROM objects
      WHERE id % 10 <> 0 AND id - id % 10 >= (SELECT MIN(id) FROM objects)`);
    // and half of them a dependency on the next.
    await client.query(`INSERT INTO edges (from_id, to_id, relation)
      SELECT id, id + 1, 'depends_on' FROM objects WHERE id % 2 = 0
        AND id < (SELECT MAX(id) FROM objects)`);
    await client.query("ANALYZE");
    assert.deepEqual(await scanningStatements(client, schema, texts), []);
  } finally {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
    await client.end();
  }
});
