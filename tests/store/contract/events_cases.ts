/**
 * Store contract cases: events.
 *
 * @module
 */
import type { ContractCase } from "./harness.ts";

export const eventsCases: ContractCase[] = [];
