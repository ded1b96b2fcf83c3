/**
 * The ControllerClient a pass receives: its lifetime, status writes and the
 * in-memory baseline, conditions, events, finalizers, edges, transactions,
 * and liveness conditions across a reopen. Every call runs inside a real pass.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  type Client,
  type ControllerTx,
  DeletionPendingError,
  DuplicateConditionTypeError,
  eventDetail,
  InvalidConditionError,
  InvalidEventError,
  InvalidOptionError,
  NotFoundError,
  ReconcileReturnedError,
  StaleTxError,
} from "../mod.ts";
import { test } from "./_test.ts";
import {
  type AnyCC,
  countingObjectCalls,
  type Harness,
  Other,
  tempDir,
  Thing,
  withHarness,
} from "./_beehive_harness.ts";

/** The write-log entries of Thing above `after`. */
async function writesSince(h: Harness, after: number) {
  return (await h.store.objectWrites.listSince(Thing, { after, limit: 1000 })).writes;
}

test("ControllerClient every member rejects with ReconcileReturnedError after the pass returns", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a", {}, { finalizers: ["test/f"] });
    const target = await h.create("target");
    const { cc } = await h.pass(obj.id, () => {});
    const before = await h.things.get(obj.id);
    const calls: [string, () => Promise<unknown>][] = [
      ["updateStatus", () => cc.updateStatus({ late: true })],
      ["setCondition", () => cc.setCondition({ type: "Ready", status: "True" })],
      ["setConditions", () => cc.setConditions([{ type: "Ready", status: "True" }])],
      ["deleteCondition", () => cc.deleteCondition("Ready")],
      ["addEvent", () => cc.addEvent({ type: "Normal", reason: "Late" })],
      ["deleteFinalizer", () => cc.deleteFinalizer("test/f")],
      ["addFinalizer", () => cc.addFinalizer("test/late")],
      ["addDependency", () => cc.addDependency(target.id)],
      ["deleteDependency", () => cc.deleteDependency(target.id)],
      ["hasIncomingEdges", () => cc.hasIncomingEdges()],
      ["getOwner", () => cc.getOwner()],
      ["listDependencies", () => cc.listDependencies()],
      ["listDependents", () => cc.listDependents()],
      ["listOwned", () => cc.listOwned()],
      ["within", () => cc.within(async (tx) => await tx.updateStatus({ late: true }))],
    ];
    for (const [name, call] of calls) {
      await assert.rejects(call, ReconcileReturnedError, name);
    }
    const after = await h.things.get(obj.id);
    assert.equal(after.resourceVersion, before.resourceVersion);
    assert.equal(after.status, undefined);
    assert.deepEqual(after.finalizers, ["test/f"]);
    assert.deepEqual(await h.things.listEvents(obj.id), []);
    assert.deepEqual(await h.things.listDependencies(obj.id), []);
    // The next pass gets a client that works.
    await h.pass(obj.id, async (_o, next) => {
      await next.updateStatus({ late: false });
    });
    assert.deepEqual((await h.things.get(obj.id)).status, { late: false });
  });
});

test("ControllerClient.updateStatus with the status the pass loaded makes no store write", async () => {
  const calls = new Map<string, number>();
  await withHarness({ wrap: countingObjectCalls(calls) }, async (h) => {
    await h.start();
    const obj = await h.create("a");
    await h.pass(obj.id, (_o, cc) => cc.updateStatus({ phase: "Ready" }));
    assert.equal(calls.get("updateStatus"), 1);
    const rv = (await h.things.get(obj.id)).resourceVersion;
    await h.pass(obj.id, async (_o, cc) => {
      await cc.updateStatus({ phase: "Ready" });
      await cc.updateStatus({ phase: "Ready" });
    });
    assert.equal(calls.get("updateStatus"), 1);
    assert.equal((await h.things.get(obj.id)).resourceVersion, rv);
    assert.deepEqual(await writesSince(h, rv), []);
  });
});

