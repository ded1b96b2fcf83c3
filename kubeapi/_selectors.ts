/**
 * Field and label selectors in Kubernetes syntax. Field selectors know
 * `metadata.name` and `metadata.namespace`; label selectors take the whole
 * grammar (`k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a)`, `k`, `!k`,
 * comma = AND) and match against an object's labels.
 *
 * @module
 */
import { KubeApiFailure } from "./_status.ts";
import { InvalidOptionError } from "@beehive/beehive";
import { matchesLabels, parseLabelSelector as parseSelector } from "../src/model/label_selector.ts";

/** A parsed selector: a predicate over what it selects on. */
export interface FieldSelector {
  /** The one name `metadata.name=` pins, if any: a list reads just that object. */
  readonly name: string | undefined;
  /** Whether an object with this name and namespace (`""`: cluster-scoped) is selected. */
  matches(fields: { name: string; namespace: string }): boolean;
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
    matches: ({ name, namespace }) =>
      terms.every((t) =>
        (t.field === "metadata.name" ? name : namespace) === t.value ? t.equal : !t.equal
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

/**
 * Parses `labelSelector` with the one selector parser (src/model/label_selector.ts).
 * @throws {KubeApiFailure} BadRequest: a requirement, key or value that does not parse.
 */
export function parseLabelSelector(text: string | undefined): LabelSelector {
  if (text === undefined) return () => true;
  let requirements;
  try {
    requirements = parseSelector(text)!;
  } catch (error) {
    if (error instanceof InvalidOptionError) throw bad(`invalid label selector: ${error.message}`);
    throw error;
  }
  return (labels) => matchesLabels(requirements, labels);
}
