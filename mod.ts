/**
 * beehive: an embedded, durable, self-healing control plane. Declare desired
 * state as objects (spec); controllers you register reconcile actual state
 * toward it, level-triggered, coordinating only through a SQLite store that
 * lives in your process.
 *
 * The SQLite store lives at `@beehive/beehive/sqlite`.
 *
 * @example
 * ```ts
 * import { Beehive, settled } from "@beehive/beehive";
 * import { openSqliteStore } from "@beehive/beehive/sqlite";
 *
 * const store = await openSqliteStore(":memory:");
 * const bh = new Beehive(store);
 * const Cluster = { group: "kstack.sh", kind: "Cluster" };
 * bh.register<{ replicas: number }, { ready: boolean }>(Cluster, {
 *   async reconcile(obj, cc) {
 *     await cc.updateStatus({ ready: obj.spec.replicas > 0 });
 *     return settled();
 *   },
 * });
 * const stop = await bh.start();
 * const created = await bh.client(Cluster).create("prod", { replicas: 3 });
 * console.assert(created.generation === 1);
 * await stop();
 * await store.close();
 * ```
 *
 * @module
 */
export * from "./src/model/errors.ts";
export { Beehive } from "./src/engine/beehive.ts";
export type {
  Controller,
  Leadership,
  ReconcileFn,
  StartOptions,
  StopFunction,
  StopOptions,
} from "./src/engine/beehive.ts";
export { Client } from "./src/clients/client.ts";
export type {
  ClientOptions,
  CreateOptions,
  CreateResult,
  DryRunOptions,
  EventListOptions,
  ListOptions,
  MetadataWriteOptions,
  PreconditionOptions,
  ReadOptions,
  RequeueOptions,
  UpdateOptions,
} from "./src/clients/client.ts";
export { defineKind } from "./src/model/kind.ts";
export type { JsonSchema, Kind, KindColumn, KindDefinition, StoredKind } from "./src/model/kind.ts";
export type { StandardSchema } from "./src/model/standard_schema.ts";
export { AdminClient } from "./src/clients/admin_client.ts";
export type { DeleteNowOptions } from "./src/clients/admin_client.ts";
export type {
  ControllerClient,
  ControllerTx,
  ControllerWrites,
} from "./src/clients/controller_client.ts";
export type { ApplyFencedOptions, FencedRepository, Fencing } from "./src/engine/fencing.ts";
export { BeehiveObject, eventDetail } from "./src/model/object.ts";
export type {
  Condition,
  ConditionWrite,
  Event,
  EventType,
  EventWrite,
  LoadKey,
} from "./src/model/object.ts";
export { fail, ReconcileResult, settled, unsettled } from "./src/model/result.ts";
export { generateName } from "./src/model/generate_name.ts";
export type {
  BeehiveOptions,
  ControllerOptions,
  EventRetention,
  LeaderElectionOptions,
  Limits,
  RegisterOptions,
  WriteLogRetention,
} from "./src/engine/options.ts";
export type { Migrator } from "./src/model/migrator.ts";
export type { Schedule } from "./src/engine/work_queue.ts";
export { ScheduleStream } from "./src/engine/schedule_stream.ts";
export { ObjectListStream, ObjectStream } from "./src/watches/object_watch.ts";
export { WatchStream } from "./src/watches/watch_stream.ts";
export type { ChangeType, ObjectChange } from "./src/watches/object_change.ts";
export type { WatchListOptions, WatchOptions } from "./src/watches/object_watch.ts";
export type {
  LabelSelector,
  LabelSelectorExpression,
  LabelSelectorObject,
  LabelSelectorOperator,
} from "./src/model/label_selector.ts";
export type { MetadataUpdate } from "./src/model/labels.ts";
export { EventStream } from "./src/watches/event_watch.ts";
export type { EventStreamRetention, EventWatchOptions } from "./src/watches/event_watch.ts";
export type { LogLevel } from "./src/telemetry/logger_levels.ts";
export type {
  TelemetryAttributes,
  TelemetryMeter,
  TelemetryTracer,
} from "./src/telemetry/telemetry.ts";
// The model's identifiers; the Store port is in `@beehive/beehive/store`.
export type { EventId, GroupKind, ObjectId, ObjectRef } from "./src/store.ts";
export type * from "./src/telemetry/logger.ts";
