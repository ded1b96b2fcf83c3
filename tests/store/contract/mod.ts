/**
 * Every store contract case, by family.
 *
 * @module
 */
import type { ContractCase } from "./harness.ts";
import { objectsCases } from "./objects_cases.ts";
import { conditionsCases } from "./conditions_cases.ts";
import { transactionsCases } from "./transactions_cases.ts";
import { versionsCases } from "./versions_cases.ts";
import { objectWritesCases } from "./object_writes_cases.ts";
import { edgesCases } from "./edges_cases.ts";
import { deletionRequestsCases } from "./deletion_requests_cases.ts";
import { dependenciesCases } from "./dependencies_cases.ts";
import { driverCursorsCases } from "./driver_cursors_cases.ts";
import { eventsCases } from "./events_cases.ts";
import { reconcileOwedCases } from "./reconcile_owed_cases.ts";
import { sqliteAdapterCases } from "./sqlite_adapter_cases.ts";
import { leasesCases } from "./leases_cases.ts";
import { kubernetesCases } from "./kubernetes_cases.ts";
import { stalledCases } from "./stalled_cases.ts";
import { readOnlyCases } from "./read_only_cases.ts";

/** Every case, grouped by family name. */
export const contractSuites: Record<string, ContractCase[]> = {
  objects: objectsCases,
  conditions: conditionsCases,
  transactions: transactionsCases,
  versions: versionsCases,
  object_writes: objectWritesCases,
  edges: edgesCases,
  deletion_requests: deletionRequestsCases,
  dependencies: dependenciesCases,
  driver_cursors: driverCursorsCases,
  events: eventsCases,
  reconcile_owed: reconcileOwedCases,
  leases: leasesCases,
  kubernetes: kubernetesCases,
  stalled: stalledCases,
  read_only: readOnlyCases,
  sqlite_adapter: sqliteAdapterCases,
};
