/**
 * A PostgreSQL group of single writes runs its members at once: each
 * member's statements go out behind the one before without waiting for its
 * answer, so the group costs one round trip for its writes. A member that
 * sends a second statement after another member's (a guarded write that did
 * not land reads why) sends the group back to run one member at a time, with
 * no version left unused; the groups after it run one by one for a while.
 * Needs the test database (`BEEHIVE_TEST_POSTGRES_URL`), under Deno and Node 22.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Store } from "../../src/store.ts";
import { test } from "../_test.ts";
import { watched } from "./_pg_sends.ts";
import { openPostgresStore } from "../_postgres.ts";

const Widget = { group: "test.beehive.dev", kind: "Widget" };

async function withStore(fn: (store: Store) => Promise<void>): Promise<void> {
  const store = await openPostgresStore();
  try {
    // The first write learns the counter (a fresh open may not guess it yet).
    await store.objects.create(Widget, { name: "first", spec: "{}" });
    await fn(store);
  } finally {
    await store.close();
  }
}

const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

test("PostgreSQL group commit: a group's single writes go out at once, without waiting for each other's answers", async () => {
  await withStore(async (store) => {
    let made!: { resourceVersion: number }[];
    const sent = await watched(async () => {
      made = await Promise.all(
        names("w", 8).map((name) => store.objects.create(Widget, { name, spec: "{}" })),
      );
    });
    assert.equal(sent.begins, 1);
    // Seven inserts sent behind the first, unanswered.
    assert.ok(sent.overlapping >= 7, `statements sent behind another: ${sent.overlapping}`);
    const versions = made.map((o) => o.resourceVersion).sort((a, b) => a - b);
    assert.equal(new Set(versions).size, 8);
    assert.equal(versions[7] - versions[0], 7);
    assert.equal(await store.getLatestResourceVersion(), versions[7]);
  });
});

test("PostgreSQL group commit: a member that sends a second statement after another's runs the group again one by one, leaving no version unused", async () => {
  await withStore(async (store) => {
    const x = await store.objects.create(Widget, { name: "x", spec: "{}" });
    const ref = { ...Widget, id: x.id };
    assert.equal(await store.objects.setObservedGeneration(ref, 1), true);
    let results!: [boolean, { resourceVersion: number }, { resourceVersion: number }];
    const sent = await watched(async () => {
      // The settle changes nothing (generation 1 is observed): its guarded write does not land,
      // and it reads why after the creates went out.
      results = await Promise.all([
        store.objects.setObservedGeneration(ref, 1),
        store.objects.create(Widget, { name: "a", spec: "{}" }),
        store.objects.create(Widget, { name: "b", spec: "{}" }),
      ]);
    });
    // At once, then one member at a time.
    assert.equal(sent.begins, 2);
    const [settled, a, b] = results;
    assert.equal(settled, false);
    assert.deepEqual([a.resourceVersion, b.resourceVersion].sort(), [
      x.resourceVersion + 2,
      x.resourceVersion + 3,
    ]);
    assert.equal(await store.getLatestResourceVersion(), x.resourceVersion + 3);
    // The groups after it run one member at a time.
    const next = await watched(async () => {
      await Promise.all(
        names("n", 4).map((name) => store.objects.create(Widget, { name, spec: "{}" })),
      );
    });
    assert.equal(next.begins, 1);
    assert.equal(next.overlapping, 0);
  });
});

test("PostgreSQL group commit: creates carrying managed fields go out at once, each one statement", async () => {
  await withStore(async (store) => {
    const managedFields = JSON.stringify([{ manager: "kubectl", operation: "Apply" }]);
    let made!: { id: number }[];
    const sent = await watched(async () => {
      made = await Promise.all(
        names("m", 4).map((name) =>
          store.objects.create(Widget, { name, spec: "{}", managedFields })
        ),
      );
    });
    assert.equal(sent.begins, 1);
    assert.ok(sent.overlapping >= 3, `statements sent behind another: ${sent.overlapping}`);
    for (const o of made) {
      assert.equal((await store.objects.get(o.id)).managedFields, managedFields);
    }
  });
});
