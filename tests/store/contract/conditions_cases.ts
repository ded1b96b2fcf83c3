/**
 * Store contract cases: conditions.
 *
 * @module
 */
import type { ContractCase } from "./harness.ts";

export const conditionsCases: ContractCase[] = [];
