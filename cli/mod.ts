/**
 * `beehive`, a kubectl-style command line over a beehive store: list kinds,
 * get, describe and watch objects, read their events, apply specs from JSON,
 * delete and requeue, and check the store's integrity. It never starts a
 * Beehive, so it is safe against a database a running process is using; a
 * command that only reads opens the store read-only (nothing written, no lock
 * waited for), and a database that is not a beehive store is refused, never
 * changed.
 *
 * ```sh
 * deno run -A jsr:@beehive/beehive/cli ./beehive.db get Cluster.kstack.sh
 * ```
 *
 * Exit codes: 0 success, 1 an error (one line on standard error), 2 a usage
 * error. Run as a program, this module calls {@linkcode main} with the
 * process's arguments; imported, it only exports it.
 *
 * @example Run a command in-process and capture its output
 * ```ts
 * import { main } from "@beehive/beehive/cli";
 *
 * let out = "";
 * const code = await main(["--help"], { stdout: (text) => (out += text), stderr: () => {} });
 * console.assert(code === 0 && out.includes("Usage: beehive <store> <command>"));
 * ```
 *
 * @module
 */
import { open } from "node:fs/promises";
import process from "node:process";
import { pathToFileURL } from "node:url";
import {
  Beehive,
  type BeehiveObject,
  type GroupKind,
  InvalidOptionError,
  NotFoundError,
  type ObjectChange,
} from "@beehive/beehive";
import type { Store } from "@beehive/beehive/store";
import { parseLabelSelector } from "../src/model/label_selector.ts";
import { namespaceProblem } from "../src/model/namespace.ts";
import { sameMetadata } from "../src/model/labels.ts";
import type { RawKind, RawObject } from "@beehive/beehive/store";
import type { IntegrityReport } from "@beehive/beehive/sqlite";
import {
  age,
  generationSummary,
  kindLabel,
  listKinds,
  type ObjectView,
  prettyJson,
  readRelations,
  readySummary,
  type RefView,
  stateSummary,
  toView,
} from "./_inspect.ts";
import { namesOf, resolveStoreKind, UnknownKindError } from "./_kinds.ts";
import { openStore, resolvePath, workingDirectory } from "./_open.ts";
import { toYaml } from "./_yaml.ts";
import { applyItems, readDocuments } from "./_manifests.ts";
import { type ColumnReader, columnTexts, storedColumns } from "../kubeapi/_tables.ts";

/** Where {@linkcode main} reads and writes. Every member but the writers is optional. */
export interface CliIo {
  /** Writes text to standard output as given (newlines included). */
  stdout(text: string): void;
  /** Writes text to standard error as given. */
  stderr(text: string): void;
  /** Reads all of standard input, for `apply -f -`. @default {the process's standard input} */
  readStdin?(): Promise<string>;
  /** Ends a running `watch` or `wait` when aborted (the program aborts it on Ctrl-C). @default {undefined} */
  signal?: AbortSignal;
  /**
   * The directory relative paths (the store, `apply -f`) are resolved from.
   * @default {`INIT_CWD` when set (where `deno task` or `npm run` was started), else the working directory}
   */
  cwd?: string;
}

/** A failure reported as one line on standard error with exit code 1. */
class CliError extends Error {}

/** A check that found damage: its report is printed, exit code 1 with no error line. */
class Damaged extends Error {}

/** A usage mistake: reported with a pointer to `--help`, exit code 2. */
class UsageError extends Error {
  readonly command: string | undefined;
  constructor(message: string, command?: string) {
    super(message);
    this.command = command;
  }
}

type Output = "table" | "json" | "yaml";

/** The largest file or standard input `apply` reads, in bytes. */
const APPLY_MAX_BYTES = 64 * 1_048_576;

interface Parsed {
  readonly positionals: string[];
  readonly output: Output;
  readonly file: string | undefined;
  readonly limit: number | undefined;
  readonly selector: string | undefined;
  readonly showLabels: boolean;
  readonly waitFor: string | undefined;
  readonly timeout: number | undefined;
  readonly port: number | undefined;
  readonly tls: boolean;
  readonly kubeconfig: string | undefined;
  /** `serve --max-watches`, `--max-inflight`, `--max-body-bytes`. */
  readonly maxWatches: number | undefined;
  readonly maxInflight: number | undefined;
  readonly maxBodyBytes: number | undefined;
  /** `-n`: the namespace of a namespaced kind's objects. */
  readonly namespace: string | undefined;
  /** `-A`: every namespace (what a list without `-n` reads anyway). */
  readonly allNamespaces: boolean;
  readonly help: boolean;
}

type Flag =
  | "output"
  | "file"
  | "limit"
  | "selector"
  | "showLabels"
  | "for"
  | "timeout"
  | "port"
  | "tls"
  | "kubeconfig"
  | "limits"
  | "namespace"
  | "all";

interface Command {
  readonly usage: string;
  readonly summary: string;
  readonly details: string;
  readonly args: readonly [min: number, max: number];
  readonly flags: readonly Flag[];
  /** Whether the command writes: a command that only reads opens the store read-only. */
  readonly writes?: boolean;
  run(ctx: Context): Promise<void>;
}

interface Context {
  readonly store: Store;
  readonly bh: Beehive;
  readonly args: string[];
  readonly parsed: Parsed;
  readonly io: CliIo;
  out(line: string): void;
  /** Resolves a kind as the user named it (kind, plural or short name, any case). */
  kind(input: string): Promise<GroupKind>;
  /** Prints `value` as JSON or YAML, as `-o` asked. */
  data(value: unknown): void;
}

