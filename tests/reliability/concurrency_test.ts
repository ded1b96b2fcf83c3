/**
 * The concurrency campaign: seeded storms of concurrent client writers
 * (`Promise.all` over create/getOrCreate/createOrUpdate/update/updateByName/
 * delete/deleteByName on overlapping names) against controllers running at
 * concurrency > 1 on the same kinds, which write status, conditions and events
 * and declare dependencies — while a tailer reads the write log. After each
 * storm drains, the store is checked against what the acknowledgements say:
 * no duplicate names, one row and one onCreate per getOrCreate race, never two
 * passes of one object at once, every object converged, every deletion
 * collected, resource versions strictly increasing in commit order with
 * nothing committed below a reader's position, and no lost update.
 *
 * @module
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  Beehive,
  type BeehiveObject,
  type Client,
  type ControllerClient,
  DeletionPendingError,
  type GroupKind,
  NameTakenError,
  NotFoundError,
  settled,
} from "../../mod.ts";
import type { ObjectWrite, RawObject } from "../../store/mod.ts";
import { openTestStore, type TestStore } from "../_sqlite_driver.ts";
import { test } from "../_test.ts";
import { type FakeClock, installFakeTime } from "../_fake_time.ts";
import { type LogLine, recordingLogger } from "../_beehive_harness.ts";
import { scratchDir } from "./_scratch.ts";

/** The seed of every storm: a failure replays with it. */
const SEED = 20_261_130;
const STORMS = 60;

const Web: GroupKind = { group: "storm.beehive.dev", kind: "Web" };
const Db: GroupKind = { group: "storm.beehive.dev", kind: "Db" };
const Note: GroupKind = { group: "storm.beehive.dev", kind: "Note" };
type KindKey = "Web" | "Db" | "Note";
const KINDS: Record<KindKey, GroupKind> = { Web, Db, Note };
const REGISTERED: readonly KindKey[] = ["Web", "Db"];
const CONCURRENCY: Record<string, number> = { Web: 4, Db: 3 };
const NAMES = ["n0", "n1", "n2", "n3", "n4"];
const FINALIZER = "storm.beehive.dev/cleanup";

interface Spec {
  v: string;
  db?: string;
}

interface Status {
  seen: Spec;
  generation: number;
}

// deno-lint-ignore no-explicit-any
type AnyObject = BeehiveObject<any, any>;

// ---------------------------------------------------------------------------
// Figures

const figures = {
  storms: 0,
  clientCalls: 0,
  acknowledged: 0,
  refusals: new Map<string, number>(),
  passes: 0,
  passFailures: new Map<string, number>(),
  maxInFlight: { Web: 0, Db: 0 } as Record<string, number>,
  overlaps: 0,
  getOrCreateRaces: 0,
  createRaces: 0,
  logEntries: 0,
  tailerReads: 0,
  objectsChecked: 0,
  collected: 0,
  invariants: 0,
};

