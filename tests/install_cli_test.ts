/**
 * `scripts/install-cli`: the `beehive` command it installs runs the checkout's
 * CLI on the checkout's pinned Deno, with no `deno` on `PATH`. Deno only: it
 * runs the script and the command as processes.
 *
 * @module
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { openSqliteStore } from "../store/sqlite/mod.ts";
import { Beehive } from "../mod.ts";
import { test } from "./_test.ts";

/** Runs `file args` with `env`; resolves its stdout, rejects with its stderr. */
function run(file: string, args: string[], env: Record<string, string>, cwd?: string) {
  return new Promise<string>((resolve, reject) => {
    execFile(file, args, { env, cwd, timeout: 120_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} failed: ${error.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

if ("Deno" in globalThis) {
  test("scripts/install-cli installs a beehive command that runs without deno on PATH", async () => {
    const dir = mkdtempSync(join(tmpdir(), "beehive-install-"));
    try {
      const store = await openSqliteStore(join(dir, "app.db"));
      await new Beehive(store).client({ group: "example.com", kind: "Task" }).create("t", {});
      await store.close();
      const installed = await run("bash", ["scripts/install-cli", join(dir, "bin")], {
        ...process.env as Record<string, string>,
      });
      assert.equal(installed, `${join(dir, "bin", "beehive")}\n`);
      // Only the system's directories on PATH: no deno there.
      const env = { HOME: dir, PATH: "/usr/bin:/bin", NO_COLOR: "1" };
      await assert.rejects(run("sh", ["-c", "command -v deno"], env));
      const out = await run(
        join(dir, "bin", "beehive"),
        ["./app.db", "get", "Task.example.com"],
        env,
        dir,
      );
      assert.match(out, /^t\s/m);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
