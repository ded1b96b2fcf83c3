/**
 * Store contract cases: versions.
 *
 * @module
 */
import type { ContractCase } from "./harness.ts";

export const versionsCases: ContractCase[] = [];
