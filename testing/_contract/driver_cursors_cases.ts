/**
 * Store contract cases: driver cursors.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { ContractCase } from "./harness.ts";

export const driverCursorsCases: ContractCase[] = [
  {
    name: "get reads undefined for a name never set, not an error",
    async fn(h) {
      const s = await h.open();
      assert.equal(await s.driverCursors.get("stale-dependents"), undefined);
    },
  },
  {
    name: "set round-trips through get and advances",
    async fn(h) {
      const s = await h.open();
      await s.driverCursors.set("stale-dependents", 42);
      assert.equal(await s.driverCursors.get("stale-dependents"), 42);
      await s.driverCursors.set("stale-dependents", 43);
      assert.equal(await s.driverCursors.get("stale-dependents"), 43);
      await s.driverCursors.set("stale-dependents", 2 ** 53 - 1);
      assert.equal(await s.driverCursors.get("stale-dependents"), 2 ** 53 - 1);
    },
  },
  {
    name: "set never regresses: a lower or equal cursor leaves the stored one",
    async fn(h) {
      const s = await h.open();
      await s.driverCursors.set("d", 10);
      await s.driverCursors.set("d", 5);
      assert.equal(await s.driverCursors.get("d"), 10);
      await s.driverCursors.set("d", 10);
      assert.equal(await s.driverCursors.get("d"), 10);
      await s.driverCursors.set("d", 0);
      assert.equal(await s.driverCursors.get("d"), 10);
    },
  },
  {
    name: "zero is a cursor, distinct from none",
    async fn(h) {
      const s = await h.open();
      await s.driverCursors.set("z", 0);
      assert.equal(await s.driverCursors.get("z"), 0);
      await s.driverCursors.set("z", 1);
      assert.equal(await s.driverCursors.get("z"), 1);
    },
  },
  {
    name: "cursors are keyed by name",
    async fn(h) {
      const s = await h.open();
      await s.driverCursors.set("a", 7);
      await s.driverCursors.set("b", 3);
      await s.driverCursors.set("A", 1);
      assert.equal(await s.driverCursors.get("a"), 7);
      assert.equal(await s.driverCursors.get("b"), 3);
      assert.equal(await s.driverCursors.get("A"), 1);
      assert.equal(await s.driverCursors.get("c"), undefined);
      await s.driverCursors.set("b", 9);
      assert.equal(await s.driverCursors.get("a"), 7);
    },
  },
  {
    name: "set bumps no resource version",
    async fn(h) {
      const s = await h.open();
      const rv = await s.getLatestResourceVersion();
      await s.driverCursors.set("d", rv + 100);
      assert.equal(await s.getLatestResourceVersion(), rv);
    },
  },
  {
    reopens: true,
    name: "a cursor survives a restart",
    async fn(h) {
      const path = h.tempPath("cursors.db");
      const first = await h.openPath(path);
      await first.driverCursors.set("d", 17);
      await first.close();
      const second = await h.openPath(path);
      assert.equal(await second.driverCursors.get("d"), 17);
      await second.driverCursors.set("d", 3);
      assert.equal(await second.driverCursors.get("d"), 17);
    },
  },
  {
    name: "a bad name or cursor is a TypeError and stores nothing",
    async fn(h) {
      const s = await h.open();
      for (const name of ["", "bad\uD800", 5, undefined, null]) {
        await assert.rejects(s.driverCursors.get(name as string), TypeError);
        await assert.rejects(s.driverCursors.set(name as string, 1), TypeError);
      }
      for (const cursor of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, "3", 3n]) {
        await assert.rejects(s.driverCursors.set("d", cursor as number), TypeError);
      }
      assert.equal(await s.driverCursors.get("d"), undefined);
    },
  },
];
