/**
 * Spawns replica processes (`_replica.ts`) on the runtime running the test,
 * and waits on the events they report, each wait bounded by a deadline.
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import process from "node:process";
import { fileURLToPath } from "node:url";

/** The kind every replica works on. */
export const Job = { group: "test.beehive.dev", kind: "Job" };

/** What a replica is told to be. */
export interface ReplicaConfig {
  readonly db: string;
  readonly role: "writer" | "pacer" | "plain" | "candidate" | "crash";
  readonly name: string;
  /** writer, pacer: how many Jobs to create. */
  readonly count?: number;
  /** pacer: the gap between two creates, in ms. */
  readonly paceMs?: number;
  /** writer: how many distinct Jobs to wait to see. */
  readonly expect?: number;
  /** candidate: leader election timings. */
  readonly leaseDuration?: number;
  readonly renewInterval?: number;
  /** candidate: how far ahead of the real time its wall clock (`Date.now`) runs, in ms. */
  readonly skewMs?: number;
  /** candidate: how long the `slow` pass waits before its late write. */
  readonly slowMs?: number;
  /**
   * candidate: the `slow` pass stops its own process (SIGSTOP) right after
   * saying `mid-pass`, at a point where it is inside no SQLite write, until
   * the test sends SIGCONT. A stop sent from outside could land inside one
   * and hold every other writer of the file off.
   */
  readonly stopMidPass?: boolean;
  /** candidate: a device table file; each pass then writes its Job's device, fenced. */
  readonly devices?: string;
  /** candidate: the owed-pass interval (a long one shows a requeue arrived by a wake). */
  readonly owedPassInterval?: number;
  /** crash: whether this replica is a leader-election candidate (else a client-only writer). */
  readonly candidate?: boolean;
  /** crash: the files it appends its acknowledged creates, watch deliveries and leadership to. */
  readonly acks?: string;
  readonly watched?: string;
  readonly leadership?: string;
  /** crash: which start of this replica this is (names its creates). */
  readonly incarnation?: number;
}

const REPLICA = fileURLToPath(new URL("./_replica.ts", import.meta.url));
const isDeno = "Deno" in globalThis;

/** One event a replica reported. */
export interface ReplicaEvent {
  readonly ev: string;
  readonly name: string;
  readonly at: number;
  readonly [field: string]: unknown;
}

/** A running replica process (or another script that reports events the same way). */
export class Replica {
  readonly name: string;
  readonly events: ReplicaEvent[] = [];
  readonly #child: ChildProcess;
  readonly #closed: Promise<{ code: number | null; signal: string | null }>;
  readonly #listeners = new Set<() => void>();
  #stderr = "";
  #buffer = "";

  /** Starts `script` (by default `_replica.ts`) with `config` as its one argument, in JSON. */
  constructor(config: ReplicaConfig | { readonly name: string }, script: string = REPLICA) {
    this.name = config.name;
    const args = isDeno
      ? ["run", "-A", script, JSON.stringify(config)]
      : ["--disable-warning=ExperimentalWarning", script, JSON.stringify(config)];
    const child = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "pipe"] });
    this.#child = child;
    this.#closed = new Promise((resolve) => {
      child.on("close", (code, signal) => {
        resolve({ code, signal });
        this.#notify();
      });
    });
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      this.#buffer += chunk;
      let nl;
      while ((nl = this.#buffer.indexOf("\n")) >= 0) {
        const line = this.#buffer.slice(0, nl);
        this.#buffer = this.#buffer.slice(nl + 1);
        if (line.trim() !== "") this.events.push(JSON.parse(line));
      }
      this.#notify();
    });
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => {
      if (this.#stderr.length < 20_000) this.#stderr += chunk;
    });
  }

  #notify(): void {
    for (const fn of [...this.#listeners]) fn();
  }

  /** Whether the process has exited. */
  get exited(): boolean {
    return this.#child.exitCode !== null || this.#child.signalCode !== null;
  }

  /**
   * Resolves with the first event (from index `from`) that `match` accepts;
   * rejects when the process exits first or `ms` pass.
   */
  waitFor(
    match: (e: ReplicaEvent) => boolean,
    ms = 30_000,
    from = 0,
  ): Promise<ReplicaEvent> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.events.slice(from).find(match);
        if (found !== undefined) {
          done();
          resolve(found);
        } else if (this.exited) {
          done();
          reject(new Error(`${this.name} exited before the event; stderr:\n${this.#stderr}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new Error(
            `${this.name}: no such event within ${ms} ms; events: ${
              JSON.stringify(this.events.slice(-10))
            }; stderr:\n${this.#stderr}`,
          ),
        );
      }, ms);
      const done = () => {
        clearTimeout(timer);
        this.#listeners.delete(check);
      };
      this.#listeners.add(check);
      check();
    });
  }

  /** Waits for an event named `ev`. */
  waitForEvent(ev: string, ms?: number, from?: number): Promise<ReplicaEvent> {
    return this.waitFor((e) => e.ev === ev, ms, from);
  }

  /** Sends a command line. */
  send(command: string): void {
    this.#child.stdin!.write(`${command}\n`);
  }

  /** Sends a signal (SIGKILL, SIGSTOP, SIGCONT). */
  signal(sig: "SIGKILL" | "SIGSTOP" | "SIGCONT"): void {
    // process.kill, not child.kill: a runtime may ignore a second child.kill.
    process.kill(this.#child.pid!, sig);
  }

  /** Resolves once the process has exited; kills it first when `kill`. */
  async close(kill = true): Promise<{ code: number | null; signal: string | null }> {
    // SIGKILL ends a stopped process too.
    if (kill && !this.exited) this.#child.kill("SIGKILL");
    const how = await this.#closed;
    this.#child.stdin?.destroy();
    this.#child.stdout?.destroy();
    this.#child.stderr?.destroy();
    return how;
  }

  /** What the process wrote to stderr. */
  get stderr(): string {
    return this.#stderr;
  }
}

/** Runs `fn` with replicas it starts through `spawnReplica`; every one is killed afterwards. */
export async function withReplicas(
  fn: (spawnReplica: (config: ReplicaConfig) => Replica) => Promise<void>,
): Promise<void> {
  const all: Replica[] = [];
  try {
    await fn((config) => {
      const r = new Replica(config);
      all.push(r);
      return r;
    });
  } finally {
    await Promise.all(all.map((r) => r.close()));
  }
}
