/**
 * Store contract cases: transactions.
 *
 * @module
 */
import type { ContractCase } from "./harness.ts";

export const transactionsCases: ContractCase[] = [];
