/**
 * Store contract cases: reconcile owed.
 *
 * @module
 */
import type { ContractCase } from "./harness.ts";

export const reconcileOwedCases: ContractCase[] = [];
