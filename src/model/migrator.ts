/**
 * Schema-version migration of stored spec and status.
 *
 * @module
 */

/**
 * Converts spec and status written at older schema versions, per kind.
 * Conversion is lazy and per column: a value below the current version is
 * converted on read, and re-stamped with the current version when next written.
 * A value from a newer version is a decode failure (the row is quarantined).
 * Converters are synchronous and receive parsed JSON.
 */
export interface Migrator {
  /** The spec version this build writes; 0 = not versioned. */
  readonly specVersion: number;
  /** The status version this build writes; 0 = not versioned. */
  readonly statusVersion: number;
  /** Converts a spec stored at version `from` (0 = unversioned) to `specVersion`. */
  convertSpec(from: number, value: unknown): unknown;
  /** Converts a status stored at version `from` (0 = unversioned) to `statusVersion`. */
  convertStatus(from: number, value: unknown): unknown;
}
