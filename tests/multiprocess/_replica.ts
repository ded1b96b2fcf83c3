/**
 * One replica process for the multi-process tests, on Deno or Node 22. Its
 * single argument is a JSON {@linkcode ReplicaConfig}; it reports on stdout,
 * one JSON object per line, and takes commands on stdin, one per line.
 *
 * Roles:
 * - `writer`: opens a `watchList` of Job, says `ready`, and on `write` creates
 *   `count` Jobs (saying each `wrote` with its resource version), then keeps
 *   watching until it has seen `expect` distinct Jobs, and says `seen` with
 *   every delivered change's (resourceVersion, id, type) in delivery order.
 * - `pacer`: says `ready`, and on `write` creates `count` Jobs `paceMs`
 *   apart, each with `spec.t` = `Date.now()` just before its create (for
 *   latency measurements).
 * - `crash`: the multi-process crash campaign's replica. Creates Jobs one
 *   after another until killed, appending each acknowledged create to
 *   `acks`; runs a `watchList` resumed from the last position in `watched`,
 *   appending every delivered change there; as a `candidate`, also runs the
 *   Job controller under leader election and appends each term it wins to
 *   `leadership`.
 * - `plain`: starts a Beehive without election (the store lease) and says
 *   `started` with its identity, or `refused` with the error; says
 *   `reconciled` per pass, and on `status <tag>` says `status` with whether it
 *   leads.
 * - `candidate`: starts a Beehive with leader election and a Job controller
 *   that stamps `status.by`; says `leading`/`deposed` on leadership changes,
 *   `lost` on the lost-leadership line, and `reconciled` per pass. A Job
 *   named `slow` makes the first pass that meets it say `mid-pass` (and with
 *   `stopMidPass` stop its own process), wait `slowMs`, then try one write
 *   and say `late-write` with what happened.
 *   With `devices`, every pass writes its Job's device through a fenced
 *   device table (the fenced-devices example's), and the late write is that
 *   device write (its failure fails the pass). On `requeue <name>` it says
 *   `requeueing`, requeues that Job through its own client, and says `requeued`.
 *   With `skewMs`, its wall clock runs that far ahead.
 *
 * @module
 */
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import process from "node:process";
import { createInterface } from "node:readline";
import { Beehive, type ControllerClient, type Logger, settled } from "../../mod.ts";
import { openTestStore } from "../_sqlite_driver.ts";
import { Job, type ReplicaConfig } from "./_processes.ts";
import { DeviceTable } from "../../examples/fenced-devices/device_table.ts";

const config = JSON.parse(process.argv[process.argv.length - 1]) as ReplicaConfig;