const COMMANDS: Record<string, Command> = {
  kinds: {
    usage: "kinds [-o json|yaml]",
    summary: "List the kinds in the store and how many objects each holds",
    details: "Kinds are found through the retained write log and deletion-pending objects;\n" +
      "a kind with no write inside the write log's retention is not listed\n" +
      "(`get` still reads it by name).",
    args: [0, 0],
    flags: ["output"],
    run: cmdKinds,
  },
  get: {
    usage: "get <kind> [name] [-n namespace | -A] [-l selector] [--show-labels] [-o json|yaml]",
    summary: "List a kind's objects, or show one",
    details: "Columns: NAME, ID, GEN (generation/observed), READY (the Ready condition),\n" +
      "STATE (Settled, Reconciling, Retrying, Pending, Stalled, Terminating), CONDITIONS,\n" +
      "AGE. Retrying: its last pass failed and the controller retries it with backoff\n" +
      "(the Retrying condition says why). Pending: no pass has observed the object yet\n" +
      "(no controller runs its kind, or none has reached it).\n" +
      "-l, --selector S   only objects whose labels match S, e.g. 'app=web,tier!=db',\n" +
      "                   'env in (prod,qa)', 'team', '!legacy' (a comma is AND)\n" +
      "-n, --namespace NS only objects in namespace NS (a kind defined namespaced: true)\n" +
      "-A                 every namespace (the default for a list; adds a NAMESPACE column)\n" +
      "--show-labels      a last column, LABELS, with each object's labels",
    args: [1, 2],
    flags: ["output", "selector", "namespace", "all", "showLabels"],
    run: cmdGet,
  },
  describe: {
    usage: "describe <kind> <name> [-n namespace] [-o json|yaml]",
    summary:
      "Show an object in full: labels, annotations, spec, status, conditions, relations, events",
    details: "",
    args: [2, 2],
    flags: ["output", "namespace"],
    run: cmdDescribe,
  },
  events: {
    usage: "events <kind> <name> [-n namespace] [--limit N] [-o json|yaml]",
    summary: "List an object's event runs, newest first",
    details: "--limit N   only the newest N runs (default: all)",
    args: [2, 2],
    flags: ["output", "limit", "namespace"],
    run: cmdEvents,
  },
  wait: {
    usage: "wait <kind> <name> --for=condition=<Type>[=<Status>] [--timeout=30s] [-n namespace]",
    summary: "Wait until an object's condition has a status, or until it is deleted",
    details:
      "--for=condition=Ready waits for Ready=True; --for=condition=Ready=False for False;\n" +
      "--for=delete until the object is gone. --timeout (default 30s; 0 = forever) takes\n" +
      "a number with s, m or h. Exit 1 when the time runs out or the object is missing.",
    args: [2, 2],
    flags: ["for", "timeout", "namespace"],
    run: cmdWait,
  },
  watch: {
    usage: "watch <kind> [-n namespace | -A] [-l selector] [--show-labels] [-o json|yaml]",
    summary: "Print a kind's objects, then every change, until Ctrl-C",
    details: "With -o json, one JSON change per line: { type, id, resourceVersion, object }.\n" +
      "-l, --selector S   only objects whose labels match S (as for get); an object\n" +
      "                   that stops matching is reported Deleted, one that starts Added\n" +
      "--show-labels      a last column, LABELS, with each object's labels",
    args: [1, 1],
    flags: ["output", "namespace", "all", "selector", "showLabels"],
    run: cmdWatch,
  },
  apply: {
    usage: "apply -f <file.json | file.yaml | -> [-n namespace]",
    summary: "Create or update objects from JSON or YAML manifests",
    details: "The file holds JSON or YAML (several documents split by ---), each document\n" +
      "an object, an array of them, or a Kubernetes List (kind: List, items). An object\n" +
      "is a Kubernetes manifest (apiVersion: <group>/v1, or v1 for the core group;\n" +
      "kind; metadata.name, .namespace, .labels, .annotations; spec) or\n" +
      '{ "group", "kind", "name", "spec", "namespace"?, "labels"?, "annotations"? },\n' +
      "which is what get -o json|yaml prints (the fields the store sets, such as id,\n" +
      "status and conditions, are ignored). -n is the namespace of a namespaced kind's\n" +
      "objects that name none; -f - reads standard input. Each object is created, or\n" +
      "its spec replaced (a changed spec bumps the generation) and the labels and\n" +
      "annotations it names set (others kept). Every item is checked, and all are written\n" +
      "in one transaction: one bad item writes nothing. A UTF-8 byte order mark is\n" +
      `skipped; a file above ${APPLY_MAX_BYTES / 1_048_576} MiB is refused.`,
    args: [0, 0],
    flags: ["file", "output", "namespace"],
    writes: true,
    run: cmdApply,
  },
  delete: {
    usage: "delete <kind> <name> [-n namespace]",
    summary: "Request an object's deletion (finalizers and owned objects are honoured)",
    details: "",
    args: [2, 2],
    flags: ["namespace"],
    writes: true,
    run: cmdDelete,
  },
  check: {
    usage: "check [-o json|yaml]",
    summary: "Check the store's integrity; exit 1 when anything is damaged",
    details: "SQLite: PRAGMA integrity_check (pages, b-trees, indexes against their tables),\n" +
      "foreign_key_check, and valid JSON where JSON is kept as text. Both stores: the\n" +
      "schema version, and beehive's invariants\n" +
      "(object and write-log versions under the store's counter, sane generations, no edge,\n" +
      "condition, event or watermark pointing at a missing object). Reads only. A value\n" +
      "changed into another valid value (a flipped bit in a name or spec) cannot be\n" +
      "detected: SQLite keeps no checksums of row contents. A file too damaged to open\n" +
      "fails with its error, exit 1.",
    args: [0, 0],
    flags: ["output"],
    run: cmdCheck,
  },
  requeue: {
    usage: "requeue <kind> <name> [-n namespace]",
    summary: "Owe an object a reconcile pass",
    details: "Records the pass durably in the store: the process leading the kind's\n" +
      "controller hears the commit and runs it within a fraction of a second (or, when\n" +
      "no leader runs, the next leader runs it at start).",
    args: [2, 2],
    flags: ["namespace"],
    writes: true,
    run: cmdRequeue,
  },
  serve: {
    usage: "serve [--port N] [--tls] [--kubeconfig FILE] [--max-watches N] [--max-inflight N]\n" +
      "  [--max-body-bytes N]",
    summary: "Serve the store as a Kubernetes API on 127.0.0.1, for kubectl",
    details: "--port N            the port (default 6443; 0 picks a free one)\n" +
      "--tls               HTTPS with a generated CA and certificate, and a generated\n" +
      "                    bearer token; both go in the kubeconfig\n" +
      "--kubeconfig FILE   write the kubeconfig to FILE (mode 0600) rather than\n" +
      "                    standard output\n" +
      "--max-watches N     the most watches open at once (default 1000); past it 429\n" +
      "--max-inflight N    the most other requests served at once (default 400)\n" +
      "--max-body-bytes N  the largest request body (default 3145728, 3 MiB); 413 above\n" +
      "Then: kubectl --kubeconfig FILE get <plural>. Runs until Ctrl-C or SIGTERM.",
    args: [0, 0],
    flags: ["port", "tls", "kubeconfig", "limits"],
    writes: true,
    run: cmdServe,
  },
};