function count(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

// ---------------------------------------------------------------------------
// The storm script

type OpName =
  | "create"
  | "getOrCreate"
  | "createOrUpdate"
  | "update"
  | "updateByName"
  | "delete"
  | "deleteByName";

interface Op {
  readonly op: OpName;
  readonly kind: KindKey;
  readonly name: number;
  readonly db: number | null;
  readonly finalizer: boolean;
  /** Microtask turns to yield before the call: varies the interleaving with the seed. */
  readonly yields: number;
}

const opArb: fc.Arbitrary<Op> = fc.record({
  op: fc.oneof(
    {
      weight: 3,
      arbitrary: fc.constantFrom<OpName>("create", "getOrCreate", "createOrUpdate"),
    },
    { weight: 3, arbitrary: fc.constantFrom<OpName>("update", "updateByName") },
    { weight: 1, arbitrary: fc.constantFrom<OpName>("delete", "deleteByName") },
  ),
  kind: fc.constantFrom<KindKey>("Web", "Web", "Db", "Note"),
  name: fc.nat(NAMES.length - 1),
  db: fc.option(fc.nat(NAMES.length - 1), { nil: null }),
  finalizer: fc.boolean(),
  yields: fc.nat(4),
});

const stormArb = fc.record({
  writers: fc.array(fc.array(opArb, { minLength: 3, maxLength: 10 }), {
    minLength: 16,
    maxLength: 40,
  }),
  /** Fresh names raced by concurrent getOrCreate and create calls. */
  races: fc.array(
    fc.record({
      kind: fc.constantFrom<KindKey>("Web", "Db", "Note"),
      callers: fc.integer({ min: 2, max: 8 }),
    }),
    { maxLength: 3 },
  ),
});

type Storm = typeof stormArb extends fc.Arbitrary<infer T> ? T : never;

// ---------------------------------------------------------------------------
// What the storm was told

interface Ack {
  readonly kind: KindKey;
  readonly op: OpName;
  readonly id: number;
  readonly resourceVersion: number;
  readonly generation: number;
  readonly spec: Spec;
  /** This call inserted the row. */
  readonly created: boolean;
  /** This call changed the spec (every spec written is unique, so an acknowledged update did). */
  readonly applied: boolean;
}

interface Ledger {
  readonly acks: Ack[];
  /** Ids whose deletion an acknowledged `delete(id)` requested. */
  readonly deletedIds: Set<number>;
  /** Names an acknowledged `deleteByName` targeted, per kind. */
  readonly deletedNames: Map<KindKey, Set<string>>;
  /** onCreate calls per kind and name. */
  readonly onCreate: Map<string, number>;
}

const ALLOWED: Record<OpName | "lookup", readonly (new (m: string) => Error)[]> = {
  create: [NameTakenError],
  getOrCreate: [],
  createOrUpdate: [DeletionPendingError],
  update: [NotFoundError, DeletionPendingError],
  updateByName: [NotFoundError, DeletionPendingError],
  delete: [NotFoundError],
  deleteByName: [],
  lookup: [NotFoundError],
};

async function yieldTurns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await Promise.resolve();
}

/** Runs one client call; a refusal must be one the call allows under concurrency. */
async function attempt<T>(what: OpName | "lookup", call: () => Promise<T>): Promise<T | undefined> {
  figures.clientCalls++;
  try {
    const value = await call();
    figures.acknowledged++;
    return value;
  } catch (error) {
    const allowed = ALLOWED[what];
    assert.ok(
      allowed.some((c) => error instanceof Error && error.constructor === c),
      `${what} rejected with ${error instanceof Error ? error.constructor.name : error}: ${error}`,
    );
    count(figures.refusals, (error as Error).constructor.name);
    return undefined;
  }
}

function record(
  ledger: Ledger,
  kind: KindKey,
  op: OpName,
  obj: AnyObject,
  created: boolean,
  applied: boolean,
): void {
  ledger.acks.push({
    kind,
    op,
    id: obj.id,
    resourceVersion: obj.resourceVersion,
    generation: obj.generation,
    spec: obj.spec,
    created,
    applied,
  });
}

