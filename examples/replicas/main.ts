/**
 * replicas: three processes on one PostgreSQL database, as a service runs
 * behind a load balancer. Every replica is a leader-election candidate, takes
 * client writes and watches; one leads and reconciles everything, whichever
 * replica took the write. Then the leader stops, releasing its lease, and a
 * standby takes over and reconciles the next write.
 *
 * This file is both parts: run without arguments it starts the replicas (the
 * same file, `replica <n>`, on the same runtime) and drives them through their
 * stdin; each replica prints what it sees, prefixed with its name.
 *
 * Run: `BEEHIVE_POSTGRES_URL=postgres://user:pass@host/db deno task example:replicas`
 * (`BEEHIVE_POSTGRES_SCHEMA` picks the schema, default `beehive_replicas`).
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import process from "node:process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Beehive, type Logger, settled } from "@beehive/beehive";
import { openPostgresStore } from "@beehive/beehive/postgres";

const Order = { group: "example.beehive.dev", kind: "Order" };
type OrderSpec = { item: string; from: string };
type OrderStatus = { acceptedBy: string };

const REPLICAS = 3;
const ORDERS_EACH = 3;

const url = process.env.BEEHIVE_POSTGRES_URL;
if (!url) {
  console.error("replicas: set BEEHIVE_POSTGRES_URL to a PostgreSQL database url");
  process.exit(2);
}
const schema = process.env.BEEHIVE_POSTGRES_SCHEMA || "beehive_replicas";

/** One replica: a candidate Beehive that writes, watches and (while it leads) reconciles. */
async function replica(): Promise<void> {
  const [, run, index] = process.argv.slice(process.argv.indexOf("replica"));
  const identity = `replica-${index}`;
  const say = (line: string) => console.log(line);
  const logger: Logger = {
    debug() {},
    info(message, attributes) {
      if (message === "beehive: leading") say(`leading (epoch ${attributes?.epoch})`);
      if (message === "beehive: no longer leading") say("no longer leading");
    },
    warn(message, attributes) {
      console.error(`${message}: ${attributes?.error ?? ""}`);
    },
    error(message, attributes) {
      console.error(`${message}: ${attributes?.error ?? ""}`);
    },
  };
  const store = await openPostgresStore(url!, { schema, max: 4 });
  const bh = new Beehive(store, {
    logger,
    leaderElection: { identity, leaseDuration: 3_000, renewInterval: 500 },
  });
  bh.register<OrderSpec, OrderStatus>(Order, async (obj, cc) => {
    if (obj.deletionRequestedAt || obj.status?.acceptedBy) return settled();
    await cc.updateStatus({ acceptedBy: identity });
    say(`accepted ${obj.name} (written on ${obj.spec.from})`);
    return settled();
  });
  const stop = await bh.start();
  const orders = bh.client<OrderSpec, OrderStatus>(Order);
  const done = new AbortController();
  const watch = await orders.watchList({ signal: done.signal });

  // Every order of this run, as this replica's watch last saw it.
  const accepted = new Map<string, string | undefined>();
  let expected = REPLICAS * ORDERS_EACH;
  let reported = 0;
  const report = () => {
    const by = new Set(accepted.values());
    if (accepted.size === expected && !by.has(undefined) && reported < expected) {
      reported = expected;
      say(`converged: ${accepted.size} orders, accepted by ${[...by].sort().join(", ")}`);
    }
  };
  const commands = createInterface({ input: process.stdin });
  commands.on("line", (line) => {
    const [verb, name] = line.trim().split(" ");
    if (verb === "expect") {
      expected++;
      report();
    } else if (verb === "write") {
      orders.create(name, { item: "extra", from: identity }).catch((e) => console.error(e));
    } else if (verb === "stop") {
      done.abort();
    }
  });
  say("started");
  for (let i = 0; i < ORDERS_EACH; i++) {
    await orders.create(`${run}-${index}-${i}`, { item: `item ${i}`, from: identity });
  }
  // The snapshot, then every change above it: no gap, whichever replica wrote.
  const see = (obj: { name: string; status?: OrderStatus }) => {
    if (!obj.name.startsWith(`${run}-`)) return;
    accepted.set(obj.name, obj.status?.acceptedBy);
    report();
  };
  for (const obj of watch.objects) see(obj);
  for await (const change of watch) {
    if (change.object !== undefined) see(change.object);
  }
  commands.close();
  await stop({ signal: AbortSignal.timeout(5_000) });
  await store.close();
  say("stopped");
}

