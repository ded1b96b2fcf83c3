/**
 * Stored kinds: `defineKind`'s names, scope, columns and Standard JSON Schema
 * reach the store when a Beehive starts, `AdminClient.listKinds`/`getKind`
 * read them, and every writer without the kind's validator checks its spec
 * and status writes against the stored JSON Schema.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  Beehive,
  defineKind,
  InvalidOptionError,
  InvalidSpecError,
  InvalidStatusError,
  type StandardSchema,
  StoreError,
} from "../mod.ts";
import { test } from "./_test.ts";
import { openTestStore } from "./_sqlite_driver.ts";
import { withBeehive } from "./_plain.ts";
import { installFakeTime } from "./_fake_time.ts";
import { STORED_SCHEMA_TTL } from "../src/engine/_stored_schemas.ts";

interface WorkerSpec {
  replicas: number;
  image: string;
}

const SPEC_SCHEMA = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  required: ["replicas", "image"],
  properties: {
    replicas: { type: "integer", minimum: 0 },
    image: { type: "string", minLength: 1 },
  },
};
const STATUS_SCHEMA = {
  type: "object",
  properties: { ready: { type: "boolean" } },
  required: ["ready"],
};

/** A validator that also implements Standard JSON Schema, as zod ≥ 4.2 or arktype do. */
function withJsonSchema<T>(
  check: (value: unknown) => boolean,
  json: unknown,
): StandardSchema<unknown, T> {
  return {
    "~standard": {
      version: 1,
      vendor: "test",
      validate: (value) =>
        check(value) ? { value: value as T } : { issues: [{ message: "invalid (own validator)" }] },
      jsonSchema: {
        input: (options: { target: string }) => {
          assert.equal(options.target, "draft-2020-12");
          return json;
        },
        output: () => json,
      },
    } as StandardSchema<unknown, T>["~standard"],
  };
}

function workerKind() {
  return defineKind<WorkerSpec, { ready: boolean }>({
    group: "shop.example",
    kind: "Worker",
    shortNames: ["wk"],
    columns: [{ name: "Replicas", jsonPath: ".spec.replicas", type: "integer" }],
    spec: withJsonSchema((v) => {
      const s = v as WorkerSpec;
      return Number.isInteger(s?.replicas) && s.replicas >= 0 && typeof s.image === "string" &&
        s.image !== "";
    }, SPEC_SCHEMA),
    status: withJsonSchema(
      (v) => typeof (v as { ready?: unknown })?.ready === "boolean",
      STATUS_SCHEMA,
    ),
  });
}

const plainWorker = { group: "shop.example", kind: "Worker" };

/** Worker's definition as another process's start would store it, with `specSchema` as given. */
function workerDefinition(specSchema: string | undefined) {
  return {
    ...plainWorker,
    plural: "workers",
    singular: "worker",
    shortNames: [],
    namespaced: false,
    columns: "[]",
    specSchema,
    statusSchema: undefined,
  };
}

test("defineKind defaults plural, singular, shortNames, namespaced and columns", () => {
  const k = defineKind({ group: "shop.example", kind: "Worker" });
  assert.equal(k.plural, "workers");
  assert.equal(k.singular, "worker");
  assert.deepEqual(k.shortNames, []);
  assert.equal(k.namespaced, false);
  assert.deepEqual(k.columns, []);
  const n = defineKind({
    group: "shop.example",
    kind: "Policy",
    plural: "policies",
    singular: "policy",
    shortNames: ["pol"],
    namespaced: true,
    columns: [{ name: "Phase", jsonPath: ".status.phase" }],
  });
  assert.equal(n.plural, "policies");
  assert.deepEqual(n.shortNames, ["pol"]);
  assert.equal(n.namespaced, true);
  assert.deepEqual(n.columns, [{ name: "Phase", jsonPath: ".status.phase" }]);
  assert.ok(Object.isFrozen(n.shortNames) && Object.isFrozen(n.columns));
});

