/**
 * A process that opens stores when told to, for the fresh-open test. Started
 * like a replica (`tests/multiprocess/_processes.ts`, its one argument
 * `{"name":…}`), it reports `ready` once loaded; then for each stdin line
 * `{ store, target }` it opens that store (a SQLite file path, or a PostgreSQL
 * schema on the test database), creates one object named after itself, closes
 * it, and reports `opened` or `failed` with the error.
 *
 * @module
 */
import process from "node:process";
import { createInterface } from "node:readline";
import { openPostgresStore } from "../_postgres.ts";
import { testDriver } from "../_sqlite_driver.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";
import type { Store } from "../../src/store.ts";

const { name } = JSON.parse(process.argv[process.argv.length - 1]) as { name: string };
const Kind = { group: "test.beehive.dev", kind: "Opener" };

function report(ev: string, fields: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ ev, name, at: Date.now(), ...fields })}\n`);
}

async function openOnce(line: string): Promise<void> {
  const { store: which, target } = JSON.parse(line) as { store: string; target: string };
  let store: Store | undefined;
  try {
    store = which === "postgres"
      ? await openPostgresStore({ schema: target })
      : await openSqliteStore(target, testDriver === "ffi" ? { driver: "ffi" } : {});
    await store.objects.create(Kind, { name, spec: "{}" });
    report("opened", { target });
  } catch (error) {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    report("failed", { target, error: message });
  } finally {
    await store?.close();
  }
}

const lines = createInterface({ input: process.stdin });
let queue = Promise.resolve();
lines.on("line", (line) => {
  queue = queue.then(() => openOnce(line));
});
report("ready");
