/**
 * The [Standard Schema](https://standardschema.dev) v1 interface, typed
 * structurally: zod, valibot, arktype and other validators implement it, and
 * beehive depends on none of them.
 *
 * @module
 */
import type { ValidationIssue } from "./errors.ts";

/**
 * Any Standard Schema v1 validator whose output is `Output`: its `~standard`
 * property carries the interface version (1), the library that made it (e.g.
 * `"valibot"`), and `validate`, which resolves (synchronously or not) to the
 * validated — possibly transformed — `value`, or to the `issues` found (never
 * empty).
 */
export interface StandardSchema<Input = unknown, Output = Input> {
  /** The Standard Schema v1 interface. */
  readonly "~standard": {
    /** The interface version: 1. */
    readonly version: 1;
    /** The library that made the schema, e.g. `"valibot"`. */
    readonly vendor: string;
    /** Validates `value`, synchronously or not. */
    readonly validate: (
      value: unknown,
    ) =>
      | { readonly value: Output; readonly issues?: undefined }
      | { readonly issues: readonly ValidationIssue[] }
      | Promise<
        | { readonly value: Output; readonly issues?: undefined }
        | { readonly issues: readonly ValidationIssue[] }
      >;
    /** Type-level only: the schema's input and output types. */
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  };
}