const HELP = `Usage: beehive <store> <command> [arguments] [flags]

Inspect and change a beehive store. <store> is a SQLite database path (relative
to the working directory) or a postgres:// url (?schema=name picks a schema other
than the default "beehive"). <kind> is a kind's name, plural or
short name in any case, with or without its group: Worker, workers,
Worker.shop.example; "<kind> <name>" may be written "<kind>/<name>", as kubectl does.

Commands:
${Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(10)}${c.summary}`).join("\n")}

Flags:
  -o, --output FMT    json or yaml: machine-readable output (default: a table)
  -l, --selector S    get, watch: only objects whose labels match S (e.g. app=web,tier!=db)
  --show-labels       get, watch: a LABELS column
  -n, --namespace NS  the namespace of a namespaced kind's object or list
  -A, --all-namespaces  get, watch: every namespace
  -h, --help          help for beehive or for one command

Exit codes: 0 success, 1 error, 2 usage error.
Run 'beehive <command> --help' for a command's usage.
`;

function commandHelp(name: string): string {
  const c = COMMANDS[name];
  return `Usage: beehive <store> ${c.usage}\n\n${c.summary}.\n${
    c.details === "" ? "" : `\n${c.details}\n`
  }`;
}

function parseArgs(args: readonly string[]): Parsed {
  const positionals: string[] = [];
  let output: Output = "table";
  let file: string | undefined;
  let limit: number | undefined;
  let selector: string | undefined;
  let showLabels = false;
  let waitFor: string | undefined;
  let timeout: number | undefined;
  let port: number | undefined;
  let tls = false;
  let kubeconfig: string | undefined;
  let maxWatches: number | undefined;
  let maxInflight: number | undefined;
  let maxBodyBytes: number | undefined;
  let namespace: string | undefined;
  let allNamespaces = false;
  let help = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const eq = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const value = (): string => {
      if (eq > 0) return arg.slice(eq + 1);
      const next = args[++i];
      if (next === undefined) throw new UsageError(`${flag} needs a value`);
      return next;
    };
    if (arg === "--") {
      positionals.push(...args.slice(i + 1));
      break;
    } else if (flag === "-h" || flag === "--help") help = true;
    else if (flag === "-o" || flag === "--output") {
      const v = value();
      if (v !== "json" && v !== "yaml" && v !== "table") {
        throw new UsageError(
          `unknown output format ${JSON.stringify(v)} (expected json, yaml or table)`,
        );
      }
      output = v;
    } else if (flag === "-f" || flag === "--filename") file = value();
    else if (flag === "--limit") {
      const v = value();
      const n = Number(v);
      if (!/^\d+$/.test(v) || !Number.isSafeInteger(n) || n < 1) {
        throw new UsageError(`--limit must be a positive integer, got ${JSON.stringify(v)}`);
      }
      limit = n;
    } else if (flag === "-l" || flag === "--selector") {
      selector = value();
      try {
        parseLabelSelector(selector);
      } catch (error) {
        if (error instanceof InvalidOptionError) throw new UsageError(error.message);
        throw error;
      }
    } else if (flag === "--show-labels" && eq < 0) showLabels = true;
    else if (flag === "--for") waitFor = checkFor(value());
    else if (flag === "--timeout") timeout = parseDuration(value());
    else if (flag === "--port") port = parsePort(value());
    else if (flag === "--tls" && eq < 0) tls = true;
    else if (flag === "--kubeconfig") kubeconfig = value();
    else if (flag === "--max-watches") maxWatches = parseCount(flag, value(), 1);
    else if (flag === "--max-inflight") maxInflight = parseCount(flag, value(), 1);
    else if (flag === "--max-body-bytes") maxBodyBytes = parseCount(flag, value(), 1024);
    else if (flag === "-n" || flag === "--namespace") {
      namespace = value();
      const problem = namespaceProblem(namespace);
      if (problem !== undefined) throw new UsageError(`-n: ${problem}`);
    } else if ((flag === "-A" || flag === "--all-namespaces") && eq < 0) allNamespaces = true;
    else if (arg.startsWith("-") && arg !== "-") {
      throw new UsageError(`unknown flag ${arg}`);
    } else positionals.push(arg);
  }
  return {
    positionals,
    output,
    file,
    limit,
    selector,
    showLabels,
    waitFor,
    timeout,
    port,
    tls,
    kubeconfig,
    maxWatches,
    maxInflight,
    maxBodyBytes,
    namespace,
    allNamespaces,
    help,
  };
}

/** A flag's integer value of at least `min`. */
function parseCount(flag: string, v: string, min: number): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(n) || n < min) {
    throw new UsageError(`${flag} must be an integer of at least ${min}, got ${JSON.stringify(v)}`);
  }
  return n;
}

function parsePort(v: string): number {
  if (!/^\d{1,5}$/.test(v) || Number(v) > 65535) {
    throw new UsageError(`--port must be an integer from 0 to 65535, got ${JSON.stringify(v)}`);
  }
  return Number(v);
}

function checkFor(v: string): string {
  if (v === "delete" || /^condition=[^=]+(=[^=]+)?$/.test(v)) return v;
  throw new UsageError(
    `--for must be condition=<Type>[=<Status>] or delete, got ${JSON.stringify(v)}`,
    "wait",
  );
}

/** `30s`, `5m`, `1h`, `500ms` or a bare number of seconds, in ms. */
function parseDuration(v: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(v);
  const ms = m === null ? NaN : Number(m[1]) * { ms: 1, s: 1e3, m: 6e4, h: 3.6e6 }[m[2] ?? "s"]!;
  if (!Number.isFinite(ms) || ms > 2 ** 31 - 1) {
    throw new UsageError(
      `--timeout must be a duration like 30s, 5m or 1h, got ${JSON.stringify(v)}`,
    );
  }
  return ms;
}

function defaultIo(): CliIo {
  return {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    readStdin: async () => {
      const chunks: Uint8Array[] = [];
      let size = 0;
      for await (const chunk of process.stdin) {
        size += (chunk as Uint8Array).length;
        if (size > APPLY_MAX_BYTES) throw tooBig("stdin", size, true);
        chunks.push(chunk as Uint8Array);
      }
      return new TextDecoder().decode(concat(chunks));
    },
  };
}

function tooBig(what: string, size: number, atLeast = false): CliError {
  return new CliError(
    `${what} is ${atLeast ? "more than " : ""}${size} bytes, above the ${
      APPLY_MAX_BYTES / 1_048_576
    } MiB apply reads: split it into several files`,
  );
}

/** Reads a file as UTF-8, refusing one above {@linkcode APPLY_MAX_BYTES} before reading it. */
async function readBounded(path: string): Promise<string> {
  const file = await open(path, "r");
  try {
    const { size } = await file.stat();
    if (size > APPLY_MAX_BYTES) throw tooBig(path, size);
    const bytes = new Uint8Array(size);
    let at = 0;
    while (at < size) {
      const { bytesRead } = await file.read(bytes, at, size - at, at);
      if (bytesRead === 0) break;
      at += bytesRead;
    }
    return new TextDecoder().decode(bytes.subarray(0, at));
  } finally {
    await file.close();
  }
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/**
 * Runs one CLI invocation: `args` are the words after the program name
 * (`<store> <command> ...`). Resolves to the exit code: 0 success, 1 an
 * error (one line on `io.stderr`), 2 a usage error. Never rejects.
 * @param args The arguments, e.g. `["./beehive.db", "get", "Cluster.kstack.sh"]`.
 * @param io Where to write and read. @default {the process's standard streams}
 */
export async function main(args: readonly string[], io: CliIo = defaultIo()): Promise<number> {
  let parsed: Parsed;
  try {
    parsed = parseArgs(args);
  } catch (error) {
    return usage(io, error);
  }
  const [storeArg, name, ...rest] = parsed.positionals;
  if (parsed.help) {
    const named = parsed.positionals.find((p) => Object.hasOwn(COMMANDS, p));
    io.stdout(named === undefined ? HELP : commandHelp(named));
    return 0;
  }
  if (storeArg === undefined) {
    io.stderr(HELP);
    return 2;
  }
  if (name === undefined) return usage(io, new UsageError("missing command"));
  if (!Object.hasOwn(COMMANDS, name)) {
    return usage(io, new UsageError(`unknown command ${JSON.stringify(name)}`));
  }
  const command = COMMANDS[name];
  const [min, max] = command.args;
  // kubectl's `kind/name` form, for a command that takes a kind and a name.
  if (max === 2 && rest.length === 1 && /^[^/]+\/./.test(rest[0])) {
    const slash = rest[0].indexOf("/");
    rest.splice(0, 1, rest[0].slice(0, slash), rest[0].slice(slash + 1));
  }
  if (rest.length < min || rest.length > max) {
    return usage(
      io,
      new UsageError(
        `${name} takes ${min === max ? min : `${min} to ${max}`} argument${
          max === 1 ? "" : "s"
        }, got ${rest.length}`,
        name,
      ),
    );
  }
  const given: readonly [Flag, boolean, string][] = [
    ["output", parsed.output !== "table", "-o"],
    ["file", parsed.file !== undefined, "-f"],
    ["limit", parsed.limit !== undefined, "--limit"],
    ["selector", parsed.selector !== undefined, "-l"],
    ["showLabels", parsed.showLabels, "--show-labels"],
    ["for", parsed.waitFor !== undefined, "--for"],
    ["timeout", parsed.timeout !== undefined, "--timeout"],
    ["port", parsed.port !== undefined, "--port"],
    ["tls", parsed.tls, "--tls"],
    ["kubeconfig", parsed.kubeconfig !== undefined, "--kubeconfig"],
    ["limits", parsed.maxWatches !== undefined, "--max-watches"],
    ["limits", parsed.maxInflight !== undefined, "--max-inflight"],
    ["limits", parsed.maxBodyBytes !== undefined, "--max-body-bytes"],
    ["namespace", parsed.namespace !== undefined, "-n"],
    ["all", parsed.allNamespaces, "-A"],
  ];
  for (const [flag, used, spelled] of given) {
    if (used && !command.flags.includes(flag)) {
      return usage(io, new UsageError(`${name} has no ${spelled} flag`, name));
    }
  }
  if (parsed.namespace !== undefined && parsed.allNamespaces) {
    return usage(io, new UsageError("-n and -A do not go together", name));
  }
  if (parsed.allNamespaces && name === "get" && rest.length === 2) {
    return usage(io, new UsageError("get takes a name or -A, not both", name));
  }
  if (parsed.selector !== undefined && name === "get" && rest.length === 2) {
    return usage(io, new UsageError("get takes a name or -l, not both", name));
  }
  if (name === "wait" && parsed.waitFor === undefined) {
    return usage(io, new UsageError("wait needs --for=condition=<Type> or --for=delete", name));
  }
  if (name === "apply" && parsed.file === undefined) {
    return usage(
      io,
      new UsageError("apply needs -f <file.json> (or -f - for standard input)", name),
    );
  }
  let store: Store | undefined;
  const cwd = workingDirectory(io.cwd);
  try {
    store = await openStore(storeArg, cwd, command.writes === true);
    const opened = store;
    // Never started: no lease taken, so a running process keeps its store. A
    // short watch floor lets `watch` see another process's writes promptly.
    const bh = new Beehive(store, { watchFloorInterval: 500 });
    await command.run({
      store,
      bh,
      args: rest,
      parsed,
      io: { ...io, cwd },
      out: (line) => io.stdout(`${terminalSafe(line)}\n`),
      kind: async (input) => {
        try {
          return await resolveStoreKind(opened, input);
        } catch (error) {
          if (error instanceof UnknownKindError) throw new CliError(error.message);
          throw error;
        }
      },
      data: (value) =>
        io.stdout(
          terminalSafe(
            parsed.output === "yaml"
              ? toYaml(JSON.parse(JSON.stringify(value)))
              : `${json(value)}\n`,
          ),
        ),
    });
    return 0;
  } catch (error) {
    if (error instanceof UsageError) return usage(io, error);
    if (error instanceof Damaged) return 1;
    io.stderr(`error: ${terminalSafe(oneLine(error))}\n`);
    return 1;
  } finally {
    await store?.close().catch(() => {});
  }
}

function usage(io: CliIo, error: unknown): number {
  const command = error instanceof UsageError ? error.command : undefined;
  const hint = command === undefined ? "beehive --help" : `beehive ${command} --help`;
  io.stderr(`error: ${terminalSafe(oneLine(error))}\nRun '${hint}' for usage.\n`);
  return 2;
}

/**
 * `text` with every control character but newline and tab written as a
 * `\uXXXX` escape (valid inside a JSON string, visible in a table), and the
 * bidirectional overrides too: nothing a stored value holds can move the
 * cursor, recolour or retitle the terminal, or reorder what it shows.
 */
function terminalSafe(text: string): string {
  return text.replace(
    // deno-lint-ignore no-control-regex
    /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/\s*\n\s*/g, " ");
}

/**
 * The namespace `-n` names, checked against the kind's stored scope: a
 * cluster-scoped kind refuses one; by name, a namespaced kind needs one.
 */
async function namespaceOf(
  ctx: Context,
  gk: GroupKind,
  byName: boolean,
): Promise<{ namespaced: boolean; namespace: string | undefined }> {
  const namespaced = (await ctx.store.kinds.get(gk))?.namespaced ?? false;
  const namespace = ctx.parsed.namespace;
  if (!namespaced && namespace !== undefined) {
    throw new CliError(`${kindLabel(gk)} is cluster-scoped: it takes no -n`);
  }
  if (namespaced && byName && namespace === undefined) {
    throw new CliError(
      `${kindLabel(gk)} is namespaced: name the object's namespace with -n NAMESPACE`,
    );
  }
  return { namespaced, namespace: namespaced ? namespace : undefined };
}

