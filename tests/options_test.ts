/**
 * Unit tests for option defaults and validation.
 *
 * @module
 */
import assert from "node:assert/strict";
import { test } from "./_test.ts";
import {
  resolveBeehiveOptions,
  type ResolvedControllerOptions,
  resolveRegisterOptions,
} from "../src/engine/options.ts";
import { InvalidOptionError } from "../src/model/errors.ts";
import type { Migrator } from "../src/model/migrator.ts";
import { FakeMeter, FakeTracer } from "./_fake_telemetry.ts";

const BASE: ResolvedControllerOptions = {
  owedPassInterval: 30_000,
  fullPassInterval: 0,
  individualPassInterval: 0,
  startupFullPass: false,
  maxRetryInterval: 30_000,
  concurrency: 1,
};

const migrator: Migrator = {
  specVersion: 2,
  statusVersion: 1,
  convertSpec: (_from, value) => value,
  convertStatus: (_from, value) => value,
};

async function* ids(): AsyncGenerator<number> {
  yield 1;
}

/** Asserts that resolving `options` throws an InvalidOptionError naming `name`. */
function rejects(resolve: (options: unknown) => unknown, options: unknown, name: string): void {
  assert.throws(
    () => resolve(options),
    (e: unknown) => {
      assert.ok(e instanceof InvalidOptionError, `${name}: ${String(e)}`);
      assert.ok(e.message.includes(name), `"${e.message}" names ${name}`);
      return true;
    },
    `${name} was accepted`,
  );
}

const beehive = (o: unknown) => resolveBeehiveOptions(o);
const register = (o: unknown) => resolveRegisterOptions(o, BASE);

test("resolveBeehiveOptions defaults every option", () => {
  const expected = {
    owedPassInterval: 30_000,
    fullPassInterval: 0,
    individualPassInterval: 0,
    startupFullPass: false,
    maxRetryInterval: 30_000,
    concurrency: 4,
    staleDependentsInterval: 60_000,
    watchFloorInterval: 30_000,
    gcInterval: 30_000,
    eventRetention: { perTimeline: 0, maxAge: 0 },
    writeLogRetention: { perKind: 0, maxAge: 86_400_000 },
    limits: {
      nameBytes: 1_024,
      objectBytes: 1_572_864,
      messageBytes: 32_768,
      fieldBytes: 1_024,
      conditionsPerObject: 128,
      finalizersPerObject: 64,
      nestingDepth: 64,
    },
    logger: undefined,
    logLevel: "info",
    leaseName: "beehive",
    leaderElection: undefined,
    meter: undefined,
    tracer: undefined,
    kinds: [],
  };
  assert.deepEqual(resolveBeehiveOptions(undefined), expected);
  assert.deepEqual(resolveBeehiveOptions({}), expected);
});

test("resolveBeehiveOptions keeps the other retention default when one bound is set", () => {
  const o = resolveBeehiveOptions({
    writeLogRetention: { perKind: 100 },
    eventRetention: { maxAge: 60_000 },
  });
  assert.deepEqual(o.writeLogRetention, { perKind: 100, maxAge: 86_400_000 });
  assert.deepEqual(o.eventRetention, { perTimeline: 0, maxAge: 60_000 });
});

test("resolveBeehiveOptions takes every valid value it is given", () => {
  // A fresh copy each call: what the resolver is given, and what it must give back.
  const meter = new FakeMeter();
  const tracer = new FakeTracer();
  const given = () => ({
    meter,
    tracer,
    owedPassInterval: 1,
    fullPassInterval: 5_000,
    individualPassInterval: 7_000,
    startupFullPass: true,
    maxRetryInterval: 2_000,
    concurrency: 8,
    staleDependentsInterval: 3,
    watchFloorInterval: 4,
    gcInterval: 0.5,
    eventRetention: { perTimeline: 10, maxAge: 1.5 },
    writeLogRetention: { perKind: 0, maxAge: 0 },
    limits: {
      nameBytes: 1,
      objectBytes: 2,
      messageBytes: 3,
      fieldBytes: 4,
      conditionsPerObject: 5,
      finalizersPerObject: 6,
      nestingDepth: 1_000,
    },
    logger: console,
    logLevel: "debug" as const,
    leaseName: "orders",
    leaderElection: {
      leaseName: "orders-leader",
      identity: "replica-1",
      leaseDuration: 9_000,
      renewInterval: 1_000,
    },
    kinds: [{ group: "", kind: "Thing" }],
  });
  const o = resolveBeehiveOptions(given());
  assert.deepEqual(o, given());
});