/** Starts the replicas, waits for them to converge, hands leadership over, and stops them. */
async function coordinator(): Promise<void> {
  // Migrate once, so replicas starting together do not race to.
  await (await openPostgresStore(url!, { schema })).close();
  const run = `r${Date.now().toString(36)}`;
  const file = fileURLToPath(import.meta.url);
  const replicas = Array.from({ length: REPLICAS }, (_, i) => new ReplicaProcess(file, run, i + 1));
  // An example that cannot converge says so rather than hanging.
  const deadline = setTimeout(() => {
    console.error("replicas: no convergence within 60 s");
    for (const r of replicas) r.kill();
    process.exit(1);
  }, 60_000);
  try {
    const first = await Promise.all(replicas.map((r) => r.waitFor(/^converged: (.*)/)));
    const leader = /accepted by (replica-\d+)$/.exec(first[0][1])![1];
    console.log(`all ${REPLICAS} replicas converged; ${leader} reconciled every order`);

    // The leader stops (releasing its lease); a standby leads and takes the next write.
    const old = replicas.find((r) => r.name === leader)!;
    const rest = replicas.filter((r) => r !== old);
    const marks = rest.map((r) => r.mark());
    old.send("stop");
    await old.exited();
    for (const r of rest) r.send("expect");
    rest[0].send(`write ${run}-extra`);
    const second = await Promise.all(
      rest.map((r, i) => r.waitFor(/^converged: (.*), accepted by/, marks[i])),
    );
    const successor = await Promise.race(
      rest.map((r, i) => r.waitFor(/^leading/, marks[i]).then(() => r.name)),
    );
    console.log(`${leader} stopped; ${successor} took over: ${second[0][1]}`);
    for (const r of rest) r.send("stop");
    const codes = await Promise.all(replicas.map((r) => r.exited()));
    if (codes.some((c) => c !== 0)) throw new Error(`replica exit codes ${codes.join(", ")}`);
    console.log("replicas ok");
  } finally {
    clearTimeout(deadline);
    for (const r of replicas) r.kill();
  }
}

/** A replica process, its output prefixed and echoed, waited on line by line. */
class ReplicaProcess {
  readonly name: string;
  readonly #child: ChildProcess;
  readonly #lines: string[] = [];
  readonly #listeners = new Set<() => void>();
  readonly #exit: Promise<number>;

  constructor(file: string, run: string, index: number) {
    this.name = `replica-${index}`;
    const args = "Deno" in globalThis
      ? ["run", "--allow-read", "--allow-env", "--allow-net", file, "replica", run, `${index}`]
      : ["--disable-warning=ExperimentalWarning", file, "replica", run, `${index}`];
    this.#child = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "inherit"] });
    this.#exit = new Promise((resolve) => {
      this.#child.on("close", (code) => {
        resolve(code ?? 1);
        this.#notify();
      });
    });
    createInterface({ input: this.#child.stdout! }).on("line", (line) => {
      console.log(`${this.name}: ${line}`);
      this.#lines.push(line);
      this.#notify();
    });
  }

  #notify(): void {
    for (const fn of this.#listeners) fn();
  }

  /** How many lines it has printed so far (for {@linkcode waitFor}). */
  mark(): number {
    return this.#lines.length;
  }

  /** The first line from line `since` on matching `pattern`; rejects if the process ends first. */
  waitFor(pattern: RegExp, since = 0): Promise<RegExpExecArray> {
    return new Promise((resolve, reject) => {
      let from = since;
      const check = () => {
        for (; from < this.#lines.length; from++) {
          const match = pattern.exec(this.#lines[from]);
          if (match) {
            this.#listeners.delete(check);
            return resolve(match);
          }
        }
        if (this.#child.exitCode !== null) {
          this.#listeners.delete(check);
          reject(new Error(`${this.name} exited before printing ${pattern}`));
        }
      };
      this.#listeners.add(check);
      check();
    });
  }

  send(line: string): void {
    this.#child.stdin!.write(`${line}\n`);
  }

  exited(): Promise<number> {
    return this.#exit;
  }

  kill(): void {
    if (this.#child.exitCode === null) this.#child.kill("SIGKILL");
  }
}

if (process.argv.includes("replica")) await replica();
else await coordinator();