test("defineKind refuses malformed names, scope and columns with InvalidOptionError", () => {
  const base = { group: "shop.example", kind: "Worker" };
  const bad: Record<string, unknown>[] = [
    { plural: "Workers" },
    { plural: "" },
    { plural: "a".repeat(64) },
    { singular: "work er" },
    { shortNames: "wk" },
    { shortNames: ["WK"] },
    { shortNames: Array.from({ length: 33 }, (_, i) => `s${i}`) },
    { namespaced: "yes" },
    { columns: {} },
    { columns: [null] },
    { columns: [{ name: "", jsonPath: ".spec.x" }] },
    { columns: [{ name: "X", jsonPath: "spec.x" }] },
    { columns: [{ name: "X", jsonPath: ".spec.x", type: "float" }] },
    { columns: Array.from({ length: 33 }, (_, i) => ({ name: `c${i}`, jsonPath: ".spec" })) },
  ];
  for (const extra of bad) {
    assert.throws(
      () => defineKind({ ...base, ...extra } as never),
      InvalidOptionError,
      JSON.stringify(extra),
    );
  }
});

test("defineKind refuses a validator whose JSON Schema is not valid JSON Schema", () => {
  for (const json of [{ type: 12 }, { properties: [] }, { pattern: "(" }, { $ref: "#/$defs/x" }]) {
    assert.throws(
      () => defineKind({ ...plainWorker, spec: withJsonSchema(() => true, json) }),
      (e: unknown) => e instanceof InvalidOptionError && /not valid JSON Schema/.test(e.message),
      JSON.stringify(json),
    );
  }
  const throwing = withJsonSchema(() => true, {});
  (throwing["~standard"] as unknown as { jsonSchema: unknown }).jsonSchema = {
    input: () => {
      throw new Error("unrepresentable");
    },
  };
  assert.throws(() => defineKind({ ...plainWorker, spec: throwing }), /unrepresentable/);
});

test("start stores the definition and JSON Schemas of every registered kind, and listKinds/getKind read them", async () => {
  await withBeehive(undefined, async (bh) => {
    const Worker = workerKind();
    bh.register(Worker, () => ({ requeue: false }) as never);
    bh.register({ group: "", kind: "Shift" }, () => ({ requeue: false }) as never);
    const admin = bh.adminClient(plainWorker);
    assert.deepEqual(await admin.listKinds(), []);
    const stop = await bh.start();
    try {
      const worker = await admin.getKind(plainWorker);
      assert.deepEqual(worker, {
        group: "shop.example",
        kind: "Worker",
        plural: "workers",
        singular: "worker",
        shortNames: ["wk"],
        namespaced: false,
        columns: [{ name: "Replicas", jsonPath: ".spec.replicas", type: "integer" }],
        specSchema: SPEC_SCHEMA,
        statusSchema: STATUS_SCHEMA,
      });
      const kinds = await admin.listKinds();
      assert.deepEqual(kinds.map((k) => `${k.group}/${k.kind}`), ["/Shift", "shop.example/Worker"]);
      assert.equal(kinds[0].plural, "shifts");
      assert.equal("specSchema" in kinds[0], false);
      assert.equal(await admin.getKind({ group: "x", kind: "Nope" }), undefined);
      await assert.rejects(admin.getKind({ group: "x", kind: "" } as never), InvalidOptionError);
    } finally {
      await stop();
    }
  });
});

test("start stores the kinds option's tokens, and a plain kind never replaces a stored definition", async () => {
  const store = await openTestStore(":memory:");
  try {
    const app = new Beehive(store, { kinds: [workerKind()] });
    await (await app.start())();
    const other = new Beehive(store, { kinds: [plainWorker] });
    other.register(plainWorker, () => ({ requeue: false }) as never);
    await (await other.start())();
    const stored = await other.adminClient(plainWorker).getKind(plainWorker);
    assert.deepEqual(stored?.specSchema, SPEC_SCHEMA);
    assert.deepEqual(stored?.shortNames, ["wk"]);
    assert.throws(
      () => new Beehive(store, { kinds: [{ group: "g" }] as never }),
      InvalidOptionError,
    );
    assert.throws(() => new Beehive(store, { kinds: "Worker" as never }), InvalidOptionError);
    assert.throws(
      () => new Beehive(store, { kinds: [{ group: "g", kind: "K".repeat(1_025) }] }),
      InvalidOptionError,
    );
  } finally {
    await store.close();
  }
});

