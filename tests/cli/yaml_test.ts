/**
 * The CLI's YAML emitter: block layout as kubectl prints it, and strings that
 * would read back as something else (numbers, booleans, null, indicators,
 * control characters, lone surrogates) quoted.
 *
 * @module
 */
import assert from "node:assert/strict";
import { FLOW_DEPTH, toYaml, yamlString } from "../../cli/_yaml.ts";
import { test } from "../_test.ts";

test("toYaml writes maps, sequences and nested collections in block style", () => {
  assert.equal(
    toYaml({ a: 1, b: [true, null, { c: "x", d: [] }], e: {}, f: [[1, 2], "z"] }),
    "a: 1\nb:\n- true\n- null\n- c: x\n  d: []\ne: {}\nf:\n- - 1\n  - 2\n- z\n",
  );
  assert.equal(toYaml("plain"), "plain\n");
  assert.equal(toYaml([]), "[]\n");
});

test("yamlString quotes every string that would read back as another value or break the layout", () => {
  const quoted = [
    "",
    " lead",
    "trail ",
    "1.0",
    "0x10",
    "1e3",
    ".5",
    ".nan",
    "true",
    "False",
    "yes",
    "off",
    "Y",
    "null",
    "~",
    "2024-01-01",
    "- dash",
    "a: b",
    "a:",
    "a #c",
    "#x",
    "@at",
    "`tick",
    "%pct",
    "!bang",
    "&anchor",
    "*alias",
    "|pipe",
    ">fold",
    "{x}",
    "[x]",
    ",c",
    "?q",
    "'sq",
    "=",
    "<<",
    "http://a.b/c",
  ];
  for (const s of quoted) assert.equal(yamlString(s), JSON.stringify(s), s);
  for (const s of ["Ready", "plain text", "a/b.c", "Worker_1", "x-y"]) {
    assert.equal(yamlString(s), s);
  }
});

test("yamlString escapes control characters, line separators and lone surrogates", () => {
  assert.equal(yamlString('multi\nline\t"q"\\'), '"multi\\nline\\t\\"q\\"\\\\"');
  assert.equal(yamlString("\u0000\u001b[2J\u007f\u0085"), '"\\u0000\\u001b[2J\\u007f\\u0085"');
  assert.equal(yamlString("a\u2028b\ufeff"), '"a\\u2028b\\ufeff"');
  assert.equal(yamlString("lone \ud800 x"), '"lone \\uFFFD x"');
  assert.equal(yamlString("😀 ünï"), '"😀 ünï"');
});

test("toYaml writes a value nested deeper than FLOW_DEPTH on one line, bounding the output", () => {
  const deep = JSON.parse("[".repeat(200) + "1" + "]".repeat(200));
  const out = toYaml(deep);
  assert.ok(out.length < 200 * 2 + FLOW_DEPTH * FLOW_DEPTH * 4, `bounded: ${out.length}`);
  assert.ok(out.includes("[".repeat(200 - FLOW_DEPTH)));
  assert.deepEqual(toYaml({ k: "a: b" }), '"k": "a: b"\n'.replace('"k"', "k"));
});
