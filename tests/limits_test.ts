/**
 * `limits: { nameBytes, objectBytes, messageBytes }`: the pinned defaults,
 * each boundary in UTF-8 bytes, and that a refusal writes nothing.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  InvalidConditionError,
  InvalidEventError,
  InvalidNameError,
  settled,
  TooLargeError,
} from "../mod.ts";
import type { GroupKind } from "../mod.ts";
import { test } from "./_test.ts";
import { withBeehive } from "./_plain.ts";

const Thing: GroupKind = { group: "test.beehive.dev", kind: "Thing" };

/** A spec whose JSON (`{"s":"…"}`) is exactly `bytes` UTF-8 bytes. */
function specOf(bytes: number): { s: string } {
  return { s: "x".repeat(bytes - 8) };
}

test("limits default to 1 024, 1 572 864 and 32 768 bytes", async () => {
  await withBeehive(undefined, async (bh, store) => {
    const things = bh.client(Thing);
    await things.create("n".repeat(1_024), {});
    await assert.rejects(things.create("n".repeat(1_025), {}), InvalidNameError);
    const at = await things.create("big", specOf(1_572_864));
    await assert.rejects(things.update(at.id, specOf(1_572_865)), TooLargeError);
    const admin = bh.adminClient(Thing);
    await admin.setCondition(at.id, { type: "A", status: "True", message: "m".repeat(32_768) });
    await assert.rejects(
      admin.setCondition(at.id, { type: "A", status: "True", message: "m".repeat(32_769) }),
      InvalidConditionError,
    );
    assert.ok((await store.objects.get(at.id)).conditions[0].message.length === 32_768);
  });
});

test("limits.nameBytes counts UTF-8 bytes, and only creates are bounded", async () => {
  await withBeehive({ limits: { nameBytes: 8 } }, async (bh, store) => {
    const things = bh.client(Thing);
    await things.create("éééé", {}); // 8 bytes
    await things.create("😀😀", {}); // 8 bytes
    const latest = await store.getLatestResourceVersion();
    for (const name of ["ééééa", "😀😀a", "123456789"]) {
      await assert.rejects(things.create(name, {}), InvalidNameError, name);
      await assert.rejects(things.getOrCreate(name, {}), InvalidNameError, name);
      await assert.rejects(things.createOrUpdate(name, {}), InvalidNameError, name);
      // A lookup of a longer name finds nothing rather than refusing.
      await assert.rejects(things.getByName(name), { name: "NotFoundError" });
    }
    assert.equal(await store.getLatestResourceVersion(), latest);
  });
});

test("limits.objectBytes bounds specs, statuses and event details at the byte", async () => {
  await withBeehive({ limits: { objectBytes: 64 } }, async (bh, store) => {
    bh.register(Thing, () => settled());
    const things = bh.client(Thing);
    const a = await things.create("a", specOf(64));
    const latest = await store.getLatestResourceVersion();
    const refused = (e: unknown) =>
      e instanceof TooLargeError && e.limit === 64 && e.bytes === 65 && e.name === "TooLargeError";
    await assert.rejects(things.create("b", specOf(65)), refused);
    await assert.rejects(things.update(a.id, specOf(65)), refused);
    await assert.rejects(things.updateByName("a", specOf(65)), refused);
    await assert.rejects(things.createOrUpdate("a", specOf(65)), refused);
    await assert.rejects(things.getOrCreate("c", specOf(65)), refused);
    const admin = bh.adminClient(Thing);
    await assert.rejects(admin.updateStatus(a.id, specOf(65)), refused);
    await assert.rejects(
      admin.addEvent(a.id, { type: "Normal", reason: "R", detail: specOf(65) }),
      refused,
    );
    // A multi-byte character counts its UTF-8 bytes: "é" is 2.
    await assert.rejects(things.update(a.id, { s: "é".repeat(29) }), TooLargeError);
    assert.equal(await store.getLatestResourceVersion(), latest);
    await admin.updateStatus(a.id, specOf(64));
    await admin.addEvent(a.id, { type: "Normal", reason: "R", detail: specOf(64) });
    await things.update(a.id, { s: "é".repeat(28) });
  });
});

test("limits.messageBytes bounds condition and event messages", async () => {
  await withBeehive({ limits: { messageBytes: 4 } }, async (bh, store) => {
    bh.register(Thing, () => settled());
    const a = await bh.client(Thing).create("a", {});
    const admin = bh.adminClient(Thing);
    const latest = await store.getLatestResourceVersion();
    await assert.rejects(
      admin.setConditions(a.id, [
        { type: "A", status: "True", message: "ok" },
        { type: "B", status: "True", message: "ééé" },
      ]),
      InvalidConditionError,
    );
    await assert.rejects(
      admin.addEvent(a.id, { type: "Normal", reason: "R", message: "12345" }),
      InvalidEventError,
    );
    assert.equal(await store.getLatestResourceVersion(), latest);
    assert.deepEqual(await bh.client(Thing).listEvents(a.id), []);
    await admin.setCondition(a.id, { type: "A", status: "True", message: "éé" });
    await admin.addEvent(a.id, { type: "Normal", reason: "R", message: "1234" });
  });
});
