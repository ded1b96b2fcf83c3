/**
 * Driver selection for `openSqliteStore`: checks the `driver` and `library`
 * options and returns the driver, loading the Deno FFI shim only when it is
 * chosen (so Node and the default driver never evaluate Deno-only code).
 *
 * @module
 */
import { InvalidOptionError } from "../../src/errors.ts";
import type { Driver } from "./_driver.ts";
import { nodeSqliteDriver } from "./_node_sqlite.ts";
import { describe } from "./_rows.ts";

/** The options that pick a driver. */
export interface DriverOptions {
  readonly driver?: "node" | "ffi";
  readonly library?: string;
}

/**
 * The driver `options` ask for: `node:sqlite` synchronously, the FFI driver
 * through a dynamic import.
 * @throws {InvalidOptionError} an unknown driver, a bad library, or `"ffi"` off Deno.
 */
export function selectDriver(options: DriverOptions): Driver | Promise<Driver> {
  const { driver, library } = options;
  if (driver !== undefined && driver !== "node" && driver !== "ffi") {
    throw new InvalidOptionError(
      `Cannot open SQLite store with driver: current value is ${
        describe(driver)
      }, expected "node" or "ffi"`,
    );
  }
  if (library !== undefined && (typeof library !== "string" || library === "")) {
    throw new InvalidOptionError(
      `Cannot open SQLite store with library: current value is ${
        describe(library)
      }, expected a library file name or path`,
    );
  }
  if (driver !== "ffi") {
    if (library !== undefined) {
      throw new InvalidOptionError(
        `Cannot open SQLite store with library: current value is ${
          describe(library)
        }, which only driver "ffi" loads (driver is "node")`,
      );
    }
    return nodeSqliteDriver;
  }
  const deno = (globalThis as { Deno?: { dlopen?: unknown } }).Deno;
  if (typeof deno?.dlopen !== "function") {
    throw new InvalidOptionError(
      `Cannot open SQLite store with driver "ffi": it needs Deno's FFI (Deno.dlopen), which this runtime lacks; use driver "node"`,
    );
  }
  return import("./_ffi_sqlite.ts").then((ffi) =>
    ffi.ffiDriver(library ?? ffi.libraryFromEnvironment())
  );
}