async function runOp(
  clients: Record<KindKey, Client<Spec, Status>>,
  ledger: Ledger,
  op: Op,
  v: string,
): Promise<void> {
  await yieldTurns(op.yields);
  const c = clients[op.kind];
  const name = NAMES[op.name];
  const spec: Spec = op.kind === "Web" && op.db !== null ? { v, db: NAMES[op.db] } : { v };
  const key = `${op.kind}/${name}`;
  const options = {
    finalizers: op.finalizer && op.kind !== "Note" ? [FINALIZER] : undefined,
    onCreate: () => void ledger.onCreate.set(key, (ledger.onCreate.get(key) ?? 0) + 1),
  };
  switch (op.op) {
    case "create": {
      const obj = await attempt("create", () => c.create(name, spec, options));
      if (obj !== undefined) record(ledger, op.kind, "create", obj, true, false);
      return;
    }
    case "getOrCreate":
    case "createOrUpdate": {
      const mode = op.op;
      const r = await attempt(mode, () => c[mode](name, spec, options));
      if (r === undefined) return;
      const applied = mode === "createOrUpdate" && !r.created;
      if (applied) assert.deepEqual(r.object.spec, spec, "createOrUpdate returned another spec");
      record(ledger, op.kind, mode, r.object, r.created, applied);
      return;
    }
    case "update":
    case "delete": {
      const found = await attempt("lookup", () => c.getByName(name));
      if (found === undefined) return;
      await yieldTurns(op.yields);
      if (op.op === "update") {
        const obj = await attempt("update", () => c.update(found.id, spec));
        if (obj === undefined) return;
        assert.deepEqual(obj.spec, spec, "update returned another spec");
        record(ledger, op.kind, "update", obj, false, true);
      } else if (await attempt("delete", () => c.delete(found.id).then(() => true))) {
        ledger.deletedIds.add(found.id);
      }
      return;
    }
    case "updateByName": {
      const obj = await attempt("updateByName", () => c.updateByName(name, spec));
      if (obj === undefined) return;
      assert.deepEqual(obj.spec, spec, "updateByName returned another spec");
      record(ledger, op.kind, "updateByName", obj, false, true);
      return;
    }
    case "deleteByName": {
      if (await attempt("deleteByName", () => c.deleteByName(name).then(() => true))) {
        const names = ledger.deletedNames.get(op.kind) ?? new Set();
        names.add(name);
        ledger.deletedNames.set(op.kind, names);
      }
      return;
    }
  }
}

/** Concurrent getOrCreate and create calls on one fresh name each: one row, one onCreate. */
async function race(
  c: Client<Spec, Status>,
  ledger: Ledger,
  kind: KindKey,
  name: string,
  callers: number,
): Promise<void> {
  let fired = 0;
  const results = await Promise.all(
    Array.from(
      { length: callers },
      (_, i) =>
        attempt("getOrCreate", () =>
          c.getOrCreate(`${name}-g`, { v: `${name}-g-${i}` }, {
            onCreate: () => void fired++,
          })),
    ),
  );
  const ids = new Set(results.map((r) => r!.object.id));
  assert.equal(ids.size, 1, "concurrent getOrCreate calls returned different rows");
  assert.equal(results.filter((r) => r!.created).length, 1, "not exactly one getOrCreate created");
  assert.equal(fired, 1, "onCreate did not fire exactly once");
  for (const r of results) record(ledger, kind, "getOrCreate", r!.object, r!.created, false);
  figures.getOrCreateRaces++;

  const creates = await Promise.all(
    Array.from(
      { length: callers },
      (_, i) => attempt("create", () => c.create(`${name}-c`, { v: `${name}-c-${i}` })),
    ),
  );
  const made = creates.filter((o) => o !== undefined);
  assert.equal(made.length, 1, "not exactly one concurrent create succeeded");
  record(ledger, kind, "create", made[0]!, true, false);
  figures.createRaces++;
  figures.invariants += 5;
}

// ---------------------------------------------------------------------------
// The controllers

interface PassTracker {
  readonly inFlight: Map<string, Set<number>>;
  overlaps: string[];
}

