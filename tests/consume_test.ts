/**
 * Every way the README offers to consume a checkout, each from an app folder
 * of its own (made in a temporary directory, with its own config): a Deno
 * import map, a Deno workspace member, a vendored folder, and a Node `file:`
 * dependency. Each app imports every entry point, opens a store, writes a
 * kind whose stored JSON Schema the core compiles (the core's one npm
 * dependency), and prints what it read. Deno only: it spawns `deno` and
 * `node` on the apps.
 *
 * @module
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import process from "node:process";
import { test } from "./_test.ts";

/** The checkout: this repository. */
const CHECKOUT = resolve(".");
/**
 * What a vendored copy or a workspace member holds: the files `deno.json` publishes (read from it,
 * so a folder added to the package is copied too) and both manifests.
 */
const PUBLISHED = [
  ...(JSON.parse(readFileSync(join(CHECKOUT, "deno.json"), "utf8")) as {
    publish: { include: string[] };
  }).publish.include.map((path) => path.replace(/\/$/, "")),
  "package.json",
];
/** Every entry point, by its import name, and its file in a checkout. */
const ENTRIES: Record<string, string> = {
  "@beehive/beehive": "mod.ts",
  "@beehive/beehive/store": "store/mod.ts",
  "@beehive/beehive/sqlite": "store/sqlite/mod.ts",
  "@beehive/beehive/postgres": "store/postgres/mod.ts",
  "@beehive/beehive/cli": "cli/mod.ts",
  "@beehive/beehive/console": "console/mod.ts",
  "@beehive/beehive/kubeapi": "kubeapi/mod.ts",
  "@beehive/beehive/testing": "testing/mod.ts",
};

/** The app every way runs: every entry point imported, a schema-checked write through the core. */
const APP = `import { Beehive } from "@beehive/beehive";
import { openSqliteStore } from "@beehive/beehive/sqlite";
import { openKindTailSymbol } from "@beehive/beehive/store";
import * as postgres from "@beehive/beehive/postgres";
import { main } from "@beehive/beehive/cli";
import { consoleHandler } from "@beehive/beehive/console";
import { kubeApiHandler } from "@beehive/beehive/kubeapi";
import { createTestEnv } from "@beehive/beehive/testing";

for (const f of [openKindTailSymbol, postgres.PostgresStore, main, consoleHandler, kubeApiHandler, createTestEnv]) {
  if (f === undefined) throw new Error("an entry point exported nothing");
}
const Task = { group: "example.com", kind: "Task" };
const store = await openSqliteStore(":memory:");
// A stored kind with a JSON Schema: a plain client's write is checked by the compiled schema.
await store.kinds.put({
  ...Task,
  singular: "task",
  plural: "tasks",
  shortNames: [],
  namespaced: false,
  columns: "[]",
  specSchema: JSON.stringify({ type: "object", properties: { n: { type: "integer" } } }),
  statusSchema: undefined,
});
const bh = new Beehive(store);
const tasks = bh.client(Task);
await tasks.create("ok", { n: 1 });
let refused = "";
await tasks.create("bad", { n: "one" }).catch((e) => (refused = e.name));
console.log(\`created \${(await tasks.getByName("ok")).name}, refused \${refused}\`);
await store.close();
`;

/** Runs `cmd args` in `cwd`; resolves its stdout, rejects with its stderr. */
function run(cmd: string, args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd, timeout: 120_000, env: { ...process.env, NO_COLOR: "1" } }, (
      error,
      stdout,
      stderr,
    ) => {
      if (error) reject(new Error(`${cmd} ${args.join(" ")} failed: ${error.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/** Makes an app folder `name` under `root` with `files`. */
function app(root: string, name: string, files: Record<string, string>): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
  return dir;
}

/** Copies the checkout's published files to `dir`. */
function vendor(dir: string): void {
  for (const f of PUBLISHED) cpSync(join(CHECKOUT, f), join(dir, f), { recursive: true });
}

/** An import map of every entry point under `base`. */
function importMap(base: string): string {
  const imports = Object.fromEntries(
    Object.entries(ENTRIES).map(([name, file]) => [name, `${base}/${file}`]),
  );
  return JSON.stringify({ imports }, null, 2);
}

const DENO_RUN = ["run", "--allow-read", "--allow-write", "--allow-env", "--allow-net", "main.ts"];
const EXPECTED = "created ok, refused InvalidSpecError\n";

if ("Deno" in globalThis) {
  test("a Deno app maps a checkout's entry points in its own deno.json import map", async () => {
    const root = mkdtempSync(join(tmpdir(), "beehive-consume-"));
    try {
      const dir = app(root, "app", { "deno.json": importMap(CHECKOUT), "main.ts": APP });
      assert.equal(await run(process.execPath, DENO_RUN, dir), EXPECTED);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("a Deno app takes a checkout as a workspace member and imports it by name", async () => {
    const root = mkdtempSync(join(tmpdir(), "beehive-consume-"));
    try {
      const dir = app(root, "app", {
        "deno.json": JSON.stringify({ workspace: ["./beehive"] }),
        "main.ts": APP,
      });
      vendor(join(dir, "beehive"));
      const out = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
        execFile(
          process.execPath,
          DENO_RUN,
          { cwd: dir, timeout: 120_000 },
          (e, stdout, stderr) =>
            e ? reject(new Error(`${e.message}\n${stderr}`)) : resolve({ stdout, stderr }),
        );
      });
      assert.equal(out.stdout, EXPECTED);
      assert.doesNotMatch(out.stderr, /Warning/, "the member's config draws no warning");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("a Deno app imports a vendored copy of a checkout through its import map", async () => {
    const root = mkdtempSync(join(tmpdir(), "beehive-consume-"));
    try {
      const dir = app(root, "app", { "deno.json": importMap("./vendor/beehive"), "main.ts": APP });
      vendor(join(dir, "vendor", "beehive"));
      assert.equal(await run(process.execPath, DENO_RUN, dir), EXPECTED);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("a Node 22 app takes a checkout as a file: dependency", async () => {
    const root = mkdtempSync(join(tmpdir(), "beehive-consume-"));
    try {
      // A clone with only its runtime dependencies installed, as the README says.
      const clone = join(root, "beehive");
      vendor(clone);
      cpSync(join(CHECKOUT, "package-lock.json"), join(clone, "package-lock.json"));
      const npm = ["--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"];
      await run("npm", ["install", "--omit=dev", ...npm], clone);
      const dir = app(root, "app", {
        "package.json": JSON.stringify({
          name: "app",
          private: true,
          type: "module",
          dependencies: { "@beehive/beehive": "file:../beehive" },
        }),
        "main.ts": APP,
      });
      await run("npm", ["install", ...npm], dir);
      const node = join(CHECKOUT, "node_modules/.bin/node");
      const out = await run(node, ["--disable-warning=ExperimentalWarning", "main.ts"], dir);
      assert.equal(out, EXPECTED);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
}
