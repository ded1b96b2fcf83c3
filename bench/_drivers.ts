/**
 * The SQLite drivers a benchmark measures side by side: `node:sqlite` always,
 * and the Deno FFI driver when running on Deno with FFI access and a loadable
 * library. `--driver=node` or `--driver=ffi` keeps one.
 *
 * @module
 */
import type { Driver } from "../store/sqlite/_driver.ts";
import { nodeSqliteDriver } from "../store/sqlite/_node_sqlite.ts";

/** One driver: the raw seam (for the floor) and the store option that selects it. */
export interface BenchDriver {
  readonly name: "node" | "ffi";
  readonly raw: Driver;
  readonly options: { readonly driver: "node" | "ffi" };
}

const ARGS = (globalThis as { process?: { argv?: string[] } }).process?.argv ?? [];
const ONLY = ARGS.find((a) => a.startsWith("--driver="))?.slice("--driver=".length);

/** The drivers to measure, and a note for each one left out. */
export async function benchDrivers(): Promise<{ drivers: BenchDriver[]; notes: string[] }> {
  const drivers: BenchDriver[] = [];
  const notes: string[] = [];
  if (ONLY !== "ffi") {
    drivers.push({ name: "node", raw: nodeSqliteDriver, options: { driver: "node" } });
  }
  if (ONLY === "node") return { drivers, notes };
  const deno = (globalThis as {
    Deno?: { permissions: { querySync(d: { name: string }): { state: string } } };
  }).Deno;
  if (deno === undefined) {
    notes.push("ffi driver skipped: it needs Deno");
  } else if (deno.permissions.querySync({ name: "ffi" }).state !== "granted") {
    notes.push("ffi driver skipped: run with --allow-ffi (or -A)");
  } else {
    const { ffiDriver, libraryFromEnvironment } = await import("../store/sqlite/_ffi_sqlite.ts");
    const library = libraryFromEnvironment();
    const raw = ffiDriver(library);
    try {
      raw.open(":memory:").close();
      drivers.push({ name: "ffi", raw, options: { driver: "ffi" } });
    } catch (error) {
      notes.push(`ffi driver skipped: ${raw.describeFailure(error).message}`);
    }
  }
  return { drivers, notes };
}

/** The SQLite version a driver runs. */
export function sqliteVersion(driver: Driver): string {
  const db = driver.open(":memory:");
  try {
    return String(db.prepare("SELECT sqlite_version() AS v").get()!.v);
  } finally {
    db.close();
  }
}

/**
 * `node:sqlite` behind a wrapper: a store opened on it with `SqliteStore.open`
 * starts no background checkpointer (that is only for the built-in driver
 * itself), so nothing but the benchmark empties the WAL. Calls through to
 * `nodeSqliteDriver.open` at each open, so a tap installed on it still sees them.
 */
export const uncheckpointedNodeDriver: Driver = {
  open: (path) => nodeSqliteDriver.open(path),
  describeFailure: (error) => nodeSqliteDriver.describeFailure(error),
};
