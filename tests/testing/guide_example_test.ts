/**
 * The worked example of the testing guide: runs `examples/testing/database_test.ts`
 * in the suite (on Deno and Node, as the guide says it runs), and checks the
 * guide quotes the example's two files as they are.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "../_test.ts";
import "../../examples/testing/database_test.ts";

const GUIDE = "docs/guides/16-testing-controllers.md";

/** `file` without its module comment: what the guide quotes. */
function quoted(file: string): string {
  const text = readFileSync(file, "utf8");
  const end = text.indexOf("@module\n */\n");
  assert.ok(end >= 0, `${file} has no module comment`);
  return text.slice(end + "@module\n */\n".length).trim();
}

test("the testing guide quotes examples/testing/ as the files are", () => {
  const guide = readFileSync(GUIDE, "utf8");
  for (const file of ["examples/testing/database.ts", "examples/testing/database_test.ts"]) {
    assert.ok(
      guide.includes(`\`\`\`ts ignore\n${quoted(file)}\n\`\`\``),
      `${GUIDE} quotes ${file}`,
    );
  }
});