async function getRaw(ctx: Context, gk: GroupKind, name: string): Promise<RawObject> {
  const { namespace } = await namespaceOf(ctx, gk, true);
  try {
    return await ctx.store.objects.getByName({ ...gk, name, namespace });
  } catch (error) {
    if (error instanceof NotFoundError) {
      throw new CliError(
        `${kindLabel(gk)} ${JSON.stringify(name)} not found${
          namespace === undefined ? "" : ` in namespace ${JSON.stringify(namespace)}`
        }`,
      );
    }
    throw error;
  }
}

/** Renders rows as columns separated by three spaces, kubectl style. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [header, ...rows].map((r) => r.map(cell));
  const widths = header.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  return all.map((r) => r.map((c, i) => i === r.length - 1 ? c : c.padEnd(widths[i])).join("   "))
    .map((line) => line.trimEnd())
    .join("\n");
}

/** One table cell: control characters made visible so a hostile value cannot redraw the terminal. */
function cell(text: string): string {
  // deno-lint-ignore no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => c === "\n" ? "\\n" : "?");
}

function json(value: unknown): string {
  return prettyJson(value);
}

function conditionsSummary(view: ObjectView): string {
  if (view.conditions.length === 0) return "-";
  return view.conditions.map((c) => `${c.type}=${c.unconfirmed ? "Unknown?" : c.status}`).join(
    ",",
  );
}

