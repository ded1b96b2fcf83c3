/**
 * Beehive events as core/v1 `Event`s: `GET /api/v1/events` and
 * `/api/v1/namespaces/<ns>/events` (an event is in its object's namespace;
 * a cluster-scoped object's events in namespace `default`, where Kubernetes
 * keeps them), with the
 * `involvedObject.*` field selectors `kubectl describe` sends. Answered as an
 * `EventList`, or a Table for `kubectl get events`.
 *
 * @module
 */
import type { RawEvent } from "@beehive/beehive/store";
import { age } from "../cli/_inspect.ts";
import type { KubeContext } from "./_context.ts";
import type { ServedKind } from "./_kinds.ts";
import type { AnyObject } from "./_objects.ts";
import { rfc3339 } from "./_objects.ts";
import { includeObjectParam, MAX_PAGE, negotiate, param } from "./_request.ts";
import { jsonResponse, KubeApiFailure } from "./_status.ts";
import { type Column, type IncludeObject, table, tableType } from "./_tables.ts";

/** The namespace events of cluster-scoped objects are served in. */
export const EVENTS_NAMESPACE = "default";
/** The most events one list answers (a list of every object's events stops there). */
export const MAX_EVENTS = 1000;

const SELECTABLE = new Set([
  "involvedObject.name",
  "involvedObject.namespace",
  "involvedObject.kind",
  "involvedObject.uid",
  "involvedObject.apiVersion",
  "involvedObject.resourceVersion",
  "involvedObject.fieldPath",
  "metadata.name",
  "metadata.namespace",
  "reason",
  "type",
]);

const COLUMNS: readonly Column[] = [
  {
    name: "Last Seen",
    type: "string",
    format: "",
    description: "When the event last occurred.",
    priority: 0,
  },
  { name: "Type", type: "string", format: "", description: "Normal or Warning.", priority: 0 },
  {
    name: "Reason",
    type: "string",
    format: "",
    description: "Why the event was recorded.",
    priority: 0,
  },
  {
    name: "Object",
    type: "string",
    format: "",
    description: "The object the event is about.",
    priority: 0,
  },
  { name: "Message", type: "string", format: "", description: "What happened.", priority: 0 },
  { name: "Name", type: "string", format: "name", description: "The event's name.", priority: 1 },
];

/** The `events` entry of the core/v1 discovery document. */
export const EVENTS_RESOURCE = {
  name: "events",
  singularName: "event",
  namespaced: true,
  kind: "Event",
  verbs: ["get", "list", "watch"],
  shortNames: ["ev"],
} as const;

/** A checked event field selector: each field's terms. */
export type Fields = Map<string, { value: string; equal: boolean }[]>;

function parseSelector(text: string | undefined): Fields {
  const fields: Fields = new Map();
  if (text === undefined || text.trim() === "") return fields;
  for (const raw of text.split(/(?<!\\),/)) {
    const m = /^([^!=\s]+)\s*(==|=|!=)(.*)$/s.exec(raw.trim());
    if (m === null) {
      throw new KubeApiFailure("BadRequest", `invalid field selector term: ${JSON.stringify(raw)}`);
    }
    if (!SELECTABLE.has(m[1])) {
      throw new KubeApiFailure("BadRequest", `field label not supported: ${m[1]}`);
    }
    const terms = fields.get(m[1]) ?? [];
    terms.push({ value: m[3].replace(/\\(.)/gs, "$1"), equal: m[2] !== "!=" });
    fields.set(m[1], terms);
  }
  return fields;
}

/** The event's name: its object's name and the run's id, as Kubernetes names events. */
function eventName(obj: AnyObject, ev: RawEvent): string {
  return `${obj.name}.${ev.id.toString(16).padStart(16, "0")}`;
}

function toEvent(kind: ServedKind, obj: AnyObject, ev: RawEvent): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: {
      name: eventName(obj, ev),
      namespace: ev.namespace === "" ? EVENTS_NAMESPACE : ev.namespace,
      uid: `event-${ev.id}`,
      resourceVersion: String(ev.resourceVersion),
      creationTimestamp: rfc3339(ev.firstAt),
    },
    involvedObject: {
      apiVersion: kind.apiVersion,
      kind: kind.kind,
      name: obj.name,
      ...(ev.namespace === "" ? {} : { namespace: ev.namespace }),
      uid: String(obj.id),
      resourceVersion: String(obj.resourceVersion),
      ...(ev.category === "" ? {} : { fieldPath: ev.category }),
    },
    reason: ev.reason,
    message: ev.message,
    type: ev.type,
    count: ev.count,
    firstTimestamp: rfc3339(ev.firstAt),
    lastTimestamp: rfc3339(ev.lastAt),
    source: { component: "beehive" },
    reportingComponent: "beehive",
    reportingInstance: "",
  };
}

function matches(fields: Fields, event: Record<string, unknown>): boolean {
  const get = (path: string): string => {
    let at: unknown = event;
    for (const key of path.split(".")) at = (at as Record<string, unknown> | undefined)?.[key];
    return at === undefined ? "" : String(at);
  };
  for (const [field, terms] of fields) {
    // A cluster-scoped object's involvedObject.namespace is absent, which selects as "".
    const value = get(field);
    if (!terms.every((t) => (value === t.value) === t.equal)) return false;
  }
  return true;
}

