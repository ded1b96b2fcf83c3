/**
 * Label selectors in Kubernetes' two spellings — the string syntax
 * (`app=web,tier!=db,env in (prod,staging),!legacy`) and the object form
 * (`{ matchLabels, matchExpressions }`) — parsed into one list of
 * requirements, all of which an object's labels must meet.
 *
 * @module
 */
import { InvalidOptionError } from "./errors.ts";
import { keyProblem, type Labels, labelValueProblem } from "./labels.ts";
import { describe, quote } from "./_values.ts";
import type { LabelRequirement, LabelSelectorOperator } from "../store.ts";

export type { LabelRequirement, LabelSelectorOperator } from "../store.ts";

/** One expression of a selector's object form. */
export interface LabelSelectorExpression {
  /** The label key. */
  readonly key: string;
  /** `"In"`, `"NotIn"`, `"Exists"` or `"DoesNotExist"`. */
  readonly operator: LabelSelectorOperator;
  /** The values: non-empty for `In`/`NotIn`, absent or empty otherwise. @default {[]} */
  readonly values?: readonly string[];
}

/** A selector's object form: every entry of `matchLabels` and every expression must hold. */
export interface LabelSelectorObject {
  /** Labels an object must carry with exactly these values. @default {{}} */
  readonly matchLabels?: Readonly<Record<string, string>>;
  /** Further requirements. @default {[]} */
  readonly matchExpressions?: readonly LabelSelectorExpression[];
}

/**
 * A label selector: Kubernetes' string syntax (`app=web`, `app==web`,
 * `tier!=db`, `env in (prod,staging)`, `env notin (dev)`, `team`, `!legacy`;
 * a comma is AND) or its object form. `""` and `{}` select everything.
 */
export type LabelSelector = string | LabelSelectorObject;

/** The most characters a selector string may have. */
export const SELECTOR_CHARS = 8192;
/** The most requirements one selector may hold. */
export const SELECTOR_REQUIREMENTS = 64;
/** The most values one `in`/`notin` requirement may list. */
export const SELECTOR_VALUES = 256;

const OPERATORS = new Set<string>(["In", "NotIn", "Exists", "DoesNotExist"]);
// A run of these makes a key or a value token; everything else is syntax or space.
const WORD = /[^\s,=!()]/;

function bad(selector: string, why: string): InvalidOptionError {
  return new InvalidOptionError(`Cannot use labelSelector ${quote(selector)}: ${why}`);
}

function checkKey(selector: string, key: string): void {
  const why = keyProblem(key);
  if (why !== undefined) throw bad(selector, `the key ${quote(key)} is malformed: ${why}`);
}

function checkValue(selector: string, value: string): void {
  const why = labelValueProblem(value);
  if (why !== undefined) throw bad(selector, `the value ${quote(value)} is malformed: ${why}`);
}

function bound(selector: string, reqs: LabelRequirement[]): LabelRequirement[] {
  if (reqs.length > SELECTOR_REQUIREMENTS) {
    throw bad(selector, `it has ${reqs.length} requirements, above ${SELECTOR_REQUIREMENTS}`);
  }
  for (const r of reqs) {
    if (r.values.length > SELECTOR_VALUES) {
      throw bad(
        selector,
        `${quote(r.key)} lists ${r.values.length} values, above ${SELECTOR_VALUES}`,
      );
    }
  }
  return reqs;
}

/** Parses the string syntax. */
function parseText(text: string): LabelRequirement[] {
  if (text.length > SELECTOR_CHARS) {
    throw new InvalidOptionError(
      `Cannot use labelSelector: it is ${text.length} characters, above ${SELECTOR_CHARS}`,
    );
  }
  let i = 0;
  const space = () => {
    while (i < text.length && /\s/.test(text[i])) i++;
  };
  const word = () => {
    const start = i;
    while (i < text.length && WORD.test(text[i])) i++;
    return text.slice(start, i);
  };
  const where = () => i < text.length ? `at ${quote(text.slice(i, i + 16))}` : "at the end";
  const reqs: LabelRequirement[] = [];
  space();
  if (i === text.length) return reqs;
  for (;;) {
    space();
    if (text[i] === "!") {
      i++;
      space();
      const key = word();
      if (key === "") throw bad(text, `expected a label key after '!' ${where()}`);
      checkKey(text, key);
      reqs.push({ key, operator: "DoesNotExist", values: [] });
    } else {
      const key = word();
      if (key === "") throw bad(text, `expected a label key ${where()}`);
      checkKey(text, key);
      space();
      if (i === text.length || text[i] === ",") {
        reqs.push({ key, operator: "Exists", values: [] });
      } else if (text.startsWith("!=", i) || text[i] === "=") {
        const operator = text[i] === "!" ? "NotIn" : "In";
        i += text.startsWith("==", i) || text[i] === "!" ? 2 : 1;
        space();
        const value = word();
        checkValue(text, value);
        reqs.push({ key, operator, values: [value] });
      } else {
        const op = word();
        if (op !== "in" && op !== "notin") {
          throw bad(
            text,
            `expected '=', '==', '!=', 'in' or 'notin' after ${quote(key)} ${where()}`,
          );
        }
        space();
        if (text[i] !== "(") throw bad(text, `expected '(' after ${op} ${where()}`);
        i++;
        const values: string[] = [];
        for (;;) {
          space();
          const value = word();
          checkValue(text, value);
          values.push(value);
          space();
          if (text[i] === ",") {
            i++;
            continue;
          }
          if (text[i] === ")") break;
          throw bad(text, `expected ',' or ')' in the values of ${quote(key)} ${where()}`);
        }
        i++;
        if (values.length === 1 && values[0] === "") {
          throw bad(text, `${op} on ${quote(key)} needs at least one value`);
        }
        reqs.push({ key, operator: op === "in" ? "In" : "NotIn", values: [...new Set(values)] });
      }
    }
    space();
    if (i === text.length) break;
    if (text[i] !== ",") throw bad(text, `expected ',' between requirements ${where()}`);
    i++;
  }
  return bound(text, reqs);
}

