/**
 * The object-graph benchmark.
 *
 * 1. Cascade delete: an owner with N owned children (1, 100, 10,000) is
 *    deleted through a Client; the figure is the time until the owner and
 *    every child are physically collected, and that time per child. Two child
 *    kinds: a registered kind (each child collected by its own pass, pushed by
 *    the cascade mark) and a client-only kind (collected by the GC sweep,
 *    here on a 10 ms interval).
 * 2. Dependency fan-out: one client-only target with 1,000 registered
 *    dependents; the figure is the time from the target's update commit until
 *    every dependent has been reconciled (its pass concluded, watermark
 *    written).
 *
 * Each beside its raw floor, measured in the same run on the same schema and
 * pragmas: the fewest bare `node:sqlite` statements that do the same work with
 * one commit per object, as the engine does.
 *
 * Run: `deno task bench:graph` (`--quick` for a smoke run). Figures go in
 * docs/performance.md.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { Beehive, type GroupKind, settled } from "../mod.ts";
import { openSqliteStore } from "../store/sqlite/mod.ts";
import { migrations } from "../store/sqlite/_schema.ts";
import type { ObjectId, Store } from "../src/store.ts";

const QUICK = process.argv.includes("--quick");
/** Children per cascade, and how many times each size is measured (the median is reported). */
const CASCADES: readonly (readonly [number, number])[] = QUICK
  ? [[1, 5], [100, 3], [1_000, 1]]
  : [[1, 21], [100, 7], [10_000, 3]];
const DEPENDENTS = QUICK ? 200 : 1_000;
const FANOUT_REPEATS = QUICK ? 3 : 7;
/** The 1 s per-object floor, plus slack: a dependent woken again sooner would wait it out. */
const FLOOR_GAP = 1_100;

const Owner: GroupKind = { group: "bench.beehive.dev", kind: "Owner" };
const Child: GroupKind = { group: "bench.beehive.dev", kind: "Child" };
const Leaf: GroupKind = { group: "bench.beehive.dev", kind: "Leaf" };
const Config: GroupKind = { group: "bench.beehive.dev", kind: "Config" };
const Dependent: GroupKind = { group: "bench.beehive.dev", kind: "Dependent" };
const SPEC = JSON.stringify({ image: "example.com/app:1.0", replicas: 3 });

function tempFile(): { path: string; done: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "beehive-graph-bench-"));
  return { path: join(dir, "bench.db"), done: () => rmSync(dir, { recursive: true, force: true }) };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---------------------------------------------------------------------------
// Engine side

/**
 * The store with every physical delete reported after it commits: collection
 * runs `tx.objects.delete` inside a transaction, so transactions are wrapped.
 */
function reportingDeletes(store: Store, onCollected: (id: ObjectId) => void): Store {
  const bind = (target: object, prop: string | symbol) => {
    const value = Reflect.get(target, prop, target);
    return typeof value === "function" ? value.bind(target) : value;
  };
  const wrap = (s: Store): Store => {
    const objects = new Proxy(s.objects, {
      get(target, prop) {
        if (prop !== "delete") return bind(target, prop);
        return async (id: ObjectId) => {
          await target.delete(id);
          s.afterCommit(() => onCollected(id));
        };
      },
    });
    return new Proxy(s, {
      get(target, prop) {
        if (prop === "objects") return objects;
        if (prop === "within") {
          return <T>(fn: (tx: Store) => Promise<T>) => target.within((tx) => fn(wrap(tx)));
        }
        return bind(target, prop);
      },
    });
  };
  return wrap(store);
}

