/**
 * The store benchmark: each hot store operation's throughput beside a "floor",
 * the minimal raw statements the same operation needs against the same schema,
 * on the same on-disk database file with the same pragmas — once per SQLite
 * driver (`node:sqlite`, and the Deno FFI driver on Deno with `--allow-ffi`),
 * each against the floor on its own driver, in one table.
 *
 * Run with `deno task bench:store` (or `deno run -A bench/store_bench.ts`; it
 * also runs under `node` 22.5+). `--quick` shortens every measurement, for a
 * smoke run; `--only=<text>` keeps the operations whose name contains `<text>`,
 * for profiling; `--driver=node|ffi` measures one driver. See docs/performance.md for what the figures mean.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import type { Connection, Driver, Statement } from "../store/sqlite/_driver.ts";
import { OBJECT_COLUMNS } from "../store/sql/_rows.ts";
import { migrations, PAGE_SIZE } from "../store/sqlite/_schema.ts";
import { openSqliteStore } from "../store/sqlite/mod.ts";
import type { GroupKind, ObjectRef, Store } from "../src/store.ts";
import { type BenchDriver, benchDrivers, sqliteVersion } from "./_drivers.ts";

/** One benchmarked operation: the store call and its floor. */
interface Op {
  readonly name: string;
  readonly kind: "write" | "read";
  /** The `i`-th call through the store. */
  store(i: number): Promise<unknown>;
  /** The `i`-th call as bare statements. */
  floor(i: number): unknown;
}

/** One operation's figures. */
interface Result {
  readonly op: Op;
  readonly store: number;
  readonly floor: number;
}

const ARGS = (globalThis as { process?: { argv?: string[] } }).process?.argv ?? [];
const QUICK = ARGS.includes("--quick");
/** `--only=<text>` measures just the operations whose name contains `<text>` (for profiling). */
const ONLY = ARGS.find((a) => a.startsWith("--only="))?.slice("--only=".length);
/** Rounds per operation; each round times one store batch and one floor batch. */
const ROUNDS = QUICK ? 3 : 9;
/** Wall time one batch aims for, and the warm-up per side. */
const BATCH_MS = QUICK ? 40 : 150;
const WARMUP_MS = QUICK ? 20 : 150;
/** A ratio at or above this passes. */
const TARGET = { write: 0.5, read: 0.7 } as const;

const LIST_SIZE = 1000;
/** Objects per side the edge benchmark draws its (from, to) pairs from. */
const EDGE_POOL = 400;
const SPEC_A = '{"image":"example.com/app:1.0","replicas":3,"ports":[80,443]}';
const SPEC_B = '{"image":"example.com/app:1.1","replicas":3,"ports":[80,443]}';
const STATUS_A = '{"ready":3,"phase":"Running"}';
const STATUS_B = '{"ready":2,"phase":"Degraded"}';

/** The condition columns a read returns (as the store's `_rows.ts` selects them). */
const CONDITION_COLUMNS =
  "object_id, type, status, reason, message, liveness, open_epoch, transitioned_at, updated_at";

// ---------------------------------------------------------------------------
// The floor: bare prepared statements on one connection.