test("ControllerClient.updateStatus with a changed status writes it and bumps the resourceVersion", async () => {
  const calls = new Map<string, number>();
  await withHarness({ wrap: countingObjectCalls(calls) }, async (h) => {
    await h.start();
    const obj = await h.create("a");
    await h.pass(obj.id, (_o, cc) => cc.updateStatus({ phase: "Pending" }));
    const before = await h.things.get(obj.id);
    await h.pass(obj.id, (_o, cc) => cc.updateStatus({ phase: "Ready" }));
    assert.equal(calls.get("updateStatus"), 2);
    const after = await h.things.get(obj.id);
    assert.deepEqual(after.status, { phase: "Ready" });
    assert.ok(after.resourceVersion > before.resourceVersion);
    assert.equal((await writesSince(h, before.resourceVersion)).length, 1);
  });
});

test("ControllerClient.updateStatus back to the loaded status after a change reaches the store", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    await h.pass(obj.id, (_o, cc) => cc.updateStatus({ v: 1 }));
    await h.pass(obj.id, async (_o, cc) => {
      await cc.updateStatus({ v: 2 });
      await cc.updateStatus({ v: 1 });
    });
    assert.deepEqual((await h.things.get(obj.id)).status, { v: 1 });
  });
});

test("ControllerClient.setConditions writes a batch under one resourceVersion bump", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const rv = (await h.things.get(obj.id)).resourceVersion;
    await h.pass(obj.id, (_o, cc) =>
      cc.setConditions([
        { type: "Synced", status: "True", reason: "Applied" },
        { type: "Connected", status: "False", reason: "DialTimeout", message: "i/o timeout" },
      ]));
    const writes = await writesSince(h, rv);
    assert.equal(writes.length, 1);
    const after = await h.things.get(obj.id);
    assert.equal(after.resourceVersion, writes[0].resourceVersion);
    assert.deepEqual(after.conditions.map((c) => [c.type, c.status, c.reason, c.message]), [
      ["Connected", "False", "DialTimeout", "i/o timeout"],
      ["Synced", "True", "Applied", ""],
    ]);
  });
});

test("ControllerClient.setCondition rejects with InvalidConditionError and writes nothing", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const rv = (await h.things.get(obj.id)).resourceVersion;
    await h.pass(obj.id, async (_o, cc) => {
      const bad = [
        { type: "Ready", status: "Maybe" },
        { type: "", status: "True" },
        { type: "Ready\ud800", status: "True" },
        { type: "Ready", status: "True", reason: "\udc00" },
        { type: "Ready", status: "True", message: "half \ud800 pair" },
      ];
      for (const c of bad) {
        await assert.rejects(cc.setCondition(c as never), InvalidConditionError, JSON.stringify(c));
      }
      // One bad member refuses the whole batch.
      await assert.rejects(
        cc.setConditions(
          [{ type: "Synced", status: "True" }, { type: "Ready", status: "Yes" }] as never,
        ),
        InvalidConditionError,
      );
    });
    const after = await h.things.get(obj.id);
    assert.deepEqual(after.conditions, []);
    assert.equal(after.resourceVersion, rv);
  });
});

test("ControllerClient.setConditions rejects a type named twice with DuplicateConditionTypeError and writes nothing", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const rv = (await h.things.get(obj.id)).resourceVersion;
    await h.pass(obj.id, async (_o, cc) => {
      await assert.rejects(
        cc.setConditions([
          { type: "Ready", status: "True" },
          { type: "Synced", status: "True" },
          { type: "Ready", status: "False" },
        ]),
        DuplicateConditionTypeError,
      );
    });
    const after = await h.things.get(obj.id);
    assert.deepEqual(after.conditions, []);
    assert.equal(after.resourceVersion, rv);
  });
});