test("a client without the kind's validator checks spec writes against the stored JSON Schema and writes nothing", async () => {
  const store = await openTestStore(":memory:");
  try {
    await (await new Beehive(store, { kinds: [workerKind()] }).start())();
    // Another writer: knows only { group, kind }.
    const writer = new Beehive(store).client<WorkerSpec>(plainWorker);
    const error = await writer.create("w", { replicas: -1, image: "" }).then(
      () => assert.fail("expected a rejection"),
      (e: unknown) => e,
    );
    assert.ok(error instanceof InvalidSpecError);
    assert.deepEqual(
      error.issues.map((i) => ({ message: i.message, path: i.path })),
      [
        { message: "-1 is less than 0.", path: ["replicas"] },
        { message: "String is too short (0 < 1).", path: ["image"] },
      ],
    );
    assert.match(error.message, /replicas: -1 is less than 0/);
    assert.deepEqual(await writer.list(), []);
    await assert.rejects(writer.createOrUpdate("w", { replicas: 1 } as never), InvalidSpecError);
    const ok = await writer.create("w", { replicas: 2, image: "nginx" });
    await assert.rejects(writer.update(ok.id, { replicas: 1.5, image: "x" }), InvalidSpecError);
    assert.deepEqual((await writer.get(ok.id)).spec, { replicas: 2, image: "nginx" });
  } finally {
    await store.close();
  }
});

test("an admin client without the kind's validator checks status writes against the stored JSON Schema", async () => {
  const store = await openTestStore(":memory:");
  try {
    await (await new Beehive(store, { kinds: [workerKind()] }).start())();
    const bh = new Beehive(store);
    const w = await bh.client(plainWorker).create("w", { replicas: 1, image: "x" });
    const admin = bh.adminClient(plainWorker);
    const error = await admin.updateStatus(w.id, { ready: "yes" }).then(
      () => assert.fail("expected a rejection"),
      (e: unknown) => e,
    );
    assert.ok(error instanceof InvalidStatusError);
    assert.deepEqual(error.issues[0].path, ["ready"]);
    assert.equal((await bh.client(plainWorker).get(w.id)).status, undefined);
    await admin.updateStatus(w.id, { ready: true });
    assert.deepEqual((await bh.client(plainWorker).get(w.id)).status, { ready: true });
  } finally {
    await store.close();
  }
});

test("a writer with the kind's own validator uses it, not the stored schema", async () => {
  const store = await openTestStore(":memory:");
  try {
    await store.kinds.put(workerDefinition('{"type":"string"}'));
    const Worker = defineKind<WorkerSpec>({ ...plainWorker });
    const created = await new Beehive(store).client(Worker).create("w", {
      replicas: 1,
      image: "x",
    });
    assert.equal(created.spec.replicas, 1);
  } finally {
    await store.close();
  }
});

test("a writer follows a stored schema that changes within STORED_SCHEMA_TTL, and reads the definition once per interval", async () => {
  const clock = installFakeTime();
  const store = await openTestStore(":memory:");
  try {
    const put = (specSchema: string | undefined) => store.kinds.put(workerDefinition(specSchema));
    let reads = 0;
    const get = store.kinds.get.bind(store.kinds);
    store.kinds.get = (gk) => {
      reads++;
      return get(gk);
    };
    const client = new Beehive(store).client(plainWorker);
    await client.create("free", 5);
    await put('{"type":"object"}');
    await client.create("stale", 5); // the definition read a moment ago still holds
    assert.equal(reads, 1);
    await clock.tickAsync(STORED_SCHEMA_TTL);
    await assert.rejects(client.create("a", 5), InvalidSpecError);
    await client.create("b", {});
    assert.equal(reads, 2);
    await put('{"type":"integer"}');
    await clock.tickAsync(STORED_SCHEMA_TTL);
    await client.create("c", 5);
    await assert.rejects(client.create("d", {}), InvalidSpecError);
    await put(undefined);
    await clock.tickAsync(STORED_SCHEMA_TTL);
    await client.create("e", "anything");
    assert.equal(reads, 4);
  } finally {
    await store.close();
    clock.uninstall();
  }
});