function controller(
  kind: KindKey,
  tracker: PassTracker,
  dbs: () => Client<Spec, Status>,
) {
  return async (obj: BeehiveObject<Spec, Status>, cc: ControllerClient<Status>) => {
    const running = tracker.inFlight.get(kind)!;
    if (running.has(obj.id)) tracker.overlaps.push(`${kind} ${obj.id}`);
    running.add(obj.id);
    figures.passes++;
    figures.maxInFlight[kind] = Math.max(figures.maxInFlight[kind], running.size);
    try {
      // Widen the window in which another pass of the same object could (wrongly) start.
      await yieldTurns(1 + (obj.id % 4));
      if (obj.deletionRequestedAt !== undefined) {
        for (const f of obj.finalizers) await cc.deleteFinalizer(f);
        return settled();
      }
      let again = false;
      if (kind === "Web") {
        // Depend on the Db the spec names, while it lives; drop every other edge.
        let target: AnyObject | undefined;
        if (obj.spec.db !== undefined) {
          try {
            target = await dbs().getByName(obj.spec.db);
          } catch (error) {
            if (!(error instanceof NotFoundError)) throw error;
            again = true;
          }
        }
        const wanted = target !== undefined && target.deletionRequestedAt === undefined
          ? target.id
          : undefined;
        // A Db on its way out may come back under the same name: nothing would wake us then.
        if (target?.deletionRequestedAt !== undefined) again = true;
        for (const d of await cc.listDependencies()) {
          await yieldTurns(2);
          if (d.id !== wanted) await cc.deleteDependency(d.id);
        }
        if (wanted !== undefined) await cc.addDependency(wanted);
      }
      const status: Status = { seen: obj.spec, generation: obj.generation };
      if (JSON.stringify(obj.status) !== JSON.stringify(status)) {
        await cc.within(async (tx) => {
          await tx.updateStatus(status);
          await tx.setCondition({
            type: "Ready",
            status: "True",
            reason: "Reconciled",
            message: String(obj.generation),
          });
        });
        await cc.addEvent({
          type: "Normal",
          reason: "Reconciled",
          message: `gen ${obj.generation}`,
        });
      }
      // A Db named but not there (or going): look again later (nothing else would wake us).
      return again ? settled().requeueAfter(2_000) : settled();
    } finally {
      running.delete(obj.id);
    }
  };
}

// ---------------------------------------------------------------------------
// The write-log tailer

interface Tail {
  /** Every entry of the store-wide log seen, by version. */
  readonly seen: Map<number, ObjectWrite>;
  cursor: number;
  /** The same, per kind, through `listSince`. */
  readonly kinds: Map<KindKey, { seen: number[]; cursor: number }>;
}

function newTail(): Tail {
  return {
    seen: new Map(),
    cursor: 0,
    kinds: new Map((["Web", "Db", "Note"] as const).map((k) => [k, { seen: [], cursor: 0 }])),
  };
}

/** Reads the write log above each position, checking positions only ever move up. */
async function tailOnce(store: TestStore, tail: Tail): Promise<void> {
  figures.tailerReads++;
  const page = await store.objectWrites.listSinceAll({ after: tail.cursor, limit: 10_000 });
  for (const w of page.writes) {
    assert.ok(
      w.resourceVersion > tail.cursor,
      `write log returned ${w.resourceVersion} at or below the position ${tail.cursor}`,
    );
    assert.ok(!tail.seen.has(w.resourceVersion), `version ${w.resourceVersion} returned twice`);
    tail.seen.set(w.resourceVersion, w);
    tail.cursor = w.resourceVersion;
  }
  for (const [kind, t] of tail.kinds) {
    const own = await store.objectWrites.listSince(KINDS[kind], { after: t.cursor, limit: 10_000 });
    for (const w of own.writes) {
      assert.equal(w.kind, kind, "listSince returned another kind's entry");
      assert.ok(w.resourceVersion > t.cursor, `${kind} log went back to ${w.resourceVersion}`);
      t.seen.push(w.resourceVersion);
      t.cursor = w.resourceVersion;
    }
  }
}

// ---------------------------------------------------------------------------
// Draining and checking

async function converged(clients: Record<KindKey, Client<Spec, Status>>): Promise<boolean> {
  for (const kind of ["Web", "Db", "Note"] as const) {
    for (const o of await clients[kind].list()) {
      if (o.deletionRequestedAt !== undefined) return false;
      if (REGISTERED.includes(kind) && o.observedGeneration !== o.generation) return false;
    }
  }
  return true;
}

/** Ticks fake time until nothing runs, every object settled and every deletion collected. */
async function drain(
  clock: FakeClock,
  store: TestStore,
  clients: Record<KindKey, Client<Spec, Status>>,
  tracker: PassTracker,
): Promise<void> {
  let last = -1;
  let stable = 0;
  for (let i = 0; i < 300 && stable < 2; i++) {
    await clock.tickAsync(1_000);
    const at = (await store.objectWrites.maxVersionAll()).at;
    const idle = [...tracker.inFlight.values()].every((s) => s.size === 0);
    stable = idle && at === last && await converged(clients) ? stable + 1 : 0;
    last = at;
  }
  assert.equal(stable, 2, "the storm did not drain: objects unsettled or deletions uncollected");
}

