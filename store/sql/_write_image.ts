/**
 * The write log's durable encodings both SQL stores share: the `op` column's
 * codes, and the row image a physical delete stores. The image's keys are a
 * durable format: renaming one changes what old databases decode to.
 *
 * @module
 */
import { StoreError } from "../../src/model/errors.ts";
import { type Labels, NO_LABELS } from "../../src/model/labels.ts";
import type { ObjectRef, RawCondition, RawObject, WriteOp } from "../../src/store.ts";

/** The `op` column's values. */
export const OP_CODE: Record<WriteOp, number> = { create: 1, update: 2, delete: 3 };
/** `op` column values back to names. */
export const OP_NAME: Record<number, WriteOp> = { 1: "create", 2: "update", 3: "delete" };

/** Encodes a collected row's image. */
export function encodeImage(object: RawObject): string {
  return JSON.stringify({
    id: object.id,
    group: object.group,
    kind: object.kind,
    name: object.name,
    spec: object.spec,
    status: object.status ?? null,
    specVersion: object.specVersion,
    statusVersion: object.statusVersion,
    generation: object.generation,
    observedGeneration: object.observedGeneration ?? null,
    observedAt: object.observedAt?.getTime() ?? null,
    resourceVersion: object.resourceVersion,
    deletionRequestedAt: object.deletionRequestedAt?.getTime() ?? null,
    reconcileOwed: object.reconcileOwed,
    finalizers: object.finalizers,
    conditions: object.conditions.map((c) => ({
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: c.message,
      liveness: c.liveness,
      unconfirmed: c.unconfirmed,
      transitionedAt: c.transitionedAt.getTime(),
      updatedAt: c.updatedAt.getTime(),
    })),
    owner: object.owner === undefined
      ? null
      : { id: object.owner.id, group: object.owner.group, kind: object.owner.kind },
    createdAt: object.createdAt.getTime(),
    updatedAt: object.updatedAt.getTime(),
    labels: object.labels,
    annotations: object.annotations,
    namespace: object.namespace,
    ...(object.managedFields === "[]" ? {} : { managedFields: object.managedFields }),
  });
}

interface ImageJson {
  id: number;
  group: string;
  kind: string;
  name: string;
  spec: string;
  status: string | null;
  specVersion: number;
  statusVersion: number;
  generation: number;
  observedGeneration: number | null;
  observedAt: number | null;
  resourceVersion: number;
  deletionRequestedAt: number | null;
  reconcileOwed: number;
  finalizers: string[];
  conditions: {
    type: string;
    status: RawCondition["status"];
    reason: string;
    message: string;
    liveness: boolean;
    unconfirmed: boolean;
    transitionedAt: number;
    updatedAt: number;
  }[];
  owner: ObjectRef | null;
  createdAt: number;
  updatedAt: number;
  /** Absent in images written before labels existed. */
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Absent in images written before namespaces existed. */
  namespace?: string;
  /** Absent when none, and in images written before managed fields existed. */
  managedFields?: string;
}

function frozen(map: Record<string, string> | undefined): Labels {
  if (map === undefined || Object.keys(map).length === 0) return NO_LABELS;
  return Object.freeze(map);
}

/** Decodes a delete entry's image. @throws {StoreError} missing or corrupt. */
export function decodeImage(text: unknown, rv: number): RawObject {
  if (typeof text !== "string") {
    throw new StoreError(`Cannot read write-log entry ${rv}: its delete entry has no row image`);
  }
  let j: ImageJson;
  try {
    j = JSON.parse(text);
    if (typeof j !== "object" || j === null || typeof j.id !== "number") {
      throw new TypeError("not an object image");
    }
    return {
      id: j.id,
      group: j.group,
      kind: j.kind,
      name: j.name,
      spec: j.spec,
      status: j.status ?? undefined,
      specVersion: j.specVersion,
      statusVersion: j.statusVersion,
      generation: j.generation,
      observedGeneration: j.observedGeneration ?? undefined,
      observedAt: j.observedAt === null ? undefined : new Date(j.observedAt),
      resourceVersion: j.resourceVersion,
      deletionRequestedAt: j.deletionRequestedAt === null
        ? undefined
        : new Date(j.deletionRequestedAt),
      reconcileOwed: j.reconcileOwed,
      finalizers: j.finalizers,
      conditions: j.conditions.map((c) => ({
        ...c,
        transitionedAt: new Date(c.transitionedAt),
        updatedAt: new Date(c.updatedAt),
      })),
      ...(j.owner === null ? {} : { owner: j.owner }),
      createdAt: new Date(j.createdAt),
      updatedAt: new Date(j.updatedAt),
      labels: frozen(j.labels),
      annotations: frozen(j.annotations),
      namespace: j.namespace ?? "",
      managedFields: j.managedFields ?? "[]",
    };
  } catch (cause) {
    throw new StoreError(`Cannot read write-log entry ${rv}: its row image is corrupt`, {
      cause,
    });
  }
}
