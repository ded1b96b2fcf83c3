/**
 * Beehives on one store handle in one process hear each other's writes: a
 * Kubernetes API server, a console or a second client built beside a running
 * controller writes through the same handle, so the log cannot tell those
 * writes from the controller's own.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Beehive, settled } from "../mod.ts";
import { createTestEnv } from "../testing/mod.ts";
import { test } from "./_test.ts";

const Widget = { group: "peers.example", kind: "Widget" };

test("Beehive: a write through another Beehive on the same store handle wakes this one's controller at once", async () => {
  const env = await createTestEnv();
  try {
    const seen: string[] = [];
    env.bh.register<{ size: number }>(Widget, (obj) => {
      seen.push(`${obj.name}:${obj.spec.size}`);
      return settled();
    });
    await env.start();
    const other = new Beehive(env.store).client<{ size: number }>(Widget);
    const w = await other.create("w", { size: 1 });
    // No time passes: only a wake, not a periodic sweep, can run the pass.
    await env.settle();
    assert.deepEqual(seen, ["w:1"]);
    await other.update(w.id, { size: 2 });
    await env.settle();
    assert.deepEqual(seen, ["w:1", "w:2"]);
  } finally {
    await env.close();
  }
});
