/**
 * Store contract cases: sqlite adapter.
 *
 * @module
 */
import type { ContractCase } from "./harness.ts";

export const sqliteAdapterCases: ContractCase[] = [];
