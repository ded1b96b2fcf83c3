/**
 * Store contract cases: driver cursors.
 *
 * @module
 */
import type { ContractCase } from "./harness.ts";

export const driverCursorsCases: ContractCase[] = [];