const OBJECT_HEADER = ["NAME", "ID", "GEN", "READY", "STATE", "CONDITIONS", "AGE"];

/** Labels as kubectl's `--show-labels` prints them: `k=v,k=v`, or `<none>`. */
function labelsText(labels: Readonly<Record<string, string>>): string {
  const pairs = Object.entries(labels).map(([k, v]) => `${k}=${v}`);
  return pairs.length === 0 ? "<none>" : pairs.join(",");
}

/** A map printed kubectl describe's way: the first entry beside its title, the rest under it. */
function describeMap(title: string, map: Readonly<Record<string, string>>, sep: string): string[] {
  const pad = " ".repeat(22);
  const entries = Object.entries(map);
  if (entries.length === 0) return [`${title.padEnd(22)}<none>`];
  return entries.map(([k, v], i) =>
    `${i === 0 ? title.padEnd(22) : pad}${cell(k)}${sep}${cell(v)}`
  );
}

/** A kind's printer columns and the kind they read, for {@linkcode objectRow}. */
interface KindColumns {
  readonly gk: GroupKind;
  readonly readers: readonly ColumnReader[];
}

/** {@linkcode OBJECT_HEADER} with the kind's printer columns after NAME, as kubectl prints them. */
function objectHeader(columns: KindColumns): string[] {
  return [
    OBJECT_HEADER[0],
    ...columns.readers.map((r) => r.column.name.toUpperCase()),
    ...OBJECT_HEADER.slice(1),
  ];
}

