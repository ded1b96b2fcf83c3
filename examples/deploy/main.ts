/**
 * deploy: an app as it runs in production — one process, its SQLite file on a
 * local volume (`BEEHIVE_DATA_DIR`, default `./data`), stopped gracefully on
 * SIGTERM or SIGINT (what systemd, a container runtime and a platform send
 * before they kill), and backed up with SQLite's own online backup while it runs. The guide: docs/guides/20-deploying.md.
 *
 * With `DEPLOY_EXAMPLE_ONCE=1` it runs one round and exits: it converges an
 * object, takes a backup beside the live file, opens the backup read-only and
 * reads the object back, then restarts on the live file and finds its state.
 *
 * Run: `deno run --allow-read --allow-write --allow-env examples/deploy/main.ts` or
 * `node_modules/.bin/node --disable-warning=ExperimentalWarning examples/deploy/main.ts`.
 *
 * @module
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import process from "node:process";
import { backup, DatabaseSync } from "node:sqlite";
import { Beehive, settled } from "@beehive/beehive";
import { openSqliteStore } from "@beehive/beehive/sqlite";

const Site = { group: "example.com", kind: "Site" };
interface SiteSpec {
  url: string;
}
interface SiteStatus {
  checked: string;
}

const dir = resolve(process.env.BEEHIVE_DATA_DIR ?? "./data");
const database = join(dir, "beehive.db");
mkdirSync(join(dir, "backups"), { recursive: true });

/** Opens the store on the volume and starts the Beehive: the app's whole startup. */
async function start() {
  const store = await openSqliteStore(database);
  const bh = new Beehive(store);
  bh.register<SiteSpec, SiteStatus>(Site, async (obj, cc) => {
    await cc.updateStatus({ checked: obj.spec.url });
    return settled();
  });
  const stop = await bh.start();
  return {
    bh,
    /** Lets passes in flight finish, then closes the store: what SIGTERM runs. */
    async shutDown() {
      await stop({ signal: AbortSignal.timeout(10_000) });
      await store.close();
    },
  };
}

/**
 * A consistent copy of the live database, taken while the app writes: SQLite's
 * online backup API, through a connection of its own, copies one snapshot page
 * by page.
 */
async function backUp(): Promise<string> {
  const file = join(dir, "backups", `beehive-${new Date().toISOString().replaceAll(":", "-")}.db`);
  const db = new DatabaseSync(database);
  try {
    await backup(db, file);
  } finally {
    db.close();
  }
  return file;
}

const app = await start();
const sites = app.bh.client<SiteSpec, SiteStatus>(Site);
const watch = await sites.watchList();
const home = await sites.getByName("home").catch(() =>
  sites.create("home", { url: "https://example.com" })
);
// A restart finds it converged already; a first run waits for its pass (the watch, opened first,
// misses nothing in between).
if ((await sites.get(home.id)).status === undefined) {
  for await (const change of watch) {
    if (change.id === home.id && change.object?.status !== undefined) break;
  }
}
watch.close();
console.log(`${database}: home checked ${(await sites.get(home.id)).status?.checked}`);

if (process.env.DEPLOY_EXAMPLE_ONCE === "1") {
  const saved = await backUp();
  const copy = await openSqliteStore(saved, { readOnly: true });
  const row = await copy.objects.getByName({ ...Site, name: "home" });
  console.log(`backup ${saved.slice(dir.length + 1)} holds home, generation ${row.generation}`);
  await copy.close();
  await app.shutDown();
  // The restart a deploy does: the same file, the state as it was left.
  const again = await start();
  const after = await again.bh.client<SiteSpec, SiteStatus>(Site).getByName("home");
  console.log(`restarted: home checked ${after.status?.checked}`);
  await again.shutDown();
} else {
  console.log("running; SIGTERM or Ctrl-C stops it");
  const stopping = Promise.withResolvers<void>();
  process.once("SIGTERM", () => stopping.resolve());
  process.once("SIGINT", () => stopping.resolve());
  await stopping.promise;
  await app.shutDown();
  console.log("stopped");
}
