/**
 * Unit tests for generated object names.
 *
 * @module
 */
import assert from "node:assert/strict";
import { test } from "./_test.ts";
import { installFakeTime } from "./_fake_time.ts";
import { generateName } from "../src/model/generate_name.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The UUID part of a generated name. */
function uuidOf(name: string, prefix: string): string {
  assert.ok(name.startsWith(`${prefix}-`), name);
  const uuid = name.slice(prefix.length + 1);
  assert.match(uuid, UUID);
  return uuid;
}

test("generateName joins the prefix to a UUID with a hyphen", () => {
  uuidOf(generateName("cache"), "cache");
  uuidOf(generateName("a-b"), "a-b");
  uuidOf(generateName(""), "");
});

test("generateName uses a UUIDv7: version nibble 7, variant bits 10", () => {
  for (let i = 0; i < 200; i++) {
    const hex = uuidOf(generateName("x"), "x").replaceAll("-", "");
    assert.equal(hex[12], "7", "version nibble");
    assert.equal(parseInt(hex[16], 16) & 0b1100, 0b1000, "variant bits");
  }
});

test("generateName stamps the current Unix milliseconds into the first 48 bits", () => {
  const clock = installFakeTime();
  try {
    clock.setSystemTime(1_767_225_600_123);
    const hex = uuidOf(generateName("t"), "t").replaceAll("-", "");
    assert.equal(parseInt(hex.slice(0, 12), 16), 1_767_225_600_123);
  } finally {
    clock.uninstall();
  }
});

test("generateName names sort in creation order across different times", () => {
  const clock = installFakeTime();
  try {
    const names: string[] = [];
    for (let i = 0; i < 50; i++) {
      names.push(generateName("job"));
      clock.tick(i % 2 === 0 ? 1 : 997);
    }
    assert.deepEqual([...names].sort(), names);
  } finally {
    clock.uninstall();
  }
});

test("generateName returns unique names across many calls in one millisecond", () => {
  const clock = installFakeTime();
  try {
    const names = new Set<string>();
    for (let i = 0; i < 10_000; i++) names.add(generateName("n"));
    assert.equal(names.size, 10_000);
  } finally {
    clock.uninstall();
  }
});

test("generateName throws TypeError on a non-string prefix", () => {
  for (const p of [undefined, null, 1, {}, ["a"], Symbol("s")]) {
    assert.throws(() => generateName(p as unknown as string), TypeError);
  }
});