test("a client refuses a namespace, or a name without one, only after reading the kind's stored scope again: a scope changed within STORED_SCHEMA_TTL is followed", async () => {
  const clock = installFakeTime();
  const store = await openTestStore(":memory:");
  try {
    const scoped = (namespaced: boolean) =>
      store.kinds.put({ ...workerDefinition(undefined), namespaced }, { replace: true });
    const bh = new Beehive(store);
    await scoped(false);
    await bh.client(plainWorker).create("old", 1); // reads the scope: cluster-scoped
    await scoped(true);
    const made = await bh.client(plainWorker, { namespace: "team-a" }).create("new", 2);
    assert.equal(made.namespace, "team-a");
    // Still refused once the stored definition says so.
    await assert.rejects(bh.client(plainWorker).getByName("new"), InvalidOptionError);
    await scoped(false);
    assert.equal((await bh.client(plainWorker).getByName("old")).spec, 1);
    await assert.rejects(
      bh.client(plainWorker, { namespace: "team-a" }).list(),
      InvalidOptionError,
    );
  } finally {
    await store.close();
    clock.uninstall();
  }
});

/** A schema with defaults where the API server fills them: properties, nested objects, array items, maps, `$ref`s. */
const DEFAULTED_SCHEMA = {
  type: "object",
  required: ["url", "maxAttempts"],
  $defs: { header: { type: "object", properties: { value: { type: "string", default: "" } } } },
  properties: {
    url: { type: "string" },
    maxAttempts: { type: "integer", minimum: 1, default: 5 },
    backoff: {
      type: "object",
      default: {},
      properties: {
        initialMs: { type: "integer", default: 1_000 },
        jitter: { type: "boolean", default: true },
      },
    },
    targets: {
      type: "array",
      items: {
        type: "object",
        properties: { host: { type: "string" }, port: { type: "integer", default: 443 } },
      },
    },
    headers: { type: "object", additionalProperties: { $ref: "#/$defs/header" } },
    primary: { $ref: "#/$defs/header" },
    tags: { type: "array", items: { type: "string" } },
    mode: { type: "string", default: "push", enum: ["push", "pull"] },
  },
};

test("a client without the kind's validator fills the stored schema's defaults (properties, nested objects, array items, maps, $refs) before validating", async () => {
  const store = await openTestStore(":memory:");
  try {
    await store.kinds.put(workerDefinition(JSON.stringify(DEFAULTED_SCHEMA)));
    const client = new Beehive(store).client(plainWorker);
    const given = {
      url: "https://x.example",
      targets: [{ host: "a" }, { host: "b", port: 80 }],
      headers: { auth: {}, trace: { value: "on" } },
      primary: {},
      mode: "pull",
    };
    const before = structuredClone(given);
    const created = await client.create("w", given);
    const expected = {
      url: "https://x.example",
      maxAttempts: 5,
      backoff: { initialMs: 1_000, jitter: true },
      targets: [{ host: "a", port: 443 }, { host: "b", port: 80 }],
      headers: { auth: { value: "" }, trace: { value: "on" } },
      primary: { value: "" },
      mode: "pull",
    };
    assert.deepEqual(created.spec, expected);
    assert.deepEqual((await client.get(created.id)).spec, expected);
    assert.deepEqual(given, before, "the caller's value is left as given");
    // A required field the schema defaults is not missing: defaults come before validation.
    await client.update(created.id, { url: "https://y.example" });
    assert.deepEqual((await client.get(created.id)).spec, {
      url: "https://y.example",
      maxAttempts: 5,
      backoff: { initialMs: 1_000, jitter: true },
      mode: "push",
    });
    // A default never replaces a value given, even a wrong one: validation refuses it.
    await assert.rejects(client.create("v", { url: "u", maxAttempts: 0 }), InvalidSpecError);
  } finally {
    await store.close();
  }
});

