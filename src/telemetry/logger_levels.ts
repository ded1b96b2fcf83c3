/**
 * Resolves a logger and a minimum level into a filtered logger.
 *
 * @module
 */
import type { Logger } from "./logger.ts";

/** The levels a logger filter accepts, lowest first. */
export type LogLevel = "debug" | "info" | "warn" | "error";

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

const noop = () => {};

/** A logger that passes on only messages at or above `level`; silent without a logger. */
export function filterLogger(logger: Logger | undefined, level: LogLevel): Logger {
  if (logger === undefined) return { debug: noop, info: noop, warn: noop, error: noop };
  const at = (l: LogLevel, fn: Logger[LogLevel]) => RANK[l] >= RANK[level] ? fn.bind(logger) : noop;
  return {
    debug: at("debug", logger.debug),
    info: at("info", logger.info),
    warn: at("warn", logger.warn),
    error: at("error", logger.error),
  };
}

/** Whether `value` is a log level. */
export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === "string" && Object.hasOwn(RANK, value);
}