function objectRow(view: ObjectView, now: number, columns: KindColumns): string[] {
  return [
    view.name,
    ...columnTexts(columns.readers, columns.gk, view, now),
    String(view.id),
    generationSummary(view),
    readySummary(view.conditions),
    stateSummary(view),
    conditionsSummary(view),
    age(view.createdAt, now),
  ];
}

async function cmdKinds(ctx: Context): Promise<void> {
  const kinds = await listKinds(ctx.store);
  const names = await namesOf(ctx.store, kinds);
  const key = (gk: GroupKind) => JSON.stringify([gk.group, gk.kind]);
  const stored = new Map<string, RawKind>();
  for (const k of await ctx.store.kinds.list()) stored.set(key(k), k);
  const schemas = (k: GroupKind) => {
    const def = stored.get(key(k));
    return [
      ...(def?.specSchema === undefined ? [] : ["spec"]),
      ...(def?.statusSchema === undefined ? [] : ["status"]),
    ];
  };
  if (ctx.parsed.output !== "table") {
    ctx.data(kinds.map((k, i) => ({
      ...k,
      label: kindLabel(k),
      plural: names[i].plural,
      singular: names[i].singular,
      shortNames: names[i].shortNames,
      stored: stored.has(key(k)),
      schemas: schemas(k),
    })));
    return;
  }
  if (kinds.length === 0) {
    ctx.out("No kinds found.");
    return;
  }
  ctx.out(table(
    ["KIND", "PLURAL", "SHORTNAMES", "SCHEMA", "OBJECTS"],
    kinds.map((k, i) => [
      kindLabel(k),
      names[i].plural,
      names[i].shortNames.join(",") || "-",
      schemas(k).join(",") || "-",
      String(k.objects),
    ]),
  ));
}

async function cmdGet(ctx: Context): Promise<void> {
  const gk = await ctx.kind(ctx.args[0]);
  const name = ctx.args[1];
  const selector = ctx.parsed.selector;
  const labelSelector = selector === undefined ? undefined : parseLabelSelector(selector);
  const scope = await namespaceOf(ctx, gk, name !== undefined);
  const namespace = scope.namespace;
  const views = name === undefined
    ? (await ctx.store.objects.list(gk, { labelSelector, namespace })).map(toView)
    : [toView(await getRaw(ctx, gk, name))];
  if (ctx.parsed.output !== "table") {
    ctx.data(name === undefined ? views : views[0]);
    return;
  }
  if (views.length === 0) {
    ctx.out(
      `No ${kindLabel(gk)} objects found${selector === undefined ? "" : ` matching ${selector}`}.`,
    );
    return;
  }
  const now = Date.now();
  const labels = ctx.parsed.showLabels;
  const columns = { gk, readers: await storedColumns(ctx.store, gk) };
  const row = (v: (typeof views)[number]) =>
    labels ? [...objectRow(v, now, columns), labelsText(v.labels)] : objectRow(v, now, columns);
  const objectColumns = objectHeader(columns);
  const header = labels ? [...objectColumns, "LABELS"] : objectColumns;
  if (scope.namespaced && namespace === undefined && name === undefined) {
    ctx.out(table(["NAMESPACE", ...header], views.map((v) => [v.namespace, ...row(v)])));
    return;
  }
  ctx.out(table(header, views.map(row)));
}

function refText(ref: RefView): string {
  return `${kindLabel(ref)}/${ref.name ?? "(gone)"} (id ${ref.id})`;
}

function indent(text: string, by = "  "): string {
  return text.split("\n").map((l) => by + l).join("\n");
}

function stamp(at: Date | undefined, now: number): string {
  return at === undefined ? "<none>" : `${at.toISOString()} (${age(at, now)} ago)`;
}

async function cmdDescribe(ctx: Context): Promise<void> {
  const gk = await ctx.kind(ctx.args[0]);
  const view = toView(await getRaw(ctx, gk, ctx.args[1]));
  const rel = await readRelations(ctx.store, view.id);
  if (ctx.parsed.output !== "table") {
    ctx.data({ ...view, ...rel });
    return;
  }
  const now = Date.now();
  const refs = (list: readonly RefView[]) =>
    list.length === 0 ? "<none>" : list.map(refText).join(", ");
  const lines = [
    `Name:                 ${cell(view.name)}`,
    `Kind:                 ${kindLabel(view)}`,
    `ID:                   ${view.id}`,
    ...describeMap("Labels:", view.labels, "="),
    ...describeMap("Annotations:", view.annotations, ": "),
    `Generation:           ${view.generation}`,
    `Observed generation:  ${view.observedGeneration ?? "<none>"}`,
    `Observed at:          ${stamp(view.observedAt, now)}`,
    `State:                ${stateSummary(view)}`,
    `Resource version:     ${view.resourceVersion}`,
    `Created:              ${stamp(view.createdAt, now)}`,
    `Updated:              ${stamp(view.updatedAt, now)}`,
    `Deletion requested:   ${stamp(view.deletionRequestedAt, now)}`,
    `Finalizers:           ${view.finalizers.length === 0 ? "<none>" : view.finalizers.join(", ")}`,
    `Owner:                ${rel.owner === undefined ? "<none>" : refText(rel.owner)}`,
    `Owned:                ${refs(rel.owned)}`,
    `Dependencies:         ${refs(rel.dependencies)}`,
    `Dependents:           ${refs(rel.dependents)}`,
    "Spec:",
    indent(json(view.spec)),
    "Status:",
    indent(view.status === undefined ? "<none>" : json(view.status)),
    "Conditions:",
    view.conditions.length === 0 ? "  <none>" : indent(table(
      ["TYPE", "STATUS", "REASON", "TRANSITIONED", "UPDATED", "MESSAGE"],
      view.conditions.map((c) => [
        c.type,
        c.unconfirmed ? "Unknown (unconfirmed)" : c.status,
        c.reason || "-",
        age(c.transitionedAt, now),
        age(c.updatedAt, now),
        c.message,
      ]),
    )),
    "Events:",
    rel.events.length === 0 ? "  <none>" : indent(eventTable(rel.events, now)),
  ];
  // Each line made safe on its own: a value's line break shows as \n, never as a new line.
  ctx.out(lines.flatMap((l) => l.split("\n")).map(cell).join("\n"));
}

