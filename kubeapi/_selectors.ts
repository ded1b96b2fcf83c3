/**
 * Field and label selectors in Kubernetes syntax. Field selectors know
 * `metadata.name` and `metadata.namespace`; label selectors take the whole
 * grammar (`k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a)`, `k`, `!k`,
 * comma = AND) and match against an object's labels.
 *
 * @module
 */
import { KubeApiFailure } from "./_status.ts";

/** A parsed selector: a predicate over what it selects on. */
export interface FieldSelector {
  /** The one name `metadata.name=` pins, if any: a list reads just that object. */
  readonly name: string | undefined;
  /** Whether an object with this name (and no namespace) is selected. */
  matches(fields: { name: string }): boolean;
}

/** A parsed label selector. */
export type LabelSelector = (labels: Readonly<Record<string, string>>) => boolean;

const FIELDS = new Set(["metadata.name", "metadata.namespace"]);

function bad(message: string): KubeApiFailure {
  return new KubeApiFailure("BadRequest", message);
}

/** A field selector value with its backslash escapes (`\,`, `\=`, `\\`) resolved. */
function unescapeValue(text: string): string {
  return text.replace(/\\(.)/gs, "$1");
}

/**
 * Parses `fieldSelector`.
 * @throws {KubeApiFailure} BadRequest: a term that does not parse, or a field this server cannot select on.
 */
export function parseFieldSelector(text: string | undefined): FieldSelector {
  const terms: { field: string; value: string; equal: boolean }[] = [];
  for (const raw of text === undefined || text.trim() === "" ? [] : splitTerms(text)) {
    const m = /^([^!=\s]+)\s*(==|=|!=)(.*)$/s.exec(raw.trim());
    if (m === null) throw bad(`invalid field selector term: ${JSON.stringify(raw)}`);
    if (!FIELDS.has(m[1])) throw bad(`field label not supported: ${m[1]}`);
    terms.push({ field: m[1], value: unescapeValue(m[3]), equal: m[2] !== "!=" });
  }
  const pinned = terms.filter((t) => t.field === "metadata.name" && t.equal).map((t) => t.value);
  return {
    name: pinned[0],
    matches: ({ name }) =>
      terms.every((t) =>
        (t.field === "metadata.name" ? name : "") === t.value ? t.equal : !t.equal
      ),
  };
}

/** Splits a field selector into its terms on commas outside escapes, keeping the escapes. */
function splitTerms(text: string): string[] {
  const out: string[] = [];
  let current = "";
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "\\" && i + 1 < text.length) {
      current += text[i] + text[++i];
    } else if (text[i] === ",") {
      out.push(current);
      current = "";
    } else current += text[i];
  }
  out.push(current);
  return out;
}

const KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

function checkKey(key: string): string {
  if (key.length > 317 || !KEY.test(key)) throw bad(`invalid label key: ${JSON.stringify(key)}`);
  return key;
}

function checkValue(value: string): string {
  if (value.length > 63 || !VALUE.test(value)) {
    throw bad(`invalid label value: ${JSON.stringify(value)}`);
  }
  return value;
}

/** Splits a label selector on commas outside parentheses. */
function splitRequirements(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of text) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (depth < 0) throw bad(`invalid label selector: unbalanced parenthesis`);
    if (ch === "," && depth === 0) {
      out.push(current);
      current = "";
    } else current += ch;
  }
  if (depth !== 0) throw bad(`invalid label selector: unbalanced parenthesis`);
  out.push(current);
  return out;
}

/**
 * Parses `labelSelector`.
 * @throws {KubeApiFailure} BadRequest: a requirement, key or value that does not parse.
 */
export function parseLabelSelector(text: string | undefined): LabelSelector {
  if (text === undefined || text.trim() === "") return () => true;
  const requirements: LabelSelector[] = splitRequirements(text).map((raw) => {
    const term = raw.trim();
    let m = /^([^\s!=()]+)\s+(in|notin)\s*\(([^()]*)\)$/.exec(term);
    if (m !== null) {
      const key = checkKey(m[1]);
      const values = new Set(m[3].split(",").map((v) => checkValue(v.trim())));
      const inSet = m[2] === "in";
      return (labels) => (key in labels && values.has(labels[key])) === inSet;
    }
    m = /^([^\s!=()]+)\s*(==|=|!=)\s*([^\s!=()]*)$/.exec(term);
    if (m !== null) {
      const key = checkKey(m[1]);
      const value = checkValue(m[3]);
      const equal = m[2] !== "!=";
      return (labels) => (labels[key] === value) === equal;
    }
    m = /^(!?)\s*([^\s!=()]+)$/.exec(term);
    if (m !== null) {
      const key = checkKey(m[2]);
      const exists = m[1] === "";
      return (labels) => (key in labels) === exists;
    }
    throw bad(`invalid label selector requirement: ${JSON.stringify(term)}`);
  });
  return (labels) => requirements.every((r) => r(labels));
}