test("ControllerClient.setCondition moves updatedAt on every change and transitionedAt only when the status flips", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const t0 = Date.now();
    const ready = async () =>
      (await h.things.get(obj.id)).conditions.find((c) => c.type === "Ready")!;
    const stamps = async () => {
      const c = await ready();
      return [c.transitionedAt.getTime() - t0, c.updatedAt.getTime() - t0];
    };
    await h.pass(
      obj.id,
      (_o, cc) => cc.setCondition({ type: "Ready", status: "True", reason: "A" }),
    );
    assert.deepEqual(await stamps(), [0, 0]);
    await h.tick(1_000);
    await h.pass(
      obj.id,
      (_o, cc) => cc.setCondition({ type: "Ready", status: "True", reason: "B" }),
    );
    assert.deepEqual(await stamps(), [0, 1_000]);
    await h.tick(1_000);
    const rv = (await h.things.get(obj.id)).resourceVersion;
    await h.pass(
      obj.id,
      (_o, cc) => cc.setCondition({ type: "Ready", status: "True", reason: "B" }),
    );
    assert.deepEqual(await stamps(), [0, 1_000]);
    assert.equal((await h.things.get(obj.id)).resourceVersion, rv);
    await h.tick(1_000);
    await h.pass(
      obj.id,
      (_o, cc) => cc.setCondition({ type: "Ready", status: "False", reason: "B" }),
    );
    assert.deepEqual(await stamps(), [3_000, 3_000]);
    assert.equal((await ready()).status, "False");
  });
});

test("ControllerClient.deleteCondition removes the condition and ignores an absent type", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    await h.pass(
      obj.id,
      (_o, cc) =>
        cc.setConditions([{ type: "Ready", status: "True" }, { type: "Synced", status: "True" }]),
    );
    await h.pass(obj.id, (_o, cc) => cc.deleteCondition("Ready"));
    const after = await h.things.get(obj.id);
    assert.deepEqual(after.conditions.map((c) => c.type), ["Synced"]);
    await h.pass(obj.id, (_o, cc) => cc.deleteCondition("Missing"));
    const again = await h.things.get(obj.id);
    assert.deepEqual(again.conditions.map((c) => c.type), ["Synced"]);
    assert.equal(again.resourceVersion, after.resourceVersion);
  });
});

test("ControllerClient.addEvent extends the latest run of a timeline and starts a run on a change", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const t0 = Date.now();
    const add = (e: Parameters<AnyCC["addEvent"]>[0]) => h.pass(obj.id, (_o, cc) => cc.addEvent(e));
    await add({ type: "Normal", reason: "Connected", message: "first" });
    await h.tick(1_000);
    // Another category is an independent timeline: it does not break the run.
    await add({ category: "sync", type: "Normal", reason: "Applied" });
    await add({ type: "Normal", reason: "Connected", message: "second" });
    await h.tick(1_000);
    await add({ type: "Warning", reason: "ProbeFailed", message: "i/o timeout" });
    await add({ type: "Normal", reason: "Connected", message: "third" });
    const runs = await h.things.listEvents(obj.id, { category: "" });
    assert.deepEqual(
      runs.map((
        e,
      ) => [
        e.type,
        e.reason,
        e.count,
        e.message,
        e.firstAt.getTime() - t0,
        e.lastAt.getTime() - t0,
      ]),
      [
        ["Normal", "Connected", 1, "third", 2_000, 2_000],
        ["Warning", "ProbeFailed", 1, "i/o timeout", 2_000, 2_000],
        ["Normal", "Connected", 2, "second", 0, 1_000],
      ],
    );
    assert.ok(runs.every((e) => e.objectId === obj.id && e.category === ""));
    const sync = await h.things.listEvents(obj.id, { category: "sync" });
    assert.deepEqual(sync.map((e) => [e.reason, e.count]), [["Applied", 1]]);
  });
});

