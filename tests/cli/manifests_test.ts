/**
 * `apply -f` speaks manifests: Kubernetes manifests in YAML or JSON
 * (`apiVersion: <group>/v1`, `kind`, `metadata.{name, namespace, labels,
 * annotations}`, `spec`; several documents; `kind: List`), its own JSON form,
 * and what its own `get -o json|yaml` prints, server-set fields ignored and
 * labels and annotations kept.
 *
 * @module
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { parse } from "yaml";
import { Beehive, defineKind } from "../../mod.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";
import { toYaml } from "../../cli/_yaml.ts";
import { YAML_MAX_LENGTH } from "../../cli/_manifests.ts";
import { test } from "../_test.ts";
import { tempDir } from "../_beehive_harness.ts";
import { cli } from "./_cli_harness.ts";

const Cluster = { group: "kstack.sh", kind: "Cluster" };
const Team = defineKind({ group: "kstack.sh", kind: "Team", namespaced: true });

/** A database where the app has stored its kinds (Team namespaced), and nothing else. */
async function withDb(
  fn: (db: string, dir: ReturnType<typeof tempDir>) => Promise<void>,
): Promise<void> {
  const dir = tempDir();
  try {
    const db = dir.file("apply.db");
    const store = await openSqliteStore(db);
    try {
      await (await new Beehive(store, { kinds: [Team] }).start())();
    } finally {
      await store.close();
    }
    await fn(db, dir);
  } finally {
    dir.remove();
  }
}

/** Reads objects back through a Beehive of its own. */
async function read<T>(db: string, fn: (bh: Beehive) => Promise<T>): Promise<T> {
  const store = await openSqliteStore(db);
  try {
    return await fn(new Beehive(store));
  } finally {
    await store.close();
  }
}

test("cli apply takes a Kubernetes manifest in YAML: group from apiVersion, metadata's name, namespace, labels and annotations, and spec", async () => {
  await withDb(async (db, dir) => {
    const file = dir.file("web.yaml");
    writeFileSync(
      file,
      [
        "apiVersion: kstack.sh/v1",
        "kind: Cluster",
        "metadata:",
        "  name: web",
        "  labels:",
        "    team: payments",
        "  annotations:",
        "    owner: ops@example.com",
        "spec:",
        "  replicas: 3",
        "  zones: [a, b]",
        "# a comment",
        "",
      ].join("\n"),
    );
    const r = await cli([db, "apply", "-f", file]);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, "Cluster.kstack.sh/web created\n");
    const web = await read(db, (bh) => bh.client(Cluster).getByName("web"));
    assert.deepEqual(web.spec, { replicas: 3, zones: ["a", "b"] });
    assert.deepEqual(web.labels, { team: "payments" });
    assert.deepEqual(web.annotations, { owner: "ops@example.com" });
    const again = await cli([db, "apply", "-f", file]);
    assert.equal(again.out, "Cluster.kstack.sh/web unchanged\n");

    const relabelled = await cli([db, "apply", "-f", "-"], {
      stdin: JSON.stringify({
        apiVersion: "kstack.sh/v1",
        kind: "Cluster",
        metadata: { name: "web", labels: { team: "search" } },
        spec: { replicas: 3, zones: ["a", "b"] },
      }),
    });
    assert.equal(relabelled.code, 0, relabelled.err);
    assert.equal(relabelled.out, "Cluster.kstack.sh/web configured\n");
    const after = await read(db, (bh) => bh.client(Cluster).getByName("web"));
    assert.deepEqual(after.labels, { team: "search" });
    assert.equal(after.generation, 1, "a label is not a spec change");

    const ns = await cli([db, "apply", "-f", "-"], {
      stdin: "apiVersion: kstack.sh/v1\nkind: Team\nmetadata:\n  name: core\n  namespace: eng\n" +
        "spec: {size: 4}\n",
    });
    assert.equal(ns.code, 0, ns.err);
    const core = await read(db, (bh) => bh.client(Team, { namespace: "eng" }).getByName("core"));
    assert.deepEqual(core.spec, { size: 4 });
  });
});

