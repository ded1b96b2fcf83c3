/**
 * The logger interface beehive reports to.
 *
 * @module
 */

/**
 * Any object with these four methods: `console` qualifies. Attributes are
 * structured context (ids, kinds, the error).
 */
export interface Logger {
  /** Detail useful when tracing a problem. */
  debug(message: string, attributes?: Record<string, unknown>): void;
  /** Lifecycle milestones. */
  info(message: string, attributes?: Record<string, unknown>): void;
  /** Something went wrong and will be retried or worked around. */
  warn(message: string, attributes?: Record<string, unknown>): void;
  /** Something went wrong that nothing will retry. */
  error(message: string, attributes?: Record<string, unknown>): void;
}
