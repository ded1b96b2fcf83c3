/**
 * Read-only views over the Store port shared by the CLI and the console:
 * kind labels, the kind listing, objects decoded for display, an object's
 * relations and the one-word summaries a table shows.
 *
 * @module
 */
import type { GroupKind, ObjectId, ObjectRef } from "@beehive/beehive";
import type { Store } from "@beehive/beehive/store";
import type { RawCondition, RawEvent, RawObject } from "@beehive/beehive/store";

/** `Kind.group`, or the bare kind in the core group. */
export function kindLabel(gk: GroupKind): string {
  return gk.group === "" ? gk.kind : `${gk.kind}.${gk.group}`;
}

/** Parses `Kind.group` (the group may hold dots; no dot is the core group); `undefined` when malformed. */
export function parseKind(label: string): GroupKind | undefined {
  const dot = label.indexOf(".");
  const kind = dot < 0 ? label : label.slice(0, dot);
  const group = dot < 0 ? "" : label.slice(dot + 1);
  if (kind === "" || (dot >= 0 && group === "")) return undefined;
  return { group, kind };
}

/** One kind and how many objects it holds. */
export interface KindSummary extends GroupKind {
  /** Live objects of the kind (deletion-pending included). */
  readonly objects: number;
}

const PAGE = 1_000;

/**
 * Every kind the store shows a trace of: stored kind definitions, kinds in the
 * retained write log, kinds with deletion-pending objects, and `extra`. A kind
 * never defined whose every write aged out of the log is found only through
 * `extra`. Unsorted; {@linkcode listKinds} adds counts and sorts.
 */
export async function findKinds(
  store: Store,
  extra: readonly GroupKind[] = [],
): Promise<GroupKind[]> {
  const found = new Map<string, GroupKind>();
  const note = (gk: GroupKind) => {
    const key = JSON.stringify([gk.group, gk.kind]);
    if (!found.has(key)) found.set(key, { group: gk.group, kind: gk.kind });
  };
  for (const gk of extra) note(gk);
  for (const k of await store.kinds.list()) note(k);
  for (const ref of await store.deletionRequests.list()) note(ref);
  let after = 0;
  for (;;) {
    const page = await store.objectWrites.listSinceAll({ after, limit: PAGE });
    for (const w of page.writes) note(w);
    if (page.writes.length < PAGE) break;
    after = page.writes[page.writes.length - 1].resourceVersion;
  }
  return [...found.values()];
}

/** {@linkcode findKinds} with each kind's object count, sorted by label. */
export async function listKinds(
  store: Store,
  extra: readonly GroupKind[] = [],
): Promise<KindSummary[]> {
  const out: KindSummary[] = [];
  for (const gk of await findKinds(store, extra)) {
    out.push({ ...gk, objects: (await store.objects.listIds(gk)).length });
  }
  return out.sort((a, b) => kindLabel(a).localeCompare(kindLabel(b)));
}

