/**
 * Store contract cases: dependencies.
 *
 * @module
 */
import type { ContractCase } from "./harness.ts";

export const dependenciesCases: ContractCase[] = [];
