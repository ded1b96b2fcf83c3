/**
 * A Kubernetes API server in a process of its own, for the tests that measure
 * it from outside (its RSS, from `ps`) or kill it:
 *
 *     _serve_child.ts <database> <serveKubeApi options as JSON>
 *
 * Opens the SQLite file, serves it on a free loopback port with the given
 * options (tokens, limits), prints `serving <url>` on standard output, and
 * runs until SIGTERM (or SIGKILL).
 *
 * @module
 */
import process from "node:process";
import { serveKubeApi, type ServeKubeApiOptions } from "../../kubeapi/mod.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";

const [db, json] = process.argv.slice(2);
const options = JSON.parse(json ?? "{}") as Omit<ServeKubeApiOptions, "store">;
const store = await openSqliteStore(db);
const server = await serveKubeApi({ ...options, store, port: 0 });
process.stdout.write(`serving ${server.url}\n`);
process.once("SIGTERM", async () => {
  await server.close();
  await store.close();
  process.exit(0);
});
