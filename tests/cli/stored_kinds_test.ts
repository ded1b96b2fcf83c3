/**
 * The CLI over stored kinds: once the app has started, `kinds` shows each
 * kind's stored names and schemas, a short name resolves, and `apply` checks
 * a spec against the stored JSON Schema, refusing what the app's validator
 * forbids (exit 1, nothing written).
 *
 * @module
 */
import assert from "node:assert/strict";
import { Beehive, defineKind, settled, type StandardSchema } from "../../mod.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";
import { test } from "../_test.ts";
import { tempDir } from "../_beehive_harness.ts";
import { cli, Output } from "./_cli_harness.ts";

interface Spec {
  replicas: number;
  image: string;
}

const SPEC_SCHEMA = {
  type: "object",
  required: ["replicas", "image"],
  properties: {
    replicas: { type: "integer", minimum: 0 },
    image: { type: "string", minLength: 1 },
  },
};

/** The app's validator: checks in-process and offers its JSON Schema (Standard JSON Schema). */
const specValidator: StandardSchema<unknown, Spec> = {
  "~standard": {
    version: 1,
    vendor: "test",
    validate: (value) => {
      const s = value as Spec;
      return Number.isInteger(s?.replicas) && s.replicas >= 0 && typeof s.image === "string" &&
          s.image !== ""
        ? { value: s }
        : { issues: [{ message: "invalid" }] };
    },
    jsonSchema: { input: () => SPEC_SCHEMA, output: () => SPEC_SCHEMA },
  } as StandardSchema<unknown, Spec>["~standard"],
};

const Service = defineKind<Spec, { ready: boolean }>({
  group: "shop.example",
  kind: "Service",
  shortNames: ["svc"],
  spec: specValidator,
});

/** Starts and stops the app once on `db`: what it leaves is its kinds' definitions. */
async function startApp(db: string): Promise<void> {
  const store = await openSqliteStore(db);
  try {
    const bh = new Beehive(store);
    bh.register(Service, () => settled());
    await (await bh.start())();
  } finally {
    await store.close();
  }
}

test("cli apply refuses a spec the app's validator forbids once the app has started: exit 1, nothing written", async () => {
  const dir = tempDir();
  try {
    const db = dir.file("shop.db");
    await startApp(db);
    const manifest = (spec: unknown) =>
      JSON.stringify({ group: "shop.example", kind: "Service", name: "web", spec });
    const refused = await cli([db, "apply", "-f", "-"], {
      stdin: manifest({ replicas: -1, image: "" }),
    });
    assert.equal(refused.code, 1);
    assert.equal(refused.out, "");
    assert.match(refused.err, /Service\.shop\.example/);
    assert.match(refused.err, /replicas: -1 is less than 0/);
    const got = await cli([db, "get", "svc", "web"]);
    assert.equal(got.code, 1);
    assert.match(got.err, /not found/i);
    const applied = await cli([db, "apply", "-f", "-"], {
      stdin: manifest({ replicas: 2, image: "nginx" }),
    });
    assert.equal(applied.code, 0, applied.err);
    assert.equal(applied.out, "Service.shop.example/web created\n");
  } finally {
    dir.remove();
  }
});

test("cli kinds shows stored plural, short names and schemas, and a short name resolves", async () => {
  const dir = tempDir();
  try {
    const db = dir.file("shop.db");
    await startApp(db);
    const table = await cli([db, "kinds"]);
    assert.equal(table.code, 0, table.err);
    assert.match(table.out, /^KIND +PLURAL +SHORTNAMES +SCHEMA +OBJECTS$/m);
    assert.match(table.out, /^Service\.shop\.example +services +svc +spec +0$/m);
    const json = JSON.parse((await cli([db, "kinds", "-o", "json"])).out);
    assert.deepEqual(json, [{
      group: "shop.example",
      kind: "Service",
      objects: 0,
      label: "Service.shop.example",
      plural: "services",
      singular: "service",
      shortNames: ["svc"],
      stored: true,
      schemas: ["spec"],
    }]);
    const list = await cli([db, "get", "svc"]);
    assert.equal(list.code, 0, list.err);
  } finally {
    dir.remove();
  }
});

