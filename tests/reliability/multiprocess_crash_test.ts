/**
 * The multi-process crash campaign's short form, run by `npm test` on Deno and
 * on Node: SIGKILLs of the leader, the standby and a client-only writer, each
 * restarted, then the campaign's checks (nothing acknowledged lost, no watch
 * skipping, one leader at a time, convergence). The full run is
 * `deno task reliability:multiprocess`.
 *
 * @module
 */
import assert from "node:assert/strict";
import process from "node:process";
import { test } from "../_test.ts";
import { formatReport, runMultiprocessCrashCampaign } from "./multiprocess_crash_campaign.ts";

const SEED = 20261202;
const KILLS = 6;

test("multi-process crash campaign (short): SIGKILLs of leader, standby and writer lose nothing, skip no watch change, keep one leader, and converge", async () => {
  const report = await runMultiprocessCrashCampaign({ seed: SEED, kills: KILLS });
  if (report.violations.length > 0 || process.env.BEEHIVE_CRASH_REPORT === "1") {
    console.log(formatReport(report).join("\n"));
  }
  assert.deepEqual(report.violations, []);
  assert.deepEqual(report.kills, { leader: 2, standby: 2, writer: 2 });
  assert.equal(report.lost, 0);
  assert.ok(report.acknowledged > KILLS, `${report.acknowledged} creates acknowledged`);
  assert.ok(report.watchedEntries > 0, "the watches were checked");
  assert.ok(report.resumes >= KILLS, `${report.resumes} resumed watches`);
  assert.ok(report.terms >= 3, `${report.terms} leadership terms`);
});
