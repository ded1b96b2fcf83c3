/**
 * Unit tests for the work queue's front-taken map: it behaves as a `Map` in
 * insertion order while it copies its table to drop deleted slots.
 *
 * @module
 */
import assert from "node:assert/strict";
import { test } from "./_test.ts";
import { FifoMap } from "../src/engine/_fifo_map.ts";

/** Every key of `m`, oldest first, taken by repeated `first()` and `delete`. */
function drain<K, V>(m: FifoMap<K, V>): K[] {
  const keys: K[] = [];
  for (let e = m.first(); e !== undefined; e = m.first()) {
    keys.push(e[0]);
    m.delete(e[0]);
  }
  return keys;
}

test("FifoMap first is the oldest entry while thousands are taken from the front and more set at the back", () => {
  const m = new FifoMap<number, string>();
  for (let i = 0; i < 100; i++) m.set(i, `v${i}`);
  // Take one, add one, far past any copy threshold: a queue in steady state.
  for (let i = 0; i < 5_000; i++) {
    assert.deepEqual(m.first(), [i, `v${i}`]);
    assert.equal(m.delete(i), true);
    m.set(i + 100, `v${i + 100}`);
  }
  assert.equal(m.size, 100);
  assert.deepEqual(drain(m), Array.from({ length: 100 }, (_, i) => 5_000 + i));
  assert.equal(m.first(), undefined);
});

test("FifoMap keeps a re-set key in its place and a deleted then re-set key at the back", () => {
  const m = new FifoMap<string, number>();
  for (const k of ["a", "b", "c", "d"]) m.set(k, 0);
  m.set("b", 1);
  assert.equal(m.get("b"), 1);
  assert.equal(m.delete("c"), true);
  assert.equal(m.delete("c"), false);
  m.set("c", 2);
  assert.equal(m.has("c"), true);
  assert.deepEqual(drain(m), ["a", "b", "d", "c"]);
});

test("FifoMap deletes from the middle keep the order of what remains across a copy", () => {
  const m = new FifoMap<number, number>();
  for (let i = 0; i < 1_000; i++) m.set(i, i);
  // Delete every odd key (500 deletions: more than the 500 left, so the table is copied).
  for (let i = 1; i < 1_000; i += 2) assert.equal(m.delete(i), true);
  assert.equal(m.size, 500);
  assert.equal(m.get(2), 2);
  assert.equal(m.has(3), false);
  assert.deepEqual(drain(m), Array.from({ length: 500 }, (_, i) => 2 * i));
});

test("FifoMap clear empties it and it fills again in order", () => {
  const m = new FifoMap<number, number>();
  for (let i = 0; i < 200; i++) m.set(i, i);
  for (let i = 0; i < 150; i++) m.delete(i);
  m.clear();
  assert.equal(m.size, 0);
  assert.equal(m.first(), undefined);
  m.set(7, 7);
  m.set(3, 3);
  assert.deepEqual(drain(m), [7, 3]);
});