test("ControllerClient.addEvent round-trips detail, read back with eventDetail", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const detail = { endpoint: "10.0.0.1:443", latencyMs: 5000, tags: ["a", null, 1.5] };
    await h.pass(
      obj.id,
      (_o, cc) => cc.addEvent({ type: "Warning", reason: "ProbeFailed", detail }),
    );
    let [run] = await h.things.listEvents(obj.id);
    assert.deepEqual(run.detail, detail);
    assert.deepEqual(eventDetail(run), detail);
    // Detail is sampled: the latest observation's wins, and the run goes on.
    await h.pass(
      obj.id,
      (_o, cc) =>
        cc.addEvent({ type: "Warning", reason: "ProbeFailed", detail: { latencyMs: 7000 } }),
    );
    [run] = await h.things.listEvents(obj.id);
    assert.equal(run.count, 2);
    assert.deepEqual(eventDetail<{ latencyMs: number }>(run), { latencyMs: 7000 });
    await h.pass(obj.id, (_o, cc) => cc.addEvent({ type: "Normal", reason: "Recovered" }));
    [run] = await h.things.listEvents(obj.id);
    assert.equal(run.detail, undefined);
    assert.equal(eventDetail(run), undefined);
  });
});

test("ControllerClient.addEvent rejects with InvalidEventError and writes nothing", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    await h.pass(obj.id, async (_o, cc) => {
      const bad = [
        { type: "Info", reason: "Probe" },
        { type: "Normal", reason: "" },
        { type: "Normal", reason: "Probe\ud800" },
        { type: "Normal", reason: "Probe", message: "\udc00" },
        { category: "\ud800", type: "Normal", reason: "Probe" },
      ];
      for (const e of bad) {
        await assert.rejects(cc.addEvent(e as never), InvalidEventError, JSON.stringify(e));
      }
    });
    assert.deepEqual(await h.things.listEvents(obj.id), []);
  });
});

test("ControllerClient.addEvent rejects with TypeError for a detail JSON cannot encode and writes nothing", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    await h.pass(obj.id, async (_o, cc) => {
      await assert.rejects(
        cc.addEvent({ type: "Normal", reason: "Probe", detail: { n: 10n } }),
        TypeError,
      );
      const cycle: Record<string, unknown> = {};
      cycle.self = cycle;
      await assert.rejects(
        cc.addEvent({ type: "Normal", reason: "Probe", detail: cycle }),
        TypeError,
      );
    });
    assert.deepEqual(await h.things.listEvents(obj.id), []);
  });
});

test("ControllerClient.deleteFinalizer on a deleting object lets it be collected once none are left", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a", {}, { finalizers: ["test/a", "test/b"] });
    await h.things.delete(obj.id);
    await h.flush();
    await h.pass(obj.id, (_o, cc) => cc.deleteFinalizer("test/a"));
    const still = await h.things.get(obj.id);
    assert.deepEqual(still.finalizers, ["test/b"]);
    await h.pass(obj.id, async (o, cc) => {
      assert.ok(o.deletionRequestedAt instanceof Date);
      await cc.deleteFinalizer("test/b");
    });
    await assert.rejects(h.things.get(obj.id), NotFoundError);
  });
});

test("ControllerClient.addFinalizer adds the controller's finalizer once, logging one update", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const before = await h.things.get(obj.id);
    await h.pass(obj.id, async (_o, cc) => {
      await cc.addFinalizer("test/cleanup");
      await cc.addFinalizer("test/cleanup");
    });
    const after = await h.things.get(obj.id);
    assert.deepEqual(after.finalizers, ["test/cleanup"]);
    assert.ok(after.resourceVersion > before.resourceVersion);
    const writes = await writesSince(h, before.resourceVersion);
    assert.deepEqual(writes.map((w) => w.op), ["update"]);
    // The added finalizer holds the object after deletion until the controller clears it.
    await h.things.delete(obj.id);
    await h.flush();
    assert.ok((await h.things.get(obj.id)).deletionRequestedAt instanceof Date);
    await h.pass(obj.id, (_o, cc) => cc.deleteFinalizer("test/cleanup"));
    await assert.rejects(h.things.get(obj.id), NotFoundError);
  });
});

test("ControllerClient.addFinalizer rejects with DeletionPendingError once deletion was requested", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a", {}, { finalizers: ["test/f"] });
    await h.things.delete(obj.id);
    await h.flush();
    const before = await h.things.get(obj.id);
    await h.pass(obj.id, async (_o, cc) => {
      await assert.rejects(cc.addFinalizer("test/g"), DeletionPendingError);
      // Present or not, a deleting object gains nothing.
      await assert.rejects(cc.addFinalizer("test/f"), DeletionPendingError);
    });
    const after = await h.things.get(obj.id);
    assert.deepEqual(after.finalizers, ["test/f"]);
    assert.equal(after.resourceVersion, before.resourceVersion);
  });
});

