/**
 * Unit tests for JSON encoding and per-kind decoding through a migrator.
 *
 * @module
 */
import assert from "node:assert/strict";
import { test } from "./_test.ts";
import { DecodeError, encodeJson, KindCodec } from "../src/model/_codec.ts";
import { SchemaVersionDowngradeError } from "../src/model/errors.ts";
import type { Migrator } from "../src/model/migrator.ts";

interface Call {
  column: "spec" | "status";
  from: number;
  value: unknown;
}

/** A migrator that records its calls and tags what it converts. */
function recordingMigrator(specVersion: number, statusVersion: number) {
  const calls: Call[] = [];
  const migrator: Migrator = {
    specVersion,
    statusVersion,
    convertSpec(from, value) {
      calls.push({ column: "spec", from, value });
      return { spec: value, from };
    },
    convertStatus(from, value) {
      calls.push({ column: "status", from, value });
      return { status: value, from };
    },
  };
  return { migrator, calls };
}

test("encodeJson encodes any JSON value, null included", () => {
  assert.equal(encodeJson({ a: [1, "x", true, null] }, "spec"), '{"a":[1,"x",true,null]}');
  assert.equal(encodeJson(null, "spec"), "null");
  assert.equal(encodeJson("s", "status"), '"s"');
});

test("encodeJson refuses a BigInt with TypeError", () => {
  assert.throws(() => encodeJson(1n, "spec"), TypeError);
  assert.throws(() => encodeJson({ n: 1n }, "spec"), TypeError);
});

test("encodeJson refuses a cycle with TypeError", () => {
  const a: Record<string, unknown> = {};
  a.self = a;
  assert.throws(() => encodeJson(a, "status"), TypeError);
});

test("encodeJson refuses undefined with TypeError", () => {
  assert.throws(() => encodeJson(undefined, "spec"), TypeError);
});

test("encodeJson refuses a function or a symbol with TypeError", () => {
  assert.throws(() => encodeJson(() => 1, "spec"), TypeError);
  assert.throws(() => encodeJson(Symbol("s"), "spec"), TypeError);
});

test("encodeJson names what it could not encode", () => {
  assert.throws(() => encodeJson(1n, "event detail"), /event detail/);
});

test("KindCodec without a migrator passes values through at any version", () => {
  const codec = new KindCodec(undefined);
  assert.equal(codec.specVersion, 0);
  assert.equal(codec.statusVersion, 0);
  assert.deepEqual(codec.decodeSpec('{"a":1}', 0), { a: 1 });
  assert.deepEqual(codec.decodeStatus("[1,2]", 7), [1, 2]);
  assert.equal(codec.decodeSpec("null", 3), null);
});

test("KindCodec reports the migrator's versions", () => {
  const codec = new KindCodec(recordingMigrator(3, 5).migrator);
  assert.equal(codec.specVersion, 3);
  assert.equal(codec.statusVersion, 5);
});

test("KindCodec with a migrator converts an older version through that column's converter", () => {
  const { migrator, calls } = recordingMigrator(3, 5);
  const codec = new KindCodec(migrator);
  assert.deepEqual(codec.decodeSpec('{"a":1}', 1), { spec: { a: 1 }, from: 1 });
  assert.deepEqual(calls, [{ column: "spec", from: 1, value: { a: 1 } }]);
  assert.deepEqual(codec.decodeStatus('"ok"', 0), { status: "ok", from: 0 });
  assert.deepEqual(calls.at(-1), { column: "status", from: 0, value: "ok" });
  assert.equal(calls.length, 2);
});

test("KindCodec passes a value at the current version through unconverted", () => {
  const { migrator, calls } = recordingMigrator(3, 5);
  const codec = new KindCodec(migrator);
  assert.deepEqual(codec.decodeSpec('{"a":1}', 3), { a: 1 });
  assert.deepEqual(codec.decodeStatus('{"b":2}', 5), { b: 2 });
  assert.deepEqual(calls, []);
});

test("KindCodec passes a column whose current version is 0 through unconverted", () => {
  const { migrator, calls } = recordingMigrator(0, 2);
  const codec = new KindCodec(migrator);
  assert.deepEqual(codec.decodeSpec('{"a":1}', 4), { a: 1 });
  assert.deepEqual(calls, []);
});

test("KindCodec refuses a value from a newer version with DecodeError", () => {
  const { migrator, calls } = recordingMigrator(3, 5);
  const codec = new KindCodec(migrator);
  for (const decode of [() => codec.decodeSpec("{}", 4), () => codec.decodeStatus("{}", 6)]) {
    assert.throws(decode, (e: unknown) => {
      assert.ok(e instanceof DecodeError);
      assert.ok(e.cause instanceof SchemaVersionDowngradeError);
      return true;
    });
  }
  assert.deepEqual(calls, []);
});

test("KindCodec refuses a converter failure with DecodeError carrying the cause", () => {
  const boom = new Error("cannot convert");
  const codec = new KindCodec({
    specVersion: 2,
    statusVersion: 2,
    convertSpec: () => {
      throw boom;
    },
    convertStatus: () => {
      throw "not an error";
    },
  });
  assert.throws(() => codec.decodeSpec("{}", 1), (e: unknown) => {
    assert.ok(e instanceof DecodeError);
    assert.equal(e.cause, boom);
    return true;
  });
  assert.throws(() => codec.decodeStatus("{}", 1), DecodeError);
});

test("KindCodec refuses stored text that is not JSON with DecodeError", () => {
  const codec = new KindCodec(undefined);
  assert.throws(() => codec.decodeSpec("{not json", 0), DecodeError);
  assert.throws(() => codec.decodeStatus("", 0), DecodeError);
});