async function check(
  store: TestStore,
  clients: Record<KindKey, Client<Spec, Status>>,
  ledger: Ledger,
  tail: Tail,
  tracker: PassTracker,
): Promise<void> {
  const inv = () => void figures.invariants++;
  assert.deepEqual(tracker.overlaps, [], "two passes of one object ran at once");
  inv();

  // The tailer caught up; nothing was ever committed below a position it had passed.
  await tailOnce(store, tail);
  const log = (await store.objectWrites.listSinceAll({ after: 0, limit: 1_000_000 })).writes;
  assert.deepEqual(
    log.map((w) => w.resourceVersion),
    [...tail.seen.keys()],
    "the write log holds entries the tailer never saw: a commit landed below its position",
  );
  figures.logEntries += log.length;
  inv();
  for (const [kind, t] of tail.kinds) {
    assert.deepEqual(
      t.seen,
      log.filter((w) => w.kind === kind).map((w) => w.resourceVersion),
      `${kind}: its write log holds entries its tailer never saw`,
    );
    inv();
  }
  const latest = await store.getLatestResourceVersion();
  assert.ok(latest >= (log.at(-1)?.resourceVersion ?? 0), "latest version below the log");
  const byId = new Map<number, ObjectWrite[]>();
  for (const w of log) byId.set(w.id, [...(byId.get(w.id) ?? []), w]);
  const finals = new Map<number, RawObject>();
  for (const kind of ["Web", "Db", "Note"] as const) {
    for (
      const w of (await store.objectWrites.listSince(KINDS[kind], { after: 0, limit: 1e6 }))
        .writes
    ) {
      if (w.op === "delete" && w.final !== undefined) finals.set(w.id, w.final);
    }
  }

  const live = new Map<number, { kind: KindKey; obj: AnyObject }>();
  for (const kind of ["Web", "Db", "Note"] as const) {
    const list = await clients[kind].list({ load: ["dependencies"] });
    assert.equal(new Set(list.map((o) => o.name)).size, list.length, `${kind}: duplicate names`);
    inv();
    for (const obj of list) live.set(obj.id, { kind, obj });
  }
  const dbsByName = new Map(
    [...live.values()].filter((x) => x.kind === "Db").map((x) => [x.obj.name, x.obj.id]),
  );

  const ids = new Set(ledger.acks.map((a) => a.id));
  for (const id of ids) {
    const acks = ledger.acks.filter((a) => a.id === id);
    const kind = acks[0].kind;
    const creations = acks.filter((a) => a.created);
    assert.equal(creations.length, 1, `${kind} ${id}: created by ${creations.length} calls`);
    // No lost update: each acknowledged spec change took its own generation, in a row.
    const applied = acks.filter((a) => a.applied).sort((a, b) => a.generation - b.generation);
    assert.deepEqual(
      applied.map((a) => a.generation),
      applied.map((_, i) => i + 2),
      `${kind} ${id}: acknowledged spec changes do not own generations 2..n`,
    );
    const lastWrite = applied.at(-1) ?? creations[0];
    // Commit order: a later generation of one object was committed at a higher version.
    const versions = [creations[0], ...applied].map((a) => a.resourceVersion);
    for (let i = 1; i < versions.length; i++) {
      assert.ok(versions[i] > versions[i - 1], `${kind} ${id}: versions out of commit order`);
    }
    const entries = byId.get(id) ?? [];
    for (let i = 1; i < entries.length; i++) {
      assert.ok(entries[i].resourceVersion > entries[i - 1].resourceVersion);
    }
    for (const a of [...creations, ...applied]) {
      assert.ok(
        entries.some((w) =>
          w.resourceVersion === a.resourceVersion && w.op === (a.created ? "create" : "update")
        ),
        `${kind} ${id}: acknowledged write at ${a.resourceVersion} is not in the write log`,
      );
    }
    figures.invariants += 3;
    const here = live.get(id);
    if (here !== undefined) {
      const o = here.obj;
      figures.objectsChecked++;
      assert.equal(o.generation, 1 + applied.length, `${kind} ${id}: generation`);
      assert.deepEqual(o.spec, lastWrite.spec, `${kind} ${id}: spec is not the last acknowledged`);
      assert.equal(o.resourceVersion, entries.at(-1)?.resourceVersion, `${kind} ${id}: version`);
      if (REGISTERED.includes(kind)) {
        assert.equal(o.observedGeneration, o.generation, `${kind} ${id}: not converged`);
        assert.deepEqual(o.status, { seen: o.spec, generation: o.generation });
        assert.deepEqual(
          o.conditions.map((c) => [c.type, c.status, c.message]),
          [["Ready", "True", String(o.generation)]],
        );
        const latestEvent = await clients[kind].getLatestEvent(id, "");
        assert.equal(latestEvent?.message, `gen ${o.generation}`, `${kind} ${id}: event`);
      }
      if (kind === "Web") {
        const want = o.spec.db === undefined ? undefined : dbsByName.get(o.spec.db);
        assert.deepEqual(
          o.dependencies().map((d) => d.id),
          want === undefined ? [] : [want],
          `Web ${id}: dependencies`,
        );
      } else {
        assert.deepEqual(o.dependencies(), []);
      }
      figures.invariants += 4;
    } else {
      // Gone: only through a requested deletion, with finalizers cleared first.
      figures.collected++;
      const final = finals.get(id);
      assert.ok(final !== undefined, `${kind} ${id} vanished without a delete entry`);
      assert.ok(final.deletionRequestedAt !== undefined, `${kind} ${id} collected unrequested`);
      assert.deepEqual(final.finalizers, [], `${kind} ${id} collected with finalizers`);
      assert.equal(final.generation, 1 + applied.length, `${kind} ${id}: final generation`);
      assert.deepEqual(JSON.parse(final.spec), lastWrite.spec, `${kind} ${id}: final spec`);
      const names = ledger.deletedNames.get(kind) ?? new Set();
      assert.ok(
        ledger.deletedIds.has(id) || names.has(final.name),
        `${kind} ${id} collected though no acknowledged delete named it`,
      );
      figures.invariants += 4;
    }
  }
  for (const [id] of live) assert.ok(ids.has(id), `object ${id} exists though no call created it`);
  // onCreate ran once per row a call created, never for a row it found.
  const createdPerName = new Map<string, number>();
  for (const a of ledger.acks) {
    if (!a.created) continue;
    const name = live.get(a.id)?.obj.name ?? finals.get(a.id)?.name;
    if (name === undefined || !NAMES.includes(name)) continue;
    const key = `${a.kind}/${name}`;
    createdPerName.set(key, (createdPerName.get(key) ?? 0) + 1);
  }
  assert.deepEqual(
    [...ledger.onCreate.entries()].sort(),
    [...createdPerName.entries()].sort(),
    "onCreate calls differ from rows created",
  );
  figures.invariants += 2;
}

