/**
 * Which kinds the API serves and how they are named: today every kind the
 * store shows a trace of (as the CLI's `kinds` command finds them), served as
 * `<group>/v1`, resource = the lowercased kind + `s`, cluster-scoped. The one
 * place that will read stored kind definitions once kinds are stored.
 *
 * @module
 */
import type { GroupKind, Store } from "@beehive/beehive";
import { listKinds } from "../cli/_inspect.ts";

/** The one version every kind is served at. */
export const VERSION = "v1";

/** A kind as the API serves it. */
export interface ServedKind extends GroupKind {
  /** `<group>/v1`. */
  readonly apiVersion: string;
  /** The URL segment: lowercased kind + `s`. */
  readonly plural: string;
  /** The lowercased kind. */
  readonly singular: string;
  /** Always `[]` until kinds are stored with theirs. */
  readonly shortNames: readonly string[];
  /** Always `false` until kinds can be namespaced. */
  readonly namespaced: boolean;
}

const DNS_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS_SUBDOMAIN = new RegExp(`^${DNS_LABEL}(\\.${DNS_LABEL})*$`);
const KIND = /^[A-Za-z][A-Za-z0-9]{0,62}$/;

/** Whether `group` can be an API group: a DNS subdomain of at most 253 characters. */
export function isGroupName(group: string): boolean {
  return group.length <= 253 && DNS_SUBDOMAIN.test(group);
}

/** Serves `gk`, or `undefined` when Kubernetes cannot name it (core group, or a kind or group outside its syntax). */
export function serve(gk: GroupKind): ServedKind | undefined {
  // The core group belongs to /api/v1, whose names are Kubernetes' own.
  if (gk.group === "" || !isGroupName(gk.group) || !KIND.test(gk.kind)) return undefined;
  const singular = gk.kind.toLowerCase();
  return {
    group: gk.group,
    kind: gk.kind,
    apiVersion: `${gk.group}/${VERSION}`,
    plural: `${singular}s`,
    singular,
    shortNames: [],
    namespaced: false,
  };
}

/**
 * Every served kind, sorted by group then kind. Two kinds of a group whose
 * plurals collide (`Foo`, `FOO`) are served once: the first by kind order.
 */
export async function listServedKinds(store: Store): Promise<ServedKind[]> {
  const out: ServedKind[] = [];
  const taken = new Set<string>();
  const found = await listKinds(store);
  found.sort((a, b) => a.group.localeCompare(b.group) || a.kind.localeCompare(b.kind));
  for (const gk of found) {
    const served = serve(gk);
    if (served === undefined) continue;
    const key = `${served.group}/${served.plural}`;
    if (taken.has(key)) continue;
    taken.add(key);
    out.push(served);
  }
  return out;
}

/**
 * The served kinds of one store, remembered: a lookup reads the store only
 * for a resource it has not served yet (a kind, once served, stays served —
 * with no objects, its list is just empty). Listing always reads the store.
 */
export class ServedKinds {
  readonly #store: Store;
  readonly #known = new Map<string, ServedKind>();

  constructor(store: Store) {
    this.#store = store;
  }

  /** Every served kind, read afresh. */
  async list(): Promise<ServedKind[]> {
    const kinds = await listServedKinds(this.#store);
    for (const k of kinds) {
      const key = `${k.group}/${k.plural}`;
      if (!this.#known.has(key)) this.#known.set(key, k);
    }
    return kinds;
  }

  /** The kind served as `plural` in `group`, or `undefined`. */
  async find(group: string, plural: string): Promise<ServedKind | undefined> {
    if (!isGroupName(group)) return undefined;
    const key = `${group}/${plural}`;
    if (!this.#known.has(key)) await this.list();
    return this.#known.get(key);
  }
}
