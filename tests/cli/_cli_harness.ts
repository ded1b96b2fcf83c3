/**
 * Plumbing for the CLI tests: run `main` in-process with captured output,
 * wait on output with a deadline, keep `serve` running while a test talks to
 * it, and build a fixture database.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Beehive, settled } from "../../mod.ts";
import { main } from "../../cli/mod.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";

/** Collected output that callers can wait on. */
export class Output {
  text = "";
  readonly #waiters = new Set<() => void>();

  /** Appends `chunk` and re-checks every waiter. */
  readonly write = (chunk: string): void => {
    this.text += chunk;
    for (const check of [...this.#waiters]) check();
  };

  /** Resolves once `pred(text)` holds; rejects naming `what` after `ms`. */
  until(pred: (text: string) => boolean, what: string, ms = 20_000): Promise<void> {
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    const check = () => {
      if (!pred(this.text)) return;
      this.#waiters.delete(check);
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      this.#waiters.delete(check);
      reject(new Error(`timed out waiting for ${what}; output so far:\n${this.text}`));
    }, ms);
    this.#waiters.add(check);
    check();
    return promise;
  }

  /** Every line that parses as JSON, parsed. */
  jsonLines(): unknown[] {
    return this.text.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
  }
}

/** What one in-process CLI run printed and returned. */
export interface Run {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/** Runs the CLI in-process. */
export async function cli(
  args: readonly string[],
  options: {
    stdin?: string;
    signal?: AbortSignal;
    stdout?: Output;
    stderr?: Output;
    cwd?: string;
  } = {},
): Promise<Run> {
  const out = options.stdout ?? new Output();
  const err = options.stderr ?? new Output();
  const code = await main(args, {
    stdout: out.write,
    stderr: err.write,
    readStdin: () => Promise.resolve(options.stdin ?? ""),
    signal: options.signal,
    cwd: options.cwd,
  });
  return { code, out: out.text, err: err.text };
}

/**
 * Runs `beehive <db> serve --port 0` in-process from `cwd` until `fn` returns,
 * handing `fn` the server's url read from the kubeconfig it prints.
 */
export async function whileServing(
  db: string,
  cwd: string | undefined,
  fn: (url: string) => Promise<void>,
): Promise<void> {
  const abort = new AbortController();
  const stdout = new Output();
  const run = cli([db, "serve", "--port", "0"], { signal: abort.signal, stdout, cwd });
  let served = false;
  try {
    await Promise.race([
      stdout.until((t) => t.includes("current-context: beehive"), "the kubeconfig"),
      run.then((r) => {
        if (!served) throw new Error(`serve ended early (${r.code}): ${r.err}`);
      }),
    ]);
    served = true;
    await fn(/server: "(http:\/\/127\.0\.0\.1:\d+)"/.exec(stdout.text)![1]);
  } finally {
    served = true;
    abort.abort();
  }
  const { code, err } = await run;
  assert.equal(code, 0, err);
  assert.match(err, /stopped\n$/);
}

/** The fixture's kinds. */
export const Cluster = { group: "kstack.sh", kind: "Cluster" };
export const Node = { group: "kstack.sh", kind: "Node" };
export const Widget = { group: "test.beehive", kind: "Widget" };

/**
 * Writes the fixture to the database at `path`: a settled Cluster "prod"
 * (Ready True, an event), a Cluster "staging" never reconciled, and a Node
 * "n1" owned by prod and depending on it. Resolves to the ids.
 */
export async function writeFixture(path: string): Promise<Record<string, number>> {
  const store = await openSqliteStore(path);
  try {
    const bh = new Beehive(store);
    const clusters = bh.client<{ replicas: number }, { ready: boolean }>(Cluster);
    const admin = bh.adminClient<{ ready: boolean }>(Cluster);
    const prod = await clusters.create("prod", { replicas: 3 });
    await admin.updateStatus(prod.id, { ready: true });
    await admin.setConditions(prod.id, [
      { type: "Ready", status: "True", reason: "Provisioned", message: "all 3 replicas up" },
      { type: "Progressing", status: "False", reason: "Done" },
    ]);
    await admin.addEvent(prod.id, { type: "Normal", reason: "Provisioned", message: "first" });
    await admin.addEvent(prod.id, { type: "Warning", reason: "Slow", message: "second" });
    const n1 = await bh.client(Node).create("n1", { zone: "a" }, { owner: prod.id });
    await bh.adminClient(Node).addDependency(n1.id, prod.id);
    // The fixture stamps prod's observed generation the way a pass would.
    bh.register(Cluster, () => settled());
    const stop = await bh.start();
    const watch = await clusters.watch(prod.id);
    try {
      if (watch.object?.observedGeneration !== 1) {
        for await (const change of watch) if (change.object?.observedGeneration === 1) break;
      }
    } finally {
      watch.close();
    }
    await stop({ signal: AbortSignal.timeout(10_000) });
    // Created with no loop running, so never reconciled.
    const staging = await clusters.create("staging", { replicas: 1 });
    return { prod: prod.id, staging: staging.id, n1: n1.id };
  } finally {
    await store.close();
  }
}
