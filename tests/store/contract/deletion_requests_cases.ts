/**
 * Store contract cases: deletion requests.
 *
 * @module
 */
import type { ContractCase } from "./harness.ts";

export const deletionRequestsCases: ContractCase[] = [];