/** The store with each completed `dependencies.watermarkSet` (a pass's conclusion) counted. */
function countingWatermarks(store: Store, onSet: () => void): Store {
  const dependencies = new Proxy(store.dependencies, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (prop !== "watermarkSet") return value.bind(target);
      return async (id: ObjectId, cursor: number) => {
        await target.watermarkSet(id, cursor);
        onSet();
      };
    },
  });
  return new Proxy(store, {
    get(target, prop) {
      if (prop === "dependencies") return dependencies;
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** An owner and n settled children of `childKind` owned by it, written in batches. */
async function fillCascade(store: Store, n: number, childKind: GroupKind): Promise<ObjectId> {
  let owner = 0;
  await store.within(async (tx) => {
    const o = await tx.objects.create(Owner, { name: "owner", spec: SPEC });
    await tx.objects.setObservedGeneration({ ...Owner, id: o.id }, 1);
    owner = o.id;
  });
  for (let i = 0; i < n; i += 1_000) {
    await store.within(async (tx) => {
      for (let j = i; j < Math.min(n, i + 1_000); j++) {
        const c = await tx.objects.create(childKind, { name: `child-${j}`, spec: SPEC });
        await tx.objects.setObservedGeneration({ ...childKind, id: c.id }, 1);
        await tx.edges.add({ fromId: c.id, toId: owner, relation: "owned_by" });
      }
    });
  }
  return owner;
}

/** Deletes the owner of n children; resolves to the ms until it (and so every child) is collected. */
async function engineCascade(n: number, childKind: GroupKind): Promise<number> {
  const { path, done } = tempFile();
  const raw = await openSqliteStore(path);
  try {
    const owner = await fillCascade(raw, n, childKind);
    let collected = 0;
    const finished = Promise.withResolvers<void>();
    const store = reportingDeletes(raw, (id) => {
      collected++;
      if (id === owner) finished.resolve();
    });
    const clientOnly = childKind === Leaf;
    const bh = new Beehive(store, { gcInterval: clientOnly ? 10 : 30_000 });
    bh.register(Owner, () => settled());
    if (!clientOnly) bh.register(Child, () => settled());
    const stop = await bh.start();
    try {
      await sleep(200); // the start-up passes and sweeps find nothing; let them finish
      const t0 = performance.now();
      await bh.client(Owner).delete(owner);
      await finished.promise;
      const ms = performance.now() - t0;
      if (collected !== n + 1) throw new Error(`collected ${collected} of ${n + 1}`);
      return ms;
    } finally {
      await stop();
    }
  } finally {
    await raw.close();
    done();
  }
}

/** One client-only target and n settled dependents, each with a depends_on edge and a watermark. */
async function fillFanout(store: Store, n: number): Promise<ObjectId> {
  let target = 0;
  await store.within(async (tx) => {
    target = (await tx.objects.create(Config, { name: "config", spec: SPEC })).id;
  });
  const ids: ObjectId[] = [];
  for (let i = 0; i < n; i += 1_000) {
    await store.within(async (tx) => {
      for (let j = i; j < Math.min(n, i + 1_000); j++) {
        const d = await tx.objects.create(Dependent, { name: `dep-${j}`, spec: SPEC });
        const ref = { ...Dependent, id: d.id };
        await tx.objects.setObservedGeneration(ref, 1);
        await tx.edges.add({ fromId: d.id, toId: target, relation: "depends_on" });
        await tx.reconcileOwed.decrement(ref, 1);
        ids.push(d.id);
      }
    });
  }
  // As if each had a pass that saw everything so far: nothing is stale or owed at start.
  const latest = await store.getLatestResourceVersion();
  for (const id of ids) await store.dependencies.watermarkSet(id, latest);
  return target;
}

/** Updates the target `repeats` times; resolves to the ms from each commit until every dependent concluded. */
async function engineFanout(n: number, repeats: number): Promise<number[]> {
  const { path, done } = tempFile();
  const raw = await openSqliteStore(path);
  try {
    const target = await fillFanout(raw, n);
    let concluded = 0;
    let round = Promise.withResolvers<void>();
    const store = countingWatermarks(raw, () => {
      if (++concluded === n) round.resolve();
    });
    let passes = 0;
    const bh = new Beehive(store);
    bh.register(Dependent, () => {
      passes++;
      return settled();
    });
    const stop = await bh.start();
    const times: number[] = [];
    try {
      await sleep(300);
      if (passes !== 0) throw new Error(`${passes} passes ran at start; expected none`);
      const configs = bh.client(Config);
      for (let r = 0; r < repeats; r++) {
        concluded = 0;
        round = Promise.withResolvers<void>();
        const t0 = performance.now();
        await configs.update(target, { version: r });
        await round.promise;
        times.push(performance.now() - t0);
        await sleep(FLOOR_GAP);
      }
      if (passes !== n * repeats) throw new Error(`${passes} passes; expected ${n * repeats}`);
      return times;
    } finally {
      await stop();
    }
  } finally {
    await raw.close();
    done();
  }
}

// ---------------------------------------------------------------------------
// The raw floor

/** A raw connection on a fresh file with the store's pragmas and schema. */
function rawDb(path: string): DatabaseSync {
  const db = new DatabaseSync(path);
  db.exec(`PRAGMA auto_vacuum = INCREMENTAL; PRAGMA journal_mode = WAL;
    PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;`);
  for (const m of migrations) db.exec(m.sql);
  return db;
}

interface RawStatements {
  readonly insert: StatementSync;
  readonly log: StatementSync;
  readonly edge: StatementSync;
}

function prepare(db: DatabaseSync): RawStatements {
  return {
    insert: db.prepare(`INSERT INTO objects ("group", kind, name, spec, resource_version,
      observed_generation, observed_at, created_at, updated_at)
      VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?) RETURNING id`),
    log: db.prepare(`INSERT INTO object_writes (resource_version, object_id, "group", kind, op,
      written_at, final) VALUES (?, ?, ?, ?, ?, ?, ?)`),
    edge: db.prepare(`INSERT INTO edges (from_id, to_id, relation) VALUES (?, ?, ?)`),
  };
}

/**
 * The cascade's floor: mark the owner (one commit), mark every child (one
 * commit), then per child and finally for the owner one commit that reads the
 * row image, deletes the row (its edges cascade) and logs the delete with the
 * image.
 */
function floorCascade(n: number): number {
  const { path, done } = tempFile();
  const db = rawDb(path);
  try {
    const s = prepare(db);
    let rv = 0;
    const now = Date.now();
    db.exec("BEGIN");
    const owner = Number(
      s.insert.get(Owner.group, Owner.kind, "owner", SPEC, ++rv, now, now, now)!.id,
    );
    for (let i = 0; i < n; i++) {
      const id = Number(
        s.insert.get(Child.group, Child.kind, `child-${i}`, SPEC, ++rv, now, now, now)!.id,
      );
      s.edge.run(id, owner, "owned_by");
    }
    db.exec("COMMIT");
    const mark = db.prepare(`UPDATE objects SET deletion_requested_at = ?, resource_version = ?,
      updated_at = ? WHERE id = ? AND deletion_requested_at IS NULL`);
    const children = db.prepare(`SELECT e.from_id AS id, o."group" AS "group", o.kind AS kind
      FROM edges e JOIN objects o ON o.id = e.from_id WHERE e.to_id = ? AND e.relation = 'owned_by'`);
    const image = db.prepare(`SELECT * FROM objects WHERE id = ?`);
    const conditions = db.prepare(`SELECT * FROM conditions WHERE object_id = ?`);
    const remove = db.prepare(`DELETE FROM objects WHERE id = ?`);
    const collect = (id: number, gk: GroupKind) => {
      const t = Date.now();
      db.exec("BEGIN IMMEDIATE");
      const row = image.get(id)!;
      const image_ = JSON.stringify({ ...row, conditions: conditions.all(id) });
      remove.run(id);
      s.log.run(++rv, id, gk.group, gk.kind, 3, t, image_);
      db.exec("COMMIT");
    };
    const t0 = performance.now();
    let t = Date.now();
    db.exec("BEGIN IMMEDIATE");
    mark.run(t, ++rv, t, owner);
    s.log.run(rv, owner, Owner.group, Owner.kind, 2, t, null);
    db.exec("COMMIT");
    t = Date.now();
    db.exec("BEGIN IMMEDIATE");
    const kids = children.all(owner);
    for (const k of kids) {
      mark.run(t, ++rv, t, k.id);
      s.log.run(rv, k.id, k.group, k.kind, 2, t, null);
    }
    db.exec("COMMIT");
    for (const k of kids) collect(Number(k.id), Child);
    collect(owner, Owner);
    return performance.now() - t0;
  } finally {
    db.close();
    done();
  }
}

/**
 * The fan-out's floor: the target's update commit; one read of the write log
 * above the cursor and one read of the target's dependents; then per
 * dependent the pass's opening read (row and conditions) and one commit
 * writing its watermark.
 */
function floorFanout(n: number, repeats: number): number[] {
  const { path, done } = tempFile();
  const db = rawDb(path);
  try {
    const s = prepare(db);
    let rv = 0;
    const now = Date.now();
    db.exec("BEGIN");
    const target = Number(
      s.insert.get(Config.group, Config.kind, "config", SPEC, ++rv, now, now, now)!.id,
    );
    const watermark = db.prepare(`INSERT INTO dependency_watermarks
      (object_id, reconciled_against, reconciled_at) VALUES (?, ?, ?)
      ON CONFLICT (object_id) DO UPDATE SET reconciled_against = excluded.reconciled_against,
        reconciled_at = excluded.reconciled_at
      WHERE excluded.reconciled_against > dependency_watermarks.reconciled_against`);
    for (let i = 0; i < n; i++) {
      const id = Number(
        s.insert.get(Dependent.group, Dependent.kind, `dep-${i}`, SPEC, ++rv, now, now, now)!.id,
      );
      s.edge.run(id, target, "depends_on");
      watermark.run(id, 0, now);
    }
    db.exec("COMMIT");
    const update = db.prepare(`UPDATE objects SET spec = ?, generation = generation + 1,
      resource_version = ?, updated_at = ? WHERE id = ?`);
    const since = db.prepare(`SELECT resource_version, object_id FROM object_writes
      WHERE resource_version > ? ORDER BY resource_version LIMIT 256`);
    const dependents = db.prepare(`SELECT e.from_id AS id, o."group" AS "group", o.kind AS kind
      FROM edges e JOIN objects o ON o.id = e.from_id
      WHERE e.to_id IN (SELECT value FROM json_each(?)) AND e.relation = 'depends_on'`);
    const load = db.prepare(`SELECT * FROM objects WHERE id = ?`);
    const conditions = db.prepare(`SELECT * FROM conditions WHERE object_id = ?`);
    const times: number[] = [];
    let cursor = rv;
    for (let r = 0; r < repeats; r++) {
      const t0 = performance.now();
      let t = Date.now();
      db.exec("BEGIN IMMEDIATE");
      update.run(JSON.stringify({ version: r }), ++rv, t, target);
      s.log.run(rv, target, Config.group, Config.kind, 2, t, null);
      db.exec("COMMIT");
      const page = since.all(cursor);
      cursor = Number(page[page.length - 1].resource_version);
      const ids = [...new Set(page.map((w) => Number(w.object_id)))];
      for (const d of dependents.all(JSON.stringify(ids))) {
        const at = rv;
        load.get(d.id);
        conditions.all(d.id);
        t = Date.now();
        db.exec("BEGIN IMMEDIATE");
        watermark.run(d.id, at, t);
        db.exec("COMMIT");
      }
      times.push(performance.now() - t0);
    }
    return times;
  } finally {
    db.close();
    done();
  }
}

// ---------------------------------------------------------------------------
// Report

function row(cells: readonly (string | number)[]): string {
  return `| ${cells.join(" | ")} |`;
}

function ms(x: number): string {
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
}

function us(x: number): string {
  return (x * 1000).toFixed(0);
}

const started = performance.now();
const cpu = cpus()[0]?.model ?? "unknown CPU";
console.log(`graph benchmark — ${new Date().toISOString()} — ${cpus().length} × ${cpu}`);

for (const [label, kind] of [["registered", Child], ["client-only", Leaf]] as const) {
  console.log("");
  console.log(`cascade delete, ${label} children (median of the runs):`);
  console.log("");
  console.log(row([
    "children",
    "runs",
    "engine ms",
    "engine µs/child",
    "floor ms",
    "floor µs/child",
    "floor ÷ engine",
  ]));
  console.log(row(["---:", "---:", "---:", "---:", "---:", "---:", "---:"]));
  // One untimed run first, so neither side is measured cold.
  floorCascade(100);
  await engineCascade(100, kind);
  for (const [n, runs] of CASCADES) {
    const e: number[] = [];
    const f: number[] = [];
    for (let i = 0; i < runs; i++) {
      f.push(floorCascade(n));
      e.push(await engineCascade(n, kind));
    }
    const em = median(e), fm = median(f);
    console.log(row([
      n.toLocaleString("en-US"),
      runs,
      ms(em),
      us(em / n),
      ms(fm),
      us(fm / n),
      `${((fm / em) * 100).toFixed(0)}%`,
    ]));
  }
}

console.log("");
console.log(
  `dependency fan-out: one client-only target, ${DEPENDENTS} registered dependents, ` +
    `commit → all reconciled (${FANOUT_REPEATS} updates):`,
);
console.log("");
console.log(row([
  "dependents",
  "engine ms (median)",
  "engine µs/dependent",
  "floor ms (median)",
  "floor µs/dependent",
  "floor ÷ engine",
]));
console.log(row(["---:", "---:", "---:", "---:", "---:", "---:"]));
{
  const f = median(floorFanout(DEPENDENTS, FANOUT_REPEATS));
  const e = median(await engineFanout(DEPENDENTS, FANOUT_REPEATS));
  console.log(row([
    DEPENDENTS.toLocaleString("en-US"),
    ms(e),
    us(e / DEPENDENTS),
    ms(f),
    us(f / DEPENDENTS),
    `${((f / e) * 100).toFixed(0)}%`,
  ]));
}
console.log("");
console.log(`total run time: ${((performance.now() - started) / 1000).toFixed(1)} s`);