function eventTable(
  events: readonly {
    type: string;
    reason: string;
    category: string;
    count: number;
    firstAt: Date;
    lastAt: Date;
    message: string;
  }[],
  now: number,
): string {
  return table(
    ["LAST", "TYPE", "REASON", "CATEGORY", "COUNT", "FIRST", "MESSAGE"],
    events.map((e) => [
      age(e.lastAt, now),
      e.type,
      e.reason,
      e.category || "-",
      String(e.count),
      age(e.firstAt, now),
      e.message,
    ]),
  );
}

async function cmdEvents(ctx: Context): Promise<void> {
  const gk = await ctx.kind(ctx.args[0]);
  const raw = await getRaw(ctx, gk, ctx.args[1]);
  const events = (await ctx.store.events.list(raw.id, { limit: ctx.parsed.limit ?? 0 })).map(
    (e) => ({ ...e, detail: e.detail === undefined ? undefined : JSON.parse(e.detail) }),
  );
  if (ctx.parsed.output !== "table") {
    ctx.data(events);
    return;
  }
  if (events.length === 0) {
    ctx.out(`No events for ${kindLabel(gk)} ${JSON.stringify(raw.name)}.`);
    return;
  }
  ctx.out(eventTable(events, Date.now()));
}

async function cmdWatch(ctx: Context): Promise<void> {
  const gk = await ctx.kind(ctx.args[0]);
  const signal = ctx.io.signal;
  if (signal?.aborted) return;
  const { namespace } = await namespaceOf(ctx, gk, false);
  const selector = ctx.parsed.selector;
  const stream = await ctx.bh.client(gk, { namespace }).watchList({
    signal,
    labelSelector: selector,
  });
  const labels = ctx.parsed.showLabels;
  const asJson = ctx.parsed.output === "json";
  const asYaml = ctx.parsed.output === "yaml";
  const columns = { gk, readers: await storedColumns(ctx.store, gk) };
  const header = ["EVENT", ...objectHeader(columns), ...(labels ? ["LABELS"] : [])];
  const widths = header.map((h) => Math.max(h.length, 11));
  const line = (cells: string[]) =>
    ctx.out(cells.map((c, i) => cell(c).padEnd(widths[i])).join("   ").trimEnd());
  const emit = (change: ObjectChange<unknown, unknown>) => {
    if (asJson) {
      ctx.out(JSON.stringify(change));
      return;
    }
    if (asYaml) {
      ctx.io.stdout(terminalSafe(`---\n${toYaml(JSON.parse(JSON.stringify(change)))}`));
      return;
    }
    const view = change.object as BeehiveObject<unknown, unknown> | undefined;
    if (view === undefined) line([change.type, "?", String(change.id)]);
    else {
      line([
        change.type,
        ...objectRow(view, Date.now(), columns),
        ...(labels ? [labelsText(view.labels)] : []),
      ]);
    }
  };
  if (!asJson && !asYaml) line(header);
  for (const object of stream.objects) {
    emit({ type: "Added", id: object.id, resourceVersion: object.resourceVersion, object });
  }
  for await (const change of stream) emit(change);
}

