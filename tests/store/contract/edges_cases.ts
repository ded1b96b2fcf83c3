/**
 * Store contract cases: edges.
 *
 * @module
 */
import type { ContractCase } from "./harness.ts";

export const edgesCases: ContractCase[] = [];