const pinned = (fields: Fields, name: string) => fields.get(name)?.find((t) => t.equal)?.value;

/**
 * The objects whose events may match `fields` in `namespace` (`undefined`:
 * every namespace): the pinned one when the selector names it (and, for a
 * namespaced kind, its namespace), else all.
 */
async function* candidates(
  ctx: KubeContext,
  fields: Fields,
  namespace: string | undefined,
): AsyncGenerator<{ kind: ServedKind; obj: AnyObject }> {
  const kindName = pinned(fields, "involvedObject.kind");
  const name = pinned(fields, "involvedObject.name");
  const kinds = (await ctx.kinds.list()).filter((k) =>
    kindName === undefined || k.kind === kindName
  );
  for (const kind of kinds) {
    // A cluster-scoped object's events are in `default` only.
    if (!kind.namespaced && namespace !== undefined && namespace !== EVENTS_NAMESPACE) continue;
    const objectNamespace = kind.namespaced
      ? namespace ?? pinned(fields, "involvedObject.namespace")
      : undefined;
    const client = ctx.bh.client(
      kind,
      objectNamespace === undefined ? undefined : { namespace: objectNamespace },
    );
    if (name !== undefined && (!kind.namespaced || objectNamespace !== undefined)) {
      const obj = await client.getByName(name).catch(() => undefined);
      if (obj !== undefined) yield { kind, obj };
      continue;
    }
    for (let after = 0;;) {
      const batch = await client.list({ after, limit: MAX_PAGE });
      for (const obj of batch) if (name === undefined || obj.name === name) yield { kind, obj };
      if (batch.length < MAX_PAGE) break;
      after = batch[batch.length - 1].id;
    }
  }
}

/** `event` as a Table row, its object included as `include` asks. */
function eventRow(event: Record<string, unknown>, include: IncludeObject, now: number) {
  const e = event as Record<string, Record<string, string> & string>;
  const involved = e.involvedObject as unknown as Record<string, string>;
  return {
    cells: [
      age(new Date(e.lastTimestamp as unknown as string), now),
      e.type,
      e.reason,
      `${involved.kind.toLowerCase()}/${involved.name}`,
      e.message,
      (e.metadata as unknown as Record<string, string>).name,
    ],
    ...(include === "None" ? {} : {
      object: include === "Object" ? event : {
        kind: "PartialObjectMetadata",
        apiVersion: "meta.k8s.io/v1",
        metadata: event.metadata,
      },
    }),
  };
}

/** `event` as a one-row Table of `version` (a Table watch's object). */
export function eventTable(
  event: Record<string, unknown>,
  version: string,
  include: IncludeObject,
): Record<string, unknown> {
  const meta = event.metadata as { resourceVersion: string };
  return table(version, [eventRow(event, include, Date.now())], {
    resourceVersion: meta.resourceVersion,
  }, COLUMNS);
}

/** A request's `fieldSelector` on events, checked. @throws {KubeApiFailure} BadRequest: malformed. */
export function eventSelector(url: URL): Fields {
  return parseSelector(param(url, "fieldSelector"));
}

/** One served event and when it last occurred. */
export interface ServedEvent {
  readonly event: Record<string, unknown>;
  readonly at: number;
}

/**
 * The events of served objects in `namespace` (every one when `undefined`)
 * that `fields` select, oldest first, at most {@linkcode MAX_EVENTS}.
 */
export async function collectEvents(
  ctx: KubeContext,
  fields: Fields,
  namespace: string | undefined,
): Promise<ServedEvent[]> {
  const items: ServedEvent[] = [];
  outer: for await (const { kind, obj } of candidates(ctx, fields, namespace)) {
    for (const ev of await ctx.store.events.list(obj.id)) {
      const event = toEvent(kind, obj, ev);
      if (!matches(fields, event)) continue;
      items.push({ event, at: ev.lastAt.getTime() });
      if (items.length >= MAX_EVENTS) break outer;
    }
  }
  return items.sort((a, b) => a.at - b.at);
}

/**
 * `GET /api/v1/events` or `/api/v1/namespaces/<namespace>/events`: the
 * events of served objects matching `fieldSelector`, newest first, at most
 * {@linkcode MAX_EVENTS}.
 */
export async function listEvents(
  ctx: KubeContext,
  request: Request,
  url: URL,
  namespace: string | undefined,
): Promise<Response> {
  const rep = negotiate(request);
  const items = await collectEvents(ctx, eventSelector(url), namespace);
  const newest = items.reduce(
    (rv, i) =>
      Math.max(rv, Number((i.event.metadata as { resourceVersion: string }).resourceVersion)),
    0,
  );
  const metadata = { resourceVersion: String(newest) };
  if (rep.as === "table") {
    const now = Date.now();
    const include = includeObjectParam(url);
    const rows = items.map(({ event }) => eventRow(event, include, now));
    return jsonResponse(200, table(rep.version, rows, metadata, COLUMNS), tableType(rep.version));
  }
  return jsonResponse(200, {
    kind: "EventList",
    apiVersion: "v1",
    metadata,
    items: items.map((i) => i.event),
  });
}
