/**
 * The console and the Kubernetes API mounted in an app's own `Deno.serve`:
 * watches through them leave the runtime nothing to warn about (Deno warns
 * once a handler has read `request.signal` of a request that completes).
 * Deno only; it runs the app as its own process and reads its stderr.
 *
 * @module
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import process from "node:process";
import { test } from "./_test.ts";

if ("Deno" in globalThis) {
  test("watches through the console and the Kubernetes API mounted in Deno.serve print no warning", async () => {
    const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>(
      (resolve, reject) => {
        execFile(
          process.execPath,
          [
            "run",
            "--allow-read",
            "--allow-write",
            "--allow-env",
            "--allow-net",
            "tests/_deno_serve_app.ts",
          ],
          { timeout: 60_000, env: { ...process.env, NO_COLOR: "1" } },
          (error, stdout, stderr) => {
            if (error) reject(new Error(`the app failed: ${error.message}\n${stderr}`));
            else resolve({ stdout, stderr });
          },
        );
      },
    );
    assert.equal(stdout, "done\n");
    assert.equal(stderr, "");
  });
}