// ---------------------------------------------------------------------------
// The property

test("concurrency: storms of writers and controllers at concurrency > 1 match what was acknowledged", async () => {
  const dir = scratchDir();
  let run = 0;
  const logs: LogLine[] = [];
  try {
    await fc.assert(
      fc.asyncProperty(stormArb, async (storm) => {
        const n = run++;
        const clock = installFakeTime();
        try {
          const store = await openTestStore(dir.file(`storm-${n}.db`));
          try {
            await oneStorm(clock, store, storm, n, logs);
          } finally {
            await store.close();
          }
          figures.storms++;
        } finally {
          clock.uninstall();
        }
      }),
      { seed: SEED, numRuns: STORMS, endOnFailure: true, ...replay() },
    );
    assert.ok(
      figures.maxInFlight.Web > 1 && figures.maxInFlight.Db > 1,
      "passes never overlapped: the storm did not exercise concurrency",
    );
  } finally {
    dir.remove();
    const failures = [...figures.passFailures.entries()].map(([k, v]) => `${k} ${v}`).join(", ");
    const refusals = [...figures.refusals.entries()].map(([k, v]) => `${k} ${v}`).join(", ");
    console.log(
      `[concurrency] storms ${figures.storms}: client calls ${figures.clientCalls} ` +
        `(acknowledged ${figures.acknowledged}; refused ${refusals || "none"}); ` +
        `passes ${figures.passes} (failed and retried: ${failures || "none"}); ` +
        `max passes in flight Web ${figures.maxInFlight.Web}, Db ${figures.maxInFlight.Db}; ` +
        `getOrCreate races ${figures.getOrCreateRaces}, create races ${figures.createRaces}; ` +
        `write-log entries ${figures.logEntries} over ${figures.tailerReads} tailer reads; ` +
        `objects checked ${figures.objectsChecked}, collected ${figures.collected}; ` +
        `invariants checked ${figures.invariants}`,
    );
  }
});

