/**
 * Store contract cases: stored kind definitions.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { KindsPutInput } from "../../src/store.ts";
import { InvalidOptionError } from "../../src/model/errors.ts";
import type { ContractCase } from "./harness.ts";

const worker: KindsPutInput = {
  group: "shop.example",
  kind: "Worker",
  plural: "workers",
  singular: "worker",
  shortNames: ["wk"],
  namespaced: true,
  columns: '[{"name":"Replicas","jsonPath":".spec.replicas"}]',
  specSchema: '{"type":"object","properties":{"replicas":{"type":"integer","minimum":0}}}',
  statusSchema: undefined,
};

function plain(input: KindsPutInput) {
  const { group, kind, plural, singular, shortNames, namespaced, columns } = input;
  return { group, kind, plural, singular, shortNames, namespaced, columns };
}

export const kindsCases: ContractCase[] = [
  {
    name: "kinds.get reads undefined for a kind never stored, and list reads []",
    async fn(h) {
      const s = await h.open();
      assert.equal(await s.kinds.get({ group: "shop.example", kind: "Worker" }), undefined);
      assert.deepEqual(await s.kinds.list(), []);
    },
  },
  {
    name: "kinds.put round-trips every field through get and list",
    async fn(h) {
      const s = await h.open();
      assert.equal(await s.kinds.put(worker), true);
      const got = (await s.kinds.get(worker))!;
      assert.deepEqual(plain(got), plain(worker));
      assert.equal(got.specSchema, worker.specSchema);
      assert.equal(got.statusSchema, undefined);
      assert.ok(got.updatedAt instanceof Date && got.updatedAt.getTime() > 0);
      const listed = await s.kinds.list();
      assert.equal(listed.length, 1);
      assert.deepEqual(plain(listed[0]), plain(worker));
    },
  },
  {
    name: "kinds.put replaces a stored definition and resolves false when nothing changed",
    async fn(h) {
      const s = await h.open();
      await s.kinds.put(worker);
      assert.equal(await s.kinds.put(worker), false);
      const changed = { ...worker, shortNames: ["w", "wk"], specSchema: undefined };
      assert.equal(await s.kinds.put(changed), true);
      const got = (await s.kinds.get(worker))!;
      assert.deepEqual(got.shortNames, ["w", "wk"]);
      assert.equal(got.specSchema, undefined);
    },
  },
  {
    name: "kinds.put with replace false only adds a missing definition",
    async fn(h) {
      const s = await h.open();
      await s.kinds.put(worker);
      const bare = { ...worker, shortNames: [], specSchema: undefined, namespaced: false };
      assert.equal(await s.kinds.put(bare, { replace: false }), false);
      assert.equal((await s.kinds.get(worker))!.specSchema, worker.specSchema);
      const other = { ...bare, kind: "Shift", plural: "shifts", singular: "shift" };
      assert.equal(await s.kinds.put(other, { replace: false }), true);
      assert.equal((await s.kinds.get(other))!.namespaced, false);
    },
  },
  {
    name: "kinds.list orders by group, then kind, and keys by both",
    async fn(h) {
      const s = await h.open();
      await s.kinds.put({ ...worker, group: "b.example" });
      await s.kinds.put({ ...worker, group: "", kind: "Zeta", plural: "zetas" });
      await s.kinds.put({ ...worker, group: "a.example", kind: "Worker" });
      await s.kinds.put({ ...worker, group: "a.example", kind: "Alpha" });
      const keys = (await s.kinds.list()).map((k) => `${k.group}/${k.kind}`);
      assert.deepEqual(keys, ["/Zeta", "a.example/Alpha", "a.example/Worker", "b.example/Worker"]);
      assert.equal((await s.kinds.get({ group: "", kind: "Zeta" }))!.plural, "zetas");
    },
  },
  {
    name: "kinds.put bumps no resource version and writes no object",
    async fn(h) {
      const s = await h.open();
      const rv = await s.getLatestResourceVersion();
      await s.kinds.put(worker);
      assert.equal(await s.getLatestResourceVersion(), rv);
      assert.equal((await s.objectWrites.maxVersionAll()).at, rv);
    },
  },
  {
    name: "kinds.put joins a transaction and rolls back with it",
    async fn(h) {
      const s = await h.open();
      await assert.rejects(
        s.within(async (tx) => {
          await tx.kinds.put(worker);
          assert.ok(await tx.kinds.get(worker));
          throw new Error("undo");
        }),
        /undo/,
      );
      assert.equal(await s.kinds.get(worker), undefined);
    },
  },
  {
    name: "a stored kind survives a restart",
    reopens: true,
    async fn(h) {
      const path = h.tempPath("kinds.db");
      const first = await h.openPath(path);
      await first.kinds.put(worker);
      await first.close();
      const second = await h.openPath(path);
      assert.deepEqual(plain((await second.kinds.get(worker))!), plain(worker));
    },
  },
  {
    name: "kinds.put refuses a malformed definition and stores nothing",
    async fn(h) {
      const s = await h.open();
      const bad: [unknown, new (...args: never[]) => Error][] = [
        [undefined, TypeError],
        ["Worker", TypeError],
        [{ ...worker, kind: "" }, InvalidOptionError],
        [{ ...worker, group: 5 }, InvalidOptionError],
        [{ ...worker, plural: "" }, TypeError],
        [{ ...worker, singular: "bad\uD800" }, TypeError],
        [{ ...worker, shortNames: "wk" }, TypeError],
        [{ ...worker, shortNames: ["ok", ""] }, TypeError],
        [{ ...worker, namespaced: "yes" }, TypeError],
        [{ ...worker, columns: undefined }, TypeError],
        [{ ...worker, specSchema: {} }, TypeError],
        [{ ...worker, statusSchema: null }, TypeError],
      ];
      for (const [input, type] of bad) {
        await assert.rejects(s.kinds.put(input as KindsPutInput), type, String(input));
      }
      await assert.rejects(s.kinds.put(worker, { replace: "no" as never }), TypeError);
      await assert.rejects(s.kinds.get({ group: "", kind: "" }), InvalidOptionError);
      assert.deepEqual(await s.kinds.list(), []);
    },
  },
];
