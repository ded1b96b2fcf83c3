/**
 * Every store contract case, by family, and the tests they make for one store.
 *
 * @module
 */
import { type ContractCase, nodeTempDirs, runCase, type StoreFactory } from "./harness.ts";
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
import { kindsCases } from "./kinds_cases.ts";
import { reconcileOwedCases } from "./reconcile_owed_cases.ts";
import { leasesCases } from "./leases_cases.ts";
import { kubernetesCases } from "./kubernetes_cases.ts";
import { stalledCases } from "./stalled_cases.ts";
import { labelsCases } from "./labels_cases.ts";
import { readOnlyCases } from "./read_only_cases.ts";
import { namespacesCases } from "./namespaces_cases.ts";
import { managedFieldsCases } from "./managed_fields_cases.ts";
import { finalizerWriteCases } from "./finalizer_writes_cases.ts";

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
  kinds: kindsCases,
  reconcile_owed: reconcileOwedCases,
  leases: leasesCases,
  kubernetes: kubernetesCases,
  stalled: stalledCases,
  labels: labelsCases,
  read_only: readOnlyCases,
  namespaces: namespacesCases,
  managed_fields: managedFieldsCases,
  finalizer_writes: finalizerWriteCases,
};

/** One test of the contract: its name, and how to run it or why it does not apply. */
export type ContractTest =
  | { readonly name: string; readonly run: () => Promise<void> }
  | { readonly name: string; readonly notApplicable: string };

/** The test name of `c` of `family` on the store named `store`. */
export function contractTestName(store: string, family: string, c: ContractCase): string {
  return `store contract (${store}) ${family}: ${c.name}`;
}

/**
 * The contract's tests for `factory`: every case of every family, the cases
 * that reopen a store not applicable when the factory has no `openPath`.
 */
export function contractTests(factory: StoreFactory): ContractTest[] {
  const tests: ContractTest[] = [];
  for (const [family, cases] of Object.entries(contractSuites)) {
    for (const c of cases) {
      const name = contractTestName(factory.name, family, c);
      if (c.reopens && factory.openPath === undefined) {
        tests.push({ name, notApplicable: "it reopens a store, and no openPath was given" });
      } else if (c.readOnly && factory.openReadOnly === undefined) {
        tests.push({
          name,
          notApplicable: "it opens a store read-only, and no openReadOnly was given",
        });
      } else {
        tests.push({ name, run: () => runCase(factory, nodeTempDirs, c) });
      }
    }
  }
  return tests;
}