/** Opens the raw connection with the store's pragmas and applies the store's migrations. */
function openFloor(driver: Driver, path: string): Connection {
  const db = driver.open(path);
  db.exec("PRAGMA busy_timeout = 5000");
  db.exec(`PRAGMA page_size = ${PAGE_SIZE}`);
  db.exec("PRAGMA auto_vacuum = INCREMENTAL");
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA foreign_keys = ON");
  // The store's migrator bookkeeping, so the store opens this file as current.
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`);
  for (const m of migrations) {
    db.exec("BEGIN IMMEDIATE");
    db.exec(m.sql);
    db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)")
      .run(m.version, m.name, Date.now());
    db.exec("COMMIT");
  }
  return db;
}

/** The floor's statements, each prepared once. */
class Floor {
  readonly db: Connection;
  readonly epoch: number;
  #next = 0;
  #end = 0;
  readonly #draw: Statement;
  readonly createObject: Statement;
  readonly appendWrite: Statement;
  readonly specGate: Statement;
  readonly specWrite: Statement;
  readonly readRow: Statement;
  readonly readConditions: Statement;
  readonly statusGate: Statement;
  readonly statusWrite: Statement;
  readonly conditionGate: Statement;
  readonly conditionUpsert: Statement;
  readonly bump: Statement;
  readonly eventGate: Statement;
  readonly eventInsert: Statement;
  readonly eventExtend: Statement;
  readonly edgeGate: Statement;
  readonly edgeStamp: Statement;
  readonly edgeWatermark: Statement;
  readonly edgeInsert: Statement;
  readonly listRows: Statement;
  readonly listConditions: Statement;

  constructor(db: Connection, epoch: number) {
    this.db = db;
    this.epoch = epoch;
    const p = (sql: string) => db.prepare(sql);
    this.#draw = p(
      "UPDATE resource_version_seq SET value = value + ? WHERE id = 1 RETURNING value",
    );
    this.createObject = p(`INSERT INTO objects ("group", kind, name, spec, spec_version,
      resource_version, finalizers, created_at, updated_at) VALUES (?, ?, ?, ?, 0, ?, '[]', ?, ?)
      RETURNING id`);
    this.appendWrite = p(`INSERT INTO object_writes
      (resource_version, object_id, "group", kind, op, written_at, final)
      VALUES (?, ?, ?, ?, ?, ?, NULL)`);
    this.specGate = p(`SELECT "group", kind, spec, spec_version, deletion_requested_at
      FROM objects WHERE id = ?`);
    this.specWrite = p(`UPDATE objects SET spec = ?, spec_version = ?,
      generation = generation + 1, resource_version = ?, updated_at = ?
      WHERE id = ? RETURNING ${OBJECT_COLUMNS}`);
    this.readRow = p(`SELECT ${OBJECT_COLUMNS} FROM objects WHERE id = ?`);
    this.readConditions = p(
      `SELECT ${CONDITION_COLUMNS} FROM conditions WHERE object_id = ? ORDER BY type`,
    );
    this.statusGate = p(`SELECT "group", kind, status, status_version FROM objects WHERE id = ?`);
    this.statusWrite = p(`UPDATE objects SET status = ?, status_version = ?,
      resource_version = ?, updated_at = ? WHERE id = ?`);
    // The kind gate and the stored condition in one read.
    this.conditionGate = p(`SELECT o."group" AS "group", o.kind AS kind, c.status AS status,
      c.reason AS reason, c.message AS message, c.liveness AS liveness, c.open_epoch AS open_epoch
      FROM objects o LEFT JOIN conditions c ON c.object_id = o.id AND c.type = ?
      WHERE o.id = ?`);
    this.conditionUpsert = p(`INSERT INTO conditions
      (object_id, type, status, reason, message, liveness, open_epoch, transitioned_at, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (object_id, type) DO UPDATE SET
        status = excluded.status, reason = excluded.reason, message = excluded.message,
        liveness = excluded.liveness, open_epoch = excluded.open_epoch,
        transitioned_at = CASE WHEN conditions.status = excluded.status
          THEN conditions.transitioned_at ELSE excluded.transitioned_at END,
        updated_at = excluded.updated_at`);
    this.bump = p("UPDATE objects SET resource_version = ?, updated_at = ? WHERE id = ?");
    // The kind gate and the timeline's newest run in one read.
    this.eventGate = p(`SELECT o."group" AS "group", o.kind AS kind,
      e.id AS run_id, e.type AS type, e.reason AS reason
      FROM objects o LEFT JOIN events e ON e.id = (SELECT id FROM events
        WHERE object_id = o.id AND category = ? ORDER BY id DESC LIMIT 1)
      WHERE o.id = ?`);
    this.eventInsert = p(`INSERT INTO events (object_id, category, type, reason, message,
      detail, count, first_at, last_at, resource_version) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?)`);
    this.eventExtend = p(`UPDATE events SET count = count + 1, last_at = ?, message = ?,
      detail = ?, resource_version = ? WHERE id = ?`);
    // Both endpoints in one read.
    this.edgeGate = p(`SELECT t."group" AS "group", t.kind AS kind,
      t.deletion_requested_at AS deleting,
      EXISTS (SELECT 1 FROM objects WHERE id = ?) AS from_exists
      FROM objects t WHERE t.id = ?`);
    this.edgeStamp = p(`UPDATE objects SET reconcile_owed = reconcile_owed + 1
      WHERE id = ? AND NOT EXISTS (SELECT 1 FROM edges
        WHERE from_id = ? AND to_id = ? AND relation = 'depends_on')`);
    this.edgeWatermark = p("DELETE FROM dependency_watermarks WHERE object_id = ?");
    this.edgeInsert = p(`INSERT INTO edges (from_id, to_id, relation) VALUES (?, ?, ?)
      ON CONFLICT DO NOTHING`);
    this.listRows = p(
      `SELECT ${OBJECT_COLUMNS} FROM objects WHERE "group" = ? AND kind = ? ORDER BY id`,
    );
    this.listConditions = p(`SELECT ${CONDITION_COLUMNS} FROM conditions
      WHERE object_id IN (SELECT id FROM objects WHERE "group" = ? AND kind = ?)
      ORDER BY object_id, type`);
  }

  /** A resource version, reserved from the shared counter in blocks as the store does. */
  version(): number {
    if (this.#next >= this.#end) {
      const hi = Number(this.#draw.get(1024)!.value);
      this.#next = hi - 1023;
      this.#end = hi + 1;
    }
    return this.#next++;
  }

  /** Runs `fn` in its own `BEGIN IMMEDIATE … COMMIT`. */
  write<T>(fn: () => T): T {
    this.db.exec("BEGIN IMMEDIATE");
    try {
      const result = fn();
      this.db.exec("COMMIT");
      return result;
    } catch (error) {
      this.db.exec("ROLLBACK");
      throw error;
    }
  }
}

// ---------------------------------------------------------------------------
// Fixtures and operations.

const StoreKind: GroupKind = { group: "bench.beehive.dev", kind: "StoreSide" };
const FloorKind: GroupKind = { group: "bench.beehive.dev", kind: "FloorSide" };
const StoreList: GroupKind = { group: "bench.beehive.dev", kind: "StoreList" };
const FloorList: GroupKind = { group: "bench.beehive.dev", kind: "FloorList" };
const StoreNew: GroupKind = { group: "bench.beehive.dev", kind: "StoreNew" };
const FloorNew: GroupKind = { group: "bench.beehive.dev", kind: "FloorNew" };

/** The objects one side's operations work on. */
interface Side {
  readonly spec: ObjectRef;
  readonly status: ObjectRef;
  readonly condition: ObjectRef;
  readonly eventNew: ObjectRef;
  readonly eventExtend: ObjectRef;
  readonly get: ObjectRef;
  readonly pool: readonly ObjectRef[];
}

async function makeSide(store: Store, gk: GroupKind, list: GroupKind): Promise<Side> {
  const make = async (name: string, spec = SPEC_A): Promise<ObjectRef> => {
    const o = await store.objects.create(gk, { name, spec });
    return { group: gk.group, kind: gk.kind, id: o.id };
  };
  const side: Side = {
    spec: await make("spec"),
    status: await make("status"),
    condition: await make("condition"),
    eventNew: await make("event-new"),
    eventExtend: await make("event-extend"),
    get: await make("get"),
    pool: await Promise.all(Array.from({ length: EDGE_POOL }, (_, i) => make(`pool-${i}`))),
  };
  await store.conditions.set(side.get, [
    { type: "Available", status: "True", reason: "MinimumReplicas" },
    { type: "Progressing", status: "False", reason: "Complete", message: "rolled out" },
  ]);
  await store.objects.updateStatus(side.get, { status: STATUS_A });
  await store.conditions.set(side.condition, [{ type: "Ready", status: "True" }]);
  await store.events.add(side.eventExtend, { type: "Normal", reason: "Tick" });
  for (let i = 0; i < LIST_SIZE; i++) {
    await store.objects.create(list, { name: `item-${String(i).padStart(4, "0")}`, spec: SPEC_A });
  }
  return side;
}

/** The kind gate every id-keyed mutator applies: the row exists and is of kind `gk`. */
function gate<T extends { group?: unknown; kind?: unknown }>(row: T | undefined, gk: GroupKind): T {
  if (row === undefined || row.group !== gk.group || row.kind !== gk.kind) {
    throw new Error("gate failed");
  }
  return row;
}

/** The `i`-th distinct (from, to) pair of the pool; never a self-edge. */
function edgePair(pool: readonly ObjectRef[], i: number): [number, number] {
  const n = pool.length;
  const shift = 1 + Math.floor(i / n);
  if (shift >= n) throw new Error(`edge pool exhausted at ${i} edges; raise EDGE_POOL`);
  const from = i % n;
  return [pool[from].id, pool[(from + shift) % n].id];
}

function operations(store: Store, f: Floor, s: Side, fl: Side): Op[] {
  const now = () => Date.now();
  return [
    {
      name: "create",
      kind: "write",
      store: (i) =>
        store.objects.create(StoreNew, { name: `new-${String(i).padStart(7, "0")}`, spec: SPEC_A }),
      floor: (i) =>
        f.write(() => {
          const rv = f.version();
          const t = now();
          const id = f.createObject.get(
            FloorNew.group,
            FloorNew.kind,
            `new-${String(i).padStart(7, "0")}`,
            SPEC_A,
            rv,
            t,
            t,
          )!.id;
          f.appendWrite.run(rv, id, FloorNew.group, FloorNew.kind, 1, t);
        }),
    },
    {
      name: "spec update (changed)",
      kind: "write",
      store: (i) => store.objects.updateSpec(s.spec, { spec: i % 2 === 0 ? SPEC_B : SPEC_A }),
      floor: (i) =>
        f.write(() => {
          const spec = i % 2 === 0 ? SPEC_B : SPEC_A;
          const row = gate(f.specGate.get(fl.spec.id), FloorKind);
          if (row.deletion_requested_at !== null || row.spec === spec) throw new Error("no-op");
          const rv = f.version();
          const t = now();
          const out = f.specWrite.get(spec, row.spec_version, rv, t, fl.spec.id);
          f.appendWrite.run(rv, fl.spec.id, FloorKind.group, FloorKind.kind, 2, t);
          return [out, f.readConditions.all(fl.spec.id)];
        }),
    },
    {
      name: "spec update (unchanged)",
      kind: "write",
      store: () => store.objects.updateSpec(s.get, { spec: SPEC_A }),
      floor: () =>
        f.write(() => {
          const row = f.readRow.get(fl.get.id)!;
          if (row.spec !== SPEC_A) throw new Error("changed");
          return [row, f.readConditions.all(fl.get.id)];
        }),
    },
    {
      name: "status update",
      kind: "write",
      store: (i) => store.objects.updateStatus(s.status, { status: i % 2 ? STATUS_A : STATUS_B }),
      floor: (i) =>
        f.write(() => {
          const status = i % 2 ? STATUS_A : STATUS_B;
          const row = gate(f.statusGate.get(fl.status.id), FloorKind);
          if (row.status === status) throw new Error("no-op");
          const rv = f.version();
          const t = now();
          f.statusWrite.run(status, row.status_version, rv, t, fl.status.id);
          f.appendWrite.run(rv, fl.status.id, FloorKind.group, FloorKind.kind, 2, t);
        }),
    },
    {
      name: "condition set",
      kind: "write",
      store: (i) =>
        store.conditions.set(s.condition, [{ type: "Ready", status: i % 2 ? "True" : "False" }]),
      floor: (i) =>
        f.write(() => {
          const status = i % 2 ? "True" : "False";
          const row = gate(f.conditionGate.get("Ready", fl.condition.id), FloorKind);
          if (row.status === status) throw new Error("no-op");
          const rv = f.version();
          const t = now();
          f.conditionUpsert.run(fl.condition.id, "Ready", status, "", "", 0, f.epoch, t, t);
          f.bump.run(rv, t, fl.condition.id);
          f.appendWrite.run(rv, fl.condition.id, FloorKind.group, FloorKind.kind, 2, t);
        }),
    },
    {
      name: "event add (new run)",
      kind: "write",
      store: (i) =>
        store.events.add(s.eventNew, {
          type: "Warning",
          reason: i % 2 ? "Up" : "Down",
          message: "link state changed",
        }),
      floor: (i) =>
        f.write(() => {
          const reason = i % 2 ? "Up" : "Down";
          const row = gate(f.eventGate.get("", fl.eventNew.id), FloorKind);
          if (row.type === "Warning" && row.reason === reason) throw new Error("extends");
          const t = now();
          f.eventInsert.run(
            fl.eventNew.id,
            "",
            "Warning",
            reason,
            "link state changed",
            null,
            t,
            t,
            f.version(),
          );
        }),
    },
    {
      name: "event add (extend)",
      kind: "write",
      store: () =>
        store.events.add(s.eventExtend, { type: "Normal", reason: "Tick", message: "tick" }),
      floor: () =>
        f.write(() => {
          const row = gate(f.eventGate.get("", fl.eventExtend.id), FloorKind);
          if (row.type !== "Normal" || row.reason !== "Tick") throw new Error("new run");
          f.eventExtend.run(now(), "tick", null, f.version(), row.run_id);
        }),
    },
    {
      name: "edge add",
      kind: "write",
      store: (i) => {
        const [fromId, toId] = edgePair(s.pool, i);
        return store.edges.add({ fromId, toId, relation: "depends_on" });
      },
      floor: (i) => {
        const [fromId, toId] = edgePair(fl.pool, i);
        return f.write(() => {
          const to = f.edgeGate.get(fromId, toId);
          if (to === undefined || to.from_exists !== 1) throw new Error("missing endpoint");
          const stamped = Number(f.edgeStamp.run(fromId, fromId, toId).changes) > 0;
          if (stamped) f.edgeWatermark.run(fromId);
          f.edgeInsert.run(fromId, toId, "depends_on");
          return { to, stamped };
        });
      },
    },
    {
      name: "point get",
      kind: "read",
      store: () => store.objects.get(s.get.id),
      floor: () => [f.readRow.get(fl.get.id), f.readConditions.all(fl.get.id)],
    },
    {
      name: `list of ${LIST_SIZE / 1000}k`,
      kind: "read",
      store: () => store.objects.list(StoreList),
      floor: () => [
        f.listRows.all(FloorList.group, FloorList.kind),
        f.listConditions.all(FloorList.group, FloorList.kind),
      ],
    },
  ];
}

// ---------------------------------------------------------------------------
// Timing.

/** Per-side iteration counters, so every call of a side gets a fresh `i`. */
interface Counters {
  store: number;
  floor: number;
}

async function runStore(op: Op, c: Counters, n: number): Promise<number> {
  const t0 = performance.now();
  for (let k = 0; k < n; k++) await op.store(c.store++);
  return performance.now() - t0;
}

function runFloor(op: Op, c: Counters, n: number): number {
  const t0 = performance.now();
  for (let k = 0; k < n; k++) op.floor(c.floor++);
  return performance.now() - t0;
}

/** Warms a side for `WARMUP_MS`; resolves to its ms per call. */
async function warm(run: (n: number) => Promise<number> | number): Promise<number> {
  let n = 0;
  let ms = 0;
  let batch = 8;
  while (ms < WARMUP_MS) {
    ms += await run(batch);
    n += batch;
    batch *= 2;
  }
  return ms / n;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function measure(op: Op, db: Connection): Promise<Result> {
  // Every operation starts from an empty WAL, so one's checkpoints don't land in the next.
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  const c: Counters = { store: 0, floor: 0 };
  const storeMs = await warm((n) => runStore(op, c, n));
  const floorMs = await warm((n) => runFloor(op, c, n));
  const nStore = Math.max(5, Math.round(BATCH_MS / storeMs));
  const nFloor = Math.max(5, Math.round(BATCH_MS / floorMs));
  const storeRates: number[] = [];
  const floorRates: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate which side goes first, so drift (WAL growth, checkpoints) hits both.
    if (r % 2 === 0) {
      storeRates.push(nStore / ((await runStore(op, c, nStore)) / 1000));
      floorRates.push(nFloor / (runFloor(op, c, nFloor) / 1000));
    } else {
      floorRates.push(nFloor / (runFloor(op, c, nFloor) / 1000));
      storeRates.push(nStore / ((await runStore(op, c, nStore)) / 1000));
    }
  }
  return { op, store: median(storeRates), floor: median(floorRates) };
}

// ---------------------------------------------------------------------------
// Report.

function fmtRate(x: number): string {
  return Math.round(x).toLocaleString("en-US");
}

/** One driver's results. */
interface Run {
  readonly driver: BenchDriver;
  readonly sqlite: string;
  readonly results: readonly Result[];
}

function table(runs: readonly Run[]): string {
  const header = ["operation"];
  for (const { driver } of runs) {
    header.push(`${driver.name} store ops/s`, `${driver.name} floor ops/s`, `${driver.name} ratio`);
  }
  if (runs.length === 2) header.push(`${runs[1].driver.name}/${runs[0].driver.name} store`);
  header.push("target");
  const rows = runs[0].results.map(({ op }, k) => {
    const cells = [op.name];
    const target = TARGET[op.kind];
    for (const run of runs) {
      const { store, floor } = run.results[k];
      const ratio = store / floor;
      cells.push(
        fmtRate(store),
        fmtRate(floor),
        `${(ratio * 100).toFixed(0)}%${ratio >= target ? "" : " UNDER"}`,
      );
    }
    if (runs.length === 2) {
      cells.push(`${(runs[1].results[k].store / runs[0].results[k].store).toFixed(2)}×`);
    }
    cells.push(`${op.kind}s ${target * 100}%`);
    return cells;
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const right = header.map((_, i) => i > 0 && i < header.length - 1);
  const line = (cells: string[]) =>
    "| " +
    cells.map((x, i) => right[i] ? x.padStart(widths[i]) : x.padEnd(widths[i])).join(" | ") +
    " |";
  const rule = "|" +
    widths.map((w, i) => right[i] ? "-".repeat(w + 1) + ":" : "-".repeat(w + 2)).join("|") + "|";
  return [line(header), rule, ...rows.map(line)].join("\n");
}

function runtimeLabel(): string {
  const g = globalThis as { Deno?: { version: { deno: string } } };
  const p = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return g.Deno ? `Deno ${g.Deno.version.deno}` : `Node ${p?.versions?.node ?? "?"}`;
}

/** Measures every operation on `driver`: its store and its floor share one fresh file. */
async function measureDriver(driver: BenchDriver): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), "beehive-bench-"));
  const path = join(dir, "bench.db");
  let raw: Connection | undefined;
  let store: Store | undefined;
  try {
    raw = openFloor(driver.raw, path);
    store = await openSqliteStore(path, { synchronous: "normal", ...driver.options });
    const epoch = Number(raw.prepare("SELECT value FROM store_epoch WHERE id = 1").get()!.value);
    const floor = new Floor(raw, epoch);
    const s = await makeSide(store, StoreKind, StoreList);
    const fl = await makeSide(store, FloorKind, FloorList);
    const results: Result[] = [];
    for (const op of operations(store, floor, s, fl)) {
      if (ONLY !== undefined && !op.name.includes(ONLY)) continue;
      results.push(await measure(op, raw));
    }
    return { driver, sqlite: sqliteVersion(driver.raw), results };
  } finally {
    await store?.close();
    raw?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  const { drivers, notes } = await benchDrivers();
  const cpu = cpus();
  const versions = drivers.map((d) => `${d.name}: SQLite ${sqliteVersion(d.raw)}`).join(", ");
  console.log(
    `beehive store benchmark — ${new Date().toISOString()}\n` +
      `${runtimeLabel()}, ${versions}, ${cpu.length} cores (${cpu[0]?.model.trim() ?? "?"})\n` +
      `on-disk WAL, synchronous=NORMAL, foreign_keys=ON; ${ROUNDS} rounds of ~${BATCH_MS}ms ` +
      `per side, median ops/s; each ratio is against the floor on the same driver` +
      `${QUICK ? " (--quick)" : ""}\n`,
  );
  for (const note of notes) console.log(`(${note})`);
  const runs: Run[] = [];
  for (const driver of drivers) runs.push(await measureDriver(driver));
  console.log(table(runs));
  console.log(`\n${((performance.now() - started) / 1000).toFixed(1)}s in all`);
}

await main();