test("stored-schema defaults follow recursive $refs as deep as the value goes, and keep a member named __proto__ a member", async () => {
  const store = await openTestStore(":memory:");
  try {
    const schema = {
      $defs: {
        node: {
          type: "object",
          properties: { weight: { default: 1 }, child: { $ref: "#/$defs/node" } },
        },
      },
      type: "object",
      properties: {
        tree: { $ref: "#/$defs/node" },
        ["__proto__"]: { type: "object", default: { polluted: true } },
      },
    };
    await store.kinds.put(workerDefinition(JSON.stringify(schema)));
    const client = new Beehive(store).client(plainWorker);
    const created = await client.create("w", { tree: { child: { child: {} } } });
    const spec = created.spec as Record<string, unknown>;
    assert.deepEqual(spec.tree, {
      weight: 1,
      child: { weight: 1, child: { weight: 1 } },
    });
    assert.ok(Object.hasOwn(spec, "__proto__"));
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  } finally {
    await store.close();
  }
});

test("an admin client without the kind's validator fills the stored status schema's defaults", async () => {
  const store = await openTestStore(":memory:");
  try {
    await store.kinds.put({
      ...workerDefinition(undefined),
      statusSchema: JSON.stringify({
        type: "object",
        required: ["attempts"],
        properties: { attempts: { type: "integer", default: 0 }, lastError: { type: "string" } },
      }),
    });
    const bh = new Beehive(store);
    const w = await bh.client(plainWorker).create("w", {});
    await bh.adminClient(plainWorker).updateStatus(w.id, { lastError: "boom" });
    assert.deepEqual((await bh.client(plainWorker).get(w.id)).status, {
      attempts: 0,
      lastError: "boom",
    });
  } finally {
    await store.close();
  }
});

test("a writer with the kind's own validator stores its output, not the stored schema's defaults", async () => {
  const store = await openTestStore(":memory:");
  try {
    await store.kinds.put(workerDefinition(JSON.stringify(DEFAULTED_SCHEMA)));
    const Worker = defineKind<{ url: string }>({
      ...plainWorker,
      spec: {
        "~standard": { version: 1, vendor: "test", validate: (value) => ({ value }) },
      } as StandardSchema<unknown, { url: string }>,
    });
    const created = await new Beehive(store).client(Worker).create("w", { url: "u" });
    assert.deepEqual(created.spec, { url: "u" });
  } finally {
    await store.close();
  }
});

test("a stored schema that is not valid JSON Schema is a clear StoreError and writes nothing", async () => {
  const store = await openTestStore(":memory:");
  try {
    for (const specSchema of ['{"type":12}', "not json", '{"$ref":"#/nowhere"}']) {
      await store.kinds.put(workerDefinition(specSchema));
      const client = new Beehive(store).client(plainWorker);
      await assert.rejects(
        client.create("w", { replicas: 1 }),
        (e: unknown) =>
          e instanceof StoreError &&
          /Cannot check the spec of Worker\.shop\.example against its stored JSON Schema/.test(
            e.message,
          ),
        specSchema,
      );
      assert.deepEqual(await client.list(), []);
    }
  } finally {
    await store.close();
  }
});

test("start rejects when the kinds cannot be stored, starts nothing, and can be retried", async () => {
  for (const leaderElection of [undefined, { leaseDuration: 60_000 }]) {
    const store = await openTestStore(":memory:");
    try {
      let fail = true;
      // The definitions are stored in one transaction: it fails.
      const failing = new Proxy(store, {
        get(target, prop) {
          if (prop === "within" && fail) return () => Promise.reject(new StoreError("disk full"));
          const value = Reflect.get(target, prop, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
      const bh = new Beehive(failing, { leaderElection });
      bh.register(workerKind(), () => ({ requeue: false }) as never);
      await assert.rejects(bh.start(), /disk full/);
      assert.equal(bh.isLeader, false);
      assert.equal((await store.leases.get("beehive"))?.holder, undefined);
      fail = false;
      const stop = await bh.start();
      await stop();
      assert.deepEqual((await store.kinds.get(plainWorker))?.shortNames, ["wk"]);
    } finally {
      await store.close();
    }
  }
});
