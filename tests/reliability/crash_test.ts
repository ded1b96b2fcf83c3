/**
 * The crash campaign's short form, run by `npm test` on Deno and on Node: ten
 * `SIGKILL`s of a worker on the runtime running the tests, each followed by
 * the campaign's checks (nothing acknowledged lost, watches skip nothing, the
 * graph converges). The full run is `deno task reliability:crash`.
 *
 * SQLite only: the campaign checks a copy of the database file taken after
 * each kill (the file and its WAL as the kill left them), which is what a
 * crash can break on SQLite. A PostgreSQL store has no file in the process; a
 * killed process's acknowledged writes are the server's, and the
 * multi-process crash campaign (`multiprocess_crash_test.ts`) and the server
 * restart case check them there.
 *
 * @module
 */
import assert from "node:assert/strict";
import process from "node:process";
import { testStore } from "../_sqlite_driver.ts";
import { notApplicable, test } from "../_test.ts";
import { formatReport, runCrashCampaign } from "./crash_campaign.ts";

const SEED = 20261202;
const KILLS = 10;
const NAME =
  "crash campaign (short): 10 SIGKILLs lose nothing acknowledged, skip no watch change, and converge";

if (testStore === "postgres") {
  notApplicable(NAME, "it checks copies of the SQLite database file; PostgreSQL has none");
} else {
  test(NAME, campaign);
}

async function campaign(): Promise<void> {
  const report = await runCrashCampaign({ seed: SEED, kills: KILLS, convergeBound: 20_000 });
  if (report.violations.length > 0 || process.env.BEEHIVE_CRASH_REPORT === "1") {
    console.log(formatReport(report).join("\n"));
  }
  assert.deepEqual(report.violations, []);
  assert.equal(report.kills, KILLS);
  assert.equal(report.lost, 0);
  assert.ok(report.writesAcknowledged > KILLS, `${report.writesAcknowledged} writes acknowledged`);
  assert.ok(report.objectChecks > 0, "objects were checked");
  assert.ok(report.workerWatchEntries > 0, "the worker's watches were checked");
  assert.ok(report.resumesComplete > 0, "resumed watches were checked");
  assert.ok(report.convergeWorstMs < 20_000, `converged in ${report.convergeWorstMs} ms`);
}
