/**
 * How the CLI resolves a kind a person typed: kind, plural or singular in any
 * case, with or without the group; a miss suggests the nearest kind; an
 * ambiguous name asks for the group.
 *
 * @module
 */
import assert from "node:assert/strict";
import { editDistance, kindNames, resolveKind, UnknownKindError } from "../../cli/_kinds.ts";
import { test } from "../_test.ts";

const known = [
  kindNames({ group: "shop.example", kind: "Worker" }),
  kindNames({ group: "shop.example", kind: "Order" }),
  kindNames({ group: "other.example", kind: "Order" }),
];
const none = () => Promise.resolve(false);

test("resolveKind finds a kind by kind, plural or singular, in any case, with or without its group", async () => {
  const worker = { group: "shop.example", kind: "Worker" };
  for (
    const input of [
      "Worker",
      "worker",
      "WORKER",
      "workers",
      "Worker.shop.example",
      "workers.shop.example",
      "worker.SHOP.example",
    ]
  ) {
    assert.deepEqual(await resolveKind(input, known, none), worker, input);
  }
});

test("resolveKind asks for the group when a name matches kinds of several groups", async () => {
  await assert.rejects(resolveKind("orders", known, none), (e: Error) => {
    assert.ok(e instanceof UnknownKindError);
    assert.match(
      e.message,
      /ambiguous.*Order\.other\.example, Order\.shop\.example|ambiguous.*Order\.shop\.example, Order\.other\.example/,
    );
    return true;
  });
  assert.deepEqual(await resolveKind("Order.other.example", known, none), {
    group: "other.example",
    kind: "Order",
  });
});

test("resolveKind suggests the nearest kind on a miss and lists kinds when none is near", async () => {
  await assert.rejects(
    resolveKind("Wroker.shop.example", known, none),
    /^UnknownKindError: unknown kind "Wroker\.shop\.example"; did you mean Worker\.shop\.example\?$/,
  );
  await assert.rejects(resolveKind("wokers", known, none), /did you mean Worker\.shop\.example\?/);
  await assert.rejects(resolveKind("Zebra", known, none), /unknown kind "Zebra"; known kinds: /);
  await assert.rejects(resolveKind("Zebra", [], none), /the store holds no kinds yet/);
});

test("resolveKind accepts an exact Kind.group the store holds objects of though no kind lists it", async () => {
  const gk = await resolveKind("Old.g", known, (k) => Promise.resolve(k.kind === "Old"));
  assert.deepEqual(gk, { group: "g", kind: "Old" });
});

test("editDistance counts edits and stops early past its budget", () => {
  assert.equal(editDistance("kitten", "sitting"), 3);
  assert.equal(editDistance("a", "abcdef", 2), 3);
  assert.equal(editDistance("", "ab"), 2);
});
