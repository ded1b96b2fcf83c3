/**
 * WAL frames per write: how many pages one create commit and one settle
 * commit (`setObservedGeneration`) append to the write-ahead log, through the
 * store on `node:sqlite`, beside a minimal schema (one table with its UNIQUE
 * name, one log table, one counter row) written the same way.
 *
 * Method (with the store's background checkpointer off, so only the bench
 * touches the WAL): `PRAGMA wal_checkpoint(TRUNCATE)` from a second connection empties
 * the WAL; a batch of single-object commits follows (small enough that no
 * automatic checkpoint runs); `PRAGMA wal_checkpoint(PASSIVE)` then reports
 * the frames in the log. Run: `deno task bench:wal`.
 * Figures go in docs/performance.md.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { SqliteStore } from "../store/sqlite/sqlite_store.ts";
import { uncheckpointedNodeDriver } from "./_drivers.ts";

const BATCH = 40;
const ROUNDS = 5;
const Kind = { group: "bench.beehive.dev", kind: "Item" };
const SPEC = '{"image":"example.com/app:1.0","replicas":3}';

function frames(probe: DatabaseSync): number {
  return Number(probe.prepare("PRAGMA wal_checkpoint(PASSIVE)").get()!.log);
}

function truncate(probe: DatabaseSync): void {
  probe.prepare("PRAGMA wal_checkpoint(TRUNCATE)").get();
}

async function store(): Promise<{ create: number; settle: number; pageSize: number }> {
  const dir = mkdtempSync(join(tmpdir(), "beehive-wal-"));
  const path = join(dir, "store.db");
  const s = SqliteStore.open(path, {}, uncheckpointedNodeDriver);
  const probe = new DatabaseSync(path);
  let create = 0;
  let settle = 0;
  try {
    // Warm-up: the first pages of every table and index exist before counting.
    for (let i = 0; i < 200; i++) {
      const o = await s.objects.create(Kind, { name: `warm-${i}`, spec: SPEC });
      await s.objects.setObservedGeneration(o, 1);
    }
    for (let r = 0; r < ROUNDS; r++) {
      const made = [];
      truncate(probe);
      for (let i = 0; i < BATCH; i++) {
        made.push(await s.objects.create(Kind, { name: `item-${r}-${i}`, spec: SPEC }));
      }
      create += frames(probe);
      truncate(probe);
      for (const o of made) await s.objects.setObservedGeneration(o, 1);
      settle += frames(probe);
    }
    const pageSize = Number(probe.prepare("PRAGMA page_size").get()!.page_size);
    return { create: create / (BATCH * ROUNDS), settle: settle / (BATCH * ROUNDS), pageSize };
  } finally {
    probe.close();
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function minimal(): { create: number; settle: number } {
  const dir = mkdtempSync(join(tmpdir(), "beehive-wal-"));
  const path = join(dir, "minimal.db");
  const db = new DatabaseSync(path);
  const probe = new DatabaseSync(path);
  try {
    db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
      CREATE TABLE objects (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, spec TEXT NOT NULL,
        observed INTEGER, rv INTEGER NOT NULL);
      CREATE TABLE log (rv INTEGER PRIMARY KEY, object_id INTEGER NOT NULL, op INTEGER NOT NULL);
      CREATE TABLE seq (id INTEGER PRIMARY KEY, value INTEGER NOT NULL);
      INSERT INTO seq VALUES (1, 0);`);
    const insert = db.prepare("INSERT INTO objects (id, name, spec, rv) VALUES (?, ?, ?, ?)");
    const settleRow = db.prepare("UPDATE objects SET observed = 1, rv = ? WHERE id = ?");
    const log = db.prepare("INSERT INTO log VALUES (?, ?, ?)");
    const seq = db.prepare("UPDATE seq SET value = ? WHERE id = 1");
    let rv = 0;
    let id = 0;
    const one = (fn: () => void) => {
      db.exec("BEGIN IMMEDIATE");
      fn();
      seq.run(rv);
      db.exec("COMMIT");
    };
    const createOne = (name: string) =>
      one(() => {
        insert.run(++id, name, SPEC, ++rv);
        log.run(rv, id, 1);
      });
    const settleOne = (oid: number) =>
      one(() => {
        settleRow.run(++rv, oid);
        log.run(rv, oid, 2);
      });
    for (let i = 0; i < 200; i++) {
      createOne(`warm-${i}`);
      settleOne(id);
    }
    let create = 0;
    let settle = 0;
    for (let r = 0; r < ROUNDS; r++) {
      truncate(probe);
      const first = id + 1;
      for (let i = 0; i < BATCH; i++) createOne(`item-${r}-${i}`);
      create += frames(probe);
      truncate(probe);
      for (let oid = first; oid <= id; oid++) settleOne(oid);
      settle += frames(probe);
    }
    return { create: create / (BATCH * ROUNDS), settle: settle / (BATCH * ROUNDS) };
  } finally {
    probe.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const s = await store();
const m = minimal();
console.log(`WAL frames per commit (${BATCH} × ${ROUNDS} single-object commits, node:sqlite):`);
console.log("");
console.log("| schema | page size | create | settle | create + settle |");
console.log("| --- | ---: | ---: | ---: | ---: |");
console.log(
  `| store | ${s.pageSize} | ${s.create.toFixed(1)} | ${s.settle.toFixed(1)} | ${
    (s.create + s.settle).toFixed(1)
  } |`,
);
console.log(
  `| minimal | 4096 | ${m.create.toFixed(1)} | ${m.settle.toFixed(1)} | ${
    (m.create + m.settle).toFixed(1)
  } |`,
);