test("resolveBeehiveOptions keeps the other limit defaults when one limit is set", () => {
  assert.deepEqual(resolveBeehiveOptions({ limits: { nameBytes: 64 } }).limits, {
    nameBytes: 64,
    objectBytes: 1_572_864,
    messageBytes: 32_768,
    fieldBytes: 1_024,
    conditionsPerObject: 128,
    finalizersPerObject: 64,
    nestingDepth: 64,
  });
});

test("resolveBeehiveOptions refuses a limit that is not an integer >= 1", () => {
  for (const bad of [0, -1, 1.5, NaN, Infinity, "10", null]) {
    for (
      const k of [
        "nameBytes",
        "objectBytes",
        "messageBytes",
        "fieldBytes",
        "conditionsPerObject",
        "finalizersPerObject",
        "nestingDepth",
      ]
    ) {
      rejects(beehive, { limits: { [k]: bad } }, `limits.${k}`);
    }
  }
  rejects(beehive, { limits: 5 }, "limits");
  rejects(beehive, { limits: { nestingDepth: 1_001 } }, "limits.nestingDepth");
});

test("resolveBeehiveOptions defaults leader election from the lease name and duration", () => {
  const o = resolveBeehiveOptions({ leaseName: "orders", leaderElection: {} });
  const le = o.leaderElection!;
  assert.equal(le.leaseName, "orders");
  assert.equal(le.leaseDuration, 15_000);
  assert.equal(le.renewInterval, 5_000);
  assert.match(le.identity, /^beehive-[0-9a-f-]{36}$/);
  const other = resolveBeehiveOptions({ leaderElection: { leaseDuration: 3_000 } });
  assert.equal(other.leaderElection!.renewInterval, 1_000);
  assert.notEqual(other.leaderElection!.identity, le.identity, "identities are unique");
});

test("resolveBeehiveOptions rejects malformed lease and leader-election options", () => {
  const bad: unknown[] = [
    { leaseName: "" },
    { leaseName: 5 },
    { leaseName: "a\0b" },
    { leaderElection: null },
    { leaderElection: "yes" },
    { leaderElection: { leaseDuration: 0 } },
    { leaderElection: { leaseDuration: Infinity } },
    { leaderElection: { renewInterval: -1 } },
    { leaderElection: { leaseDuration: 1_000, renewInterval: 1_000 } },
    { leaderElection: { leaseDuration: 1_000, renewInterval: 2_000 } },
    { leaderElection: { renewInterval: 20_000 } },
    { leaderElection: { identity: "" } },
    { leaderElection: { leaseName: "" } },
  ];
  for (const options of bad) {
    assert.throws(
      () => resolveBeehiveOptions(options),
      InvalidOptionError,
      JSON.stringify(options),
    );
  }
});

test("resolveRegisterOptions defaults to the Beehive's resolved options", () => {
  const expected = {
    ...BASE,
    migrator: undefined,
    triggerById: [],
    triggerByName: [],
    fencedRepository: undefined,
    owns: [],
  };
  assert.deepEqual(resolveRegisterOptions(undefined, BASE), expected);
  assert.deepEqual(resolveRegisterOptions({}, BASE), expected);
});

test("resolveRegisterOptions lets register options override the Beehive's", () => {
  const base = resolveBeehiveOptions({
    concurrency: 4,
    owedPassInterval: 10_000,
    fullPassInterval: 60_000,
    startupFullPass: true,
  });
  const o = resolveRegisterOptions(
    { concurrency: 2, fullPassInterval: 0, maxRetryInterval: 5_000, startupFullPass: false },
    base,
  );
  assert.equal(o.concurrency, 2);
  assert.equal(o.fullPassInterval, 0);
  assert.equal(o.maxRetryInterval, 5_000);
  assert.equal(o.startupFullPass, false);
  assert.equal(o.owedPassInterval, 10_000, "unset options come from the Beehive");
  assert.equal(o.individualPassInterval, 0);
  assert.equal(base.concurrency, 4, "the Beehive's options are left alone");
});

