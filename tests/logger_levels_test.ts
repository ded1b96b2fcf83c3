/**
 * Unit tests for the level filter in front of a logger.
 *
 * @module
 */
import assert from "node:assert/strict";
import { test } from "./_test.ts";
import { filterLogger, isLogLevel, type LogLevel } from "../src/telemetry/logger_levels.ts";
import type { Logger } from "../src/telemetry/logger.ts";

type Line = [LogLevel, string, Record<string, unknown> | undefined];

/** A logger that records its calls and relies on `this`, as a class-based logger would. */
class Recorder implements Logger {
  readonly lines: Line[] = [];
  #push(level: LogLevel, message: string, attributes?: Record<string, unknown>): void {
    this.lines.push([level, message, attributes]);
  }
  debug(message: string, attributes?: Record<string, unknown>): void {
    this.#push("debug", message, attributes);
  }
  info(message: string, attributes?: Record<string, unknown>): void {
    this.#push("info", message, attributes);
  }
  warn(message: string, attributes?: Record<string, unknown>): void {
    this.#push("warn", message, attributes);
  }
  error(message: string, attributes?: Record<string, unknown>): void {
    this.#push("error", message, attributes);
  }
}

function logAll(logger: Logger): void {
  logger.debug("d", { id: 1 });
  logger.info("i");
  logger.warn("w", { id: 2 });
  logger.error("e");
}

test("filterLogger drops calls below the level and passes the rest unchanged", () => {
  const r = new Recorder();
  logAll(filterLogger(r, "warn"));
  assert.deepEqual(r.lines, [["warn", "w", { id: 2 }], ["error", "e", undefined]]);
});

test("filterLogger passes calls at and above each level", () => {
  const levels: LogLevel[] = ["debug", "info", "warn", "error"];
  levels.forEach((level, i) => {
    const r = new Recorder();
    logAll(filterLogger(r, level));
    assert.deepEqual(r.lines.map(([l]) => l), levels.slice(i), level);
  });
});

test("filterLogger calls the logger's methods with the logger as this", () => {
  const r = new Recorder();
  const f = filterLogger(r, "debug");
  const { info } = f;
  info("detached");
  assert.deepEqual(r.lines, [["info", "detached", undefined]]);
});

test("filterLogger is silent without a logger", () => {
  const f = filterLogger(undefined, "debug");
  for (const m of ["debug", "info", "warn", "error"] as const) {
    assert.equal(typeof f[m], "function");
    assert.equal(f[m]("nobody hears this", { id: 1 }), undefined);
  }
});

test("isLogLevel accepts the four levels and nothing else", () => {
  for (const l of ["debug", "info", "warn", "error"]) assert.equal(isLogLevel(l), true, l);
  for (const v of ["trace", "INFO", "", "toString", "__proto__", "hasOwnProperty", 1, undefined]) {
    assert.equal(isLogLevel(v), false, String(v));
  }
});
