/**
 * Which kinds the API serves and how they are named: today every kind the
 * store shows a trace of (as the CLI's `kinds` command finds them), served as
 * `<group>/v1`, resource = its plural, namespaced when its stored definition
 * says so. Its names (plural,
 * singular, short names) are the ones the CLI answers to: the stored kind
 * definition's, else derived from the kind (`namesOf`).
 *
 * @module
 */
import { type Beehive, type GroupKind, type StoredKind, StoreError } from "@beehive/beehive";
import type { Store } from "@beehive/beehive/store";
import { findKinds } from "../cli/_inspect.ts";
import { type KindNames, kindNames, namesOf } from "../cli/_kinds.ts";

/** The one version every kind is served at. */
export const VERSION = "v1";

/**
 * A kind as the API serves it: its names as the CLI knows them (`plural` is
 * the URL segment), and where it is served.
 */
export interface ServedKind extends KindNames {
  /** `<group>/v1`. */
  readonly apiVersion: string;
  /**
   * Whether its objects live in namespaces: its stored definition says
   * `namespaced: true` (a kind without one is cluster-scoped, as its clients
   * treat it).
   */
  readonly namespaced: boolean;
}

const DNS_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS_SUBDOMAIN = new RegExp(`^${DNS_LABEL}(\\.${DNS_LABEL})*$`);
const KIND = /^[A-Za-z][A-Za-z0-9]{0,62}$/;

/** Whether `group` can be an API group: a DNS subdomain of at most 253 characters. */
export function isGroupName(group: string): boolean {
  return group.length <= 253 && DNS_SUBDOMAIN.test(group);
}

/**
 * Serves the kind `names` names (by default the names derived from the kind),
 * or `undefined` when Kubernetes cannot name it (core group, or a kind or
 * group outside its syntax).
 */
export function serve(names: GroupKind | KindNames): ServedKind | undefined {
  const { group, kind } = names;
  // The core group belongs to /api/v1, whose names are Kubernetes' own.
  if (group === "" || !isGroupName(group) || !KIND.test(kind)) return undefined;
  const named = "plural" in names ? names : kindNames(names);
  return {
    group,
    kind,
    plural: named.plural,
    singular: named.singular,
    shortNames: named.shortNames,
    apiVersion: `${group}/${VERSION}`,
    namespaced: "namespaced" in names && names.namespaced === true,
  };
}

/**
 * The stored definition of `kind` (columns, schemas), read afresh, or
 * `undefined` when none is stored or it cannot be read: a definition another
 * tool corrupted serves the kind without columns or schemas rather than not
 * at all.
 */
export async function readDefinition(
  bh: Beehive,
  kind: GroupKind,
): Promise<StoredKind | undefined> {
  try {
    return await bh.adminClient(kind).getKind(kind);
  } catch (error) {
    if (error instanceof StoreError) return undefined;
    throw error;
  }
}

/**
 * Every served kind, sorted by group then kind. Two kinds of a group whose
 * plurals collide (`Foo`, `FOO`) are served once: the first by kind order.
 */
export async function listServedKinds(store: Store): Promise<ServedKind[]> {
  const out: ServedKind[] = [];
  const taken = new Set<string>();
  // Which kinds, not how many objects each holds: discovery counts nothing.
  const found = await namesOf(store, await findKinds(store));
  found.sort((a, b) => a.group.localeCompare(b.group) || a.kind.localeCompare(b.kind));
  for (const names of found) {
    const served = serve(names);
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
 * with no objects, its list is just empty). Listing always reads the store
 * and refreshes what a lookup answers (its scope among it).
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
    // Refreshed on every list: a definition stored since may have changed the kind's scope.
    for (const k of kinds) this.#known.set(`${k.group}/${k.plural}`, k);
    return kinds;
  }

  /**
   * The kind served as `plural` in `group`, or `undefined`; with `fresh`,
   * listed again first (its scope may have changed since it was read).
   */
  async find(group: string, plural: string, fresh = false): Promise<ServedKind | undefined> {
    if (!isGroupName(group)) return undefined;
    const key = `${group}/${plural}`;
    if (fresh || !this.#known.has(key)) await this.list();
    return this.#known.get(key);
  }
}
