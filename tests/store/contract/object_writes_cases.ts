/**
 * Store contract cases: object writes.
 *
 * @module
 */
import type { ContractCase } from "./harness.ts";

export const objectWritesCases: ContractCase[] = [];