async function oneStorm(
  clock: FakeClock,
  store: TestStore,
  storm: Storm,
  n: number,
  logs: LogLine[],
): Promise<void> {
  const logger = recordingLogger();
  const tracker: PassTracker = {
    inFlight: new Map([["Web", new Set()], ["Db", new Set()]]),
    overlaps: [],
  };
  const bh = new Beehive(store, {
    gcInterval: 1_000,
    maxRetryInterval: 2_000,
    logger,
    logLevel: "warn",
  });
  const clients = {
    Web: bh.client<Spec, Status>(Web),
    Db: bh.client<Spec, Status>(Db),
    Note: bh.client<Spec, Status>(Note),
  };
  for (const kind of REGISTERED) {
    bh.register<Spec, Status>(KINDS[kind], controller(kind, tracker, () => clients.Db), {
      concurrency: CONCURRENCY[kind],
    });
  }
  const stop = await bh.start();
  try {
    await clock.tickAsync(0);
    const ledger: Ledger = {
      acks: [],
      deletedIds: new Set(),
      deletedNames: new Map(),
      onCreate: new Map(),
    };
    const tail = newTail();
    let stormDone = false;
    const tailer = (async () => {
      for (let i = 0; i < 50_000 && !stormDone; i++) {
        await tailOnce(store, tail);
        await yieldTurns(3);
      }
    })();
    await Promise.all([
      ...storm.writers.map(async (ops, w) => {
        for (const [i, op] of ops.entries()) await runOp(clients, ledger, op, `${n}-${w}-${i}`);
      }),
      ...storm.races.map((r, i) =>
        race(clients[r.kind], ledger, r.kind, `race-${n}-${i}`, r.callers)
      ),
    ]);
    stormDone = true;
    await tailer;
    await drain(clock, store, clients, tracker);
    await check(store, clients, ledger, tail, tracker);
  } finally {
    await stop();
    for (const line of logger.lines) {
      if (line.message.startsWith("beehive: reconcile failed")) {
        const error = line.attributes?.error;
        count(figures.passFailures, error instanceof Error ? error.constructor.name : "?");
      } else logs.push(line);
    }
  }
  // Nothing but retried reconcile failures was logged.
  assert.deepEqual(logs.map((l) => `${l.level} ${l.message}`), [], "unexpected log lines");
}

/** fast-check's replay path of a failure (printed with it), to rerun only that case. */
function replay(): { path?: string } {
  const g = globalThis as {
    Deno?: { env: { get(n: string): string | undefined } };
    process?: { env: Record<string, string | undefined> };
  };
  let path: string | undefined;
  try {
    path = g.Deno?.env.get("BEEHIVE_PROPERTY_PATH") ?? g.process?.env.BEEHIVE_PROPERTY_PATH;
  } catch {
    path = undefined;
  }
  return path === undefined ? {} : { path };
}
