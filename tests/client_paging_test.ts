/**
 * Paged lists: `list({ limit, after })` and `listOwnedObjects(ownerId, { limit, after })`.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { GroupKind, Migrator } from "../mod.ts";
import { settled } from "../mod.ts";
import { test } from "./_test.ts";
import { withBeehive } from "./_plain.ts";

const Thing: GroupKind = { group: "test.beehive.dev", kind: "Thing" };
const Other: GroupKind = { group: "test.beehive.dev", kind: "Other" };

test("Client.list pages through a kind in id order with limit and after", async () => {
  await withBeehive(undefined, async (bh) => {
    const things = bh.client(Thing);
    const ids: number[] = [];
    for (let i = 0; i < 7; i++) {
      ids.push((await things.create(`t${i}`, { i })).id);
      await bh.client(Other).create(`o${i}`, {});
    }
    const seen: number[] = [];
    let after = 0;
    for (;;) {
      const page = await things.list({ limit: 3, after });
      assert.ok(page.length <= 3);
      if (page.length === 0) break;
      seen.push(...page.map((o) => o.id));
      after = page[page.length - 1].id;
    }
    assert.deepEqual(seen, ids);
    assert.deepEqual((await things.list()).map((o) => o.id), ids);
    assert.deepEqual((await things.list({ after: ids[4] })).map((o) => o.id), ids.slice(5));
    assert.deepEqual((await things.list({ limit: 2 })).map((o) => o.id), ids.slice(0, 2));
    assert.deepEqual(await things.list({ after: ids[6] }), []);
  });
});

test("Client.list fills a page past rows that do not decode", async () => {
  const migrator: Migrator = {
    specVersion: 1,
    statusVersion: 0,
    convertSpec: () => {
      throw new Error("cannot convert");
    },
    convertStatus: (_v, value) => value,
  };
  await withBeehive(undefined, async (bh, store) => {
    // Rows written at a newer schema version than this build's do not decode.
    for (let i = 0; i < 3; i++) {
      await store.objects.create(Thing, { name: `bad${i}`, spec: "{}", specVersion: 9 });
    }
    bh.register(Thing, () => settled(), { migrator });
    const things = bh.client(Thing);
    const good = [(await things.create("good0", {})).id, (await things.create("good1", {})).id];
    const page = await things.list({ limit: 2 });
    assert.deepEqual(page.map((o) => o.id), good);
  });
});

test("Client.listOwnedObjects pages an owner's children of the kind", async () => {
  await withBeehive(undefined, async (bh) => {
    const owner = await bh.client(Other).create("owner", {});
    const things = bh.client(Thing);
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await things.create(`c${i}`, {}, { owner: owner.id })).id);
      await things.create(`loose${i}`, {});
    }
    const first = await things.listOwnedObjects(owner.id, { limit: 2 });
    assert.deepEqual(first.map((o) => o.id), ids.slice(0, 2));
    const rest = await things.listOwnedObjects(owner.id, { after: first[1].id, limit: 10 });
    assert.deepEqual(rest.map((o) => o.id), ids.slice(2));
    assert.deepEqual((await things.listOwnedObjects(owner.id)).map((o) => o.id), ids);
  });
});

test("Client.list refuses a malformed limit or after with RangeError", async () => {
  await withBeehive(undefined, async (bh) => {
    const things = bh.client(Thing);
    for (const limit of [0, -1, 1.5, NaN, Infinity, "2"]) {
      await assert.rejects(things.list({ limit: limit as number }), RangeError, String(limit));
      await assert.rejects(
        things.listOwnedObjects(1, { limit: limit as number }),
        RangeError,
        String(limit),
      );
    }
    for (const after of [-1, 0.5, NaN, "1"]) {
      await assert.rejects(things.list({ after: after as number }), RangeError, String(after));
    }
    await assert.rejects(things.list(5 as never), TypeError);
  });
});