test("cli apply takes several YAML documents and kind: List, in YAML or JSON, in one transaction", async () => {
  await withDb(async (db) => {
    const docs = [
      "---",
      "apiVersion: kstack.sh/v1",
      "kind: Cluster",
      "metadata: {name: a}",
      "spec: {replicas: 1}",
      "---",
      "apiVersion: v1",
      "kind: List",
      "items:",
      "- apiVersion: kstack.sh/v1",
      "  kind: Cluster",
      "  metadata: {name: b}",
      "  spec: {replicas: 2}",
      "- {group: kstack.sh, kind: Cluster, name: c, spec: {replicas: 3}}",
      "---",
      "",
    ].join("\n");
    const r = await cli([db, "apply", "-f", "-"], { stdin: docs });
    assert.equal(r.code, 0, r.err);
    assert.equal(
      r.out,
      "Cluster.kstack.sh/a created\nCluster.kstack.sh/b created\nCluster.kstack.sh/c created\n",
    );
    const list = await cli([db, "apply", "-f", "-"], {
      stdin: JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        metadata: { resourceVersion: "" },
        items: [{
          apiVersion: "kstack.sh/v1",
          kind: "Cluster",
          metadata: { name: "d" },
          spec: { replicas: 4 },
        }],
      }),
    });
    assert.equal(list.code, 0, list.err);
    assert.equal(list.out, "Cluster.kstack.sh/d created\n");
    // One bad document writes none of the others.
    const bad = await cli([db, "apply", "-f", "-"], {
      stdin: "apiVersion: kstack.sh/v1\nkind: Cluster\nmetadata: {name: e}\nspec: {}\n---\n" +
        "apiVersion: kstack.sh/v1\nkind: Cluster\nmetadata: {}\nspec: {}\n",
    });
    assert.equal(bad.code, 1);
    assert.match(bad.err, /document 1: metadata\.name must be a non-empty string/);
    assert.equal(
      (await read(db, (bh) => bh.client(Cluster).list())).map((o) => o.name).join(","),
      "a,b,c,d",
    );
  });
});

test("cli apply takes back what get -o json and get -o yaml print: server-set fields ignored, labels and annotations kept", async () => {
  await withDb(async (db) => {
    await read(db, async (bh) => {
      const web = await bh.client(Cluster).create("web", { replicas: 2 }, {
        labels: { app: "web" },
        annotations: { note: "yes" },
      });
      await bh.adminClient(Cluster).updateStatus(web.id, { ready: true });
      await bh.adminClient(Cluster).setCondition(web.id, { type: "Ready", status: "True" });
      await bh.client(Team, { namespace: "eng" }).create("core", { size: 1 });
    });
    for (const output of ["json", "yaml"]) {
      const got = await cli([db, "get", "Cluster.kstack.sh", "web", "-o", output]);
      assert.equal(got.code, 0, got.err);
      const same = await cli([db, "apply", "-f", "-"], { stdin: got.out });
      assert.equal(same.code, 0, same.err);
      assert.equal(same.out, "Cluster.kstack.sh/web unchanged\n", output);
      const list = await cli([db, "get", "Team.kstack.sh", "-o", output]);
      const teams = await cli([db, "apply", "-f", "-"], { stdin: list.out });
      assert.equal(teams.code, 0, teams.err);
      assert.equal(teams.out, "Team.kstack.sh/core unchanged\n", output);
    }
    const edited = JSON.parse(
      (await cli([db, "get", "Cluster.kstack.sh", "web", "-o", "json"])).out,
    );
    edited.spec.replicas = 5;
    edited.labels.tier = "front";
    const applied = await cli([db, "apply", "-f", "-"], { stdin: JSON.stringify(edited) });
    assert.equal(applied.code, 0, applied.err);
    assert.equal(applied.out, "Cluster.kstack.sh/web configured\n");
    const web = await read(db, (bh) => bh.client(Cluster).getByName("web"));
    assert.deepEqual(web.spec, { replicas: 5 });
    assert.deepEqual(web.labels, { app: "web", tier: "front" });
    assert.deepEqual(web.annotations, { note: "yes" });
    assert.deepEqual(web.status, { ready: true }, "status is not the writer's to apply");
  });
});

