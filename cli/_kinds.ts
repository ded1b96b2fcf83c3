/**
 * How a person names a kind on the command line, as kubectl lets them: by
 * kind, plural, singular or short name, in any case, with or without its
 * group (`Worker.shop.example`, `workers`, `worker.shop.example`). A miss
 * is an error that suggests the nearest known name.
 *
 * @module
 */
import type { GroupKind } from "@beehive/beehive";
import type { Store } from "@beehive/beehive/store";
import { findKinds, kindLabel } from "./_inspect.ts";

/** The names a kind answers to. */
export interface KindNames extends GroupKind {
  /** The lowercased kind + `s`. */
  readonly plural: string;
  /** The lowercased kind. */
  readonly singular: string;
  /** `[]` until kinds are stored with their definitions (`defineKind({ shortNames })`). */
  readonly shortNames: readonly string[];
  /** Whether its stored definition says `namespaced: true` (absent: none stored, cluster-scoped). */
  readonly namespaced?: boolean;
}

/** The names a kind without a stored definition answers to: derived from the kind alone. */
export function kindNames(gk: GroupKind): KindNames {
  const singular = gk.kind.toLowerCase();
  return { group: gk.group, kind: gk.kind, plural: `${singular}s`, singular, shortNames: [] };
}

/** The names each of `kinds` answers to: its stored definition's, else derived ({@linkcode kindNames}). */
export async function namesOf(store: Store, kinds: readonly GroupKind[]): Promise<KindNames[]> {
  const key = (gk: GroupKind) => JSON.stringify([gk.group, gk.kind]);
  const stored = new Map<string, KindNames>();
  for (const k of await store.kinds.list()) stored.set(key(k), k);
  return kinds.map((gk) => {
    const k = stored.get(key(gk));
    return k === undefined ? kindNames(gk) : {
      group: k.group,
      kind: k.kind,
      plural: k.plural,
      singular: k.singular,
      shortNames: k.shortNames,
      namespaced: k.namespaced,
    };
  });
}

/** A kind that could not be resolved: the message names the input and suggests a near name. */
export class UnknownKindError extends Error {
  override readonly name = "UnknownKindError";
}

function answersTo(k: KindNames, name: string): boolean {
  const n = name.toLowerCase();
  return k.kind.toLowerCase() === n || k.plural === n || k.singular === n ||
    k.shortNames.some((s) => s.toLowerCase() === n);
}

/**
 * Resolves `input` against `known`: `name` alone matches a kind of any group,
 * `name.group` one of that group (both compared without case). An exact
 * `Kind.group` that is not in `known` resolves when `exists` says the store
 * holds objects of it (a kind the write log no longer shows).
 * @throws {UnknownKindError} Nothing matches, or a name without a group matches kinds of several groups.
 */
export async function resolveKind(
  input: string,
  known: readonly KindNames[],
  exists: (gk: GroupKind) => Promise<boolean>,
): Promise<GroupKind> {
  const candidates: { name: string; group: string | undefined }[] = [{
    name: input,
    group: undefined,
  }];
  for (let dot = input.indexOf("."); dot > 0; dot = input.indexOf(".", dot + 1)) {
    candidates.push({ name: input.slice(0, dot), group: input.slice(dot + 1) });
  }
  for (const c of candidates) {
    const matches = known.filter((k) =>
      answersTo(k, c.name) &&
      (c.group === undefined || k.group.toLowerCase() === c.group.toLowerCase())
    );
    const exact = matches.filter((k) => k.kind === c.name);
    const pick = exact.length === 1 ? exact : matches;
    if (pick.length === 1) return { group: pick[0].group, kind: pick[0].kind };
    if (pick.length > 1) {
      throw new UnknownKindError(
        `kind ${JSON.stringify(input)} is ambiguous: it names ${
          pick.map(kindLabel).join(", ")
        }; name one with its group`,
      );
    }
  }
  const dot = input.indexOf(".");
  if (dot > 0 && dot < input.length - 1) {
    const gk = { group: input.slice(dot + 1), kind: input.slice(0, dot) };
    if (await exists(gk)) return gk;
  }
  throw new UnknownKindError(unknownMessage(input, known));
}

function unknownMessage(input: string, known: readonly KindNames[]): string {
  const head = `unknown kind ${JSON.stringify(input)}`;
  if (known.length === 0) return `${head}: the store holds no kinds yet`;
  const near = nearest(input, known);
  if (near !== undefined) return `${head}; did you mean ${kindLabel(near)}?`;
  const some = known.slice(0, 5).map(kindLabel).join(", ");
  return `${head}; known kinds: ${some}${known.length > 5 ? ", …" : ""} (beehive <store> kinds)`;
}

/** The kind whose label or names are nearest `input` by edit distance, within a third of its length. */
function nearest(input: string, known: readonly KindNames[]): KindNames | undefined {
  const n = input.toLowerCase();
  const budget = Math.max(2, Math.floor(n.length / 3));
  let best: { k: KindNames; d: number } | undefined;
  for (const k of known) {
    for (const name of [kindLabel(k), k.kind, k.plural, ...k.shortNames]) {
      const d = editDistance(n, name.toLowerCase(), budget);
      if (d <= budget && (best === undefined || d < best.d)) best = { k, d };
    }
  }
  return best?.k;
}

/** Levenshtein distance, or `budget + 1` once it is known to exceed `budget`. */
export function editDistance(a: string, b: string, budget = Infinity): number {
  if (Math.abs(a.length - b.length) > budget) return budget + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let low = i;
    for (let j = 1; j <= b.length; j++) {
      const v = Math.min(
        prev[j] + 1,
        row[j - 1] + 1,
        prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      row.push(v);
      if (v < low) low = v;
    }
    if (low > budget) return budget + 1;
    prev = row;
  }
  return prev[b.length];
}

/**
 * Resolves `input` against the kinds `store` shows a trace of. An exact
 * `Kind.group` with objects resolves at once, without reading the kinds.
 */
export async function resolveStoreKind(store: Store, input: string): Promise<GroupKind> {
  // A kind no client may name (above a field limit) holds nothing.
  const exists = (gk: GroupKind) =>
    store.objects.list(gk, { limit: 1 }).then((page) => page.length > 0, () => false);
  const dot = input.indexOf(".");
  if (dot > 0 && dot < input.length - 1) {
    const exact = { group: input.slice(dot + 1), kind: input.slice(0, dot) };
    if (await exists(exact)) return exact;
  }
  const known = (await namesOf(store, await findKinds(store)))
    .sort((a, b) => kindLabel(a).localeCompare(kindLabel(b)));
  return await resolveKind(input, known, exists);
}