/** Checks the object form. */
function parseObject(selector: LabelSelectorObject): LabelRequirement[] {
  const shown = "{ matchLabels, matchExpressions }";
  const { matchLabels, matchExpressions } = selector;
  const reqs: LabelRequirement[] = [];
  if (matchLabels !== undefined) {
    if (typeof matchLabels !== "object" || matchLabels === null || Array.isArray(matchLabels)) {
      throw bad(shown, `matchLabels is ${describe(matchLabels)}, expected an object of strings`);
    }
    for (const key of Object.keys(matchLabels)) {
      const value = (matchLabels as Record<string, unknown>)[key];
      checkKey(shown, key);
      if (typeof value !== "string") {
        throw bad(shown, `matchLabels[${quote(key)}] is ${describe(value)}, expected a string`);
      }
      checkValue(shown, value);
      reqs.push({ key, operator: "In", values: [value] });
    }
  }
  if (matchExpressions !== undefined) {
    if (!Array.isArray(matchExpressions)) {
      throw bad(shown, `matchExpressions is ${describe(matchExpressions)}, expected an array`);
    }
    for (const e of matchExpressions as unknown[]) {
      if (typeof e !== "object" || e === null) {
        throw bad(shown, `an expression is ${describe(e)}, expected { key, operator, values? }`);
      }
      const { key, operator, values } = e as Record<string, unknown>;
      if (typeof key !== "string") throw bad(shown, `an expression's key is ${describe(key)}`);
      checkKey(shown, key);
      if (typeof operator !== "string" || !OPERATORS.has(operator)) {
        throw bad(
          shown,
          `the operator of ${quote(key)} is ${
            describe(operator)
          }, expected "In", "NotIn", "Exists" or "DoesNotExist"`,
        );
      }
      const list = values ?? [];
      if (!Array.isArray(list) || !list.every((v) => typeof v === "string")) {
        throw bad(shown, `the values of ${quote(key)} are ${describe(values)}, expected strings`);
      }
      const set = operator === "In" || operator === "NotIn";
      if (set && list.length === 0) {
        throw bad(shown, `${operator} on ${quote(key)} needs at least one value`);
      }
      if (!set && list.length > 0) {
        throw bad(shown, `${operator} on ${quote(key)} takes no values`);
      }
      for (const v of list) checkValue(shown, v);
      reqs.push({ key, operator: operator as LabelSelectorOperator, values: [...new Set(list)] });
    }
  }
  return bound(shown, reqs);
}

/**
 * Parses a selector in either spelling into its requirements (`[]` selects
 * everything); `undefined` reads as no selector.
 * @throws {InvalidOptionError} the selector is malformed or above its bounds.
 */
export function parseLabelSelector(
  selector: unknown,
): readonly LabelRequirement[] | undefined {
  if (selector === undefined) return undefined;
  if (typeof selector === "string") return parseText(selector);
  if (typeof selector === "object" && selector !== null && !Array.isArray(selector)) {
    return parseObject(selector as LabelSelectorObject);
  }
  throw new InvalidOptionError(
    `Cannot use labelSelector: current value is ${
      describe(selector)
    }, expected a string or { matchLabels, matchExpressions }`,
  );
}

/** Whether `labels` meet every requirement. */
export function matchesLabels(reqs: readonly LabelRequirement[], labels: Labels): boolean {
  for (const r of reqs) {
    const has = Object.hasOwn(labels, r.key);
    switch (r.operator) {
      case "In":
        if (!has || !r.values.includes(labels[r.key])) return false;
        break;
      case "NotIn":
        if (has && r.values.includes(labels[r.key])) return false;
        break;
      case "Exists":
        if (!has) return false;
        break;
      case "DoesNotExist":
        if (has) return false;
        break;
    }
  }
  return true;
}
