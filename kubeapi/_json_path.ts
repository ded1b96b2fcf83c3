/**
 * The JSONPath subset printer columns use: a field path from the object's
 * root, `.spec.replicas`, `.status.conditions[0].type`, as Kubernetes'
 * `additionalPrinterColumns` write it (with or without `{…}` around it).
 *
 * @module
 */

/** One step of a path: a member name or an array index. */
type Step = string | number;

const STEP = /\.([^.[\]{}]+)|\[(\d{1,9})\]/y;

/**
 * The steps of `path`, or `undefined` when it is outside the subset (filters,
 * wildcards, quoted names, recursive descent).
 */
export function parseJsonPath(path: string): Step[] | undefined {
  const inner = path.startsWith("{") && path.endsWith("}") ? path.slice(1, -1) : path;
  if (inner === "" || inner.length > 256) return undefined;
  const steps: Step[] = [];
  STEP.lastIndex = 0;
  while (STEP.lastIndex < inner.length) {
    const at = STEP.lastIndex;
    const m = STEP.exec(inner);
    if (m === null || m.index !== at) return undefined;
    steps.push(m[1] !== undefined ? m[1] : Number(m[2]));
  }
  return steps;
}

/** The value at `steps` in `value`, or `undefined` when any step is missing. */
export function readJsonPath(value: unknown, steps: readonly Step[]): unknown {
  let at = value;
  for (const step of steps) {
    if (typeof step === "number") {
      if (!Array.isArray(at)) return undefined;
      at = at[step];
    } else {
      if (typeof at !== "object" || at === null || Array.isArray(at)) return undefined;
      if (!Object.hasOwn(at, step)) return undefined;
      at = (at as Record<string, unknown>)[step];
    }
  }
  return at;
}
