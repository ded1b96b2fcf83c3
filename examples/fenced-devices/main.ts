/**
 * fenced-devices: a controller whose side effect lands outside beehive, in a
 * device table of its own, fenced on the leadership epoch. Two replicas
 * (processes) contend for the lease. The leader stops itself with SIGSTOP in
 * the middle of a pass and stays stopped past its lease; the standby takes over and writes the
 * device; the paused one resumes and finishes its pass — and its device write
 * is refused (`FencedError`), because the row already carries a later epoch.
 * The table ends with the successor's write only.
 *
 * This file is both parts: run without arguments it starts the replicas (the
 * same file, `replica <name> <dir>`, on the same runtime) and drives them
 * through signals and their stdin; each replica prints what it sees.
 *
 * Run: `deno task example:fenced-devices` or
 * `node_modules/.bin/node --disable-warning=ExperimentalWarning examples/fenced-devices/main.ts`.
 * (POSIX only: it pauses a process with SIGSTOP.)
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Beehive, FencedError, type Logger, settled } from "@beehive/beehive";
import { openSqliteStore } from "@beehive/beehive/sqlite";
import { DeviceTable } from "./device_table.ts";

const Device = { group: "example.beehive.dev", kind: "Device" };
type DeviceSpec = { power: "on" | "off" };

/** Short, so the example runs in seconds; production leases are longer. */
const LEASE = { leaseDuration: 1_000, renewInterval: 200 };

/** One replica: a candidate whose controller writes each Device to the device table. */
async function replica(name: string, dir: string): Promise<void> {
  const say = (line: string) => console.log(`${name}: ${line}`);
  const lines = createInterface({ input: process.stdin });
  const waiting = new Map<string, () => void>();
  lines.on("line", (line) => waiting.get(line.trim())?.());
  const command = (word: string) => new Promise<void>((resolve) => waiting.set(word, resolve));
  const logger: Logger = {
    debug() {},
    info(message, attributes) {
      if (message === "beehive: leading") say(`leading (epoch ${attributes?.epoch})`);
      else if (message.startsWith("beehive: lost leadership")) say(message.slice(9));
    },
    warn(message, attributes) {
      say(`warn: ${message}: ${attributes?.error ?? ""}`);
    },
    error(message, attributes) {
      say(`error: ${message}: ${attributes?.error ?? ""}`);
    },
  };
  const store = await openSqliteStore(join(dir, "beehive.db"), { busyTimeout: 10_000 });
  const devices = new DeviceTable(join(dir, "devices.db"));
  const bh = new Beehive(store, { logger, leaderElection: { identity: name, ...LEASE } });
  const resume = name === "a" ? command("resume") : Promise.resolve();
  bh.register<DeviceSpec, unknown>(Device, async (obj, cc) => {
    const { epoch } = cc.fencing;
    say(`pass over ${obj.name} at epoch ${epoch}`);
    if (name === "a") {
      // Slow device I/O, say, or a long pause of the whole process: it stops itself here, at a
      // point of the pass where it holds no lock of the store (a process stopped inside a SQLite
      // write would hold every other writer of the file off until it resumed), and the parent
      // resumes it.
      say("mid-pass");
      process.kill(process.pid, "SIGSTOP");
      await resume;
    }
    try {
      await cc.fencedWrite(obj.name, { power: obj.spec.power, writtenBy: name });
      say(`wrote ${obj.name} (power ${obj.spec.power}) at epoch ${epoch}`);
    } catch (error) {
      if (error instanceof FencedError) say(`device write refused at epoch ${epoch}: FencedError`);
      throw error;
    }
    return settled();
  }, { fencedRepository: devices });
  const stop = await bh.start();
  say("candidate");
  await command("stop");
  await stop();
  devices.close();
  await store.close();
  lines.close();
  say("stopped");
}

/** A replica process, its output lines, and waits on them. */
class Child {
  readonly #child: ChildProcess;
  readonly #lines: string[] = [];
  readonly #waiters = new Set<() => void>();
  readonly exited: Promise<void>;

  constructor(name: string, dir: string) {
    const file = fileURLToPath(import.meta.url);
    const args = "Deno" in globalThis
      ? ["run", "--allow-read", "--allow-write", "--allow-env", file, "replica", name, dir]
      : ["--disable-warning=ExperimentalWarning", file, "replica", name, dir];
    this.#child = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "inherit"] });
    this.exited = new Promise((resolve) => this.#child.on("close", () => resolve()));
    createInterface({ input: this.#child.stdout! }).on("line", (line) => {
      console.log(line);
      this.#lines.push(line);
      for (const fn of [...this.#waiters]) fn();
    });
  }

  /** Resolves once a line containing `text` was printed. */
  waitFor(text: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Error(`fenced-devices: no line with ${JSON.stringify(text)} within 30 s`));
      }, 30_000);
      const check = () => {
        if (!this.#lines.some((l) => l.includes(text))) return;
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve();
      };
      this.#waiters.add(check);
      check();
    });
  }

  send(line: string): void {
    this.#child.stdin!.write(`${line}\n`);
  }

  signal(signal: "SIGCONT"): void {
    // process.kill, not child.kill: a runtime may ignore a second child.kill.
    process.kill(this.#child.pid!, signal);
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "beehive-fenced-devices-"));
  try {
    // Created before any replica starts: its migration is done once, here.
    const store = await openSqliteStore(join(dir, "beehive.db"));
    await new Beehive(store).client<DeviceSpec>(Device).create("lamp", { power: "on" });
    await store.close();

    const a = new Child("a", dir);
    await a.waitFor("a: mid-pass");
    console.log("-- a stopped itself (SIGSTOP) mid-pass; its lease runs out");
    const b = new Child("b", dir);
    await b.waitFor("b: wrote lamp");
    console.log("-- resuming a (SIGCONT)");
    a.signal("SIGCONT");
    a.send("resume");
    await a.waitFor("a: device write refused");
    await a.waitFor("a: lost leadership");

    const devices = new DeviceTable(join(dir, "devices.db"));
    for (const row of devices.list()) {
      console.log(
        `device table: ${row.id} power=${row.power} written_by=${row.writtenBy} last_epoch=${row.lastEpoch}`,
      );
    }
    devices.close();
    for (const child of [a, b]) child.send("stop");
    await Promise.all([a.exited, b.exited]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const at = process.argv.indexOf("replica");
if (at >= 0) await replica(process.argv[at + 1], process.argv[at + 2]);
else await main();
