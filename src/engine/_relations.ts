/**
 * Loading an object's relations (`load: [...]`): owner, dependencies,
 * dependents, owned, and recent events, batched per relation for many objects.
 *
 * @module
 */
import { type LoadKey, type Relations, toEvent } from "../model/object.ts";
import type { ObjectId, Store } from "../store.ts";

/** How many of each timeline's newest runs `load: ["events"]` attaches. */
export const LOADED_EVENTS_PER_TIMELINE = 20;

/** Loads relations for many objects, batched per relation. */
export async function loadRelations(
  store: Store,
  ids: readonly ObjectId[],
  keys: readonly LoadKey[],
): Promise<Map<ObjectId, Relations>> {
  const out = new Map<ObjectId, Relations>(ids.map((id) => [id, {}]));
  if (keys.length === 0 || ids.length === 0) return out;
  for (const key of new Set(keys)) {
    if (key === "events") {
      for (const id of ids) {
        const runs = (await store.events.list(id)).map(toEvent);
        const perTimeline = new Map<string, number>();
        out.get(id)!.events = runs.filter((e) => {
          const n = (perTimeline.get(e.category) ?? 0) + 1;
          perTimeline.set(e.category, n);
          return n <= LOADED_EVENTS_PER_TIMELINE;
        });
      }
      continue;
    }
    const grouped = key === "owner" || key === "dependencies"
      ? await store.edges.groupOutgoingByIds(ids, key === "owner" ? "owned_by" : "depends_on")
      : await store.edges.groupIncomingByIds(ids, key === "owned" ? "owned_by" : "depends_on");
    for (const id of ids) {
      const refs = grouped.get(id) ?? [];
      const rel = out.get(id)!;
      if (key === "owner") rel.owner = refs[0] ?? null;
      else rel[key] = refs;
    }
  }
  return out;
}
