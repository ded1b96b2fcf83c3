/**
 * Label selectors: the string syntax and the object form parse into one list
 * of requirements, and match labels as Kubernetes does.
 *
 * @module
 */
import assert from "node:assert/strict";
import { InvalidOptionError } from "../mod.ts";
import { matchesLabels, parseLabelSelector } from "../src/model/label_selector.ts";
import { test } from "./_test.ts";

test("parseLabelSelector reads every operator of the string syntax, comma as AND, spaces anywhere", () => {
  assert.deepEqual(
    parseLabelSelector(
      " app=web , app.kubernetes.io/name == shop,tier!=db, env in (prod, staging) ,env notin(dev),team,! legacy",
    ),
    [
      { key: "app", operator: "In", values: ["web"] },
      { key: "app.kubernetes.io/name", operator: "In", values: ["shop"] },
      { key: "tier", operator: "NotIn", values: ["db"] },
      { key: "env", operator: "In", values: ["prod", "staging"] },
      { key: "env", operator: "NotIn", values: ["dev"] },
      { key: "team", operator: "Exists", values: [] },
      { key: "legacy", operator: "DoesNotExist", values: [] },
    ],
  );
  assert.deepEqual(parseLabelSelector(""), []);
  assert.deepEqual(parseLabelSelector("   "), []);
  assert.deepEqual(parseLabelSelector("app="), [{ key: "app", operator: "In", values: [""] }]);
  assert.equal(parseLabelSelector(undefined), undefined);
});

test("parseLabelSelector reads the object form, matchLabels before matchExpressions", () => {
  assert.deepEqual(
    parseLabelSelector({
      matchLabels: { app: "web" },
      matchExpressions: [
        { key: "env", operator: "In", values: ["prod", "prod", "qa"] },
        { key: "legacy", operator: "DoesNotExist" },
      ],
    }),
    [
      { key: "app", operator: "In", values: ["web"] },
      { key: "env", operator: "In", values: ["prod", "qa"] },
      { key: "legacy", operator: "DoesNotExist", values: [] },
    ],
  );
  assert.deepEqual(parseLabelSelector({}), []);
});

test("parseLabelSelector rejects a malformed selector with InvalidOptionError naming what is wrong", () => {
  const bad: [unknown, RegExp][] = [
    ["app in web", /expected '\('/],
    ["app in (web", /expected ',' or '\)'/],
    ["app in ()", /at least one value/],
    ["=web", /expected a label key/],
    ["app=web,", /expected a label key/],
    ["app=web,,tier=db", /expected a label key/],
    ["app web", /expected '='/],
    ["app > 5", /expected '='/],
    ["app=web tier=db", /expected ','/],
    ["!", /after '!'/],
    ["!app=web", /expected ','/],
    ["Bad.Prefix/app=web", /key "Bad.Prefix\/app" is malformed/],
    ["app=bad value", /expected ','/],
    ["app=-web", /value "-web" is malformed/],
    [`app=${"v".repeat(64)}`, /above 63/],
    ["x".repeat(8193), /above 8192/],
    [Array.from({ length: 65 }, (_, i) => `k${i}`).join(","), /65 requirements, above 64/],
    [`app in (${Array.from({ length: 257 }, (_, i) => `v${i}`).join(",")})`, /257 values/],
    [5, /expected a string or/],
    [null, /expected a string or/],
    [["app"], /expected a string or/],
    [{ matchLabels: { app: 5 } }, /matchLabels\["app"\]/],
    [{ matchLabels: "app=web" }, /matchLabels is/],
    [{ matchExpressions: [{ key: "app", operator: "Equals" }] }, /operator of "app"/],
    [{ matchExpressions: [{ key: "app", operator: "In" }] }, /at least one value/],
    [{ matchExpressions: [{ key: "app", operator: "Exists", values: ["x"] }] }, /takes no values/],
    [{ matchExpressions: [{ key: "bad key", operator: "Exists" }] }, /"bad key" is malformed/],
    [{ matchExpressions: {} }, /expected an array/],
  ];
  for (const [selector, message] of bad) {
    assert.throws(() => parseLabelSelector(selector), (e: unknown) => {
      assert.ok(e instanceof InvalidOptionError, String(selector));
      assert.match(e.message, message, String(selector).slice(0, 40));
      return true;
    });
  }
});

test("matchesLabels: In needs the label with a listed value; NotIn and DoesNotExist match its absence", () => {
  const match = (selector: string, labels: Record<string, string>) =>
    matchesLabels(parseLabelSelector(selector)!, labels);
  const web = { app: "web", env: "prod" };
  assert.equal(match("app=web", web), true);
  assert.equal(match("app=web", {}), false);
  assert.equal(match("app!=web", {}), true);
  assert.equal(match("app!=web", web), false);
  assert.equal(match("env in (qa,prod)", web), true);
  assert.equal(match("env notin (qa,prod)", web), false);
  assert.equal(match("env notin (qa,prod)", { app: "web" }), true);
  assert.equal(match("app,!legacy", web), true);
  assert.equal(match("app,!legacy", { ...web, legacy: "" }), false);
  assert.equal(match("app=web,env=qa", web), false);
  assert.equal(match("", {}), true);
  // An inherited property is not a label.
  assert.equal(match("toString", {}), false);
});
