/**
 * A YAML emitter for JSON values, for `-o yaml`: block style, two-space
 * indentation, and a string left plain only when it cannot be read back as
 * anything else (a number, a boolean, null, a date, an indicator); every other
 * string is double-quoted with escapes. Deep nesting is bounded: a value
 * below {@linkcode FLOW_DEPTH} levels is written as flow JSON, itself YAML.
 *
 * @module
 */

/** The depth from which a value is written on one line, in flow style. */
export const FLOW_DEPTH = 32;

/** `value` (a JSON value: what `JSON.parse` returns) as a YAML document, ending with a newline. */
export function toYaml(value: unknown): string {
  const lines: string[] = [];
  emit(value, 0, lines, "");
  return lines.join("\n") + "\n";
}

/** A string that reads back as itself when written plain. Conservative: anything unusual is quoted. */
const PLAIN = /^[A-Za-z_/][A-Za-z0-9_ ./()+=@-]*$/;
/** Plain words YAML 1.1 or 1.2 reads as booleans or null. */
const RESERVED = /^(?:y|n|yes|no|true|false|on|off|null|~)$/i;

/** `text` as a YAML scalar: plain when safe, else double-quoted. */
export function yamlString(text: string): string {
  if (PLAIN.test(text) && !RESERVED.test(text) && !text.endsWith(" ") && !/[:#]/.test(text)) {
    return text;
  }
  return quote(text);
}

/** A double-quoted YAML scalar: JSON's escapes plus every character YAML may not print raw. */
function quote(text: string): string {
  let out = '"';
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const ch = text[i];
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\r") out += "\\r";
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        out += text.slice(i, i + 2);
        i++;
      } else out += "\\uFFFD"; // a lone surrogate has no YAML form
    } else if (c >= 0xd800 && c <= 0xdfff) out += "\\uFFFD";
    else if (
      c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x2028 || c === 0x2029 || c === 0xfeff ||
      c === 0xfffe || c === 0xffff
    ) out += `\\u${c.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return out + '"';
}

function scalar(value: unknown): string | undefined {
  if (value === null || value === undefined) return "null";
  if (typeof value === "boolean") return String(value);
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : "null";
  if (typeof value === "string") return yamlString(value);
  if (Array.isArray(value) && value.length === 0) return "[]";
  if (typeof value === "object" && Object.keys(value).length === 0) return "{}";
  return undefined;
}

/** Appends `value`'s lines at `indent`; `lead` is what the first line starts with (`- ` or `key: `). */
function emit(value: unknown, depth: number, lines: string[], indent: string): void {
  const s = scalar(value);
  if (s !== undefined) {
    lines.push(indent + s);
    return;
  }
  if (depth >= FLOW_DEPTH) {
    lines.push(indent + JSON.stringify(value));
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) item1(item, depth, lines, indent, `${indent}- `);
    return;
  }
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    item1(item, depth, lines, indent, `${indent}${yamlString(key)}:`);
  }
}

function item1(value: unknown, depth: number, lines: string[], indent: string, head: string) {
  const isEntry = head.endsWith(":");
  const s = scalar(value);
  if (s !== undefined) {
    lines.push(`${head}${isEntry ? " " : ""}${s}`);
    return;
  }
  if (depth + 1 >= FLOW_DEPTH) {
    lines.push(`${head}${isEntry ? " " : ""}${JSON.stringify(value)}`);
    return;
  }
  if (isEntry) {
    lines.push(head);
    // A sequence under a key sits at the key's indentation, as kubectl writes it.
    emit(value, depth + 1, lines, Array.isArray(value) ? indent : `${indent}  `);
    return;
  }
  // A collection in a sequence starts on the dash's line.
  const inner: string[] = [];
  emit(value, depth + 1, inner, `${indent}  `);
  inner[0] = head + inner[0].slice(indent.length + 2);
  lines.push(...inner);
}