test("cli apply refuses a malformed manifest with exit 1, one line naming the document, writing nothing", async () => {
  await withDb(async (db) => {
    const manifest = (o: Record<string, unknown>) =>
      JSON.stringify({
        apiVersion: "kstack.sh/v1",
        kind: "Cluster",
        metadata: { name: "x" },
        spec: {},
        ...o,
      });
    const cases: [string, RegExp][] = [
      ["a: [unclosed", /^error: stdin is not JSON or YAML: .*line 1/],
      ["a: 1\na: 2\n", /^error: stdin is not JSON or YAML: .*[Mm]ap keys must be unique/],
      [
        manifest({ apiVersion: "kstack.sh/v2" }),
        /apiVersion "kstack\.sh\/v2": expected <group>\/v1/,
      ],
      [manifest({ apiVersion: 5 }), /apiVersion must be a string/],
      [manifest({ kind: "" }), /kind must be a non-empty string/],
      [manifest({ metadata: { name: "x", generateName: "x-" } }), /metadata\.generateName/],
      [
        manifest({ metadata: { name: "x", labels: { a: 1 } } }),
        /metadata\.labels must be a map of strings/,
      ],
      [manifest({ metadata: { name: "x", labels: { "bad key!": "v" } } }), /label/i],
      [manifest({ metadata: { name: "x", colour: "red" } }), /unknown field "metadata\.colour"/],
      [manifest({ extra: 1 }), /unknown field "extra"/],
      ['{"apiVersion":"v1","kind":"List","items":5}', /items must be an array/],
      [
        '{"group":"g","kind":"K","name":"a","spec":1,"labels":[]}',
        /"labels" must be a map of strings/,
      ],
      ["x: &a [*a]\n", /^error: stdin is not JSON or YAML/],
      [
        "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n" +
        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n" +
        "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n",
        /^error: stdin is not JSON or YAML: .*alias/i,
      ],
    ];
    cases.push([
      `a: "${"x".repeat(YAML_MAX_LENGTH)}"`,
      /^error: stdin is not JSON, and at \d+ characters it is above the 8 Mi read as YAML/,
    ]);
    for (const [stdin, message] of cases) {
      const r = await cli([db, "apply", "-f", "-"], { stdin });
      assert.equal(r.code, 1, stdin.slice(0, 200));
      assert.match(r.err, message, stdin.slice(0, 200));
      assert.equal(r.err.split("\n").length, 2, `one line: ${r.err}`);
    }
    assert.deepEqual(await read(db, (bh) => bh.client(Cluster).list()), []);
  });
});

test("toYaml's output reads back through the YAML library as the value it wrote", () => {
  const values: unknown[] = [
    { name: "yes", on: "off", n: "12", e: "1e3", t: "true", nul: "null", tilde: "~", empty: "" },
    { s: "a: b", h: "# not a comment", lead: " x", dash: "- x", q: "'\"", nl: "a\nb", tab: "\t" },
    { list: [1, -2.5, true, null, [], {}, [[1]], { a: [{ b: "c" }] }], date: "2026-12-07" },
    ["\u2028", "\u0000", "é", "😀", "\\"],
  ];
  let deep: unknown = { leaf: "yes" };
  for (let i = 0; i < 40; i++) deep = i % 2 === 0 ? [deep, "on"] : { [`k${i}`]: deep };
  values.push(deep);
  for (const value of values) assert.deepEqual(parse(toYaml(value)), value);
});