async function cmdApply(ctx: Context): Promise<void> {
  const file = ctx.parsed.file!;
  let text: string;
  if (file === "-") {
    text = await (ctx.io.readStdin ?? defaultIo().readStdin!)();
    if (text.length > APPLY_MAX_BYTES) throw tooBig("stdin", text.length, true);
  } else {
    try {
      text = await readBounded(resolvePath(file, ctx.io.cwd!));
    } catch (error) {
      if (error instanceof CliError) throw error;
      throw new CliError(`cannot read ${file}: ${(error as Error).message}`);
    }
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const source = file === "-" ? "stdin" : file;
  const items = applyItems(readDocuments(text, source), source);
  if (items.length === 0) throw new CliError(`${source} holds no objects to apply`);
  // One transaction: an item the engine refuses (a name or spec above a limit,
  // a schema's refusal) rolls back every write before it.
  const results = await ctx.store.within(async (tx) => {
    const bh = new Beehive(tx);
    const done: ApplyResult[] = [];
    for (const item of items) {
      const gk = { group: item.group, kind: item.kind };
      try {
        // -n is the default namespace of a namespaced kind's items; a cluster-scoped one ignores it.
        const namespaced = (await tx.kinds.get(gk))?.namespaced ?? false;
        const namespace = item.namespace ?? (namespaced ? ctx.parsed.namespace : undefined);
        const client = bh.client(gk, namespace === undefined ? undefined : { namespace });
        const before = await tx.objects.getMetaByName({ ...gk, name: item.name, namespace })
          .catch(
            (error) => {
              if (error instanceof NotFoundError) return undefined;
              throw error;
            },
          );
        const { object, created } = await client.createOrUpdate(item.name, item.spec, {
          labels: item.labels,
          annotations: item.annotations,
        });
        const result = created
          ? "created"
          : before !== undefined && before.generation === object.generation &&
              sameMetadata(before.labels, object.labels) &&
              sameMetadata(before.annotations, object.annotations)
          ? "unchanged"
          : "configured";
        done.push({
          kind: kindLabel(gk),
          name: object.name,
          id: object.id,
          generation: object.generation,
          result,
        });
      } catch (error) {
        throw new CliError(`${item.at}: ${oneLine(error)} (nothing was written)`);
      }
    }
    return done;
  });
  if (ctx.parsed.output !== "table") {
    ctx.data(results);
    return;
  }
  for (const r of results) ctx.out(`${r.kind}/${cell(r.name)} ${r.result}`);
}

interface ApplyResult {
  readonly kind: string;
  readonly name: string;
  readonly id: number;
  readonly generation: number;
  readonly result: string;
}

async function cmdCheck(ctx: Context): Promise<void> {
  const store = ctx.store as Store & { check?: () => Promise<IntegrityReport> };
  if (typeof store.check !== "function") throw new CliError("this store has no integrity check");
  const report = await store.check();
  if (ctx.parsed.output !== "table") ctx.data(report);
  else {
    ctx.out(`schema version ${report.schemaVersion}`);
    for (const name of report.checks) {
      const found = report.findings.filter((f) => f.check === name);
      ctx.out(`${name}: ${found.length === 0 ? "ok" : "FAILED"}`);
      for (const f of found) ctx.out(`  ${f.detail}`);
    }
    ctx.out(report.ok ? "ok: no damage found" : "damaged: see the checks above");
  }
  if (!report.ok) throw new Damaged();
}

async function cmdDelete(ctx: Context): Promise<void> {
  const gk = await ctx.kind(ctx.args[0]);
  // deleteByName treats absence as success; kubectl users expect "not found".
  const raw = await getRaw(ctx, gk, ctx.args[1]);
  try {
    await ctx.bh.client(gk).delete(raw.id);
  } catch (error) {
    if (error instanceof NotFoundError) {
      throw new CliError(`${kindLabel(gk)} ${JSON.stringify(raw.name)} not found`);
    }
    throw error;
  }
  ctx.out(`${kindLabel(gk)}/${cell(raw.name)} deletion requested`);
}

async function cmdRequeue(ctx: Context): Promise<void> {
  const gk = await ctx.kind(ctx.args[0]);
  const raw = await getRaw(ctx, gk, ctx.args[1]);
  await ctx.store.reconcileOwed.stamp([{ id: raw.id, group: raw.group, kind: raw.kind }]);
  ctx.out(`${kindLabel(gk)}/${cell(raw.name)} requeued`);
}

async function cmdWait(ctx: Context): Promise<void> {
  const gk = await ctx.kind(ctx.args[0]);
  const forText = ctx.parsed.waitFor!;
  const { namespace } = await namespaceOf(ctx, gk, true);
  const raw = await ctx.store.objects.getByName({ ...gk, name: ctx.args[1], namespace }).catch(
    (error) => {
      if (!(error instanceof NotFoundError)) throw error;
      return undefined;
    },
  );
  if (raw === undefined) {
    if (forText === "delete") return ctx.out(`${kindLabel(gk)}/${cell(ctx.args[1])} deleted`);
    throw new CliError(`${kindLabel(gk)} ${JSON.stringify(ctx.args[1])} not found`);
  }
  const what = `${kindLabel(gk)}/${cell(raw.name)}`;
  const [, type, status = "True"] = forText === "delete" ? [] : forText.split("=");
  const met = (object: BeehiveObject<unknown, unknown> | undefined): boolean => {
    if (forText === "delete") return object === undefined;
    const c = object?.conditions.find((c) => c.type.toLowerCase() === type.toLowerCase());
    return c !== undefined && c.status.toLowerCase() === status.toLowerCase();
  };
  const timeoutMs = ctx.parsed.timeout ?? 30_000;
  const abort = new AbortController();
  const outer = ctx.io.signal;
  const onOuter = () => abort.abort();
  outer?.addEventListener("abort", onOuter);
  const timer = timeoutMs === 0 ? undefined : setTimeout(() => abort.abort(), timeoutMs);
  try {
    if (outer?.aborted) throw new CliError(`interrupted waiting for ${what}`);
    const stream = await ctx.bh.client(gk).watch(raw.id, { signal: abort.signal });
    let done = met(stream.object);
    try {
      if (!done) {
        for await (const change of stream) {
          if (met(change.object)) {
            done = true;
            break;
          }
          if (change.type === "Deleted") break;
        }
      }
    } catch (error) {
      if (!abort.signal.aborted) throw error;
    } finally {
      stream.close();
    }
    if (done) {
      ctx.out(forText === "delete" ? `${what} deleted` : `${what} condition met`);
      return;
    }
    if (outer?.aborted) throw new CliError(`interrupted waiting for ${what}`);
    if (abort.signal.aborted) {
      throw new CliError(`timed out waiting for ${forText} on ${what}`);
    }
    throw new CliError(`${what} was deleted while waiting for ${forText}`);
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener("abort", onOuter);
  }
}

async function cmdServe(ctx: Context): Promise<void> {
  // Loaded only to serve: the other commands need no HTTP server.
  const { serve } = await import("./_serve.ts");
  const { port, tls, kubeconfig, maxWatches, maxInflight, maxBodyBytes } = ctx.parsed;
  await serve(ctx.store, {
    port: port ?? 6443,
    tls,
    limits: { maxWatches, maxInflight, maxBodyBytes },
    kubeconfig: kubeconfig === undefined ? undefined : resolvePath(kubeconfig, ctx.io.cwd!),
  }, ctx.io);
}

function isProgram(): boolean {
  const meta = import.meta as ImportMeta & { main?: boolean };
  if (typeof meta.main === "boolean") return meta.main;
  const entry = process.argv[1];
  return entry !== undefined && pathToFileURL(entry).href === import.meta.url;
}

if (isProgram()) {
  const controller = new AbortController();
  const onInterrupt = () => {
    if (controller.signal.aborted) process.exit(130);
    controller.abort();
  };
  process.on("SIGINT", onInterrupt);
  const argv = process.argv.slice(2);
  const code = await main(argv, { ...defaultIo(), signal: controller.signal });
  process.off("SIGINT", onInterrupt);
  process.exitCode = code;
}
