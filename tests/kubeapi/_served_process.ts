/**
 * Runs `_serve_child.ts` as a process of its own and watches it from
 * outside: its URL, its resident memory (from `ps`), SIGTERM and SIGKILL.
 *
 * @module
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { connect, type Socket } from "node:net";
import { fileURLToPath } from "node:url";
import process from "node:process";
import type { ServeKubeApiOptions } from "../../kubeapi/mod.ts";
import { Beehive } from "../../mod.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";

const isDeno = "Deno" in globalThis;
const CHILD = fileURLToPath(new URL("./_serve_child.ts", import.meta.url));

/** A serving child process. */
export interface ServedProcess {
  readonly url: string;
  readonly pid: number;
  /** Its resident set size now, in bytes, as `ps` reports it. */
  rss(): number;
  /** What it wrote on standard error so far. */
  stderr(): string;
  /** SIGTERM, then its exit. */
  stop(): Promise<void>;
  /** SIGKILL, then its exit. */
  kill(): Promise<void>;
  /** Resolves with its exit code (or signal) once it ends. */
  readonly exited: Promise<number | string | null>;
}

/**
 * The resident set size of process `pid`, in bytes, from `ps -o rss=` (KiB): reading
 * `/proc/<pid>/status` needs Deno's full read permission (`-A`), a subprocess only `--allow-run`.
 */
export function rssOf(pid: number): number {
  const out = execFileSync("ps", ["-o", "rss=", "-p", String(pid)], { encoding: "utf8" });
  const kb = /^\s*(\d+)\s*$/.exec(out);
  if (kb === null) throw new Error(`ps reported no RSS for process ${pid}: ${JSON.stringify(out)}`);
  return Number(kb[1]) * 1024;
}

/** Starts a server over the SQLite file `db` with `options`; resolves once it listens. */
export async function serveInProcess(
  db: string,
  options: Omit<ServeKubeApiOptions, "store" | "port" | "signal"> = {},
): Promise<ServedProcess> {
  const args = isDeno
    ? ["run", "--allow-all", CHILD]
    : ["--disable-warning=ExperimentalWarning", CHILD];
  const child: ChildProcess = spawn(
    process.execPath,
    [...args, db, JSON.stringify(options)],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const exited = new Promise<number | string | null>((resolve) =>
    child.once("close", (code, signal) => resolve(code ?? signal))
  );
  let out = "";
  let err = "";
  const listening = Promise.withResolvers<string>();
  child.stdout!.setEncoding("utf8");
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => err += chunk);
  child.stdout!.on("data", (chunk: string) => {
    out += chunk;
    const m = /^serving (\S+)$/m.exec(out);
    if (m !== null) listening.resolve(m[1]);
  });
  child.once("close", () => listening.reject(new Error(`the server ended early:\n${err}`)));
  const url = await listening.promise;
  const signal = (name: "SIGTERM" | "SIGKILL") => async () => {
    // process.kill, not child.kill: Deno reports a child killed through its handle as signalled.
    try {
      process.kill(child.pid!, name);
    } catch {
      // already gone
    }
    await exited;
  };
  return {
    url,
    pid: child.pid!,
    rss: () => rssOf(child.pid!),
    stderr: () => err,
    stop: signal("SIGTERM"),
    kill: signal("SIGKILL"),
    exited,
  };
}

/** Writes `count` Clusters `c<i>`, each with a spec of about `padBytes`, to the SQLite file `db`. */
export async function seedClusters(db: string, count: number, padBytes: number): Promise<void> {
  const store = await openSqliteStore(db);
  try {
    const client = new Beehive(store).client({ group: "kstack.sh", kind: "Cluster" });
    const pad = "x".repeat(padBytes);
    for (let i = 0; i < count; i += 200) {
      const n = Math.min(200, count - i);
      await Promise.all(Array.from({ length: n }, (_, j) => client.create(`c${i + j}`, { pad })));
    }
  } finally {
    await store.close();
  }
}

/** A watch over a raw socket that stops reading at its first bytes. */
export interface RawWatch {
  /** Resolves once the first bytes of the answer arrived (the socket then stops reading). */
  readonly firstBytes: Promise<void>;
  /** Reads on until the server closes the connection; resolves to the watch events it held. */
  drain(): Promise<number>;
  destroy(): void;
}

/** Opens `GET path` on `url`'s server over a socket that stops reading at the first bytes. */
export function rawWatch(url: string, path: string): Promise<RawWatch> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket: Socket = connect({ host: hostname, port: Number(port) }, () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nConnection: close\r\n\r\n`);
      resolve(watch);
    });
    socket.once("error", reject);
    const first = Promise.withResolvers<void>();
    const closed = Promise.withResolvers<void>();
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      text += chunk;
      if (!draining) socket.pause();
      first.resolve();
    });
    socket.once("close", () => closed.resolve());
    let draining = false;
    const watch: RawWatch = {
      firstBytes: first.promise,
      async drain() {
        draining = true;
        socket.resume();
        await closed.promise;
        return (text.match(/"type":"/g) ?? []).length;
      },
      destroy: () => socket.destroy(),
    };
  });
}