/** A webhook kind whose stored schema defaults what the app's validator (a zod `.default(5)`) would. */
const HOOK_SCHEMA = {
  type: "object",
  required: ["url", "maxAttempts"],
  properties: {
    url: { type: "string" },
    maxAttempts: { type: "integer", minimum: 1, default: 5 },
    retry: {
      type: "object",
      default: {},
      properties: { backoffMs: { type: "integer", default: 1000 } },
    },
  },
};
const Hook = defineKind<{ url: string; maxAttempts: number }>({
  group: "shop.example",
  kind: "Hook",
  spec: {
    "~standard": {
      version: 1,
      vendor: "test",
      validate: (value) => ({ value: { maxAttempts: 5, ...(value as { url: string }) } }),
      jsonSchema: { input: () => HOOK_SCHEMA, output: () => HOOK_SCHEMA },
    },
  } as StandardSchema<unknown, { url: string; maxAttempts: number }>,
});

test("cli apply fills the stored schema's defaults before validating, as the app's validator would", async () => {
  const dir = tempDir();
  try {
    const db = dir.file("shop.db");
    const store = await openSqliteStore(db);
    try {
      await (await new Beehive(store, { kinds: [Hook] }).start())();
    } finally {
      await store.close();
    }
    const applied = await cli([db, "apply", "-f", "-"], {
      stdin: JSON.stringify({
        group: "shop.example",
        kind: "Hook",
        name: "deliver",
        spec: { url: "https://example.com/hook" },
      }),
    });
    assert.equal(applied.code, 0, applied.err);
    const got = await cli([db, "get", "Hook.shop.example", "deliver", "-o", "json"]);
    assert.equal(got.code, 0, got.err);
    assert.deepEqual(JSON.parse(got.out).spec, {
      url: "https://example.com/hook",
      maxAttempts: 5,
      retry: { backoffMs: 1000 },
    });
  } finally {
    dir.remove();
  }
});

test("cli get and watch print a kind's printer columns after NAME, read as kubectl reads them", async () => {
  const dir = tempDir();
  try {
    const db = dir.file("shop.db");
    const Pool = defineKind<{ replicas: number; image?: string }, { ready: boolean }>({
      group: "shop.example",
      kind: "Pool",
      columns: [
        { name: "Replicas", jsonPath: ".spec.replicas", type: "integer" },
        { name: "Image", jsonPath: ".spec.image" },
        { name: "Up", jsonPath: ".status.ready", type: "boolean" },
        { name: "Team", jsonPath: ".metadata.labels.team" },
      ],
    });
    const store = await openSqliteStore(db);
    try {
      const bh = new Beehive(store, { kinds: [Pool] });
      await (await bh.start())();
      const web = await bh.client(Pool).create("web", { replicas: 3, image: "nginx" }, {
        labels: { team: "shop" },
      });
      await bh.adminClient(Pool).updateStatus(web.id, { ready: true });
      await bh.client(Pool).create("db", { replicas: 1 });
    } finally {
      await store.close();
    }
    const r = await cli([db, "get", "pools"]);
    assert.equal(r.code, 0, r.err);
    const rows = r.out.trimEnd().split("\n").map((l) => l.split(/ {3,}/));
    assert.deepEqual(rows[0], [
      "NAME",
      "REPLICAS",
      "IMAGE",
      "UP",
      "TEAM",
      "ID",
      "GEN",
      "READY",
      "STATE",
      "CONDITIONS",
      "AGE",
    ]);
    assert.deepEqual(rows[1].slice(0, 5), ["web", "3", "nginx", "true", "shop"]);
    assert.deepEqual(rows[2].slice(0, 5), ["db", "1", "-", "-", "-"]);
    const abort = new AbortController();
    const out = new Output();
    const watching = cli([db, "watch", "pools"], { signal: abort.signal, stdout: out });
    await out.until((t) => /^Added +db /m.test(t), "both objects");
    abort.abort();
    const watched = await watching;
    assert.equal(watched.code, 0, watched.err);
    assert.match(watched.out, /^EVENT +NAME +REPLICAS +IMAGE +UP +TEAM +ID/m);
    assert.match(watched.out, /^Added +web +3 +nginx +true +shop +\d+/m);
  } finally {
    dir.remove();
  }
});
