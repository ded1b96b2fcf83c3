/**
 * HTML built by a tagged template that escapes every interpolated value unless
 * it is already {@linkcode Html}: markup from the store can only ever be text.
 *
 * @module
 */

/** A piece of markup that is already safe to emit. */
export class Html {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Escapes text for element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

function part(value: unknown): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(part).join("");
  if (value === undefined || value === null || value === false) return "";
  return escapeHtml(String(value));
}

/** `html\`<p>${text}</p>\``: interpolations are escaped; arrays are joined; `Html` passes through. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += part(values[i]) + strings[i + 1];
  return new Html(out);
}
