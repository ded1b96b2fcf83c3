/**
 * Objects as Kubernetes resources: a beehive object's fields mapped onto
 * `metadata`, `spec` and `status` (DESIGN-3 §3), and the
 * `PartialObjectMetadata` a table row carries.
 *
 * @module
 */
import type { BeehiveObject, Condition, ObjectRef } from "@beehive/beehive";
import type { Store } from "@beehive/beehive/store";
import type { ServedKind } from "./_kinds.ts";
import { serve } from "./_kinds.ts";

/** A decoded object as the API reads it. */
export type AnyObject = BeehiveObject<unknown, unknown>;

/** The owner an object points at, resolved to what `ownerReferences` names. */
export interface OwnerView extends ObjectRef {
  readonly name: string;
}

/**
 * The fields of an object a resource is drawn from: a decoded object, or the
 * CLI's and console's view of a stored row (whose printer columns read the
 * same resource the API answers with).
 */
export interface ResourceSource {
  readonly id: number;
  readonly name: string;
  readonly namespace: string;
  readonly generation: number;
  readonly resourceVersion: number;
  readonly createdAt: Date;
  readonly deletionRequestedAt: Date | undefined;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly finalizers: readonly string[];
  readonly spec: unknown;
  readonly status: unknown;
  readonly observedGeneration: number | undefined;
  readonly conditions: readonly SourceCondition[];
}

/** The fields of a condition a resource shows. */
type SourceCondition = Pick<Condition, "type" | "status" | "reason" | "message" | "transitionedAt">;

/** What a resource is drawn from: the object, its owner resolved, the version to report. */
export interface ResourceInput {
  readonly obj: ResourceSource;
  readonly owner?: OwnerView | undefined;
  readonly resourceVersion?: number;
  /** `metadata.managedFields`, when read with the object. @default {undefined} (not shown) */
  readonly managedFields?: readonly unknown[];
}

/** An object as answered, with its owner resolved. */
export interface Answered {
  readonly obj: AnyObject;
  readonly owner: OwnerView | undefined;
  /**
   * The version to report: a watch event passes the change's log position,
   * what the client resumes from. @default {obj.resourceVersion}
   */
  readonly resourceVersion?: number;
  /** `metadata.managedFields`, when read with the object. @default {undefined} (not shown) */
  readonly managedFields?: readonly unknown[];
}

/** RFC 3339 at second precision, as Kubernetes writes `metav1.Time`. */
export function rfc3339(at: Date): string {
  return at.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** The `apiVersion` of kind `ref`: `<group>/v1`, or `v1` for the core group. */
function apiVersionOf(ref: ObjectRef): string {
  return serve(ref)?.apiVersion ?? (ref.group === "" ? "v1" : `${ref.group}/v1`);
}

/** The object's `metadata`. */
export function objectMetadata(
  { obj, owner, resourceVersion = obj.resourceVersion, managedFields }: ResourceInput,
): Record<string, unknown> {
  return {
    name: obj.name,
    ...(obj.namespace === "" ? {} : { namespace: obj.namespace }),
    uid: String(obj.id),
    resourceVersion: String(resourceVersion),
    generation: obj.generation,
    creationTimestamp: rfc3339(obj.createdAt),
    ...(obj.deletionRequestedAt === undefined
      ? {}
      : { deletionTimestamp: rfc3339(obj.deletionRequestedAt) }),
    labels: { ...obj.labels },
    annotations: { ...obj.annotations },
    ...(obj.finalizers.length === 0 ? {} : { finalizers: [...obj.finalizers] }),
    ...(owner === undefined ? {} : {
      ownerReferences: [{
        apiVersion: apiVersionOf(owner),
        kind: owner.kind,
        name: owner.name,
        uid: String(owner.id),
        controller: true,
        blockOwnerDeletion: true,
      }],
    }),
    ...(managedFields === undefined || managedFields.length === 0 ? {} : { managedFields }),
  };
}

function condition(c: SourceCondition, observedGeneration: number | undefined) {
  return {
    type: c.type,
    status: c.status,
    ...(observedGeneration === undefined ? {} : { observedGeneration }),
    lastTransitionTime: rfc3339(c.transitionedAt),
    reason: c.reason,
    message: c.message,
  };
}

/**
 * The object's `status`: the stored status (a value that is not a JSON
 * object sits under `value`), then `observedGeneration` and `conditions`,
 * which win over stored fields of the same name.
 */
export function objectStatus(obj: ResourceSource): Record<string, unknown> {
  const stored = obj.status;
  const base = stored === undefined
    ? {}
    : typeof stored === "object" && stored !== null && !Array.isArray(stored)
    ? { ...stored as Record<string, unknown> }
    : { value: stored };
  return {
    ...base,
    ...(obj.observedGeneration === undefined ? {} : { observedGeneration: obj.observedGeneration }),
    conditions: obj.conditions.map((c) => condition(c, obj.observedGeneration)),
  };
}

/** The whole resource. */
export function toResource(
  kind: Pick<ServedKind, "apiVersion" | "kind">,
  answered: ResourceInput,
): Record<string, unknown> {
  return {
    apiVersion: kind.apiVersion,
    kind: kind.kind,
    metadata: objectMetadata(answered),
    spec: answered.obj.spec,
    status: objectStatus(answered.obj),
  };
}

/** The `PartialObjectMetadata` a table row's `object` holds. */
export function toPartialMetadata(answered: ResourceInput): Record<string, unknown> {
  return {
    kind: "PartialObjectMetadata",
    apiVersion: "meta.k8s.io/v1",
    metadata: objectMetadata(answered),
  };
}

/**
 * Resolves the owners of `objects` (read with `load: ["owner"]`) to their
 * names, one read per distinct owner. An owner collected meanwhile is left out.
 */
export async function resolveOwners(
  store: Store,
  objects: readonly AnyObject[],
): Promise<Map<number, OwnerView>> {
  const names = new Map<number, string | undefined>();
  const out = new Map<number, OwnerView>();
  for (const obj of objects) {
    let ref: ObjectRef | undefined;
    try {
      ref = obj.owner();
    } catch {
      continue; // read without the owner loaded
    }
    if (ref === undefined) continue;
    if (!names.has(ref.id)) {
      names.set(
        ref.id,
        await store.objects.getMeta(ref.id).then((m) => m.name, () => undefined),
      );
    }
    const name = names.get(ref.id);
    if (name !== undefined) out.set(obj.id, { ...ref, name });
  }
  return out;
}
