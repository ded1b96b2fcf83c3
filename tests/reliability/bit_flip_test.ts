/**
 * The silent-corruption campaign: seeded single-bit flips in a copy of a
 * SQLite store, each opened read-only, checked (`store.check()`) and read in
 * full. The property: a flip that makes a read fail is always caught — the
 * open refuses the file or the check reports damage — so a store that checks
 * `ok` reads back without error. What no check can see (a flip that turns one
 * valid value into another) is counted, not hidden. Figures are in
 * docs/reliability.md.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { BeehiveError } from "../../src/model/errors.ts";
import type { SqliteStore } from "../../store/sqlite/mod.ts";
import { openSqliteStore } from "../_sqlite_driver.ts";
import { test } from "../_test.ts";
import { scratchDir } from "./_scratch.ts";

/** The campaign's seed: a failure replays with it. */
const SEED = 20261202;
const FLIPS = 300;
const OBJECTS = 400;
const Item = { group: "test.beehive.dev", kind: "Item" };

/** A small seeded generator (mulberry32): the same flips on every runtime. */
function random(seed: number): (below: number) => number {
  let a = seed >>> 0;
  return (below) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * below);
  };
}

/** Everything a reader sees of the store, as one string. */
async function contents(store: SqliteStore): Promise<string> {
  const objects = await store.objects.list(Item);
  const parts: string[] = [];
  for (const o of objects) {
    parts.push(JSON.stringify([o.id, o.name, o.spec, o.status, o.generation, o.conditions]));
    if (o.id % 40 === 0) {
      const events = await store.events.list(o.id, { limit: 10 });
      parts.push(JSON.stringify(events.map((e) => [e.reason, e.message, e.count])));
    }
  }
  return parts.join("\n");
}

test("store.check catches every single-bit flip of a SQLite file that breaks a read (campaign)", async () => {
  const dir = scratchDir();
  try {
    const seedFile = dir.file("seed.db");
    const seedStore = await openSqliteStore(seedFile);
    let owner: { id: number } | undefined;
    for (let i = 0; i < OBJECTS; i++) {
      const o = await seedStore.objects.create(Item, {
        name: `item-${1000 + i}`,
        spec: JSON.stringify({ replicas: i % 7, zone: `zone-${i % 3}` }),
      });
      await seedStore.conditions.set(o, [{ type: "Ready", status: i % 2 ? "True" : "False" }]);
      if (i % 40 === 0) await seedStore.events.add(o, { type: "Normal", reason: "Made" });
      if (owner !== undefined && i % 5 === 0) {
        await seedStore.edges.add({ fromId: o.id, toId: owner.id, relation: "owned_by" });
      }
      if (i % 50 === 0) owner = o;
    }
    const expected = await contents(seedStore);
    await seedStore.close();
    const original = readFileSync(seedFile);
    const next = random(SEED);
    const outcomes = { refused: 0, damageFound: 0, silentChange: 0, unchanged: 0 };
    const missed: string[] = [];
    const flipFile = dir.file("flip.db");
    for (let i = 0; i < FLIPS; i++) {
      const at = next(original.length);
      const bit = next(8);
      const copy = Uint8Array.from(original);
      copy[at] ^= 1 << bit;
      for (const suffix of ["", "-wal", "-shm"]) rmSync(`${flipFile}${suffix}`, { force: true });
      writeFileSync(flipFile, copy);
      let store: SqliteStore;
      try {
        store = await openSqliteStore(flipFile, { readOnly: true });
      } catch (error) {
        assert.ok(error instanceof BeehiveError, `flip ${i}: ${error}`);
        outcomes.refused++;
        continue;
      }
      try {
        const report = await store.check().catch((error) => {
          assert.ok(error instanceof BeehiveError, `flip ${i}: ${error}`);
          return undefined;
        });
        let read: string | Error;
        try {
          read = await contents(store);
        } catch (error) {
          read = error as Error;
        }
        if (report === undefined || !report.ok) outcomes.damageFound++;
        else if (read instanceof Error) {
          missed.push(`flip ${i} (byte ${at}, bit ${bit}): ${read.message}`);
        } else if (read !== expected) outcomes.silentChange++;
        else outcomes.unchanged++;
      } finally {
        await store.close();
      }
    }
    assert.deepEqual(missed, [], "a flip that broke a read passed the check");
    assert.equal(
      outcomes.refused + outcomes.damageFound + outcomes.silentChange + outcomes.unchanged,
      FLIPS,
    );
    console.log(
      `bit flips (seed ${SEED}, ${FLIPS} flips, ${original.length} bytes): ${
        JSON.stringify(outcomes)
      }`,
    );
  } finally {
    dir.remove();
  }
});
