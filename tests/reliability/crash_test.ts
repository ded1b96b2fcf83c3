/**
 * The crash campaign's short form, run by `npm test` on Deno and on Node: ten
 * `SIGKILL`s of a worker on the runtime running the tests, each followed by
 * the campaign's checks (nothing acknowledged lost, watches skip nothing, the
 * graph converges). The full run is `deno task reliability:crash`.
 *
 * @module
 */
import assert from "node:assert/strict";
import process from "node:process";
import { test } from "../_test.ts";
import { formatReport, runCrashCampaign } from "./crash_campaign.ts";

const SEED = 20261202;
const KILLS = 10;

test("crash campaign (short): 10 SIGKILLs lose nothing acknowledged, skip no watch change, and converge", async () => {
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
});
