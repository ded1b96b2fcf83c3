/**
 * Discovery: `/version`, the core group's `/api` and `/api/v1` (events and
 * namespaces), the legacy `APIGroupList` at `/apis`, one group's
 * `APIGroup` and its `APIResourceList` at `/apis/<group>/v1`. Aggregated
 * discovery (`apidiscovery.k8s.io/v2`) is not served: every client falls back
 * to these forms when the answer is plain JSON.
 *
 * @module
 */
import { EVENTS_RESOURCE } from "./_events.ts";
import { type ServedKind, VERSION } from "./_kinds.ts";
import { NAMESPACES_RESOURCE } from "./_namespaces.ts";

/** The verbs every served resource implements today. */
export const VERBS = [
  "create",
  "delete",
  "deletecollection",
  "get",
  "list",
  "patch",
  "update",
  "watch",
] as const;

/**
 * The Kubernetes API level the server speaks: kubectl (and the version
 * dispatcher some installs put in front of it) picks its behaviour from it.
 */
export const SERVED_API = { major: "1", minor: "32" } as const;

/** `GET /version`. */
export function versionInfo(): Record<string, unknown> {
  return {
    major: SERVED_API.major,
    minor: SERVED_API.minor,
    gitVersion: `v${SERVED_API.major}.${SERVED_API.minor}.0+beehive`,
    gitCommit: "",
    gitTreeState: "",
    buildDate: "",
    goVersion: "",
    compiler: "",
    platform: "",
  };
}

function groupEntry(group: string): Record<string, unknown> {
  const gv = { groupVersion: `${group}/${VERSION}`, version: VERSION };
  return { name: group, versions: [gv], preferredVersion: gv };
}

/** `GET /apis`: one group per distinct group of `kinds`. */
export function apiGroupList(kinds: readonly ServedKind[]): Record<string, unknown> {
  const groups = [...new Set(kinds.map((k) => k.group))];
  return { kind: "APIGroupList", apiVersion: "v1", groups: groups.map(groupEntry) };
}

/** `GET /apis/<group>`. */
export function apiGroup(group: string): Record<string, unknown> {
  return { kind: "APIGroup", apiVersion: "v1", ...groupEntry(group) };
}

/** `GET /apis/<group>/v1`: the group's resources with their verbs. */
export function apiResourceList(
  group: string,
  kinds: readonly ServedKind[],
): Record<string, unknown> {
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: `${group}/${VERSION}`,
    resources: kinds.filter((k) => k.group === group).map((k) => ({
      name: k.plural,
      singularName: k.singular,
      namespaced: k.namespaced,
      kind: k.kind,
      verbs: [...VERBS],
      ...(k.shortNames.length === 0 ? {} : { shortNames: [...k.shortNames] }),
    })),
  };
}

/** `GET /api`. */
export function coreVersions(): Record<string, unknown> {
  return { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [] };
}

/** `GET /api/v1`: the resources this server serves in the core group. */
export function coreResourceList(): Record<string, unknown> {
  return {
    kind: "APIResourceList",
    groupVersion: "v1",
    resources: [EVENTS_RESOURCE, NAMESPACES_RESOURCE].map((r) => ({
      ...r,
      verbs: [...r.verbs],
      shortNames: [...r.shortNames],
    })),
  };
}