test("ControllerClient.addFinalizer refuses a malformed finalizer with InvalidOptionError", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const before = await h.things.get(obj.id);
    await h.pass(obj.id, async (_o, cc) => {
      for (const bad of ["", "a\u0000b", "\ud800", 5, undefined]) {
        await assert.rejects(cc.addFinalizer(bad as string), InvalidOptionError, String(bad));
      }
    });
    assert.equal((await h.things.get(obj.id)).resourceVersion, before.resourceVersion);
  });
});

test("ControllerClient edge calls write and read the bound object's edges", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const parent = await h.create("parent");
    const obj = await h.bh.client(Thing).create("child", {}, { owner: parent.id });
    const target = await h.bh.client(Other).create("target", {});
    await h.flush();
    await h.pass(obj.id, async (_o, cc) => {
      await cc.addDependency(target.id);
      await cc.addDependency(target.id);
      assert.deepEqual(await cc.listDependencies(), [{ ...Other, id: target.id }]);
      assert.deepEqual(await cc.getOwner(), { ...Thing, id: parent.id });
      assert.deepEqual(await cc.listOwned(), []);
      assert.deepEqual(await cc.listDependents(), []);
      assert.equal(await cc.hasIncomingEdges(), false);
      await assert.rejects(cc.addDependency(987_654), NotFoundError);
    });
    assert.deepEqual(await h.things.listDependents(target.id), [{ ...Thing, id: obj.id }]);
    await h.pass(parent.id, async (_o, cc) => {
      assert.deepEqual(await cc.listOwned(), [{ ...Thing, id: obj.id }]);
      assert.equal(await cc.hasIncomingEdges(), true);
      assert.equal(await cc.getOwner(), undefined);
    });
    await h.pass(obj.id, async (_o, cc) => {
      await cc.deleteDependency(target.id);
      await cc.deleteDependency(target.id);
    });
    assert.deepEqual(await h.things.listDependencies(obj.id), []);
  });
});

test("ControllerClient.within commits every write when fn resolves", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    let result: unknown;
    await h.pass(obj.id, async (_o, cc) => {
      result = await cc.within(async (tx) => {
        await tx.updateStatus({ phase: "Ready" });
        await tx.setCondition({ type: "Ready", status: "True" });
        await tx.addEvent({ type: "Normal", reason: "Became" });
        // Root reads never see the open transaction.
        assert.equal((await h.things.get(obj.id)).status, undefined);
        return 42;
      });
    });
    assert.equal(result, 42);
    const after = await h.things.get(obj.id);
    assert.deepEqual(after.status, { phase: "Ready" });
    assert.deepEqual(after.conditions.map((c) => c.type), ["Ready"]);
    assert.equal((await h.things.listEvents(obj.id)).length, 1);
  });
});

test("ControllerClient.within rolls back every write when fn rejects", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const rv = (await h.things.get(obj.id)).resourceVersion;
    const boom = new Error("boom");
    await h.pass(obj.id, async (_o, cc) => {
      await assert.rejects(
        cc.within(async (tx) => {
          await tx.updateStatus({ phase: "Ready" });
          await tx.setCondition({ type: "Ready", status: "True" });
          await tx.addEvent({ type: "Normal", reason: "Became" });
          throw boom;
        }),
        (e) => e === boom,
      );
    });
    const after = await h.things.get(obj.id);
    assert.equal(after.status, undefined);
    assert.deepEqual(after.conditions, []);
    assert.equal(after.resourceVersion, rv);
    assert.deepEqual(await h.things.listEvents(obj.id), []);
  });
});