test("resolveRegisterOptions takes a migrator and async-iterable triggers", () => {
  const byId = ids();
  const byName = (async function* () {
    yield "a";
  })();
  const o = resolveRegisterOptions({ migrator, triggerById: byId, triggerByName: byName }, BASE);
  assert.equal(o.migrator, migrator);
  assert.deepEqual(o.triggerById, [byId]);
  assert.deepEqual(o.triggerByName, [byName]);
});

test("resolveRegisterOptions takes several feeds of a kind as an array", () => {
  const a = ids();
  const b = ids();
  const o = resolveRegisterOptions({ triggerById: [a, b], triggerByName: [] }, BASE);
  assert.equal(o.triggerById.length, 2);
  assert.equal(o.triggerById[0], a);
  assert.equal(o.triggerById[1], b);
  assert.deepEqual(o.triggerByName, []);
  rejects(register, { triggerById: [a, 5] }, "triggerById");
});

test("resolveRegisterOptions takes owns as a list of kinds and refuses anything else", () => {
  const child = { group: "g", kind: "Child" };
  assert.deepEqual(resolveRegisterOptions({ owns: [child] }, BASE).owns, [child]);
  for (const owns of ["Child", [{ group: "g" }], [{ group: "g", kind: "" }], [null], {}]) {
    rejects(register, { owns }, "owns");
  }
  rejects(beehive, { kinds: [{ kind: 5, group: "" }] }, "kinds");
});

test("resolveRegisterOptions accepts a ReadableStream as a trigger", async () => {
  const stream = new ReadableStream<number>();
  try {
    const o = resolveRegisterOptions({ triggerById: stream }, BASE);
    assert.deepEqual(o.triggerById, [stream]);
  } finally {
    await stream.cancel();
  }
});

test("resolveBeehiveOptions rejects a non-object options value", () => {
  for (const v of [null, 5, "x", []]) rejects(beehive, v, "options");
});

test("resolveRegisterOptions rejects a non-object options value", () => {
  for (const v of [null, 5, "x", []]) rejects(register, v, "options");
});

test("resolveBeehiveOptions rejects a gcInterval that is not a finite number > 0", () => {
  for (const v of [0, -1, NaN, Infinity, "30000", 10n]) {
    rejects(beehive, { gcInterval: v }, "gcInterval");
  }
});

test("resolveBeehiveOptions rejects an owedPassInterval of 0 or less", () => {
  for (const v of [0, -5, NaN]) rejects(beehive, { owedPassInterval: v }, "owedPassInterval");
});

test("resolveRegisterOptions rejects an owedPassInterval of 0 or less", () => {
  for (const v of [0, -5, Infinity]) rejects(register, { owedPassInterval: v }, "owedPassInterval");
});

test("resolveBeehiveOptions rejects a staleDependentsInterval of 0 or less", () => {
  for (const v of [0, -1, NaN]) {
    rejects(beehive, { staleDependentsInterval: v }, "staleDependentsInterval");
  }
});

test("resolveBeehiveOptions rejects a watchFloorInterval of 0 or less", () => {
  for (const v of [0, -1, Infinity]) {
    rejects(beehive, { watchFloorInterval: v }, "watchFloorInterval");
  }
});

test("resolveBeehiveOptions and resolveRegisterOptions reject a maxRetryInterval of 0 or less", () => {
  for (const v of [0, -1, NaN]) {
    rejects(beehive, { maxRetryInterval: v }, "maxRetryInterval");
    rejects(register, { maxRetryInterval: v }, "maxRetryInterval");
  }
});

