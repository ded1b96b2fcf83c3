/**
 * The commit journal on its own: every reader receives every commit's batch,
 * with the entries of its own kind, and the journal keeps only the entries of
 * kinds some reader reads.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type CommitBatch, CommitJournal, type JournalReader } from "../../store/sql/_journal.ts";
import type { TailWrite } from "../../src/watches/kind_tail.ts";
import { test } from "../_test.ts";

const A = { group: "g", kind: "A" };
const B = { group: "g", kind: "B" };

function reader(gk: { group: string; kind: string }): JournalReader & { batches: CommitBatch[] } {
  const batches: CommitBatch[] = [];
  return { gk, batches, receive: (batch) => void batches.push(batch) };
}

function write(gk: { group: string; kind: string }, rv: number): TailWrite {
  return { id: rv, resourceVersion: rv, ...gk, op: "update", origin: 1 } as TailWrite;
}

test("CommitJournal wants the kinds its readers read, and forgets a kind with its last reader", () => {
  const journal = new CommitJournal();
  assert.equal(journal.wants("g", "A"), false);
  const a1 = journal.subscribe(reader(A));
  const a2 = journal.subscribe(reader(A));
  assert.equal(journal.wants("g", "A"), true);
  assert.equal(journal.wants("g", "B"), false);
  assert.equal(journal.wants("h", "A"), false);
  a1();
  a1(); // a second unsubscribe changes nothing
  assert.equal(journal.wants("g", "A"), true, "one reader of A is left");
  a2();
  assert.equal(journal.wants("g", "A"), false);
});

test("CommitJournal hands every reader every commit's batch, a reader subscribed mid-transaction from the next one", () => {
  const journal = new CommitJournal();
  const ra = reader(A);
  journal.subscribe(ra);
  journal.begin(10, 7);
  assert.equal(journal.active, true);
  journal.logged(write(A, 11));
  const rb = reader(B);
  journal.subscribe(rb);
  journal.committed(11);
  assert.deepEqual(ra.batches.map((b) => [b.from, b.through, b.stamp, b.writes.length]), [
    [10, 11, 7, 1],
  ]);
  assert.equal(rb.batches.length, 0, "it began before b subscribed");
  journal.begin(11, 7);
  journal.committed(12);
  assert.deepEqual(ra.batches.map((b) => [b.from, b.through]), [[10, 11], [11, 12]]);
  assert.deepEqual(rb.batches.map((b) => [b.from, b.through]), [[11, 12]]);
});

test("CommitJournal journals nothing while no reader is subscribed", () => {
  const journal = new CommitJournal();
  journal.begin(1, 0);
  assert.equal(journal.active, false);
  const off = journal.subscribe(reader(A));
  off();
  journal.begin(1, 0);
  assert.equal(journal.active, false);
});

test("CommitJournal hands a batch out ascending though its entries were logged out of version order", () => {
  const journal = new CommitJournal();
  const ra = reader(A);
  journal.subscribe(ra);
  journal.begin(10, 1);
  // Members run at once log as their answers come, not as they drew.
  journal.logged(write(A, 12));
  journal.logged(write(A, 11));
  journal.logged(write(A, 13));
  journal.committed(13);
  assert.deepEqual(ra.batches[0].writes.map((w) => w.resourceVersion), [11, 12, 13]);
});