test("ControllerTx.client joins the transaction: a getOrCreate in a rolled-back within leaves nothing and onCreate never fires", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const created: string[] = [];
    await h.pass(obj.id, async (_o, cc) => {
      await assert.rejects(
        cc.within(async (tx) => {
          const others = tx.client(Other);
          const r = await others.getOrCreate("child", { n: 1 }, {
            onCreate: () => void created.push("rolled-back"),
          });
          assert.equal(r.created, true);
          // The transaction reads its own write; the root client does not.
          assert.equal((await others.getByName("child")).id, r.object.id);
          await assert.rejects(h.bh.client(Other).getByName("child"), NotFoundError);
          throw new Error("abandon");
        }),
        /abandon/,
      );
    });
    assert.deepEqual(await h.bh.client(Other).list(), []);
    assert.equal(created.length, 0);
    await h.pass(obj.id, async (_o, cc) => {
      await cc.within(async (tx) => {
        await tx.client(Other).getOrCreate("child", { n: 2 }, {
          onCreate: () => void created.push("committed"),
        });
        assert.equal(created.length, 0);
      });
      assert.deepEqual(created, ["committed"]);
    });
    assert.deepEqual((await h.bh.client(Other).list()).map((o) => o.spec), [{ n: 2 }]);
  });
});

test("ControllerTx.within is a savepoint: a rejected nested frame unwinds only its own writes", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    await h.pass(obj.id, async (_o, cc) => {
      await cc.within(async (tx) => {
        await tx.setCondition({ type: "Outer", status: "True" });
        await assert.rejects(
          tx.within(async (inner) => {
            await inner.setCondition({ type: "Inner", status: "True" });
            await inner.addEvent({ type: "Normal", reason: "Inner" });
            throw new Error("inner");
          }),
          /inner/,
        );
        await tx.within(async (inner) => {
          await inner.updateStatus({ kept: true });
        });
      });
    });
    const after = await h.things.get(obj.id);
    assert.deepEqual(after.conditions.map((c) => c.type), ["Outer"]);
    assert.deepEqual(after.status, { kept: true });
    assert.deepEqual(await h.things.listEvents(obj.id), []);
  });
});

test("ControllerTx.updateStatus in a rolled-back within leaves the status to write again", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    await h.pass(obj.id, async (_o, cc) => {
      await assert.rejects(
        cc.within(async (tx) => {
          await tx.updateStatus({ phase: "Ready" });
          throw new Error("give up");
        }),
        /give up/,
      );
      // Nothing was stored, so the same status is a change still to write.
      await cc.updateStatus({ phase: "Ready" });
    });
    assert.deepEqual((await h.things.get(obj.id)).status, { phase: "Ready" });
  });
});

test("ControllerTx.afterCommit runs after the commit, and not after a rollback", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const ran: string[] = [];
    await h.pass(obj.id, async (_o, cc) => {
      await cc.within(async (tx) => {
        await tx.updateStatus({ phase: "Ready" });
        tx.afterCommit(async () => {
          // Committed by now: a root read sees the write.
          ran.push(`commit:${JSON.stringify((await h.things.get(obj.id)).status)}`);
        });
        await tx.within(async (inner) => {
          await inner.setCondition({ type: "Kept", status: "True" });
          inner.afterCommit(() => void ran.push("kept savepoint"));
        });
        await assert.rejects(
          tx.within(async (inner) => {
            await inner.setCondition({ type: "Unwound", status: "True" });
            inner.afterCommit(() => void ran.push("unwound savepoint"));
            throw new Error("unwind");
          }),
          /unwind/,
        );
        assert.equal(ran.length, 0);
      });
      // Awaited before within resolves.
      assert.deepEqual(ran, ['commit:{"phase":"Ready"}', "kept savepoint"]);
      await assert.rejects(
        cc.within(async (tx) => {
          await tx.addEvent({ type: "Normal", reason: "RolledBack" });
          tx.afterCommit(() => void ran.push("rolled back"));
          throw new Error("rollback");
        }),
        /rollback/,
      );
    });
    assert.deepEqual(ran, ['commit:{"phase":"Ready"}', "kept savepoint"]);
    assert.deepEqual((await h.things.get(obj.id)).conditions.map((c) => c.type), ["Kept"]);
    assert.deepEqual(await h.things.listEvents(obj.id), []);
  });
});

