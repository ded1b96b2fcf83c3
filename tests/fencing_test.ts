/**
 * A pass's fencing token and fenced writes without leader election: epoch 0
 * on the store lease, the repository's answer turned into `FencedError` or
 * passed through, and the checks on arguments and options. Leader election's
 * epochs are in `leader_elector_test.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  type ApplyFencedOptions,
  Beehive,
  FencedError,
  type FencedRepository,
  InvalidOptionError,
  ReconcileReturnedError,
  settled,
} from "../mod.ts";
import { type AnyCC, Thing, withHarness } from "./_beehive_harness.ts";
import { openTestStore } from "./_sqlite_driver.ts";
import { test } from "./_test.ts";

interface Call {
  readonly entityId: string;
  readonly epoch: number;
  readonly mutation: unknown;
  readonly options: ApplyFencedOptions;
}

/** A repository that records each call and answers what `answer` says. */
function recordingRepository(answer: (call: Call) => Promise<boolean>) {
  const calls: Call[] = [];
  const repository: FencedRepository = {
    applyFenced(entityId, epoch, mutation, options) {
      const call = { entityId, epoch, mutation, options };
      calls.push(call);
      return answer(call);
    },
  };
  return { calls, repository };
}

test("cc.fencing is the store lease at epoch 0 without leaderElection", async () => {
  await withHarness({ beehive: { leaseName: "orders" } }, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const { cc } = await h.pass(obj.id, () => {});
    assert.deepEqual(cc.fencing, { lease: "orders", epoch: 0 });
  });
});

test("cc.fencedWrite calls applyFenced with the entity, the term's epoch, the mutation and the pass's signal", async () => {
  const { calls, repository } = recordingRepository(() => Promise.resolve(true));
  await withHarness({ register: { fencedRepository: repository } }, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const { cc } = await h.pass(obj.id, async (_obj, cc) => {
      await cc.fencedWrite("device-7", { power: "on" });
    });
    assert.equal(calls.length, 1);
    assert.equal(calls[0].entityId, "device-7");
    assert.equal(calls[0].epoch, 0);
    assert.deepEqual(calls[0].mutation, { power: "on" });
    assert.equal(calls[0].options.signal, cc.signal);
  });
});

test("cc.fencedWrite rejects with FencedError when applyFenced resolves to false", async () => {
  const { repository } = recordingRepository(() => Promise.resolve(false));
  await withHarness({ register: { fencedRepository: repository } }, async (h) => {
    await h.start();
    const obj = await h.create("a");
    await h.pass(obj.id, async (_obj, cc) => {
      await assert.rejects(cc.fencedWrite("device-7", 1), (error: unknown) => {
        assert.ok(error instanceof FencedError, String(error));
        assert.match(error.message, /device-7/);
        return true;
      });
    });
  });
});

test("cc.fencedWrite rejects with the repository's own error, as itself", async () => {
  const own = new RangeError("the device is offline");
  const { repository } = recordingRepository(() => Promise.reject(own));
  await withHarness({ register: { fencedRepository: repository } }, async (h) => {
    await h.start();
    const obj = await h.create("a");
    await h.pass(obj.id, async (_obj, cc) => {
      await assert.rejects(cc.fencedWrite("device-7", 1), (error) => error === own);
    });
  });
});

test("cc.fencedWrite rejects TypeError without a fencedRepository, for a bad entityId, and for a non-boolean answer", async () => {
  await withHarness({}, async (h) => {
    await h.start();
    const obj = await h.create("a");
    await h.pass(obj.id, async (_obj, cc) => {
      await assert.rejects(cc.fencedWrite("device-7", 1), TypeError);
    });
  });
  const { calls, repository } = recordingRepository(() =>
    Promise.resolve("yes" as unknown as boolean)
  );
  await withHarness({ register: { fencedRepository: repository } }, async (h) => {
    await h.start();
    const obj = await h.create("a");
    await h.pass(obj.id, async (_obj, cc) => {
      for (const bad of ["", "x".repeat(1_025), 7, undefined]) {
        await assert.rejects(cc.fencedWrite(bad as string, 1), TypeError);
      }
      assert.equal(calls.length, 0, "a bad entityId reaches no repository");
      await assert.rejects(cc.fencedWrite("x".repeat(1_024), 1), /expected a boolean/);
    });
  });
});

test("cc.fencedWrite rejects ReconcileReturnedError once the pass has returned, calling nothing", async () => {
  const { calls, repository } = recordingRepository(() => Promise.resolve(true));
  await withHarness({ register: { fencedRepository: repository } }, async (h) => {
    await h.start();
    const obj = await h.create("a");
    const { cc } = await h.pass(obj.id, () => {});
    await assert.rejects((cc as AnyCC).fencedWrite("device-7", 1), ReconcileReturnedError);
    assert.equal(calls.length, 0);
  });
});

test("register rejects a fencedRepository without an applyFenced method", async () => {
  const store = await openTestStore(":memory:");
  try {
    const bh = new Beehive(store);
    for (const bad of [null, 7, {}, { applyFenced: "no" }]) {
      assert.throws(
        () => bh.register(Thing, () => settled(), { fencedRepository: bad as never }),
        InvalidOptionError,
      );
    }
  } finally {
    await store.close();
  }
});