/** An object decoded for display: the Client's read shape, spec and status parsed. */
export interface ObjectView {
  readonly id: ObjectId;
  readonly group: string;
  readonly kind: string;
  readonly name: string;
  readonly spec: unknown;
  readonly status: unknown;
  /** The namespace; `""` for a cluster-scoped kind. */
  readonly namespace: string;
  readonly generation: number;
  readonly observedGeneration: number | undefined;
  readonly observedAt: Date | undefined;
  readonly resourceVersion: number;
  readonly deletionRequestedAt: Date | undefined;
  readonly finalizers: readonly string[];
  readonly conditions: readonly RawCondition[];
  readonly createdAt: Date;
  readonly updatedAt: Date;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

function parseJson(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** A raw row as an {@linkcode ObjectView}; JSON that does not parse shows as its text. */
export function toView(raw: RawObject): ObjectView {
  return {
    id: raw.id,
    group: raw.group,
    kind: raw.kind,
    name: raw.name,
    namespace: raw.namespace,
    spec: parseJson(raw.spec),
    status: parseJson(raw.status),
    generation: raw.generation,
    observedGeneration: raw.observedGeneration,
    observedAt: raw.observedAt,
    resourceVersion: raw.resourceVersion,
    deletionRequestedAt: raw.deletionRequestedAt,
    finalizers: [...raw.finalizers],
    conditions: raw.conditions.map((c) => ({ ...c })),
    createdAt: raw.createdAt,
    updatedAt: raw.updatedAt,
    labels: raw.labels,
    annotations: raw.annotations,
  };
}

/** An event run decoded for display. */
export interface EventView extends Omit<RawEvent, "detail"> {
  readonly detail: unknown;
}

/** A raw event run with its detail parsed. */
export function toEventView(raw: RawEvent): EventView {
  return { ...raw, detail: parseJson(raw.detail) };
}

/** A reference with the name it points at (`undefined` when the object is gone). */
export interface RefView extends ObjectRef {
  readonly name: string | undefined;
}

/** An object's relations and recent events. */
export interface Relations {
  readonly owner: RefView | undefined;
  readonly owned: RefView[];
  readonly dependencies: RefView[];
  readonly dependents: RefView[];
  readonly events: EventView[];
}

async function named(store: Store, refs: readonly ObjectRef[]): Promise<RefView[]> {
  const out: RefView[] = [];
  for (const ref of refs) {
    let name: string | undefined;
    try {
      name = (await store.objects.getMeta(ref.id)).name;
    } catch {
      name = undefined;
    }
    out.push({ id: ref.id, group: ref.group, kind: ref.kind, name });
  }
  return out;
}

/** Reads `id`'s owner, owned objects, dependencies, dependents and newest `eventLimit` event runs. */
export async function readRelations(
  store: Store,
  id: ObjectId,
  eventLimit = 20,
): Promise<Relations> {
  const [owner] = await named(store, await store.edges.listOutgoing(id, "owned_by"));
  return {
    owner,
    owned: await named(store, await store.edges.listIncoming({ toId: id, relation: "owned_by" })),
    dependencies: await named(store, await store.edges.listOutgoing(id, "depends_on")),
    dependents: await named(
      store,
      await store.edges.listIncoming({ toId: id, relation: "depends_on" }),
    ),
    events: (await store.events.list(id, { limit: eventLimit })).map(toEventView),
  };
}

/** The `Ready` condition's status, else `Stalled` when stalled, else `-`. */
export function readySummary(conditions: readonly RawCondition[]): string {
  const ready = conditions.find((c) => c.type === "Ready");
  if (ready !== undefined) return ready.unconfirmed ? "Unknown?" : ready.status;
  return "-";
}

/**
 * A one-word lifecycle state: Terminating, Stalled, Retrying (its last pass
 * failed and the controller retries it with backoff: a `Retrying=True`
 * condition), Pending (no pass has observed the object yet: no controller
 * runs its kind, or none has reached it), Reconciling (a pass observed an
 * older generation) or Settled.
 */
export function stateSummary(
  view: Pick<
    ObjectView,
    "deletionRequestedAt" | "conditions" | "observedGeneration" | "generation"
  >,
): string {
  if (view.deletionRequestedAt !== undefined) return "Terminating";
  if (view.conditions.some((c) => c.type === "Stalled" && c.status === "True")) return "Stalled";
  if (view.conditions.some((c) => c.type === "Retrying" && c.status === "True")) return "Retrying";
  if (view.observedGeneration === undefined) return "Pending";
  if (view.observedGeneration !== view.generation) return "Reconciling";
  return "Settled";
}

/** `generation/observed`, with `-` for never observed. */
export function generationSummary(
  view: Pick<ObjectView, "generation" | "observedGeneration">,
): string {
  return `${view.generation}/${view.observedGeneration ?? "-"}`;
}

/** A kubectl-style age: `42s`, `5m`, `3h`, `12d`. */
export function age(from: Date, now: number = Date.now()): string {
  const s = Math.max(0, Math.floor((now - from.getTime()) / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 120) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  return `${Math.floor(h / 24)}d`;
}

/**
 * `value` as JSON for a person to read: indented by two spaces, unless the
 * indentation would make it more than four times its compact size plus
 * 1 MiB (a deeply nested value grows quadratically when indented), when it
 * is printed compact. Either way the output is bounded by the value's size.
 */
export function prettyJson(value: unknown): string {
  const compact = JSON.stringify(value);
  if (compact === undefined) return "undefined";
  return indentedSize(compact) <= 4 * compact.length + 1_048_576
    ? JSON.stringify(value, null, 2)
    : compact;
}

/** The length `JSON.stringify(value, null, 2)` would have, from the compact text, in one pass. */
function indentedSize(compact: string): number {
  let size = compact.length;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < compact.length; i++) {
    const c = compact.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      const next = compact.charCodeAt(i + 1);
      if (next === 0x7d || next === 0x5d) {
        i++; // an empty container stays on its line
        continue;
      }
      depth++;
      size += 1 + 2 * depth;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
      size += 1 + 2 * depth;
    } else if (c === 0x2c) size += 1 + 2 * depth;
    else if (c === 0x3a) size += 1;
  }
  return size;
}
