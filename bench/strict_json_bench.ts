/**
 * The cost of strict JSON: `encodeJson` (a finiteness walk, then plain
 * `JSON.stringify`; the path-tracking replacer only for values that are not
 * plain data) beside plain `JSON.stringify`, on a small spec, a wide one and
 * one large string.
 *
 * Run with `deno bench -A bench/strict_json_bench.ts`.
 *
 * @module
 */
import { encodeJson } from "../src/model/_codec.ts";

const small = { replicas: 3, image: "nginx:1.27", labels: { app: "web", tier: "std" } };
const wide = {
  items: Array.from({ length: 20_000 }, (_, i) => ({ i, name: `item-${i}`, ok: true })),
};
const text = { blob: "x".repeat(1_000_000) };
const dated = {
  items: Array.from({ length: 2_000 }, (_, i) => ({ i, at: new Date(i) })),
};

for (
  const [group, value] of [["small", small], ["wide", wide], ["text", text], [
    "dated",
    dated,
  ]] as const
) {
  Deno.bench(`JSON.stringify ${group}`, { group, baseline: true }, () => {
    JSON.stringify(value);
  });
  Deno.bench(`encodeJson ${group}`, { group }, () => {
    encodeJson(value, "spec");
  });
}