test("ControllerClient a write through cc while its within is open rejects with StaleTxError", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    await h.pass(obj.id, async (_o, cc) => {
      await cc.within(async (tx) => {
        await assert.rejects(cc.updateStatus({ via: "cc" }), StaleTxError);
        await assert.rejects(cc.setCondition({ type: "ViaCC", status: "True" }), StaleTxError);
        await assert.rejects(cc.addEvent({ type: "Normal", reason: "ViaCC" }), StaleTxError);
        await tx.updateStatus({ via: "tx" });
      });
      // Once the transaction ended, cc writes again.
      await cc.setCondition({ type: "After", status: "True" });
    });
    const after = await h.things.get(obj.id);
    assert.deepEqual(after.status, { via: "tx" });
    assert.deepEqual(after.conditions.map((c) => c.type), ["After"]);
    assert.deepEqual(await h.things.listEvents(obj.id), []);
  });
});

test("ControllerTx used after its within ended rejects with StaleTxError", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    await h.pass(obj.id, async (_o, cc) => {
      let kept: ControllerTx<unknown> | undefined;
      let keptClient: Client<unknown, unknown> | undefined;
      await cc.within(async (tx) => {
        kept = tx;
        keptClient = tx.client(Other);
        await tx.updateStatus({ v: 1 });
      });
      const tx = kept!;
      // Even a status equal to what the pass knows must not be silently accepted.
      await assert.rejects(tx.updateStatus({ v: 1 }), StaleTxError);
      await assert.rejects(tx.updateStatus({ v: 2 }), StaleTxError);
      await assert.rejects(tx.setCondition({ type: "Late", status: "True" }), StaleTxError);
      await assert.rejects(tx.addEvent({ type: "Normal", reason: "Late" }), StaleTxError);
      await assert.rejects(tx.within(async () => {}), StaleTxError);
      await assert.rejects(keptClient!.create("late", {}), StaleTxError);
      // The synchronous members throw.
      assert.throws(() => tx.client(Other), StaleTxError);
      assert.throws(() => tx.afterCommit(() => {}), StaleTxError);
    });
    const after = await h.things.get(obj.id);
    assert.deepEqual(after.status, { v: 1 });
    assert.deepEqual(after.conditions, []);
    assert.deepEqual(await h.bh.client(Other).list(), []);
  });
});

test("Condition liveness written before the store was reopened reads Unknown and unconfirmed until rewritten", async () => {
  const dir = tempDir();
  const path = dir.file("db.sqlite");
  try {
    let id = 0;
    await withHarness({ path }, async (h) => {
      await h.start();
      const obj = await h.create("a");
      id = obj.id;
      await h.pass(obj.id, (_o, cc) =>
        cc.setConditions([
          { type: "Connected", status: "True", reason: "Dialed", liveness: true },
          { type: "Durable", status: "True", reason: "Stored" },
        ]));
      const same = await h.things.get(obj.id);
      assert.deepEqual(same.conditions.map((c) => [c.type, c.status, c.unconfirmed]), [
        ["Connected", "True", false],
        ["Durable", "True", false],
      ]);
    });
    await withHarness({ path }, async (h) => {
      const reopened = await h.things.get(id);
      const [connected, durable] = reopened.conditions;
      assert.equal(connected.type, "Connected");
      assert.equal(connected.status, "Unknown");
      assert.equal(connected.unconfirmed, true);
      assert.equal(connected.liveness, true);
      assert.equal(connected.reason, "Dialed");
      assert.deepEqual([durable.status, durable.unconfirmed], ["True", false]);
      await h.start();
      // Re-confirming the same write is not a no-op.
      await h.pass(
        id,
        (_o, cc) =>
          cc.setCondition({ type: "Connected", status: "True", reason: "Dialed", liveness: true }),
      );
      const confirmed = (await h.things.get(id)).conditions[0];
      assert.deepEqual([confirmed.status, confirmed.unconfirmed], ["True", false]);
    });
  } finally {
    dir.remove();
  }
});
