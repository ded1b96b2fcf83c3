/**
 * `storeContract`'s bad input, and what it registers: an argument that is
 * not what it must be is refused when the suite is registered; an `open` that
 * does not resolve to a Store fails each case saying what it resolved to.
 *
 * @module
 */
import assert from "node:assert/strict";
import { storeContract } from "../../testing/mod.ts";
import { type ContractTest, contractTests } from "../../testing/_contract/mod.ts";
import type { StoreFactory } from "../../testing/_contract/harness.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";
import { test } from "../_test.ts";

const open = () => openSqliteStore(":memory:");

/** The first test of `factory` that runs. */
function firstRun(factory: StoreFactory): () => Promise<void> {
  const t = contractTests(factory).find((t): t is ContractTest & { run: () => Promise<void> } =>
    "run" in t
  );
  assert.ok(t !== undefined);
  return t.run;
}

test("storeContract refuses a name that is not a string of 1 to 100 characters", () => {
  for (const name of ["", "x".repeat(101), undefined, 7]) {
    assert.throws(() => storeContract(name as string, open), {
      name: "TypeError",
      message:
        /^Cannot register the store contract with name: current value is .*, expected a string of 1 to 100 characters$/,
    });
  }
});

test("storeContract refuses an open that is not a function", () => {
  assert.throws(() => storeContract("mine", {} as never), {
    name: "TypeError",
    message:
      "Cannot register the store contract (mine) with open: current value is an object, expected a function that resolves to a fresh Store",
  });
});

test("storeContract refuses options that are not an object, and an openPath that is not a function", () => {
  assert.throws(() => storeContract("mine", open, null as never), TypeError);
  assert.throws(() => storeContract("mine", open, { openPath: "/tmp/x" as never }), {
    name: "TypeError",
    message:
      /^Cannot register the store contract \(mine\) with openPath: current value is "\/tmp\/x"/,
  });
});

test("a contract case fails with a TypeError when open resolves to something that is not a Store", async () => {
  const run = firstRun({ name: "broken", open: () => Promise.resolve({ objects: {} } as never) });
  await assert.rejects(run(), {
    name: "TypeError",
    message:
      /^Cannot run the store contract \(broken\): open\(\) resolved to an object, expected a Store \(it lacks conditions, edges, deletionRequests, dependencies, driverCursors, events, objectWrites, reconcileOwed, leases, within, afterCommit, getLatestResourceVersion, reclaimSpace, fenced, watchCommits, close\)$/,
  });
  const none = firstRun({ name: "empty", open: () => Promise.resolve(undefined as never) });
  await assert.rejects(none(), /open\(\) resolved to undefined, expected a Store$/);
});

test("a contract case fails with what open throws", async () => {
  const run = firstRun({ name: "down", open: () => Promise.reject(new Error("no database")) });
  await assert.rejects(run(), /^Error: no database$/);
});

test("storeContract without openPath registers every case, the reopening ones as not applicable", () => {
  const withPaths = contractTests({
    name: "a",
    open,
    openPath: (p) => openSqliteStore(p),
    openReadOnly: (p) => openSqliteStore(p, { readOnly: true }),
  });
  const withoutPaths = contractTests({ name: "a", open });
  assert.equal(withoutPaths.length, withPaths.length);
  assert.ok(withPaths.every((t) => "run" in t));
  const skipped = withoutPaths.filter((t) => "notApplicable" in t).map((t) => t.name);
  assert.ok(skipped.length > 0 && skipped.length < withoutPaths.length);
  assert.ok(
    skipped.includes("store contract (a) leases: lease epochs are never reused across a reopen"),
  );
});
