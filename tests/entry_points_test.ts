/**
 * The entry points' surfaces, as `deno doc` reads them: the main entry exports
 * the model (at most 120 symbols), and the Store port's types come from
 * `"./store"` only. Deno only: it reads the entries with `deno doc`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import process from "node:process";
import { test } from "./_test.ts";

/** The most symbols the main entry exports. */
const MAX_MAIN = 120;

/** The model's identifiers, named by the Store port too, and exported by both entries. */
const SHARED = ["EventId", "GroupKind", "LabelSelectorOperator", "ObjectId", "ObjectRef"];

/** The names `entry` exports, as `deno doc --json` lists them. */
function exported(entry: string): string[] {
  const out = execFileSync(process.execPath, ["doc", "--json", entry], {
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1" },
    maxBuffer: 64 << 20,
  });
  const doc = JSON.parse(out) as { nodes: Record<string, { symbols?: { name: string }[] }> };
  return Object.values(doc.nodes).flatMap((n) => (n.symbols ?? []).map((s) => s.name)).sort();
}

if ("Deno" in globalThis) {
  test("the main entry exports at most 120 symbols", () => {
    const names = exported("mod.ts");
    assert.ok(
      names.length <= MAX_MAIN,
      `mod.ts exports ${names.length} symbols, more than ${MAX_MAIN}: ${names.join(", ")}`,
    );
  });

  test("the Store port's types come from the store entry only, not the main entry", () => {
    const main = new Set(exported("mod.ts"));
    const port = exported("store/mod.ts");
    assert.ok(port.includes("Store") && port.includes("Objects") && port.includes("RawObject"));
    assert.deepEqual(port.filter((name) => main.has(name)), SHARED);
  });
}