function say(ev: string, fields: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ ev, name: config.name, at: Date.now(), ...fields })}\n`);
}

const commands = createInterface({ input: process.stdin });
const waiting = new Map<string, () => void>();
/** Commands with an argument, by their first word. */
const handlers = new Map<string, (arg: string) => void>();
commands.on("line", (line) => {
  const [word, arg] = line.trim().split(" ");
  if (arg !== undefined) handlers.get(word)?.(arg);
  const fn = waiting.get(line.trim());
  if (fn !== undefined) {
    waiting.delete(line.trim());
    fn();
  }
});

/** Resolves when the test sends `command`. */
function command(name: string): Promise<void> {
  return new Promise((resolve) => waiting.set(name, resolve));
}

/** A logger that reports leadership changes and failures as events. */
const logger: Logger = {
  debug() {},
  info(message, attributes) {
    if (message === "beehive: leading") say("leading", { epoch: attributes?.epoch });
    else if (message === "beehive: no longer leading") {
      say("deposed", { epoch: attributes?.epoch, reason: attributes?.reason });
    } else if (message === "beehive: holds the store lease again; reconciling resumes") {
      say("reclaimed", {});
    } else if (message.startsWith("beehive: lost leadership")) {
      say("lost", { epoch: attributes?.epoch, error: String(attributes?.error) });
    }
  },
  warn(message, attributes) {
    say("warn", { message, error: String(attributes?.error) });
  },
  error(message, attributes) {
    say("error", { message, error: String(attributes?.error) });
  },
};

if (config.skewMs !== undefined) {
  // A host whose clock is off: every wall-clock reading in this process is skewed.
  const realNow = Date.now;
  Date.now = () => realNow() + config.skewMs!;
}

const store = await openTestStore(config.db, { busyTimeout: 30_000 });

if (config.role === "writer") {
  const bh = new Beehive(store, { watchFloorInterval: 60_000 });
  const jobs = bh.client<{ n: number }>(Job);
  const watch = await jobs.watchList();
  const seen: [number, number, string][] = [];
  const ids = new Set<number>();
  for (const o of watch.objects) ids.add(o.id);
  say("ready", { snapshot: watch.objects.length, resourceVersion: watch.resourceVersion });
  const consume = (async () => {
    for await (const change of watch) {
      seen.push([change.resourceVersion, change.id, change.type]);
      ids.add(change.id);
      if (ids.size >= config.expect!) break;
    }
  })();
  await command("write");
  for (let i = 0; i < config.count!; i++) {
    const o = await jobs.create(`${config.name}-${i}`, { n: i });
    say("wrote", { id: o.id, resourceVersion: o.resourceVersion });
  }
  say("written");
  await consume;
  say("seen", { seen });
  await store.close();
  process.exit(0);
} else if (config.role === "pacer") {
  const jobs = new Beehive(store).client<{ t: number }>(Job);
  say("ready");
  await command("write");
  for (let i = 0; i < config.count!; i++) {
    await jobs.create(`${config.name}-${i}`, { t: Date.now() });
    await new Promise((resolve) => setTimeout(resolve, config.paceMs ?? 0));
  }
  say("written");
  await store.close();
  process.exit(0);
} else if (config.role === "crash") {
  await crashReplica();
} else if (config.role === "plain") {
  const bh = new Beehive(store, { logger });
  bh.register(Job, (obj) => {
    say("reconciled", { id: obj.id, object: obj.name });
    return settled();
  });
  handlers.set("status", (tag) => say("status", { tag, leading: bh.isLeader }));
  try {
    const stop = await bh.start();
    const lease = await bh.leadership();
    say("started", { holder: lease.holder, epoch: lease.epoch });
    await command("stop");
    await stop();
    say("stopped");
  } catch (error) {
    say("refused", { error: (error as Error).name, message: (error as Error).message });
  }
  await store.close();
  process.exit(0);
} else {
  const bh = new Beehive(store, {
    logger,
    leaderElection: {
      identity: config.name,
      leaseDuration: config.leaseDuration,
      renewInterval: config.renewInterval,
    },
  });
  let slowSeen = false;
  const devices = config.devices === undefined ? undefined : new DeviceTable(config.devices);
  const writeDevice = (cc: ControllerClient<unknown>, name: string) =>
    devices === undefined
      ? Promise.resolve()
      : cc.fencedWrite(name, { power: "on", writtenBy: config.name });
  bh.register<unknown, { by: string }>(Job, async (obj, cc) => {
    if (obj.name === "slow" && config.slowMs !== undefined && !slowSeen) {
      slowSeen = true;
      say("mid-pass", { id: obj.id, epoch: cc.fencing.epoch });
      if (config.stopMidPass) process.kill(process.pid, "SIGSTOP");
      await new Promise((resolve) => setTimeout(resolve, config.slowMs ?? 0));
      const aborted = cc.signal.aborted;
      try {
        if (devices !== undefined) await writeDevice(cc, obj.name);
        else await cc.updateStatus({ by: config.name });
        say("late-write", { outcome: "written", aborted });
      } catch (error) {
        say("late-write", { outcome: (error as Error).name, aborted });
        if (devices !== undefined) throw error;
      }
      return settled();
    }
    await writeDevice(cc, obj.name);
    await cc.updateStatus({ by: config.name });
    say("reconciled", { id: obj.id, object: obj.name, epoch: cc.fencing.epoch });
    return settled();
  }, {
    ...(devices === undefined ? {} : { fencedRepository: devices }),
    ...(config.owedPassInterval === undefined ? {} : { owedPassInterval: config.owedPassInterval }),
  });
  const jobs = bh.client(Job);
  handlers.set("requeue", (name) => {
    void (async () => {
      const o = await jobs.getByName(name);
      say("requeueing", { id: o.id });
      await jobs.requeue(o.id);
      say("requeued", { id: o.id });
    })().catch((error) => say("error", { message: "requeue", error: String(error) }));
  });
  const stop = await bh.start();
  say("candidate");
  await command("stop");
  await stop();
  say("stopped");
  await store.close();
  process.exit(0);
}

/** The crash campaign's replica: writes until told `quiet`, then only watches (and leads). */
async function crashReplica(): Promise<void> {
  const { acks, watched, leadership, incarnation = 0 } = config;
  const bh = new Beehive(store, {
    watchFloorInterval: 5_000,
    ...(config.candidate
      ? {
        logger: {
          ...logger,
          info(message: string, attributes?: Record<string, unknown>) {
            if (message === "beehive: leading") {
              appendFileSync(
                leadership!,
                `${
                  JSON.stringify({ name: config.name, epoch: attributes?.epoch, at: Date.now() })
                }\n`,
              );
            }
          },
        },
        leaderElection: {
          identity: `${config.name}#${incarnation}`,
          leaseDuration: config.leaseDuration,
          renewInterval: config.renewInterval,
        },
      }
      : {}),
  });
  if (config.candidate) {
    bh.register<{ i: number }, { by: string }>(Job, async (_obj, cc) => {
      await cc.updateStatus({ by: `${config.name}#${incarnation}` });
      return settled();
    });
    await bh.start();
  }
  const lines = existsSync(watched!) ? readFileSync(watched!, "utf8").trim().split("\n") : [];
  const last = lines.filter((l) => l !== "").at(-1);
  const resumeFrom = last === undefined ? undefined : (JSON.parse(last) as { rv: number }).rv;
  const jobs = bh.client<{ i: number }>(Job);
  const watch = await jobs.watchList(resumeFrom === undefined ? {} : { resumeFrom });
  appendFileSync(
    watched!,
    `${
      JSON.stringify({ start: true, rv: watch.resourceVersion, resumed: resumeFrom !== undefined })
    }\n`,
  );
  void (async () => {
    for await (const change of watch) {
      appendFileSync(
        watched!,
        `${JSON.stringify({ rv: change.resourceVersion, id: change.id, type: change.type })}\n`,
      );
    }
  })();
  let quiet = false;
  void command("quiet").then(() => (quiet = true));
  say("running");
  for (let i = 0; !quiet; i++) {
    const name = `${config.name}-${incarnation}-${i}`;
    const o = await jobs.create(name, { i });
    appendFileSync(acks!, `${JSON.stringify({ id: o.id, name, rv: o.resourceVersion })}\n`);
    // A store call that finds the lock free settles in microtasks: yield to timers and I/O.
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  say("quiet");
}