test("resolveBeehiveOptions and resolveRegisterOptions reject a negative fullPassInterval but allow 0", () => {
  for (const resolve of [beehive, register]) {
    for (const v of [-1, NaN, Infinity]) {
      rejects(resolve, { fullPassInterval: v }, "fullPassInterval");
    }
  }
  assert.equal(resolveBeehiveOptions({ fullPassInterval: 0 }).fullPassInterval, 0);
  const base = { ...BASE, fullPassInterval: 9_000 };
  assert.equal(resolveRegisterOptions({ fullPassInterval: 0 }, base).fullPassInterval, 0);
});

test("resolveBeehiveOptions and resolveRegisterOptions reject a negative individualPassInterval but allow 0", () => {
  for (const resolve of [beehive, register]) {
    for (const v of [-1, NaN]) {
      rejects(resolve, { individualPassInterval: v }, "individualPassInterval");
    }
  }
  assert.equal(resolveBeehiveOptions({ individualPassInterval: 0 }).individualPassInterval, 0);
});

test("resolveBeehiveOptions and resolveRegisterOptions reject a concurrency that is not an integer >= 1", () => {
  for (const resolve of [beehive, register]) {
    for (const v of [0, -1, 1.5, NaN, Infinity, "2"]) {
      rejects(resolve, { concurrency: v }, "concurrency");
    }
  }
});

test("resolveBeehiveOptions rejects negative retention bounds and fractional counts", () => {
  rejects(beehive, { eventRetention: { perTimeline: -1 } }, "eventRetention.perTimeline");
  rejects(beehive, { eventRetention: { perTimeline: 1.5 } }, "eventRetention.perTimeline");
  rejects(beehive, { eventRetention: { maxAge: -1 } }, "eventRetention.maxAge");
  rejects(beehive, { eventRetention: { maxAge: NaN } }, "eventRetention.maxAge");
  rejects(beehive, { writeLogRetention: { perKind: -1 } }, "writeLogRetention.perKind");
  rejects(beehive, { writeLogRetention: { perKind: 2.5 } }, "writeLogRetention.perKind");
  rejects(beehive, { writeLogRetention: { maxAge: -1 } }, "writeLogRetention.maxAge");
  rejects(beehive, { writeLogRetention: { maxAge: Infinity } }, "writeLogRetention.maxAge");
});

test("resolveBeehiveOptions rejects a retention that is not an object", () => {
  for (const v of [null, 5, "24h", []]) {
    rejects(beehive, { eventRetention: v }, "eventRetention");
    rejects(beehive, { writeLogRetention: v }, "writeLogRetention");
  }
});

test("resolveBeehiveOptions rejects a logger without the four methods", () => {
  const partial = { debug() {}, info() {}, warn() {} };
  for (const v of [null, 5, "console", {}, partial, { ...partial, error: "no" }]) {
    rejects(beehive, { logger: v }, "logger");
  }
});

test("resolveBeehiveOptions rejects a logLevel that is not one of the four levels", () => {
  for (const v of ["verbose", "INFO", "", 1, "toString", "constructor"]) {
    rejects(beehive, { logLevel: v }, "logLevel");
  }
});

test("resolveRegisterOptions rejects a migrator of the wrong shape", () => {
  const bad = [
    null,
    5,
    {},
    { ...migrator, convertStatus: undefined },
    { ...migrator, convertSpec: "x" },
    { ...migrator, specVersion: -1 },
    { ...migrator, statusVersion: 1.5 },
    { ...migrator, specVersion: "2" },
  ];
  for (const v of bad) rejects(register, { migrator: v }, "migrator");
});

test("resolveRegisterOptions rejects triggers that are not async iterables", () => {
  for (const v of [null, 5, "ids", {}, [1, 2], new Set([1])]) {
    rejects(register, { triggerById: v }, "triggerById");
    rejects(register, { triggerByName: v }, "triggerByName");
  }
});

test("resolveBeehiveOptions and resolveRegisterOptions reject a non-boolean startupFullPass", () => {
  for (const resolve of [beehive, register]) {
    for (const v of ["true", 1, 0, null]) {
      rejects(resolve, { startupFullPass: v }, "startupFullPass");
    }
  }
});
