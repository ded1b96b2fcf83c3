/**
 * Driver selection for `openSqliteStore`: checks the `driver` and `library`
 * options and returns the driver, loading the Deno FFI shim only when it is
 * chosen (so Node and the default driver never evaluate Deno-only code).
 *
 * @module
 */
import { InvalidOptionError, StoreError } from "../../src/model/errors.ts";
import type { Connection, Driver, OpenOptions } from "./_driver.ts";
import { nodeSqliteDriver } from "./_node_sqlite.ts";
import { describe } from "../sql/_checks.ts";

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
    return nodeDriver;
  }
  const deno = (globalThis as { Deno?: { dlopen?: unknown } }).Deno;
  if (typeof deno?.dlopen !== "function") {
    throw new InvalidOptionError(
      `Cannot open SQLite store with driver "ffi": it needs Deno's FFI (Deno.dlopen), which this runtime lacks; use driver "node"`,
    );
  }
  return import("./_ffi_sqlite.ts").then((ffi) =>
    exclusive("ffi", ffi.ffiDriver(library ?? ffi.libraryFromEnvironment()))
  );
}

/** Files open in this process, and through which driver. */
const openFiles = new Map<string, { driver: string; connections: number }>();

/**
 * `driver`, refusing a file another driver holds open in this process: two
 * copies of SQLite in one process do not see each other's POSIX locks, so
 * writing one file through both would corrupt it. Separate processes are safe.
 */
function exclusive(name: string, driver: Driver): Driver {
  return {
    open(path: string, options?: OpenOptions): Connection {
      const held = openFiles.get(path);
      if (held !== undefined && held.driver !== name) {
        throw new StoreError(
          `Cannot open SQLite store at ${JSON.stringify(path)} with driver "${name}": ` +
            `this process has it open with driver "${held.driver}", and two SQLite ` +
            `libraries in one process do not see each other's locks`,
        );
      }
      const conn = driver.open(path, options);
      const entry = held ?? { driver: name, connections: 0 };
      entry.connections++;
      openFiles.set(path, entry);
      return {
        exec: (sql) => conn.exec(sql),
        prepare: (sql) => conn.prepare(sql),
        close() {
          conn.close();
          if (--entry.connections === 0) openFiles.delete(path);
        },
      };
    },
    describeFailure: (error) => driver.describeFailure(error),
  };
}

const nodeDriver = exclusive("node", nodeSqliteDriver);

/** Whether `driver` runs on the runtime's built-in `node:sqlite` (the library a worker thread shares). */
export function usesNodeSqlite(driver: Driver): boolean {
  return driver === nodeDriver || driver === nodeSqliteDriver;
}
