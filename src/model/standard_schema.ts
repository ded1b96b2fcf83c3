/**
 * The [Standard Schema](https://standardschema.dev) v1 interface, typed
 * structurally: zod, valibot, arktype and other validators implement it, and
 * beehive depends on none of them.
 *
 * @module
 */
import type { ValidationIssue } from "./errors.ts";

/** A validator's success: the value to use (possibly transformed). */
export interface StandardSuccess<Output> {
  /** The validated value. */
  readonly value: Output;
  /** Absent on success. */
  readonly issues?: undefined;
}

/** A validator's failure: what is wrong. */
export interface StandardFailure {
  /** The problems found; never empty. */
  readonly issues: readonly ValidationIssue[];
}

/** What a Standard Schema's `validate` returns. */
export type StandardResult<Output> = StandardSuccess<Output> | StandardFailure;

/** The `~standard` property of a Standard Schema v1 validator. */
export interface StandardProps<Input, Output> {
  /** The interface version: 1. */
  readonly version: 1;
  /** The library that made the schema, e.g. `"valibot"`. */
  readonly vendor: string;
  /** Validates `value`, synchronously or not. */
  readonly validate: (
    value: unknown,
  ) => StandardResult<Output> | Promise<StandardResult<Output>>;
  /** Type-level only: the schema's input and output types. */
  readonly types?: { readonly input: Input; readonly output: Output } | undefined;
}

/** Any Standard Schema v1 validator whose output is `Output`. */
export interface StandardSchema<Input = unknown, Output = Input> {
  /** The Standard Schema v1 interface. */
  readonly "~standard": StandardProps<Input, Output>;
}
