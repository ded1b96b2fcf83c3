/**
 * The bad-input campaign: seeded, property-based runs that drive the Client,
 * the ControllerClient (inside real passes) and the AdminClient with hostile
 * arguments — empty, huge and malformed names, namespaces and condition text, unencodable
 * specs, wrong-kind, collected and malformed ids, out-of-range options, calls
 * after stop and after the store closed — against an in-memory model of what
 * the store must hold. Every call either does what the model says or rejects
 * with exactly the pinned error class, never throwing synchronously; a refusal
 * moves no resource version; and after every step the store (read through the
 * public API, and once more after a reopen) holds exactly the model.
 *
 * @module
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  Beehive,
  BeehiveError,
  type BeehiveObject,
  type Client,
  ConflictError,
  defineKind,
  DeletionPendingError,
  DuplicateConditionTypeError,
  type GroupKind,
  InvalidConditionError,
  InvalidEventError,
  InvalidMetadataError,
  InvalidNameError,
  InvalidOptionError,
  InvalidSpecError,
  InvalidStatusError,
  NameTakenError,
  NoControllerError,
  NotFoundError,
  NotLoadedError,
  ReconcileReturnedError,
  settled,
  StaleTxError,
  StoreClosedError,
  StoreError,
  TooLargeError,
  WrongKindError,
} from "../../mod.ts";
import { connect } from "node:net";
import { consoleHandler } from "../../console/mod.ts";
import { kubeApiHandler } from "../../kubeapi/mod.ts";
import { copyBomb, deepMergePatch } from "../kubeapi/_attacks.ts";
import { listenNode } from "../_loopback_server.ts";
import { openSqliteStore, openTestStore } from "../_sqlite_driver.ts";
import { openSqliteStore as openSqliteFile } from "../../store/sqlite/mod.ts";
import { cli } from "../cli/_cli_harness.ts";
import { test } from "../_test.ts";
import { type AnyCC, Harness, Other, Thing } from "../_beehive_harness.ts";
import { scratchDir } from "./_scratch.ts";
import { matchesLabels, parseLabelSelector } from "../../src/model/label_selector.ts";
import { type FakeClock, installFakeTime } from "../_fake_time.ts";

// ---------------------------------------------------------------------------
// Campaign parameters and figures

/** The seed of every property in this file: a failure replays with it. */
const SEED = 20_261_129;
/** Runs of the model-based property, and steps per run. */
const MODEL_RUNS = 150;
const MAX_STEPS = 50;
/** The GC interval of the Beehive under test (fake ms). */
const GC_INTERVAL = 1_000;

type ErrorClass = new (message: string) => Error;

/** Reads an environment variable on either runtime (undefined when not permitted). */
function envVar(name: string): string | undefined {
  try {
    const g = globalThis as {
      Deno?: { env: { get(n: string): string | undefined } };
      process?: { env: Record<string, string | undefined> };
    };
    return g.Deno?.env.get(name) ?? g.process?.env[name];
  } catch {
    return undefined;
  }
}

/** Set BEEHIVE_PROPERTY_DEBUG=1 to log every judged call. */
const DEBUG = envVar("BEEHIVE_PROPERTY_DEBUG") !== undefined;

/** fast-check's replay path of a failure (printed with it), to rerun only that case. */
function replay(): { path?: string } {
  const path = envVar("BEEHIVE_PROPERTY_PATH");
  return path === undefined ? {} : { path };
}

/** What the campaign did, reported at the end of each property. */
const figures = {
  calls: 0,
  resolved: 0,
  rejected: new Map<string, number>(),
  checks: 0,
  refusalsWithoutWrite: 0,
  runs: 0,
  /** Model events the store was checked against: collections, cascaded marks, reopens. */
  collected: 0,
  cascaded: 0,
  reopens: 0,
  stops: 0,
  closes: 0,
  members: new Map<string, { resolved: number; rejected: number }>(),
};

/** The API member a judged call's label names: `Client.create`, `AdminClient.addEvent`, … */
function memberOf(label: string): string {
  return label
    .replace(/^admin\((Thing|Other)\)\./, "AdminClient.")
    .replace(/^(Thing|Other)\./, "Client.")
    .replace(/^cc\./, "ControllerClient.")
    .replace(/^tx\.client\(\w+\)\./, "tx.client(kind).")
    .replace(/^tx\./, "ControllerTx.")
    .replace(/[( ].*$/s, "");
}

function report(property: string): void {
  const byClass = [...figures.rejected.entries()].sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`).join(", ");
  console.log(
    `[bad-input] ${property}: runs ${figures.runs}, calls ${figures.calls} ` +
      `(resolved ${figures.resolved}, rejected ${figures.calls - figures.resolved}: ${byClass}); ` +
      (figures.refusalsWithoutWrite > 0
        ? `refusals checked to write nothing ${figures.refusalsWithoutWrite}; `
        : "") +
      `model checks ${figures.checks}` +
      (figures.reopens > 0
        ? `; collections ${figures.collected}, cascaded deletions ${figures.cascaded}, ` +
          `runs stopped mid-way ${figures.stops}, runs that closed the store and went on ` +
          `${figures.closes}, reopens checked ${figures.reopens}`
        : ""),
  );
  if (envVar("BEEHIVE_REPORT_MEMBERS")) {
    for (const [k, v] of [...figures.members.entries()].sort()) {
      console.log(`  ${k}: resolved ${v.resolved}, rejected ${v.rejected}`);
    }
  }
  figures.members.clear();
  figures.calls = 0;
  figures.resolved = 0;
  figures.rejected.clear();
  figures.checks = 0;
  figures.refusalsWithoutWrite = 0;
  figures.collected = 0;
  figures.cascaded = 0;
  figures.reopens = 0;
  figures.stops = 0;
  figures.closes = 0;
  figures.runs = 0;
}

// ---------------------------------------------------------------------------
// Showing values (labels must stay short: names and specs can be 100 kB)

function show(value: unknown): string {
  if (typeof value === "string") {
    const s = value.length > 24 ? `${value.slice(0, 12)}…(${value.length})` : value;
    return JSON.stringify(s);
  }
  if (typeof value === "bigint") return `${value}n`;
  if (typeof value === "function") return "fn";
  if (typeof value === "symbol") return "symbol";
  if (value instanceof Date) return `Date(${value.getTime()})`;
  if (Array.isArray(value)) return `[${value.map(show).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    if ("make" in value) return `<${(value as { make: string }).make}>`;
    if ("v" in value) return show((value as { v: unknown }).v);
    return `{${Object.entries(value).map(([k, v]) => `${k}:${show(v)}`).join(",")}}`;
  }
  return String(value);
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.constructor.name}: ${error.message}` : String(error);
}

// ---------------------------------------------------------------------------
// Hostile values

const HUGE = "n".repeat(100_000);
const MISSING_ID = 1_000_000_000;

/** A value to pass, either plain data or built at call time (BigInt, cycles, throwing hooks). */
type Gen = { readonly v: unknown } | { readonly make: keyof typeof factories };

const factories = {
  bigint: () => 1n,
  nestedBigint: () => ({ n: [1, 2n] }),
  cyclic: () => {
    const o: Record<string, unknown> = { a: 1 };
    o.self = o;
    return o;
  },
  cyclicArray: () => {
    const a: unknown[] = [1];
    a.push({ back: a });
    return a;
  },
  undefined: () => undefined,
  fn: () => () => 1,
  symbol: () => Symbol("s"),
  undefinedLaden: () => ({ a: undefined, b: [undefined, 1], c: { d: undefined } }),
  functionValued: () => ({ f: () => 1, s: Symbol("x"), k: 1 }),
  throwingToJSON: () => ({
    toJSON() {
      throw new Error("toJSON refuses");
    },
  }),
  undefinedToJSON: () => ({ toJSON: () => undefined }),
  throwingGetter: () => ({
    get x(): number {
      throw new RangeError("getter refuses");
    },
  }),
  loneSurrogates: () => ({ s: "\ud800x\udc00", z: "a\u0000b" }),
  huge: () => ({ big: "x".repeat(100_000) }),
  nonFinite: () => [NaN, Infinity, -0, -Infinity],
  date: () => ({ at: new Date(0) }),
  map: () => new Map([[1, 2]]),
  nullProto: () => Object.assign(Object.create(null), { a: 1 }),
  protoKey: () => JSON.parse('{"__proto__": {"x": 1}}'),
  deep: () => {
    let v: unknown = 0;
    for (let i = 0; i < 1_000; i++) v = [v];
    return v;
  },
};

function materialize(g: Gen): unknown {
  return "make" in g ? factories[g.make]() : g.v;
}

const smallJson = fc.constantFrom<unknown>({}, { a: 1 }, null, [], "s", 0, { a: [1, { b: "c" }] });
const genArb: fc.Arbitrary<Gen> = fc.oneof(
  { weight: 6, arbitrary: smallJson.map((v) => ({ v })) },
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((v) => ({ v })) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(...(Object.keys(factories) as (keyof typeof factories)[]))
      .map((make) => ({ make })),
  },
);

/** Arbitrary UTF-16: empty, NUL, lone surrogates and well-formed text alike. */
const utf16 = fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 5 })
  .map((units) => String.fromCharCode(...units));

const goodNames = [
  "a",
  "b",
  "A",
  "é",
  "e\u0301",
  "😀",
  "a b",
  " ",
  "a/b:c",
  "\u{10FFFF}",
  HUGE,
];
const badNames = ["", "\ud800", "a\udc00", "x\ud83d", "\udfff\ud800", HUGE + "\ud800", "a\u0000b"];
const nameArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 16, arbitrary: fc.constantFrom(...goodNames) },
  { weight: 3, arbitrary: fc.constantFrom(...badNames) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(undefined, null, 42, {}, ["a"], 1n) },
  { weight: 1, arbitrary: utf16 },
);

/** A name, abstract until the step runs: one a live object of a kind holds, or a given value. */
type NameRef = { readonly held: KindKey; readonly i: number } | { readonly name: unknown };

const nameRefArb: fc.Arbitrary<NameRef> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({ held: fc.constantFrom<KindKey>("Thing", "Other"), i: fc.nat(20) }),
  },
  { weight: 3, arbitrary: nameArb.map((name) => ({ name })) },
);

/** An id, abstract until the step runs: a live object, a collected one, a missing one, or a malformed value. */
type IdRef =
  | { readonly live: KindKey; readonly i: number }
  | { readonly owning: KindKey; readonly i: number }
  | { readonly collected: number }
  | { readonly missing: number }
  | { readonly raw: unknown };

const badIds: unknown[] = [
  0,
  -1,
  -0,
  1.5,
  NaN,
  Infinity,
  -Infinity,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 53),
  Number.MIN_VALUE,
  1e300,
  "1",
  "",
  1n,
  null,
  undefined,
  true,
  {},
  [1],
];
/** Ids, mostly of live objects of `kind` (when given), else of either kind, collected, missing or malformed. */
function idRefOf(kind?: KindKey): fc.Arbitrary<IdRef> {
  const live = (k: fc.Arbitrary<KindKey>) => fc.record({ live: k, i: fc.nat(20) });
  const either = fc.constantFrom<KindKey>("Thing", "Other");
  return fc.oneof(
    { weight: 12, arbitrary: live(kind === undefined ? either : fc.constant(kind)) },
    { weight: kind === undefined ? 0 : 3, arbitrary: live(either) },
    { weight: 2, arbitrary: fc.record({ collected: fc.nat(20) }) },
    {
      weight: 1,
      arbitrary: fc.record({ missing: fc.constantFrom(MISSING_ID, Number.MAX_SAFE_INTEGER) }),
    },
    { weight: 3, arbitrary: fc.constantFrom(...badIds).map((raw) => ({ raw })) },
  );
}
const idRefArb = idRefOf();

const textPool = (extra: unknown[]) =>
  fc.constantFrom<unknown>("", "\ud800", "a\udc00b", HUGE, ...extra);

/** A condition as a caller might write it, malformed or not. */
const conditionArb: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      type: fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom("Ready", "Synced", "ready", "Ω", "😀") },
        { weight: 2, arbitrary: textPool(["a\u0000", 5, undefined, null]) },
      ),
      status: fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom("True", "False", "Unknown") },
        { weight: 1, arbitrary: fc.constantFrom<unknown>("true", "", "TRUE", undefined, 1, null) },
      ),
      reason: fc.option(
        fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom("Fine", "Broken", "") },
          { weight: 1, arbitrary: textPool(["x\u0000", 7]) },
        ),
        { nil: undefined },
      ),
      message: fc.option(
        fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom("all good", "") },
          { weight: 1, arbitrary: textPool(["\u0000", false]) },
        ),
        { nil: undefined },
      ),
      liveness: fc.option(fc.constantFrom<unknown>(true, false, false, "yes", 1), {
        nil: undefined,
      }),
    }, { requiredKeys: ["type", "status"] }),
  },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(null, "Ready", 5, [], undefined) },
);

const conditionListArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 8, arbitrary: fc.array(conditionArb, { maxLength: 4 }) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(null, "Ready", { type: "Ready" }, undefined) },
);

/** An event write, abstract (its detail may need building). */
type EventGen = { readonly raw: unknown } | {
  readonly category?: unknown;
  readonly type?: unknown;
  readonly reason?: unknown;
  readonly message?: unknown;
  readonly detail?: Gen;
};

/** Event writes. `withNul` adds text with NUL, which the store reads back cut short (a known bug). */
function eventArb(withNul: boolean): fc.Arbitrary<EventGen> {
  const nul = withNul ? ["a\u0000b", "\u0000"] : [];
  return fc.oneof(
    {
      weight: 12,
      arbitrary: fc.record({
        category: fc.option(
          fc.oneof(
            { weight: 5, arbitrary: fc.constantFrom("", "net", "disk") },
            { weight: 1, arbitrary: textPool([5, ...nul]) },
          ),
          { nil: undefined },
        ),
        type: fc.oneof(
          { weight: 6, arbitrary: fc.constantFrom("Normal", "Warning") },
          { weight: 1, arbitrary: fc.constantFrom<unknown>("normal", "Error", "", undefined, 3) },
        ),
        reason: fc.oneof(
          { weight: 6, arbitrary: fc.constantFrom("Up", "Down") },
          { weight: 2, arbitrary: textPool([undefined, 5, null, ...nul]) },
        ),
        message: fc.option(
          fc.oneof(
            { weight: 4, arbitrary: fc.constantFrom("hello", "") },
            { weight: 1, arbitrary: textPool([9, ...nul]) },
          ),
          { nil: undefined },
        ),
        detail: fc.option(genArb, { nil: undefined }),
      }, { requiredKeys: ["type", "reason"] }),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom<unknown>(null, "Up", 5, undefined).map((raw) => ({ raw })),
    },
  );
}

function materializeEvent(e: EventGen): unknown {
  if ("raw" in e) return e.raw;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e)) {
    out[k] = k === "detail" && v !== undefined ? materialize(v as Gen) : v;
  }
  return out;
}

const finalizerArb = fc.constantFrom<unknown>("f/a", "f/b", "", "\ud800", "a\u0000", 5, undefined);
// Create options leave out NUL finalizers: on a held name they are not refused (a known bug,
// pinned by a skipped test below); deleteFinalizer still gets them.
const finalizersArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.array(fc.constantFrom("f/a", "f/b"), { maxLength: 3 }) },
  {
    weight: 2,
    arbitrary: fc.array(finalizerArb.filter((f) => f !== "a\u0000"), { maxLength: 3 }),
  },
  { weight: 1, arbitrary: fc.constantFrom<unknown>("f/a", null, {}) },
);

/** `undefined` two times in three. */
function rarely<T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });
}

/** Create options, abstract: the owner is an IdRef, onCreate a behaviour. */
type OptsGen = { readonly raw: unknown } | {
  readonly owner?: IdRef;
  readonly finalizers?: unknown;
  readonly onCreate?: "count" | "throw" | "reject" | "notAFunction";
};

const optsArb: fc.Arbitrary<OptsGen> = fc.oneof(
  { weight: 5, arbitrary: fc.constant({ raw: undefined }) },
  {
    weight: 6,
    arbitrary: fc.record({
      owner: fc.option(
        fc.oneof(
          {
            weight: 4,
            arbitrary: fc.record({
              live: fc.constantFrom<KindKey>("Thing", "Other"),
              i: fc.nat(20),
            }),
          },
          { weight: 1, arbitrary: idRefArb },
        ),
        { nil: undefined, freq: 2 },
      ),
      finalizers: rarely(finalizersArb),
      onCreate: rarely(fc.constantFrom("count", "throw", "reject", "notAFunction" as const)),
    }, { requiredKeys: [] }),
  },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(null, 5, "opts", []).map((raw) => ({ raw })) },
);

const readOptsArb = fc.constantFrom<unknown>(
  undefined,
  undefined,
  {},
  { load: ["owner", "dependencies", "dependents", "owned", "events"] },
  { load: [] },
  { load: ["bogus"] },
  { load: "owner" },
  5,
  null,
);

const eventQueryArb = fc.constantFrom<unknown>(
  undefined,
  {},
  { category: "" },
  { category: "net" },
  { type: "Warning" },
  { reason: "Up" },
  { reason: "" },
  { limit: 1 },
  { limit: 0 },
  { since: new Date(0) },
  { since: new Date(8.64e15) },
  { limit: -1 },
  { limit: 1.5 },
  { limit: NaN },
  { type: "Bogus" },
  { category: 5 },
  { since: new Date(NaN) },
  { since: "yesterday" },
  5,
  null,
);

// ---------------------------------------------------------------------------
// The model

type KindKey = "Thing" | "Other";
const KINDS: Record<KindKey, GroupKind> = { Thing, Other };

interface MCondition {
  type: string;
  status: string;
  reason: string;
  message: string;
  liveness: boolean;
}

interface MEvent {
  category: string;
  type: string;
  reason: string;
  message: string;
  detail: string | undefined;
  count: number;
}

interface MObject {
  id: number;
  kind: KindKey;
  name: string;
  spec: string;
  status: string | undefined;
  generation: number;
  observedGeneration: number | undefined;
  deleting: boolean;
  finalizers: string[];
  conditions: MCondition[];
  events: MEvent[];
  owner: number | undefined;
  deps: number[];
  /** The resource version last read. */
  rv: number;
  /** Whether a write changed the content since: the version must then have moved. */
  touched: boolean;
}

interface Model {
  objects: Map<number, MObject>;
  collected: number[];
  issued: Set<number>;
  running: boolean;
  closed: boolean;
  onCreateExpected: number;
}

interface Real {
  h: Harness;
  path: string;
  onCreateFired: { n: number };
}

function liveIds(m: Model, kind: KindKey): number[] {
  return [...m.objects.values()].filter((o) => o.kind === kind).map((o) => o.id).sort((a, b) =>
    a - b
  );
}

function byName(m: Model, kind: KindKey, name: unknown): MObject | undefined {
  for (const o of m.objects.values()) if (o.kind === kind && o.name === name) return o;
  return undefined;
}

function resolveName(m: Model, r: NameRef): unknown {
  if ("name" in r) return r.name;
  const held = liveIds(m, r.held).map((id) => m.objects.get(id)!.name);
  return held.length === 0 ? "a" : held[r.i % held.length];
}

function resolveId(m: Model, r: IdRef): unknown {
  if ("raw" in r) return r.raw;
  if ("missing" in r) return r.missing;
  if ("owning" in r) {
    const owners = liveIds(m, r.owning).filter((id) => ownedBy(m, id).length > 0);
    if (owners.length > 0) return owners[r.i % owners.length];
    return resolveId(m, { live: r.owning, i: r.i });
  }
  if ("collected" in r) {
    return m.collected.length === 0
      ? MISSING_ID + 1
      : m.collected[r.collected % m.collected.length];
  }
  const ids = liveIds(m, r.live);
  return ids.length === 0 ? MISSING_ID + 2 : ids[r.i % ids.length];
}

function fingerprint(o: MObject): string {
  return JSON.stringify([
    o.spec,
    o.status ?? null,
    o.generation,
    o.observedGeneration ?? null,
    o.deleting,
    o.finalizers,
    sortByType(o.conditions),
  ]);
}

/** Code-point order, the order SQLite's BINARY collation gives UTF-8 text. */
function codePointCompare(a: string, b: string): number {
  const x = [...a].map((c) => c.codePointAt(0)!);
  const y = [...b].map((c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

function sortByType<T extends { type: string }>(cs: readonly T[]): T[] {
  return [...cs].sort((a, b) => codePointCompare(a.type, b.type));
}

function snapshot(m: Model): Map<number, string> {
  return new Map([...m.objects.values()].map((o) => [o.id, fingerprint(o)]));
}

/** Marks every object whose content changed since `before`. */
function markTouched(m: Model, before: Map<number, string>): void {
  for (const o of m.objects.values()) {
    const fp = before.get(o.id);
    if (fp !== undefined && fp !== fingerprint(o)) o.touched = true;
  }
}

/** Runs a model update, marking every object whose content it changed. */
async function touching(m: Model, update: () => Promise<void> | void): Promise<void> {
  const before = snapshot(m);
  await update();
  markTouched(m, before);
}

/** Collection and convergence, as a running Beehive must reach them once it drains. */
function converge(m: Model): void {
  const before = snapshot(m);
  converge0(m);
  markTouched(m, before);
}

function converge0(m: Model, count = true): void {
  for (;;) {
    let changed = false;
    const objs = () => [...m.objects.values()];
    for (const o of objs()) {
      if (!o.deleting) continue;
      for (const c of objs()) {
        if (c.owner === o.id && !c.deleting) {
          c.deleting = true;
          if (count) figures.cascaded++;
          changed = true;
        }
      }
    }
    for (const o of objs()) {
      if (!o.deleting || o.finalizers.length > 0) continue;
      const blocked = objs().some((s) =>
        s.owner === o.id || (!s.deleting && s.id !== o.id && s.deps.includes(o.id))
      );
      if (blocked) continue;
      m.objects.delete(o.id);
      m.collected.push(o.id);
      if (count) figures.collected++;
      for (const s of m.objects.values()) s.deps = s.deps.filter((d) => d !== o.id);
      changed = true;
    }
    if (!changed) break;
  }
  for (const o of m.objects.values()) if (o.kind === "Thing") o.observedGeneration = o.generation;
}

// ---------------------------------------------------------------------------
// Validation, restated from DESIGN.md's Resolutions (not from the code)

const storable = (s: string) => s.isWellFormed() && !s.includes("\u0000");

function idErrors(id: unknown): ErrorClass[] {
  return typeof id === "number" && Number.isSafeInteger(id) && id >= 1 ? [] : [TypeError];
}

function nameErrors(name: unknown): ErrorClass[] {
  if (typeof name !== "string") return [TypeError];
  return name !== "" && storable(name) ? [] : [InvalidNameError];
}

/** Strict JSON: what JSON.stringify gives, except that a non-finite number is refused. */
function encode(value: unknown): string | undefined {
  try {
    return JSON.stringify(value, (_k, v) => {
      if ((typeof v === "number" || v instanceof Number) && !Number.isFinite(Number(v))) {
        throw new TypeError("non-finite");
      }
      return v;
    });
  } catch {
    return undefined;
  }
}

/** The default `limits.nameBytes`: a longer name cannot be created. */
const NAME_BYTES = 1_024;

function createNameErrors(name: unknown): ErrorClass[] {
  const errors = nameErrors(name);
  if (errors.length > 0) return errors;
  return new TextEncoder().encode(name as string).length > NAME_BYTES ? [InvalidNameError] : [];
}

function jsonErrors(value: unknown): ErrorClass[] {
  if (encode(value) === undefined) return [TypeError];
  return nestingOf(value) > NESTING_DEPTH ? [TooLargeError as unknown as ErrorClass] : [];
}

function optionObjectErrors(o: unknown): ErrorClass[] {
  return o === undefined || (typeof o === "object" && o !== null) ? [] : [TypeError];
}

function createOptionErrors(o: unknown, kind: KindKey): ErrorClass[] {
  if (o === undefined || o === null) return [];
  if (typeof o !== "object") return [TypeError];
  const r = o as Record<string, unknown>;
  const errors: ErrorClass[] = [];
  if (r.owner !== undefined) errors.push(...idErrors(r.owner));
  if (r.onCreate !== undefined && typeof r.onCreate !== "function") errors.push(TypeError);
  if (r.finalizers !== undefined) {
    const f = r.finalizers;
    if (
      !Array.isArray(f) || !f.every((x) => typeof x === "string" && x !== "" && storable(x))
    ) errors.push(InvalidOptionError);
    else if (f.length > 0 && kind === "Other") errors.push(InvalidOptionError);
  }
  return errors;
}

const LOAD_KEYS = ["owner", "dependencies", "dependents", "owned", "events"];

function loadErrors(o: unknown): ErrorClass[] {
  if (o === undefined) return [];
  if (typeof o !== "object" || o === null) return [TypeError];
  const load = (o as { load?: unknown }).load;
  if (load === undefined) return [];
  return Array.isArray(load) && load.every((k) => LOAD_KEYS.includes(k)) ? [] : [TypeError];
}

function loads(o: unknown): string[] {
  return ((o as { load?: string[] } | undefined)?.load) ?? [];
}

/** Read filters are not pinned to one class; any bad-argument class is accepted. */
const BAD_FILTER: ErrorClass[] = [TypeError, InvalidEventError, InvalidOptionError];

function eventQueryErrors(q: unknown): ErrorClass[] {
  if (q === undefined) return [];
  if (typeof q !== "object" || q === null) return [TypeError];
  const r = q as Record<string, unknown>;
  const bad = (r.category !== undefined && typeof r.category !== "string") ||
    (r.type !== undefined && r.type !== "Normal" && r.type !== "Warning") ||
    (r.reason !== undefined && typeof r.reason !== "string") ||
    (r.limit !== undefined &&
      (typeof r.limit !== "number" || !Number.isSafeInteger(r.limit) || r.limit < 0)) ||
    (r.since !== undefined && (!(r.since instanceof Date) || Number.isNaN(r.since.getTime())));
  return bad ? BAD_FILTER : [];
}

/** The default `limits.messageBytes`. */
const MESSAGE_BYTES = 32_768;

function tooLongMessage(v: unknown): boolean {
  return typeof v === "string" && new TextEncoder().encode(v).length > MESSAGE_BYTES;
}

/** The default `limits.fieldBytes`: group, kind, condition type and reason, event reason and category, finalizers. */
const FIELD_BYTES = 1_024;

function tooLongField(v: unknown): boolean {
  return typeof v === "string" && new TextEncoder().encode(v).length > FIELD_BYTES;
}

/** The default `limits.nestingDepth`. */
const NESTING_DEPTH = 64;

/** How deep the JSON of `value` nests objects and arrays (`{}` is 1), from its encoded text. */
function nestingOf(value: unknown): number {
  const text = encode(value) ?? "";
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") deepest = Math.max(deepest, ++depth);
    else if (c === "}" || c === "]") depth--;
  }
  return deepest;
}

function conditionErrors(list: unknown): ErrorClass[] {
  if (!Array.isArray(list)) return [TypeError];
  const errors = new Set<ErrorClass>();
  const seen = new Set<string>();
  const text = (v: unknown, required: boolean) =>
    (v === undefined && !required) ||
    (typeof v === "string" && storable(v) && (!required || v !== ""));
  for (const c of list) {
    if (typeof c !== "object" || c === null) {
      errors.add(InvalidConditionError);
      continue;
    }
    const r = c as Record<string, unknown>;
    if (
      !text(r.type, true) || !["True", "False", "Unknown"].includes(r.status as string) ||
      !text(r.reason, false) || !text(r.message, false) || tooLongMessage(r.message) ||
      tooLongField(r.type) || tooLongField(r.reason) ||
      (r.liveness !== undefined && typeof r.liveness !== "boolean")
    ) errors.add(InvalidConditionError);
    if (typeof r.type === "string") {
      if (seen.has(r.type)) errors.add(DuplicateConditionTypeError);
      seen.add(r.type);
    }
  }
  return [...errors];
}

function eventErrors(e: unknown): ErrorClass[] {
  if (typeof e !== "object" || e === null) return [TypeError];
  const r = e as Record<string, unknown>;
  const errors: ErrorClass[] = [];
  if (r.detail !== undefined) errors.push(...jsonErrors(r.detail));
  const text = (v: unknown, required: boolean) =>
    (v === undefined && !required) ||
    (typeof v === "string" && storable(v) && (!required || v !== ""));
  if (
    (r.type !== "Normal" && r.type !== "Warning") || !text(r.reason, true) ||
    !text(r.category, false) || !text(r.message, false) || tooLongMessage(r.message) ||
    tooLongField(r.reason) || tooLongField(r.category)
  ) errors.push(InvalidEventError);
  return errors;
}

// ---------------------------------------------------------------------------
// Calling and judging

/** What a call must do: reject with one of `errors`, or (none given) resolve and pass `ok`. */
interface Expect {
  readonly errors: readonly ErrorClass[];
  /** When `errors` is empty: refusals the pinned API leaves open, which must write nothing. */
  readonly tolerated?: readonly ErrorClass[];
  // deno-lint-ignore no-explicit-any
  readonly ok?: (value: any) => void | Promise<void>;
}

function refuse(errors: readonly ErrorClass[]): Expect {
  return { errors };
}

function names(classes: readonly ErrorClass[]): string {
  return classes.map((c) => c.name).join(" | ") || "success";
}

/** How a judged call ended. */
type Judged = { readonly ok: true } | { readonly ok: false; readonly error: unknown };

/** Runs one call, judges it against `e`, and checks that a refusal moved no resource version. */
async function judge(
  label: string,
  e: Expect,
  invoke: () => Promise<unknown>,
  rv: () => Promise<number>,
  m?: Model,
): Promise<Judged> {
  const before = await rv();
  let p: Promise<unknown>;
  try {
    p = invoke();
  } catch (error) {
    assert.fail(`${label} threw synchronously: ${describeError(error)}`);
  }
  assert.ok(p instanceof Promise, `${label} did not return a promise`);
  let outcome: { ok: true; value: unknown } | { ok: false; error: unknown };
  try {
    outcome = { ok: true, value: await p };
  } catch (error) {
    outcome = { ok: false, error };
  }
  figures.calls++;
  if (DEBUG) {
    console.log(
      `  ${label} -> ${outcome.ok ? "ok" : describeError(outcome.error)}; expected ${
        names(e.errors)
      }`,
    );
  }
  const member = memberOf(label);
  const tally = figures.members.get(member) ?? { resolved: 0, rejected: 0 };
  figures.members.set(member, tally);
  if (outcome.ok) tally.resolved++;
  else tally.rejected++;
  if (outcome.ok) {
    figures.resolved++;
    assert.equal(e.errors.length, 0, `${label} resolved; expected ${names(e.errors)}`);
    if (m === undefined) await e.ok?.(outcome.value);
    else await touching(m, async () => await e.ok?.(outcome.value));
    return { ok: true };
  }
  const error = outcome.error;
  const cls = error instanceof Error ? error.constructor.name : typeof error;
  figures.rejected.set(cls, (figures.rejected.get(cls) ?? 0) + 1);
  const allowed = e.errors.length > 0 ? e.errors : e.tolerated ?? [];
  assert.ok(
    allowed.some((c) => error instanceof Error && error.constructor === c),
    `${label} rejected with ${describeError(error)}; expected ${names(e.errors)}`,
  );
  assert.equal(await rv(), before, `${label} was refused but moved the resource version`);
  figures.refusalsWithoutWrite++;
  return { ok: false, error };
}

function rvOf(m: Model, r: Real): () => Promise<number> {
  return () => m.closed ? Promise.resolve(-1) : r.h.store.getLatestResourceVersion();
}

// deno-lint-ignore no-explicit-any
type AnyObject = BeehiveObject<any, any>;

/** Checks one object as read against the model. */
function checkObject(real: AnyObject, o: MObject, reopened = false): void {
  const at = `${o.kind} ${o.id} ${show(o.name)}`;
  assert.equal(real.id, o.id, `${at}: id`);
  assert.equal(real.group, KINDS[o.kind].group, `${at}: group`);
  assert.equal(real.kind, KINDS[o.kind].kind, `${at}: kind`);
  assert.ok(real.name === o.name, `${at}: name ${show(real.name)}`);
  assert.deepEqual(real.spec, JSON.parse(o.spec), `${at}: spec`);
  assert.deepEqual(
    real.status,
    o.status === undefined ? undefined : JSON.parse(o.status),
    `${at}: status`,
  );
  assert.equal(real.generation, o.generation, `${at}: generation`);
  assert.equal(real.observedGeneration, o.observedGeneration, `${at}: observedGeneration`);
  assert.equal(real.deletionRequestedAt !== undefined, o.deleting, `${at}: deletion mark`);
  assert.deepEqual(real.finalizers, o.finalizers, `${at}: finalizers`);
  for (let i = 1; i < real.conditions.length; i++) {
    assert.ok(
      codePointCompare(real.conditions[i - 1].type, real.conditions[i].type) < 0,
      `${at}: conditions not ordered by type`,
    );
  }
  assert.deepEqual(
    real.conditions.map((c) => ({
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: c.message,
      liveness: c.liveness,
      unconfirmed: c.unconfirmed,
    })),
    sortByType(o.conditions).map((c) => ({
      ...c,
      status: reopened && c.liveness ? "Unknown" : c.status,
      unconfirmed: reopened && c.liveness,
    })),
    `${at}: conditions`,
  );
  figures.checks++;
}

function refsOf(m: Model, ids: Iterable<number>) {
  return [...ids].sort((a, b) => a - b).map((id) => {
    const o = m.objects.get(id)!;
    return { ...KINDS[o.kind], id };
  });
}

function dependentsOf(m: Model, id: number): number[] {
  return [...m.objects.values()].filter((o) => o.deps.includes(id)).map((o) => o.id);
}

function ownedBy(m: Model, id: number): number[] {
  return [...m.objects.values()].filter((o) => o.owner === id).map((o) => o.id);
}

function eventView(e: { category: string; type: string; reason: string; message: string }) {
  return { category: e.category, type: e.type, reason: e.reason, message: e.message };
}

function checkEvents(
  real: readonly {
    id: number;
    lastAt: Date;
    category: string;
    type: string;
    reason: string;
    message: string;
    detail: unknown;
    count: number;
  }[],
  expected: readonly MEvent[],
  at: string,
): void {
  for (let i = 1; i < real.length; i++) {
    const a = real[i - 1], b = real[i];
    assert.ok(
      a.lastAt > b.lastAt || (a.lastAt.getTime() === b.lastAt.getTime() && a.id > b.id),
      `${at}: events not newest first`,
    );
  }
  const sorted = [...real].sort((a, b) => a.id - b.id);
  assert.deepEqual(
    sorted.map((e) => ({ ...eventView(e), detail: e.detail, count: e.count })),
    expected.map((e) => ({
      ...eventView(e),
      detail: e.detail === undefined ? undefined : JSON.parse(e.detail),
      count: e.count,
    })),
    `${at}: events`,
  );
}

interface Views {
  client(kind: KindKey): Client<unknown, unknown>;
}

/** Compares everything the store holds with the model, through the public API. */
async function verify(m: Model, views: Views, reopened = false): Promise<void> {
  for (const kind of ["Thing", "Other"] as const) {
    const c = views.client(kind);
    const list = await c.list();
    assert.deepEqual(list.map((o) => o.id), liveIds(m, kind), `${kind} ids`);
    assert.equal(new Set(list.map((o) => o.name)).size, list.length, `${kind} names unique`);
    for (const real of list) {
      const o = m.objects.get(real.id)!;
      checkObject(real, o, reopened);
      if (o.touched) {
        assert.ok(real.resourceVersion > o.rv, `${kind} ${o.id}: changed without a new version`);
      } else {
        assert.equal(real.resourceVersion, o.rv, `${kind} ${o.id}: version moved, content did not`);
      }
      o.rv = real.resourceVersion;
      o.touched = false;
      checkEvents(await c.listEvents(o.id), o.events, `${kind} ${o.id}`);
      assert.deepEqual(await c.listDependencies(o.id), refsOf(m, o.deps), `${o.id} deps`);
      assert.deepEqual(
        await c.getOwner(o.id),
        o.owner === undefined ? undefined : refsOf(m, [o.owner])[0],
        `${o.id} owner`,
      );
    }
  }
  const things = views.client("Thing"), others = views.client("Other");
  for (const id of m.collected) {
    await assert.rejects(things.get(id), NotFoundError);
    await assert.rejects(others.get(id), NotFoundError);
    await assert.rejects(things.listEvents(id), NotFoundError);
    assert.deepEqual(await things.listDependencies(id), []);
    assert.equal(await things.getOwner(id), undefined);
    figures.checks++;
  }
}

/** Whether `converge` would change nothing. */
function converged(m: Model): boolean {
  if (!m.running) return true;
  const copy = structuredClone(m);
  converge0(copy, false);
  return copy.collected.length === m.collected.length &&
    [...m.objects.values()].every((o) => {
      const c = copy.objects.get(o.id)!;
      return c.deleting === o.deleting && c.observedGeneration === o.observedGeneration;
    });
}

/** Lets a running Beehive drain: ticks GC intervals until the resource version holds still. */
async function settle(m: Model, r: Real): Promise<void> {
  if (m.closed || !m.running) return;
  let last = await r.h.store.getLatestResourceVersion();
  let stable = 0;
  for (let i = 0; i < 60 && stable < 2; i++) {
    await r.h.tick(GC_INTERVAL);
    const now = await r.h.store.getLatestResourceVersion();
    stable = now === last ? stable + 1 : 0;
    last = now;
  }
  assert.equal(stable, 2, "the Beehive did not drain");
  converge(m);
}

function views(r: Real): Views {
  return { client: (kind) => r.h.bh.client(KINDS[kind]) };
}

// ---------------------------------------------------------------------------
// Effects shared by the Client, the AdminClient and the ControllerClient

function newObject(
  m: Model,
  kind: KindKey,
  name: string,
  text: string,
  finalizers: unknown,
  owner: number | undefined,
  created: AnyObject,
): MObject {
  assert.ok(!m.issued.has(created.id), `id ${created.id} was issued before`);
  const o: MObject = {
    id: created.id,
    kind,
    name,
    spec: text,
    status: undefined,
    generation: 1,
    observedGeneration: undefined,
    deleting: false,
    finalizers: [...new Set((finalizers as string[] | undefined) ?? [])],
    conditions: [],
    events: [],
    owner,
    deps: [],
    rv: created.resourceVersion,
    touched: false,
  };
  m.objects.set(o.id, o);
  m.issued.add(o.id);
  checkObject(created, o);
  return o;
}

function writeSpec(o: MObject, text: string): void {
  if (text !== o.spec) {
    o.spec = text;
    o.generation++;
  }
}

function setConditions(o: MObject, list: readonly Record<string, unknown>[]): void {
  for (const c of list) {
    const next: MCondition = {
      type: c.type as string,
      status: c.status as string,
      reason: (c.reason as string | undefined) ?? "",
      message: (c.message as string | undefined) ?? "",
      liveness: c.liveness === true,
    };
    const i = o.conditions.findIndex((x) => x.type === next.type);
    if (i < 0) o.conditions.push(next);
    else o.conditions[i] = next;
  }
}

function addEvent(o: MObject, e: Record<string, unknown>): void {
  const category = (e.category as string | undefined) ?? "";
  const timeline = o.events.filter((x) => x.category === category);
  const last = timeline[timeline.length - 1];
  const message = (e.message as string | undefined) ?? "";
  const detail = e.detail === undefined ? undefined : encode(e.detail);
  if (last !== undefined && last.type === e.type && last.reason === e.reason) {
    last.count++;
    last.message = message;
    last.detail = detail;
  } else {
    o.events.push({
      category,
      type: e.type as string,
      reason: e.reason as string,
      message,
      detail,
      count: 1,
    });
  }
}

/** A write a pass (or the AdminClient) makes on one object. */
type Write =
  | { readonly op: "updateStatus"; readonly status: Gen }
  | { readonly op: "setCondition"; readonly condition: unknown }
  | { readonly op: "setConditions"; readonly conditions: unknown }
  | { readonly op: "deleteCondition"; readonly type: unknown }
  | { readonly op: "addEvent"; readonly event: EventGen }
  | { readonly op: "deleteFinalizer"; readonly finalizer: unknown }
  | { readonly op: "addDependency"; readonly to: IdRef }
  | { readonly op: "deleteDependency"; readonly to: IdRef };

function writeArb(withNul: boolean): fc.Arbitrary<Write> {
  return fc.oneof(
    fc.record({ op: fc.constant("updateStatus" as const), status: genArb }),
    fc.record({ op: fc.constant("setCondition" as const), condition: conditionArb }),
    fc.record({ op: fc.constant("setConditions" as const), conditions: conditionListArb }),
    fc.record({
      op: fc.constant("deleteCondition" as const),
      type: fc.constantFrom<unknown>("Ready", "Synced", "ready", "", "\ud800", 5),
    }),
    fc.record({ op: fc.constant("addEvent" as const), event: eventArb(withNul) }),
    fc.record({ op: fc.constant("deleteFinalizer" as const), finalizer: finalizerArb }),
    fc.record({ op: fc.constant("addDependency" as const), to: idRefArb }),
    fc.record({ op: fc.constant("deleteDependency" as const), to: idRefArb }),
  );
}

/** A write's arguments, built, and what it must do to `target` (checked for validity first). */
interface BuiltWrite {
  readonly label: string;
  readonly args: unknown[];
  readonly validation: ErrorClass[];
  readonly emptyBatch: boolean;
  readonly tolerated: ErrorClass[];
  /** The expectation once the target is known to be valid. */
  readonly then: (target: MObject) => Expect;
}

function buildWrite(m: Model, w: Write): BuiltWrite {
  const base = { emptyBatch: false, tolerated: [] as ErrorClass[] };
  switch (w.op) {
    case "updateStatus": {
      const status = materialize(w.status);
      return {
        ...base,
        label: `updateStatus(${show(w.status)})`,
        args: [status],
        validation: jsonErrors(status),
        then: (t) => ({
          errors: [],
          ok: () => void (t.status = encode(status)),
        }),
      };
    }
    case "setCondition":
    case "setConditions": {
      const list = w.op === "setCondition" ? [w.condition] : w.conditions;
      return {
        ...base,
        label: `${w.op}(${show(w.op === "setCondition" ? w.condition : w.conditions)})`,
        args: [w.op === "setCondition" ? w.condition : w.conditions],
        validation: conditionErrors(list),
        emptyBatch: Array.isArray(list) && list.length === 0,
        then: (t) => ({
          errors: [],
          ok: () => setConditions(t, list as Record<string, unknown>[]),
        }),
      };
    }
    case "deleteCondition":
      return {
        ...base,
        label: `deleteCondition(${show(w.type)})`,
        args: [w.type],
        validation: typeof w.type === "string" ? [] : [TypeError],
        tolerated: typeof w.type === "string" && (w.type === "" || !storable(w.type))
          ? [InvalidConditionError]
          : [],
        then: (t) => ({
          errors: [],
          ok: () => void (t.conditions = t.conditions.filter((c) => c.type !== w.type)),
        }),
      };
    case "addEvent": {
      const event = materializeEvent(w.event);
      return {
        ...base,
        label: `addEvent(${show(w.event)})`,
        args: [event],
        validation: eventErrors(event),
        then: (t) => ({ errors: [], ok: () => addEvent(t, event as Record<string, unknown>) }),
      };
    }
    case "deleteFinalizer":
      return {
        ...base,
        label: `deleteFinalizer(${show(w.finalizer)})`,
        args: [w.finalizer],
        validation: typeof w.finalizer === "string" ? [] : [TypeError],
        tolerated: typeof w.finalizer === "string" &&
            (w.finalizer === "" || !storable(w.finalizer))
          ? [InvalidOptionError]
          : [],
        then: (t) => ({
          errors: [],
          ok: () => void (t.finalizers = t.finalizers.filter((f) => f !== w.finalizer)),
        }),
      };
    case "addDependency":
    case "deleteDependency": {
      const to = resolveId(m, w.to);
      return {
        ...base,
        label: `${w.op}(${show(to)})`,
        args: [to],
        validation: idErrors(to),
        then: (t) => {
          if (w.op === "deleteDependency") {
            return { errors: [], ok: () => void (t.deps = t.deps.filter((d) => d !== to)) };
          }
          if (!m.objects.has(to as number)) return refuse([NotFoundError]);
          return {
            errors: [],
            ok: () => void (t.deps = [...new Set([...t.deps, to as number])].sort((a, b) => a - b)),
          };
        },
      };
    }
  }
}

/** The expectation of a built write against a known-valid target. */
function expectWrite(b: BuiltWrite, target: MObject): Expect {
  if (b.validation.length > 0) return refuse(b.validation);
  const e = b.then(target);
  return e.errors.length > 0 ? e : { ...e, tolerated: [...b.tolerated, ...(e.tolerated ?? [])] };
}

// deno-lint-ignore no-explicit-any
type Writer = Record<string, (...args: any[]) => Promise<unknown>>;

// ---------------------------------------------------------------------------
// Steps

class Step implements fc.AsyncCommand<Model, Real> {
  readonly label: string;
  readonly when: (m: Model) => boolean;
  readonly body: (m: Model, r: Real) => Promise<void>;

  constructor(
    label: string,
    when: (m: Model) => boolean,
    body: (m: Model, r: Real) => Promise<void>,
  ) {
    this.label = label;
    this.when = when;
    this.body = body;
  }

  check(m: Readonly<Model>): boolean {
    return this.when(m as Model);
  }

  async run(m: Model, r: Real): Promise<void> {
    if (DEBUG) console.log(`step ${this.label}`);
    const before = m.closed ? -1 : await r.h.store.getLatestResourceVersion();
    await this.body(m, r);
    if (m.closed) return;
    // A step that wrote nothing and left nothing to collect needs no drain (it costs real time).
    if (await r.h.store.getLatestResourceVersion() !== before || !converged(m)) {
      await settle(m, r);
    }
    await verify(m, views(r));
    assert.equal(r.onCreateFired.n, m.onCreateExpected, "onCreate calls");
  }

  toString(): string {
    return this.label;
  }
}

const always = () => true;
const open = (m: Model) => !m.closed;

/** Rejects every call on a closed store with StoreClosedError (a bad argument may say so first). */
function gate(m: Model, validation: ErrorClass[], next: () => Expect): Expect {
  if (m.closed) return refuse([...validation, StoreClosedError]);
  if (validation.length > 0) return refuse(validation);
  return next();
}

type CreateMode = "create" | "getOrCreate" | "createOrUpdate";

function buildOpts(m: Model, r: Real, g: OptsGen): unknown {
  if ("raw" in g) return g.raw;
  const out: Record<string, unknown> = {};
  if (g.owner !== undefined) out.owner = resolveId(m, g.owner);
  if (g.finalizers !== undefined) out.finalizers = g.finalizers;
  if (g.onCreate === "count") out.onCreate = () => void r.onCreateFired.n++;
  if (g.onCreate === "throw") {
    out.onCreate = () => {
      r.onCreateFired.n++;
      throw new Error("onCreate refuses");
    };
  }
  if (g.onCreate === "reject") {
    out.onCreate = () => {
      r.onCreateFired.n++;
      return Promise.reject(new Error("onCreate rejects"));
    };
  }
  if (g.onCreate === "notAFunction") out.onCreate = 42;
  return out;
}

function expectCreate(
  m: Model,
  kind: KindKey,
  mode: CreateMode,
  name: unknown,
  spec: unknown,
  opts: unknown,
): Expect {
  const validation = [
    ...createNameErrors(name),
    ...jsonErrors(spec),
    ...createOptionErrors(opts, kind),
  ];
  return gate(m, validation, () => {
    const text = encode(spec)!;
    const o = (opts ?? {}) as { owner?: number; finalizers?: unknown; onCreate?: unknown };
    const holder = byName(m, kind, name);
    const unwrap = (v: unknown) =>
      mode === "create" ? { object: v as AnyObject, created: true } : v as {
        object: AnyObject;
        created: boolean;
      };
    if (holder !== undefined) {
      if (mode === "create") return refuse([NameTakenError]);
      if (mode === "createOrUpdate" && holder.deleting) return refuse([DeletionPendingError]);
      return {
        errors: [],
        ok: (v) => {
          const r = unwrap(v);
          assert.equal(r.created, false, `${mode} created over an existing row`);
          if (mode === "createOrUpdate") writeSpec(holder, text);
          checkObject(r.object, holder);
        },
      };
    }
    if (o.owner !== undefined && !m.objects.has(o.owner)) return refuse([NotFoundError]);
    return {
      errors: [],
      tolerated: opts === null ? [TypeError] : [],
      ok: (v) => {
        const r = unwrap(v);
        assert.equal(r.created, true, `${mode} did not create`);
        newObject(m, kind, name as string, text, o.finalizers, o.owner, r.object);
        if (typeof o.onCreate === "function") m.onCreateExpected++;
      },
    };
  });
}

/** Every Client call, with hostile arguments. */
function clientSteps(): Record<"creates" | "deletes" | "others", fc.Arbitrary<Step>> {
  const kindArb = fc.constantFrom<KindKey>("Thing", "Other");
  const call = (
    m: Model,
    r: Real,
    label: string,
    e: Expect,
    invoke: () => Promise<unknown>,
  ) => judge(label, e, invoke, rvOf(m, r), m);
  const c = (r: Real, kind: KindKey) => r.h.bh.client(KINDS[kind]);
  // deno-lint-ignore no-explicit-any
  const x = (v: unknown) => v as any;

  const creates = fc.record({
    kind: kindArb,
    mode: fc.constantFrom<CreateMode>("create", "getOrCreate", "createOrUpdate"),
    nameRef: nameRefArb,
    spec: genArb,
    opts: optsArb,
  }).map(({ kind, mode, nameRef, spec, opts }) =>
    new Step(
      `${kind}.${mode}(${show(nameRef)}, ${show(spec)}, ${show(opts)})`,
      always,
      async (m, r) => {
        const name = resolveName(m, nameRef);
        const value = materialize(spec);
        const o = buildOpts(m, r, opts);
        await call(
          m,
          r,
          `${kind}.${mode}`,
          expectCreate(m, kind, mode, name, value, o),
          () => c(r, kind)[mode](x(name), value, x(o)),
        );
      },
    )
  );

  const updates = kindArb.chain((k) =>
    fc.record({ kind: fc.constant(k), id: idRefOf(k), spec: genArb })
  ).map((
    { kind, id, spec },
  ) =>
    new Step(`${kind}.update(${show(id)}, ${show(spec)})`, always, async (m, r) => {
      const target = resolveId(m, id);
      const value = materialize(spec);
      const e = gate(m, [...idErrors(target), ...jsonErrors(value)], () => {
        const o = m.objects.get(target as number);
        if (o === undefined || o.kind !== kind) return refuse([NotFoundError]);
        if (o.deleting) return refuse([DeletionPendingError]);
        return {
          errors: [],
          ok: (v: unknown) => {
            writeSpec(o, encode(value)!);
            checkObject(v as AnyObject, o);
          },
        };
      });
      await call(m, r, `${kind}.update(${show(target)})`, e, () =>
        c(r, kind).update(x(target), value));
    })
  );

  const updatesByName = fc.record({ kind: kindArb, nameRef: nameRefArb, spec: genArb }).map((
    { kind, nameRef, spec },
  ) =>
    new Step(`${kind}.updateByName(${show(nameRef)}, ${show(spec)})`, always, async (m, r) => {
      const name = resolveName(m, nameRef);
      const value = materialize(spec);
      const e = gate(m, [...nameErrors(name), ...jsonErrors(value)], () => {
        const o = byName(m, kind, name);
        if (o === undefined) return refuse([NotFoundError]);
        if (o.deleting) return refuse([DeletionPendingError]);
        return {
          errors: [],
          ok: (v: unknown) => {
            writeSpec(o, encode(value)!);
            checkObject(v as AnyObject, o);
          },
        };
      });
      await call(m, r, `${kind}.updateByName`, e, () => c(r, kind).updateByName(x(name), value));
    })
  );

  const checkLoaded = (m: Model, real: AnyObject, opts: unknown) => {
    const keys = loads(opts);
    const o = m.objects.get(real.id)!;
    if (keys.includes("owner")) {
      assert.deepEqual(real.owner(), o.owner === undefined ? undefined : refsOf(m, [o.owner])[0]);
    } else assert.throws(() => real.owner(), NotLoadedError);
    if (keys.includes("dependencies")) assert.deepEqual(real.dependencies(), refsOf(m, o.deps));
    if (keys.includes("dependents")) {
      assert.deepEqual(real.dependents(), refsOf(m, dependentsOf(m, o.id)));
    }
    if (keys.includes("owned")) assert.deepEqual(real.owned(), refsOf(m, ownedBy(m, o.id)));
    if (keys.includes("events")) assert.equal(real.events().length, o.events.length);
  };

  const gets = kindArb.chain((k) =>
    fc.record({ kind: fc.constant(k), id: idRefOf(k), opts: readOptsArb })
  ).map((
    { kind, id, opts },
  ) =>
    new Step(`${kind}.get(${show(id)}, ${show(opts)})`, always, async (m, r) => {
      const target = resolveId(m, id);
      const e = gate(m, [...idErrors(target), ...loadErrors(opts)], () => {
        const o = m.objects.get(target as number);
        if (o === undefined || o.kind !== kind) return refuse([NotFoundError]);
        return {
          errors: [],
          ok: (v: unknown) => {
            checkObject(v as AnyObject, o);
            checkLoaded(m, v as AnyObject, opts);
          },
        };
      });
      await call(m, r, `${kind}.get(${show(target)})`, e, () => c(r, kind).get(x(target), x(opts)));
    })
  );

  const getsByName = fc.record({ kind: kindArb, nameRef: nameRefArb, opts: readOptsArb }).map((
    { kind, nameRef, opts },
  ) =>
    new Step(`${kind}.getByName(${show(nameRef)}, ${show(opts)})`, always, async (m, r) => {
      const name = resolveName(m, nameRef);
      const e = gate(m, [...nameErrors(name), ...loadErrors(opts)], () => {
        const o = byName(m, kind, name);
        if (o === undefined) return refuse([NotFoundError]);
        return {
          errors: [],
          ok: (v: unknown) => {
            checkObject(v as AnyObject, o);
            checkLoaded(m, v as AnyObject, opts);
          },
        };
      });
      await call(m, r, `${kind}.getByName`, e, () => c(r, kind).getByName(x(name), x(opts)));
    })
  );

  const lists = fc.record({ kind: kindArb, opts: readOptsArb }).map(({ kind, opts }) =>
    new Step(`${kind}.list(${show(opts)})`, always, async (m, r) => {
      const e = gate(m, loadErrors(opts), () => ({
        errors: [],
        ok: (v: unknown) => {
          const list = v as AnyObject[];
          assert.deepEqual(list.map((o) => o.id), liveIds(m, kind));
          for (const o of list) {
            checkObject(o, m.objects.get(o.id)!);
            checkLoaded(m, o, opts);
          }
        },
      }));
      await call(m, r, `${kind}.list`, e, () => c(r, kind).list(x(opts)));
    })
  );

  const deletes = kindArb.chain((k) =>
    fc.record({
      kind: fc.constant(k),
      id: fc.oneof(
        { weight: 2, arbitrary: fc.record({ owning: fc.constant(k), i: fc.nat(20) }) },
        { weight: 3, arbitrary: idRefOf(k) },
      ),
    })
  ).map((
    { kind, id },
  ) =>
    new Step(`${kind}.delete(${show(id)})`, always, async (m, r) => {
      const target = resolveId(m, id);
      const e = gate(m, idErrors(target), () => {
        const o = m.objects.get(target as number);
        if (o === undefined || o.kind !== kind) return refuse([NotFoundError]);
        return {
          errors: [],
          ok: (v: unknown) => {
            assert.equal(v, undefined);
            o.deleting = true;
          },
        };
      });
      await call(m, r, `${kind}.delete(${show(target)})`, e, () => c(r, kind).delete(x(target)));
    })
  );

  const heldName = fc.oneof(
    { weight: 4, arbitrary: fc.record({ held: kindArb, i: fc.nat(20) }) },
    { weight: 1, arbitrary: nameRefArb },
  );
  const deletesByName = fc.record({ kind: kindArb, nameRef: heldName }).map((
    { kind, nameRef },
  ) =>
    new Step(`${kind}.deleteByName(${show(nameRef)})`, always, async (m, r) => {
      const name = resolveName(m, nameRef);
      const e = gate(m, nameErrors(name), () => ({
        errors: [],
        ok: (v: unknown) => {
          assert.equal(v, undefined);
          const o = byName(m, kind, name);
          if (o !== undefined) o.deleting = true;
        },
      }));
      await call(m, r, `${kind}.deleteByName`, e, () => c(r, kind).deleteByName(x(name)));
    })
  );

  const requeues = kindArb.chain((k) =>
    fc.record({
      kind: fc.constant(k),
      id: idRefOf(k),
      opts: fc.constantFrom<unknown>(undefined, {}, { resetBackoff: true }, 5, null, "now"),
    })
  ).map(({ kind, id, opts }) =>
    new Step(`${kind}.requeue(${show(id)}, ${show(opts)})`, always, async (m, r) => {
      const target = resolveId(m, id);
      const e = gate(m, [...idErrors(target), ...optionObjectErrors(opts)], () => {
        const o = m.objects.get(target as number);
        if (o === undefined || o.kind !== kind) return refuse([NotFoundError]);
        if (kind === "Other") return refuse([NoControllerError]);
        return { errors: [] };
      });
      await call(
        m,
        r,
        `${kind}.requeue(${show(target)})`,
        e,
        () => c(r, kind).requeue(x(target), x(opts)),
      );
    })
  );

  // getSchedule and watchSchedule never touch the store: on a closed store they are not
  // refused (see the skipped test below), so this property calls them only while it is open.
  const schedules = fc.record({
    kind: kindArb,
    id: idRefArb,
    watch: fc.boolean(),
    opts: fc.constantFrom<unknown>(undefined, {}, { signal: "abort" }, { signal: "live" }, {
      signal: "x",
    }, 5),
  }).map(({ kind, id, watch, opts }) =>
    new Step(
      `${kind}.${watch ? "watchSchedule" : "getSchedule"}(${show(id)}, ${show(opts)})`,
      open,
      async (m, r) => {
        const target = resolveId(m, id);
        if (!watch) {
          await call(m, r, `${kind}.getSchedule`, {
            errors: idErrors(target),
            ok: (v: unknown) => {
              const s = v as { nextRequeueAt: unknown };
              assert.ok(s.nextRequeueAt === undefined || s.nextRequeueAt instanceof Date);
            },
          }, () => c(r, kind).getSchedule(x(target)));
          return;
        }
        const signal = (opts as { signal?: string } | undefined)?.signal;
        const controller = new AbortController();
        if (signal === "abort") controller.abort();
        const built = signal === "abort" || signal === "live"
          ? { signal: controller.signal }
          : opts;
        const errors = [
          ...idErrors(target),
          ...(signal === "x" ? [TypeError] : []),
        ];
        await call(m, r, `${kind}.watchSchedule`, {
          errors: errors.length > 0 ? errors : kind === "Other" ? [NoControllerError] : [],
          ok: (v: unknown) => (v as { close(): void }).close(),
        }, () => c(r, kind).watchSchedule(x(target), x(built)));
        controller.abort();
      },
    )
  );

  const events = fc.record({
    kind: kindArb,
    id: idRefArb,
    query: eventQueryArb,
    latest: fc.option(fc.constantFrom<unknown>("", "net", "\ud800", "a\u0000", undefined, 5), {
      nil: null,
    }),
  }).map(({ kind, id, query, latest }) =>
    new Step(
      latest === null
        ? `${kind}.listEvents(${show(id)}, ${show(query)})`
        : `${kind}.getLatestEvent(${show(id)}, ${show(latest)})`,
      always,
      async (m, r) => {
        const target = resolveId(m, id);
        const own = m.objects.get(target as number)?.events ?? [];
        if (latest !== null) {
          const e = gate(
            m,
            [...idErrors(target), ...(typeof latest === "string" ? [] : [TypeError])],
            () => ({
              errors: [],
              ok: (v: unknown) => {
                const runs = own.filter((ev) => ev.category === latest);
                const want = runs[runs.length - 1];
                const got = v as {
                  category: string;
                  type: string;
                  reason: string;
                  message: string;
                  count: number;
                } | undefined;
                assert.deepEqual(
                  got === undefined ? undefined : { ...eventView(got), count: got.count },
                  want === undefined ? undefined : { ...eventView(want), count: want.count },
                );
              },
            }),
          );
          await call(m, r, `${kind}.getLatestEvent`, e, () =>
            c(r, kind).getLatestEvent(x(target), x(latest)));
          return;
        }
        const e = gate(m, [...idErrors(target), ...eventQueryErrors(query)], () =>
          // Like watchEvents: an id holding no object (collected, or never) is NotFoundError.
          !m.objects.has(target as number) ? refuse([NotFoundError]) : ({
            errors: [],
            ok: (v: unknown) => {
              const q = (query ?? {}) as {
                category?: string;
                type?: string;
                reason?: string;
                limit?: number;
                since?: Date;
              };
              const want = own.filter((ev) =>
                (q.category === undefined || ev.category === q.category) &&
                (q.type === undefined || ev.type === q.type) &&
                (q.reason === undefined || q.reason === "" || ev.reason === q.reason) &&
                (q.since === undefined || q.since.getTime() === 0)
              );
              const got = v as Parameters<typeof checkEvents>[0];
              if (q.limit !== undefined && q.limit > 0 && want.length > q.limit) {
                assert.equal(got.length, q.limit, "listEvents limit");
              } else checkEvents(got, want, `listEvents ${target}`);
            },
          }));
        await call(m, r, `${kind}.listEvents`, e, () =>
          c(r, kind).listEvents(x(target), x(query)));
      },
    )
  );

  const graph = fc.record({
    kind: kindArb,
    id: idRefArb,
    read: fc.constantFrom(
      "getOwner",
      "listDependencies",
      "listDependents",
      "listOwned",
      "listOwnedObjects",
    ),
    opts: readOptsArb,
  }).map(({ kind, id, read, opts }) =>
    new Step(`${kind}.${read}(${show(id)})`, always, async (m, r) => {
      const target = resolveId(m, id);
      const t = target as number;
      const o = m.objects.get(t);
      const validation = [
        ...idErrors(target),
        ...(read === "listOwnedObjects" ? loadErrors(opts) : []),
      ];
      const e = gate(m, validation, () => ({
        errors: [],
        ok: (v: unknown) => {
          if (read === "getOwner") {
            assert.deepEqual(v, o?.owner === undefined ? undefined : refsOf(m, [o.owner])[0]);
          } else if (read === "listDependencies") assert.deepEqual(v, refsOf(m, o?.deps ?? []));
          else if (read === "listDependents") assert.deepEqual(v, refsOf(m, dependentsOf(m, t)));
          else if (read === "listOwned") assert.deepEqual(v, refsOf(m, ownedBy(m, t)));
          else {
            const want = ownedBy(m, t).filter((id) => m.objects.get(id)!.kind === kind);
            assert.deepEqual((v as AnyObject[]).map((o) => o.id), want.sort((a, b) => a - b));
          }
        },
      }));
      await call(
        m,
        r,
        `${kind}.${read}(${show(target)})`,
        e,
        () =>
          read === "listOwnedObjects"
            ? c(r, kind).listOwnedObjects(x(target), x(opts))
            : c(r, kind)[read](x(target)),
      );
    })
  );

  // A well-formed owner and child, so that the hostile deletes that follow meet cascades.
  const families = fc.record({
    owner: kindArb,
    child: kindArb,
    ownerName: fc.constantFrom(...goodNames.slice(0, 6)),
    childName: fc.constantFrom(...goodNames.slice(4)),
  }).map(({ owner, child, ownerName, childName }) =>
    new Step(
      `family(${owner} ${show(ownerName)} owns ${child} ${show(childName)})`,
      open,
      async (m, r) => {
        const e = expectCreate(m, owner, "getOrCreate", ownerName, {}, undefined);
        let ownerId: number | undefined;
        const before = await r.h.store.getLatestResourceVersion();
        await call(m, r, `${owner}.getOrCreate`, {
          ...e,
          ok: async (v: { object: AnyObject }) => {
            await e.ok?.(v);
            ownerId = v.object.id;
          },
        }, () => c(r, owner).getOrCreate(ownerName, {}));
        if (ownerId === undefined) return;
        // A new owner's first pass runs now; its writes must not land inside the child's call,
        // whose refusal is checked to move no version (on a networked store they would).
        if (await r.h.store.getLatestResourceVersion() !== before) await settle(m, r);
        const opts = { owner: ownerId };
        await call(
          m,
          r,
          `${child}.create`,
          expectCreate(m, child, "create", childName, { child: true }, opts),
          () => c(r, child).create(childName, { child: true }, opts),
        );
      },
    )
  );

  return {
    creates: fc.oneof({ weight: 4, arbitrary: creates }, { weight: 1, arbitrary: families }),
    deletes: fc.oneof(deletes, deletesByName),
    others: fc.oneof(
      updates,
      updatesByName,
      gets,
      getsByName,
      lists,
      requeues,
      schedules,
      events,
      graph,
    ),
  };
}

/** Every AdminClient verb, with hostile ids and payloads. */
function adminSteps(): fc.Arbitrary<Step> {
  return fc.constantFrom<KindKey>("Thing", "Other").chain((k) =>
    fc.record({ kind: fc.constant(k), id: idRefOf(k), write: writeArb(false) })
  ).map(({ kind, id, write }) =>
    new Step(`admin(${kind}).${write.op}(${show(id)}, …)`, always, async (m, r) => {
      const target = resolveId(m, id);
      const b = buildWrite(m, write);
      const validation = [...idErrors(target), ...b.validation];
      // An empty batch is not refused on a closed store: a known bug, pinned by a skipped test.
      const e = m.closed && b.emptyBatch && validation.length === 0
        ? { errors: [], tolerated: [StoreClosedError] }
        : gate(m, validation, () => {
          const o = m.objects.get(target as number);
          const missing = o === undefined
            ? [NotFoundError]
            : o.kind !== kind
            ? [WrongKindError]
            : [];
          if (b.emptyBatch) return { errors: [], tolerated: missing, ok: () => {} };
          if (missing.length > 0) return refuse(missing);
          return expectWrite(b, o!);
        });
      const admin = r.h.bh.adminClient(KINDS[kind]) as unknown as Writer;
      const op = write.op;
      await judge(
        `admin(${kind}).${b.label.replace("(", `(${show(target)}, `)}`,
        e,
        () => admin[op](target, ...b.args),
        rvOf(m, r),
        m,
      );
    })
  );
}

/** A read a pass makes about its own object. */
type PassRead =
  | "getOwner"
  | "listDependencies"
  | "listDependents"
  | "listOwned"
  | "hasIncomingEdges";

type TxOp = { readonly write: Write } | { readonly read: PassRead } | {
  readonly create: KindKey;
  readonly name: unknown;
  readonly spec: Gen;
};

const passReadArb = fc.constantFrom<PassRead>(
  "getOwner",
  "listDependencies",
  "listDependents",
  "listOwned",
  "hasIncomingEdges",
);

const txOpArb: fc.Arbitrary<TxOp> = fc.oneof(
  { weight: 6, arbitrary: writeArb(false).map((write) => ({ write })) },
  { weight: 1, arbitrary: passReadArb.map((read) => ({ read })) },
  {
    weight: 2,
    arbitrary: fc.record({
      create: fc.constantFrom<KindKey>("Thing", "Other"),
      name: nameArb,
      spec: genArb,
    }),
  },
);

function showTxOp(op: TxOp): string {
  if ("write" in op) return op.write.op;
  if ("read" in op) return op.read;
  return `client(${op.create}).create(${show(op.name)})`;
}

/** Runs one op of a pass (through `cc` or a transaction handle) against the model. */
async function runPassOp(
  m: Model,
  r: Real,
  x: MObject,
  handle: AnyCC,
  op: TxOp,
  inTx: boolean,
): Promise<Judged> {
  // Inside a transaction the committed version cannot move: what commits is checked after it.
  const rv = inTx ? () => Promise.resolve(0) : rvOf(m, r);
  if ("read" in op) {
    const expected = () => {
      if (op.read === "getOwner") {
        return x.owner === undefined ? undefined : refsOf(m, [x.owner])[0];
      }
      if (op.read === "listDependencies") return refsOf(m, x.deps);
      if (op.read === "listDependents") return refsOf(m, dependentsOf(m, x.id));
      if (op.read === "listOwned") return refsOf(m, ownedBy(m, x.id));
      return [...m.objects.values()].some((s) =>
        s.owner === x.id || (!s.deleting && s.deps.includes(x.id))
      );
    };
    return await judge(
      `${inTx ? "tx" : "cc"}.${op.read}`,
      { errors: [], ok: (v) => assert.deepEqual(v, expected(), `cc.${op.read}`) },
      () => (handle as unknown as Writer)[op.read](),
      rv,
      m,
    );
  }
  if ("create" in op) {
    const spec = materialize(op.spec);
    const client = (handle as unknown as { client(k: GroupKind): Client<unknown, unknown> })
      .client(KINDS[op.create]);
    return await judge(
      `tx.client(${op.create}).create(${show(op.name)})`,
      expectCreate(m, op.create, "create", op.name, spec, undefined),
      () => client.create(op.name as string, spec),
      rv,
      m,
    );
  }
  const b = buildWrite(m, op.write);
  return await judge(
    `${inTx ? "tx" : "cc"}.${b.label}`,
    expectWrite(b, x),
    () => (handle as unknown as Writer)[op.write.op](...b.args),
    rv,
    m,
  );
}

/** A real pass over one Thing: ops through `cc`, then maybe a transaction, then a late call. */
function passSteps(): fc.Arbitrary<Step> {
  return fc.record({
    i: fc.nat(20),
    ops: fc.array(txOpArb.filter((op) => !("create" in op)), { maxLength: 5 }),
    tx: fc.option(
      fc.record({
        ops: fc.array(txOpArb, { minLength: 1, maxLength: 4 }),
        abortOnRefusal: fc.boolean(),
        misuse: fc.oneof(fc.constant(false), fc.constant(false), fc.constant(true)),
        staleAfter: fc.boolean(),
      }),
      { nil: undefined },
    ),
    late: fc.boolean(),
  }).map(({ i, ops, tx, late }) =>
    new Step(
      `pass(Thing#${i}: ${ops.map(showTxOp).join(", ")}${
        tx === undefined ? "" : `; within(${tx.ops.map(showTxOp).join(", ")})`
      })`,
      (m) => m.running && !m.closed && liveIds(m, "Thing").length > 0,
      async (m, r) => {
        const ids = liveIds(m, "Thing");
        const x = m.objects.get(ids[i % ids.length])!;
        const { cc } = await r.h.pass(x.id, async (obj, cc) => {
          checkObject(obj, x);
          for (const op of ops) await runPassOp(m, r, x, cc, op, false);
          if (tx === undefined) return;
          await runWithin(m, r, x, cc, tx);
        }, settled);
        if (!late) return;
        await judge(
          "cc.updateStatus after the pass returned",
          refuse([ReconcileReturnedError]),
          () => cc.updateStatus({ late: true }),
          rvOf(m, r),
        );
      },
    )
  );
}

/**
 * `cc.within`: every op runs on a copy of the model, kept only if the
 * transaction commits. With `abortOnRefusal` the first refusal is rethrown, so
 * the transaction must roll back everything and reject with that very error;
 * otherwise the transaction carries on past refusals and commits the rest.
 */
async function runWithin(
  m: Model,
  r: Real,
  x: MObject,
  cc: AnyCC,
  tx: { ops: readonly TxOp[]; abortOnRefusal: boolean; misuse: boolean; staleAfter: boolean },
): Promise<void> {
  const copy = structuredClone(m);
  const cx = copy.objects.get(x.id)!;
  let handle: AnyCC | undefined;
  let refusal: { error: unknown } | undefined;
  const before = await r.h.store.getLatestResourceVersion();
  let outcome: Judged;
  try {
    await cc.within(async (t) => {
      handle = t as unknown as AnyCC;
      for (const op of tx.ops) {
        const res = await runPassOp(copy, r, cx, handle, op, true);
        if (!res.ok && tx.abortOnRefusal) {
          refusal = { error: res.error };
          throw res.error;
        }
        if (tx.misuse) {
          await judge(
            "cc.updateStatus while its within is open",
            refuse([StaleTxError]),
            () => cc.updateStatus({ misuse: true }),
            () => Promise.resolve(0),
          );
        }
      }
    });
    outcome = { ok: true };
  } catch (error) {
    outcome = { ok: false, error };
  }
  if (outcome.ok) {
    m.objects = copy.objects;
    m.collected = copy.collected;
    m.issued = copy.issued;
  } else {
    if (refusal === undefined) throw outcome.error;
    assert.equal(outcome.error, refusal.error, "within rejected with another error");
    assert.equal(await r.h.store.getLatestResourceVersion(), before, "a rolled-back within wrote");
  }
  if (tx.staleAfter && handle !== undefined) {
    await judge(
      "tx.updateStatus after its within ended",
      refuse([StaleTxError]),
      () => handle!.updateStatus({ stale: true }),
      rvOf(m, r),
    );
  }
}

/** Stops the Beehive; misuse of its lifecycle is refused with a plain BeehiveError. */
function stopStep(): fc.Arbitrary<Step> {
  return fc.constant(
    new Step("stop()", (m) => m.running && !m.closed, async (m, r) => {
      await r.h.stop();
      m.running = false;
      figures.stops++;
      assert.throws(
        () => r.h.bh.register({ group: "late.example", kind: "Late" }, () => settled()),
        (e: unknown) => e instanceof Error && e.constructor === BeehiveError,
      );
      let p: Promise<unknown> | undefined;
      assert.doesNotThrow(() => void (p = r.h.bh.start()));
      await assert.rejects(
        p!,
        (e: unknown) => e instanceof Error && e.constructor === BeehiveError,
      );
    }),
  );
}

/** Closes the store (stopping first): every later call must be refused. */
function closeStep(): Step {
  return new Step("close()", open, async (m, r) => {
    if (m.running) {
      await r.h.stop();
      m.running = false;
    }
    await r.h.store.close();
    m.closed = true;
  });
}

// ---------------------------------------------------------------------------
// The model-based property

test("bad input: Client, ControllerClient and AdminClient calls with hostile arguments agree with the model", async () => {
  const dir = scratchDir();
  let run = 0;
  try {
    const client = clientSteps();
    const step = fc.oneof(
      { weight: 14, arbitrary: client.creates },
      { weight: 6, arbitrary: client.deletes },
      { weight: 20, arbitrary: client.others },
      { weight: 10, arbitrary: adminSteps() },
      { weight: 10, arbitrary: passSteps() },
      { weight: 1, arbitrary: stopStep() },
    );
    const scenario = fc.tuple(
      fc.commands([step], { maxCommands: MAX_STEPS, size: "max" }),
      // Half the runs then close the store and go on calling.
      fc.option(fc.commands([step], { maxCommands: 8, size: "max" }), { nil: undefined, freq: 2 }),
    );
    await fc.assert(
      fc.asyncProperty(scenario, async ([cmds, afterClose]) => {
        const path = dir.file(`run-${run++}.db`);
        const h = await Harness.open({
          path,
          beehive: { gcInterval: GC_INTERVAL },
          // One pass at a time: a refusal inside a pass is checked against the store-wide
          // version, which holds still only while no other pass runs beside it. With the default
          // four, a child created in the pass's within got its own pass at once, and on a store
          // whose calls take real I/O its writes landed inside a judged call now and then.
          register: { concurrency: 1 },
        });
        const m: Model = {
          objects: new Map(),
          collected: [],
          issued: new Set(),
          running: true,
          closed: false,
          onCreateExpected: 0,
        };
        const r: Real = { h, path, onCreateFired: { n: 0 } };
        try {
          await h.start();
          await fc.asyncModelRun(() => Promise.resolve({ model: m, real: r }), cmds);
          if (afterClose !== undefined) {
            await closeStep().run(m, r);
            figures.closes++;
            await fc.asyncModelRun(() => Promise.resolve({ model: m, real: r }), afterClose);
          }
          if (!m.closed) {
            await settle(m, r);
            await verify(m, views(r));
            await h.stop();
            await h.store.close();
            m.closed = true;
          }
          // Everything acknowledged survives a reopen; nothing refused appears.
          const store = await openTestStore(path);
          try {
            const bh = new Beehive(store);
            await verify(m, { client: (k) => bh.client(KINDS[k]) }, true);
            figures.reopens++;
          } finally {
            await store.close();
          }
          figures.runs++;
        } finally {
          await h.close();
        }
      }),
      {
        seed: SEED,
        numRuns: MODEL_RUNS,
        endOnFailure: true,
        includeErrorInReport: true,
        ...replay(),
      },
    );
  } finally {
    dir.remove();
    report("Client/ControllerClient/AdminClient model");
  }
});

// ---------------------------------------------------------------------------
// Options and kinds: synchronous members throw, and a refusal registers nothing

const DAY = 86_400_000;
/** The largest delay a timer honours (2^31 - 1 ms, about 24.8 days). */
const TIMER_MAX = 2 ** 31 - 1;

const numberPool: unknown[] = [
  undefined,
  0,
  -0,
  -1,
  0.5,
  1,
  1.5,
  1_000,
  24 * DAY,
  TIMER_MAX,
  NaN,
  Infinity,
  -Infinity,
  "1000",
  null,
  true,
  1n,
  {},
  [],
];

type Rule = (v: unknown) => boolean;
const finite = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const positive: Rule = (v) => finite(v) && v > 0;
const nonNegative: Rule = (v) => finite(v) && v >= 0;
const count: Rule = (v) => finite(v) && Number.isInteger(v) && v >= 1;
const retention = (keys: string[]): Rule => (v) =>
  typeof v === "object" && v !== null && !Array.isArray(v) &&
  keys.every((k) => {
    const x = (v as Record<string, unknown>)[k];
    return x === undefined || (nonNegative(x) && (!k.startsWith("per") || Number.isInteger(x)));
  });

/** DESIGN.md's option rules, restated. */
const CONTROLLER_RULES: Record<string, Rule> = {
  owedPassInterval: positive,
  fullPassInterval: nonNegative,
  individualPassInterval: nonNegative,
  maxRetryInterval: positive,
  concurrency: count,
  startupFullPass: (v) => typeof v === "boolean",
};
const BEEHIVE_RULES: Record<string, Rule> = {
  ...CONTROLLER_RULES,
  staleDependentsInterval: positive,
  watchFloorInterval: positive,
  gcInterval: positive,
  eventRetention: retention(["perTimeline", "maxAge"]),
  writeLogRetention: retention(["perKind", "maxAge"]),
  logger: (v) =>
    typeof v === "object" && v !== null &&
    ["debug", "info", "warn", "error"].every((k) =>
      typeof (v as Record<string, unknown>)[k] === "function"
    ),
  logLevel: (v) => ["debug", "info", "warn", "error"].includes(v as string),
};
const silent = { debug() {}, info() {}, warn() {}, error() {} };
const migrator = {
  specVersion: 1,
  statusVersion: 0,
  convertSpec: (_: number, v: unknown) => v,
  convertStatus: (_: number, v: unknown) => v,
};
const REGISTER_RULES: Record<string, Rule> = {
  ...CONTROLLER_RULES,
  migrator: (v) => {
    const m = v as Record<string, unknown>;
    const version = (x: unknown) => typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
    return typeof m === "object" && m !== null && version(m.specVersion) &&
      version(m.statusVersion) && typeof m.convertSpec === "function" &&
      typeof m.convertStatus === "function";
  },
  triggerById: (v) =>
    typeof v === "object" && v !== null &&
    typeof (v as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function",
  triggerByName: (v) =>
    typeof v === "object" && v !== null &&
    typeof (v as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function",
};

/** Values tried per option: the number pool, plus each option's own hostile shapes. */
function valuesFor(key: string, rule: Rule): fc.Arbitrary<unknown> {
  const own: Record<string, unknown[]> = {
    startupFullPass: [true, false, "yes", 0],
    eventRetention: [
      {},
      { perTimeline: 10 },
      { perTimeline: 1.5 },
      { maxAge: -1 },
      { maxAge: NaN },
      { perTimeline: "10" },
      null,
      [],
      5,
    ],
    writeLogRetention: [
      {},
      { perKind: 100, maxAge: 0 },
      { perKind: -1 },
      { maxAge: Infinity },
      null,
    ],
    logger: [silent, console, {}, { ...silent, warn: 5 }, null, "console"],
    logLevel: ["debug", "info", "warn", "error", "trace", "", "INFO", 1],
    migrator: [
      migrator,
      { ...migrator, specVersion: -1 },
      { ...migrator, statusVersion: 1.5 },
      { ...migrator, convertSpec: undefined },
      { ...migrator, specVersion: 2 ** 53 },
      null,
      5,
    ],
    triggerById: ["trigger", [1, 2], {}, 5, "stream"],
    triggerByName: ["trigger", ["a"], {}, null, "stream"],
  };
  const pool = own[key] ?? numberPool;
  const valid = pool.filter((v) => v === "trigger" || v === "stream" || rule(v));
  // Half the draws valid, so that whole records often are.
  return fc.oneof(fc.constantFrom(...valid), fc.constantFrom(...pool));
}

/** Builds a value drawn for an option ("trigger" stands for a never-started async generator). */
function buildOption(v: unknown): unknown {
  if (v === "trigger") {
    return (async function* () {
      yield 1;
    })();
  }
  if (v === "stream") return new ReadableStream();
  return v;
}

/** Option records naming up to three options (and sometimes an unknown one), or a non-record. */
function optionsArb(rules: Record<string, Rule>): fc.Arbitrary<unknown> {
  const keys = [...Object.keys(rules), "unknownOption"];
  const record = fc.subarray(keys, { maxLength: 3 }).chain((chosen) =>
    fc.record(Object.fromEntries(
      chosen.map((k) => [
        k,
        k === "unknownOption" ? fc.constantFrom<unknown>(0, "x") : valuesFor(k, rules[k]),
      ]),
    ))
  );
  return fc.oneof(
    { weight: 12, arbitrary: record },
    { weight: 1, arbitrary: fc.constantFrom<unknown>(undefined, null, 5, "fast", [], true) },
  );
}

function optionsValid(o: unknown, rules: Record<string, Rule>): boolean {
  if (o === undefined) return true;
  if (typeof o !== "object" || o === null || Array.isArray(o)) return false;
  return Object.entries(rules).every(([k, rule]) => {
    const v = (o as Record<string, unknown>)[k];
    return v === undefined || rule(v);
  });
}

function showOptions(o: unknown): string {
  return typeof o === "object" && o !== null && !Array.isArray(o)
    ? `{${Object.entries(o).map(([k, v]) => `${k}:${show(v)}`).join(",")}}`
    : show(o);
}

function throwsExactly(fn: () => unknown, cls: ErrorClass, label: string): void {
  figures.calls++;
  try {
    fn();
  } catch (error) {
    const name = error instanceof Error ? error.constructor.name : typeof error;
    figures.rejected.set(name, (figures.rejected.get(name) ?? 0) + 1);
    assert.ok(
      error instanceof Error && error.constructor === cls,
      `${label} threw ${describeError(error)}; expected ${cls.name}`,
    );
    return;
  }
  assert.fail(`${label} did not throw; expected ${cls.name}`);
}

function succeeds(fn: () => unknown, label: string): void {
  figures.calls++;
  figures.resolved++;
  try {
    fn();
  } catch (error) {
    assert.fail(`${label} threw ${describeError(error)}`);
  }
}

test("bad input: Beehive and register options out of range throw InvalidOptionError and register nothing", async () => {
  const store = await openTestStore(":memory:");
  try {
    const controllerArb = fc.constantFrom<unknown>(
      "fn",
      "object",
      {},
      null,
      5,
      { reconcile: 5 },
      "reconcile",
    );
    await fc.assert(
      fc.asyncProperty(
        optionsArb(BEEHIVE_RULES),
        optionsArb(REGISTER_RULES),
        controllerArb,
        (beehiveOpts, registerDrawn, controller) => {
          const built = <T>(o: T): T =>
            typeof o === "object" && o !== null && !Array.isArray(o)
              ? Object.fromEntries(Object.entries(o).map(([k, v]) => [k, buildOption(v)])) as T
              : o;
          const registerOpts = built(registerDrawn);
          const label = `new Beehive(store, ${showOptions(beehiveOpts)})`;
          if (!optionsValid(beehiveOpts, BEEHIVE_RULES)) {
            throwsExactly(
              () => new Beehive(store, beehiveOpts as never),
              InvalidOptionError,
              label,
            );
            figures.checks++;
            return Promise.resolve();
          }
          let bh: Beehive | undefined;
          succeeds(() => void (bh = new Beehive(store, beehiveOpts as never)), label);
          const fn = () => settled();
          const c = controller === "fn"
            ? fn
            : controller === "object"
            ? { reconcile: fn }
            : controller === "reconcile"
            ? { reconcile: fn, extra: 1 }
            : controller;
          const registerValid = optionsValid(registerOpts, REGISTER_RULES) &&
            (typeof c === "function" ||
              (typeof c === "object" && c !== null &&
                typeof (c as { reconcile?: unknown }).reconcile === "function"));
          const reg = () => bh!.register(Thing, c as never, registerOpts as never);
          const regLabel = `register(Thing, ${show(controller)}, ${showOptions(registerDrawn)})`;
          if (registerValid) {
            succeeds(reg, regLabel);
            // Registered once: a second registration is lifecycle misuse.
            throwsExactly(() => bh!.register(Thing, fn), BeehiveError, "register twice");
          } else {
            throwsExactly(reg, InvalidOptionError, regLabel);
            // The refusal registered nothing: the kind is still free.
            succeeds(() => bh!.register(Thing, fn), "register after a refused register");
          }
          figures.checks++;
          return Promise.resolve();
        },
      ),
      { seed: SEED, numRuns: 600, includeErrorInReport: true, ...replay() },
    );
    figures.runs = 600;
  } finally {
    await store.close();
    report("Beehive/register options");
  }
});

const kindTextPool = fc.oneof(
  fc.constantFrom<unknown>("g", "test.beehive.dev", "Ω😀", HUGE),
  fc.constantFrom<unknown>("", "\ud800", "a\udc00b", 5, undefined),
);
const kindArbitrary = fc.oneof(
  { weight: 8, arbitrary: fc.record({ group: kindTextPool, kind: kindTextPool }) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(null, 5, "Thing", [], { kind: "Thing" }) },
);

function kindValid(k: unknown): boolean {
  if (typeof k !== "object" || k === null) return false;
  const { group, kind } = k as Record<string, unknown>;
  return typeof group === "string" && typeof kind === "string" && kind !== "" &&
    storable(group) && storable(kind) && !tooLongField(group) && !tooLongField(kind);
}

test("bad input: malformed kinds are refused by client, adminClient and register alike", async () => {
  const store = await openTestStore(":memory:");
  try {
    await fc.assert(
      fc.asyncProperty(kindArbitrary, async (kind) => {
        const bh = new Beehive(store);
        const label = show(kind);
        if (!kindValid(kind)) {
          throwsExactly(() => bh.client(kind as never), InvalidOptionError, `client(${label})`);
          throwsExactly(
            () => bh.adminClient(kind as never),
            InvalidOptionError,
            `adminClient(${label})`,
          );
          throwsExactly(
            () => bh.register(kind as never, () => settled()),
            InvalidOptionError,
            `register(${label})`,
          );
        } else {
          succeeds(() => bh.adminClient(kind as never), `adminClient(${label})`);
          succeeds(() => bh.register(kind as never, () => settled()), `register(${label})`);
          const c = bh.client(kind as never);
          figures.calls++;
          figures.resolved++;
          assert.deepEqual(await c.list(), []);
        }
        figures.checks++;
      }),
      { seed: SEED, numRuns: 200, ...replay() },
    );
    figures.runs = 200;
  } finally {
    await store.close();
    report("kinds");
  }
});

test("bad input: intervals up to the timer range (24.8 days) run their drivers no faster than asked", async () => {
  const clock = installFakeTime();
  try {
    for (const value of [24 * DAY, TIMER_MAX]) {
      const { sweeps, passes } = await driveFor(
        clock,
        { gcInterval: value, fullPassInterval: value },
        value,
      );
      assert.ok(sweeps <= 1, `gcInterval ${value}: ${sweeps} GC sweeps in 10 s`);
      assert.ok(passes <= 2, `requeueAfter(${value}): ${passes} passes in 10 s`);
    }
  } finally {
    clock.uninstall();
  }
});

/**
 * Runs a Beehive over one object for 10 s of fake time (the clock must be
 * installed): counts GC sweeps and passes, where every pass asks to come back
 * after `requeueAfter`.
 */
async function driveFor(
  clock: FakeClock,
  options: Record<string, number>,
  requeueAfter: number,
): Promise<{ sweeps: number; passes: number; refused: boolean }> {
  const store = await openTestStore(":memory:");
  let sweeps = 0, passes = 0;
  try {
    const counted = new Proxy(store, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (prop === "deletionRequests") {
          return new Proxy(value as object, {
            get(t, p) {
              const v = Reflect.get(t, p, t);
              if (p === "list") {
                return () => {
                  sweeps++;
                  return (v as () => Promise<unknown>).call(t);
                };
              }
              return typeof v === "function" ? v.bind(t) : v;
            },
          });
        }
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    let bh: Beehive;
    try {
      bh = new Beehive(counted, options);
    } catch (error) {
      assert.ok(error instanceof InvalidOptionError, describeError(error));
      return { sweeps: 0, passes: 0, refused: true };
    }
    bh.register(Thing, () => {
      passes++;
      return settled().requeueAfter(requeueAfter);
    });
    await bh.client(Thing).create("one", {});
    const stop = await bh.start();
    await clock.tickAsync(10_000);
    await stop();
    // The startup sweep and the startup pass.
    return { sweeps: sweeps - 1, passes, refused: false };
  } finally {
    await store.close();
  }
}

// ---------------------------------------------------------------------------
// Known bugs. Each test below asserts the correct behaviour and fails today;
// its registration is commented out until the bug is fixed (see the report in
// docs/reliability.md). They are exported so the linter sees them used.

/**
 * BUG: event text with NUL is accepted and read back cut at the NUL, so an
 * event reads as a different category/reason/message than was written (the
 * store refuses NUL in names, kinds, finalizers and condition text, not in
 * event text: store/sqlite/_events.ts checks isWellFormed only).
 */
export async function nulEventTextIsRefused(): Promise<void> {
  const h = await Harness.open({ path: ":memory:" });
  try {
    await h.start();
    const obj = await h.create("a");
    const admin = h.bh.adminClient(Thing);
    const writes = [
      { type: "Normal", reason: "a\u0000b" },
      { type: "Normal", reason: "Up", message: "m\u0000n" },
      { type: "Normal", reason: "Up", category: "c\u0000d" },
    ] as const;
    for (const e of writes) {
      const before = await h.store.getLatestResourceVersion();
      await assert.rejects(admin.addEvent(obj.id, e), InvalidEventError, JSON.stringify(e));
      await h.pass(obj.id, async (_o, cc) => {
        await assert.rejects(cc.addEvent(e), InvalidEventError, JSON.stringify(e));
      });
      assert.equal(await h.store.getLatestResourceVersion(), before);
    }
    assert.deepEqual(await h.things.listEvents(obj.id), []);
  } finally {
    await h.close();
  }
}
test("bad input: event text with NUL is refused with InvalidEventError", nulEventTextIsRefused);

/**
 * BUG: a kind with NUL in its group or kind is accepted by `register` (and by
 * `client`/`adminClient`), though the store refuses it on every call: the
 * registered kind's owed pass fails forever, and its presence makes the GC
 * owed sweep fail for every kind (reconcileOwed.sweep gets the bad kind). Two
 * distinct NUL kinds also collide in the engine's kind key (`group\0kind`), so
 * the second is refused as "already has a controller". src/_engine.ts
 * checkKind checks isWellFormed, not NUL.
 */
export async function nulKindIsRefusedAtRegister(): Promise<void> {
  const store = await openTestStore(":memory:");
  try {
    const bh = new Beehive(store);
    for (const kind of [{ group: "a\u0000b", kind: "c" }, { group: "a", kind: "b\u0000c" }]) {
      assert.throws(() => bh.register(kind, () => settled()), InvalidOptionError);
      assert.throws(() => bh.adminClient(kind), InvalidOptionError);
    }
  } finally {
    await store.close();
  }
}
test(
  "bad input: register refuses a kind with NUL with InvalidOptionError",
  nulKindIsRefusedAtRegister,
);

/**
 * BUG: an interval option (or requeueAfter) above 2^31 - 1 ms (about 24.8
 * days) passes validation, but setTimeout/setInterval clamp it to 1 ms: a
 * 30-day gcInterval runs the GC sweep every millisecond, a 30-day
 * fullPassInterval lists the kind every millisecond, and requeueAfter(30 days)
 * reruns the pass every millisecond (on Node with a TimeoutOverflowWarning
 * each time). Either refuse such values with InvalidOptionError (requeueAfter
 * with TypeError/RangeError) or wait in chunks. Suspects: src/options.ts,
 * src/beehive.ts (#every), src/reconciler.ts (setInterval), src/work_queue.ts
 * (addAfter).
 */
export async function hugeIntervalsNeverRunHot(): Promise<void> {
  const clock = installFakeTime();
  try {
    for (const value of [2 ** 31, 30 * DAY, 1e12]) {
      const gc = await driveFor(clock, { gcInterval: value, fullPassInterval: value }, 1_000);
      assert.ok(gc.refused || gc.sweeps <= 1, `gcInterval ${value}: ${gc.sweeps} sweeps in 10 s`);
      const requeue = await driveFor(clock, {}, value);
      assert.ok(requeue.passes <= 2, `requeueAfter(${value}): ${requeue.passes} passes in 10 s`);
    }
  } finally {
    clock.uninstall();
  }
}
test(
  "bad input: intervals beyond 2^31 ms are refused or honoured, never run hot",
  hugeIntervalsNeverRunHot,
);

/**
 * BUG: a few calls answer without the store and so are not refused once it
 * is closed, though "any call on a closed store rejects with
 * StoreClosedError": `getSchedule` and `watchSchedule` (memory only, in
 * src/client.ts), and `setConditions(id, [])` (an empty batch short-circuits
 * in store/sqlite/_conditions.ts before the closed check — it also resolves
 * for a missing id).
 */
export async function closedStoreRefusesEveryCall(): Promise<void> {
  const h = await Harness.open({ path: ":memory:" });
  try {
    await h.start();
    const obj = await h.create("a");
    await h.stop();
    await h.store.close();
    await assert.rejects(h.things.getSchedule(obj.id), StoreClosedError);
    await assert.rejects(h.things.watchSchedule(obj.id), StoreClosedError);
    await assert.rejects(h.bh.adminClient(Thing).setConditions(obj.id, []), StoreClosedError);
  } finally {
    await h.close();
  }
}
test(
  "bad input: every call on a closed store rejects with StoreClosedError",
  closedStoreRefusesEveryCall,
);

/**
 * BUG: getOrCreate and createOrUpdate on a name that is already held accept
 * a finalizer with NUL, though the same call on a free name rejects it with
 * InvalidOptionError ("options are validated even when the row exists"): the
 * client's option check (src/client.ts #checkCreate) tests isWellFormed but
 * not NUL, and only the store's insert refuses NUL.
 */
export async function nulFinalizerIsRefusedWhenTheNameIsHeld(): Promise<void> {
  const h = await Harness.open({ path: ":memory:" });
  try {
    await h.things.create("held", {});
    const before = await h.store.getLatestResourceVersion();
    for (const name of ["held", "free"]) {
      await assert.rejects(
        h.things.getOrCreate(name, {}, { finalizers: ["a\u0000"] }),
        InvalidOptionError,
      );
      await assert.rejects(
        h.things.createOrUpdate(name, { changed: true }, { finalizers: ["a\u0000"] }),
        InvalidOptionError,
      );
    }
    assert.equal(await h.store.getLatestResourceVersion(), before);
  } finally {
    await h.close();
  }
}
test(
  "bad input: a NUL finalizer is refused whether or not the name is held",
  nulFinalizerIsRefusedWhenTheNameIsHeld,
);

// ---------------------------------------------------------------------------
// Issue 15: hostile schemas, limits at their boundaries, racing conditional writers

/** How a hostile Standard Schema validator answers. */
type SchemaMode =
  | { readonly kind: "throw" }
  | { readonly kind: "reject" }
  | { readonly kind: "throwingThenable" }
  | { readonly kind: "malformed"; readonly result: unknown }
  | { readonly kind: "issues"; readonly issues: readonly unknown[]; readonly async: boolean }
  | { readonly kind: "value"; readonly value: Gen; readonly async: boolean };

const schemaModeArb: fc.Arbitrary<SchemaMode> = fc.oneof(
  fc.constant({ kind: "throw" as const }),
  fc.constant({ kind: "reject" as const }),
  fc.constant({ kind: "throwingThenable" as const }),
  fc.constantFrom<unknown>(undefined, null, 0, "ok", true, {}, { issues: "bad" }, { issues: 7 }, {
    issues: { length: 1 },
  }).map((result) => ({ kind: "malformed" as const, result })),
  fc.record({
    kind: fc.constant("issues" as const),
    issues: fc.constantFrom<readonly unknown[]>(
      [],
      [{ message: "bad" }],
      [{ message: "a", path: ["x", { key: "y" }] }, { message: "b" }],
      [null, 5, { message: 1 }],
    ),
    async: fc.boolean(),
  }),
  fc.record({ kind: fc.constant("value" as const), value: genArb, async: fc.boolean() }),
);

const HOSTILE = new Error("hostile validator");

function hostileSchema(mode: SchemaMode) {
  const validate = (): unknown => {
    switch (mode.kind) {
      case "throw":
        throw HOSTILE;
      case "reject":
        return Promise.reject(HOSTILE);
      case "throwingThenable":
        return {
          then() {
            throw HOSTILE;
          },
        };
      case "malformed":
        return mode.result;
      case "issues":
        return mode.async ? Promise.resolve({ issues: mode.issues }) : { issues: mode.issues };
      case "value": {
        const r = { value: materialize(mode.value) };
        return mode.async ? Promise.resolve(r) : r;
      }
    }
  };
  return { "~standard": { version: 1 as const, vendor: "hostile", validate: validate as never } };
}

/** What a write through `mode`'s validator must do: the value stored, or the refusal. */
function schemaOutcome(
  mode: SchemaMode,
  what: "spec" | "status",
): { ok: string } | { error: (e: unknown) => boolean } {
  const invalid = what === "spec" ? InvalidSpecError : InvalidStatusError;
  switch (mode.kind) {
    case "throw":
    case "reject":
    case "throwingThenable":
      return { error: (e) => e === HOSTILE };
    case "malformed":
      return { error: (e) => e instanceof TypeError };
    case "issues":
      return { error: (e) => e instanceof invalid && e.issues.length === mode.issues.length };
    case "value": {
      const text = encode(materialize(mode.value));
      if (text === undefined) return { error: (e) => e instanceof TypeError };
      if (new TextEncoder().encode(text).length > OBJECT_BYTES) {
        return { error: (e) => e instanceof TooLargeError };
      }
      return { ok: text };
    }
  }
}

/** The default `limits.objectBytes`. */
const OBJECT_BYTES = 1_572_864;

type SchemaWrite =
  | "create"
  | "getOrCreate"
  | "createOrUpdate"
  | "update"
  | "updateByName"
  | "status";

test("bad input: hostile spec and status schemas are obeyed exactly, and every refusal writes nothing", async () => {
  const store = await openTestStore(":memory:");
  let n = 0;
  try {
    await fc.assert(
      fc.asyncProperty(
        schemaModeArb,
        fc.constantFrom<SchemaWrite>(
          "create",
          "getOrCreate",
          "createOrUpdate",
          "update",
          "updateByName",
          "status",
        ),
        async (mode, write) => {
          const gk = { group: "test.beehive.dev", kind: `Hostile${n++}` };
          const bh = new Beehive(store);
          const Kind = defineKind({
            ...gk,
            spec: hostileSchema(mode),
            status: hostileSchema(mode),
          });
          const client = bh.client(Kind);
          // The row a non-create write targets, written before the schema applies.
          const seeded = write === "create" || write === "getOrCreate"
            ? undefined
            : await bh.client(gk).create("x", { seed: true });
          const before = await store.getLatestResourceVersion();
          const outcome = schemaOutcome(mode, write === "status" ? "status" : "spec");
          const value = { arg: 1 };
          const call = (): Promise<unknown> => {
            switch (write) {
              case "create":
                return client.create("x", value);
              case "getOrCreate":
                return client.getOrCreate("x", value);
              case "createOrUpdate":
                return client.createOrUpdate("x", value);
              case "update":
                return client.update(seeded!.id, value);
              case "updateByName":
                return client.updateByName("x", value);
              case "status":
                return bh.adminClient(Kind).updateStatus(seeded!.id, value);
            }
          };
          let promise: Promise<unknown>;
          try {
            promise = call();
          } catch (error) {
            throw new Error(`${write} threw synchronously: ${describeError(error)}`);
          }
          const settledCall = await promise.then(
            () => ({ ok: true as const }),
            (error: unknown) => ({ ok: false as const, error }),
          );
          figures.calls++;
          const label = `${write} through ${JSON.stringify(mode.kind)}`;
          if ("error" in outcome) {
            assert.ok(!settledCall.ok, `${label} resolved; expected a refusal`);
            assert.ok(
              outcome.error(settledCall.error),
              `${label}: ${describeError(settledCall.error)}`,
            );
            const name = settledCall.error instanceof Error
              ? settledCall.error.constructor.name
              : "thrown";
            figures.rejected.set(name, (figures.rejected.get(name) ?? 0) + 1);
            assert.equal(await store.getLatestResourceVersion(), before, `${label} wrote`);
            figures.refusalsWithoutWrite++;
          } else {
            assert.ok(
              settledCall.ok,
              `${label}: ${describeError((settledCall as { error?: unknown }).error)}`,
            );
            figures.resolved++;
            const raw = await store.objects.getByName({ ...gk, name: "x" });
            assert.equal(write === "status" ? raw.status : raw.spec, outcome.ok, label);
          }
          figures.checks++;
        },
      ),
      { seed: SEED, numRuns: 300, ...replay() },
    );
    figures.runs = 300;
  } finally {
    await store.close();
    report("hostile schemas");
  }
});

/** A string of exactly `bytes` UTF-8 bytes, drawn from characters of 1 to 4 bytes. */
function ofBytes(bytes: number, widths: readonly number[]): string {
  const chars: Record<number, string> = { 1: "a", 2: "é", 3: "€", 4: "😀" };
  let out = "";
  let left = bytes;
  for (let i = 0; left > 0; i++) {
    const w = Math.min(widths[i % widths.length], left);
    out += chars[w];
    left -= w;
  }
  return out;
}

test("bad input: limits hold at, below and above each boundary, and a refusal writes nothing", async () => {
  const store = await openTestStore(":memory:");
  let n = 0;
  try {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(
          "nameBytes",
          "objectBytes",
          "messageBytes",
          "conditionMessage",
          "detail",
          "conditionType",
          "conditionReason",
          "eventReason",
          "eventCategory",
          "finalizer",
          "conditionsPerObject",
          "finalizersPerObject",
          "nestingDepth",
        ),
        fc.integer({ min: 16, max: 300 }),
        fc.constantFrom(-1, 0, 1),
        fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 6 }),
        async (limitOf, limit, delta, widths) => {
          const gk = { group: "test.beehive.dev", kind: `Limited${n++}` };
          const limits = {
            nameBytes: limit,
            // A value nested `limit` deep is 2 × limit bytes: only the depth is under test.
            objectBytes: limitOf === "nestingDepth" ? 4 * limit : limit,
            messageBytes: limit,
            fieldBytes: limit,
            conditionsPerObject: limit,
            finalizersPerObject: limit,
            nestingDepth: limit,
          };
          const bh = new Beehive(store, { limits });
          bh.register(gk, () => settled());
          const client = bh.client(gk);
          const seeded = await client.create("seed", {});
          const before = await store.getLatestResourceVersion();
          const size = limit + delta;
          // `{"s":"…"}` is 8 bytes around the text.
          const body = (bytes: number) => ({ s: ofBytes(bytes - 8, widths) });
          let call: () => Promise<unknown>;
          // deno-lint-ignore no-explicit-any
          let refusal: new (...args: any[]) => Error;
          switch (limitOf) {
            case "nameBytes":
              call = () => client.create(ofBytes(size, widths), {});
              refusal = InvalidNameError;
              break;
            case "objectBytes":
              call = () => client.update(seeded.id, body(size));
              refusal = TooLargeError;
              break;
            case "detail":
              call = () =>
                bh.adminClient(gk).addEvent(seeded.id, {
                  type: "Normal",
                  reason: "R",
                  detail: body(size),
                });
              refusal = TooLargeError;
              break;
            case "messageBytes":
              call = () =>
                bh.adminClient(gk).addEvent(seeded.id, {
                  type: "Normal",
                  reason: "R",
                  message: ofBytes(size, widths),
                });
              refusal = InvalidEventError;
              break;
            case "conditionType":
            case "conditionReason":
              call = () =>
                bh.adminClient(gk).setCondition(seeded.id, {
                  type: limitOf === "conditionType" ? ofBytes(size, widths) : "C",
                  status: "True",
                  reason: limitOf === "conditionReason" ? ofBytes(size, widths) : "R",
                });
              refusal = InvalidConditionError;
              break;
            case "eventReason":
            case "eventCategory":
              call = () =>
                bh.adminClient(gk).addEvent(seeded.id, {
                  type: "Normal",
                  reason: limitOf === "eventReason" ? ofBytes(size, widths) : "R",
                  category: limitOf === "eventCategory" ? ofBytes(size, widths) : "c",
                });
              refusal = InvalidEventError;
              break;
            case "finalizer":
              call = () => bh.adminClient(gk).addFinalizer(seeded.id, ofBytes(size, widths));
              refusal = InvalidOptionError;
              break;
            case "conditionsPerObject":
              call = () =>
                bh.adminClient(gk).setConditions(
                  seeded.id,
                  Array.from({ length: size }, (_, i) => ({ type: `T${i}`, status: "True" })),
                );
              refusal = InvalidConditionError;
              break;
            case "finalizersPerObject":
              call = () =>
                client.create("held", {}, {
                  finalizers: Array.from({ length: size }, (_, i) => `f/${i}`),
                });
              refusal = InvalidOptionError;
              break;
            case "nestingDepth":
              call = () => client.update(seeded.id, nestedArrays(size));
              refusal = TooLargeError;
              break;
            default:
              call = () =>
                bh.adminClient(gk).setCondition(seeded.id, {
                  type: "C",
                  status: "True",
                  message: ofBytes(size, widths),
                });
              refusal = InvalidConditionError;
          }
          figures.calls++;
          const label = `${limitOf} ${limit}${delta < 0 ? "-1" : delta > 0 ? "+1" : ""}`;
          if (delta > 0) {
            await assert.rejects(call(), refusal, label);
            figures.rejected.set(refusal.name, (figures.rejected.get(refusal.name) ?? 0) + 1);
            assert.equal(await store.getLatestResourceVersion(), before, `${label} wrote`);
            figures.refusalsWithoutWrite++;
          } else {
            await call();
            figures.resolved++;
            assert.ok(await store.getLatestResourceVersion() > before, `${label} wrote nothing`);
          }
          figures.checks++;
        },
      ),
      { seed: SEED, numRuns: 400, ...replay() },
    );
    figures.runs = 400;
  } finally {
    await store.close();
    report("limits");
  }
});

/** Arrays nested `depth` deep (`[]` is 1). */
function nestedArrays(depth: number): unknown {
  let v: unknown = [];
  for (let i = 1; i < depth; i++) v = [v];
  return v;
}

type RacingOp = "update" | "updateByName" | "delete";

test("bad input: conditional writers racing from one read: exactly one wins, the rest conflict and write nothing", async () => {
  const store = await openTestStore(":memory:");
  let n = 0;
  try {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            op: fc.constantFrom<RacingOp>("update", "updateByName", "delete"),
            stale: fc.boolean(),
          }),
          { minLength: 2, maxLength: 8 },
        ),
        async (writers) => {
          const gk = { group: "test.beehive.dev", kind: `Raced${n++}` };
          const bh = new Beehive(store);
          const client = bh.client<{ w: number }>(gk);
          const first = await client.create("x", { w: -1 });
          const read = await client.update(first.id, { w: -2 });
          const rvOf = (stale: boolean) => stale ? first.resourceVersion : read.resourceVersion;
          const results = await Promise.allSettled(writers.map((w, i) => {
            const o = { resourceVersion: rvOf(w.stale) };
            return w.op === "update"
              ? client.update(first.id, { w: i }, o)
              : w.op === "updateByName"
              ? client.updateByName("x", { w: i }, o)
              : client.delete(first.id, o);
          }));
          figures.calls += writers.length;
          const won = results.flatMap((r, i) => r.status === "fulfilled" ? [i] : []);
          const fresh = writers.flatMap((w, i) => w.stale ? [] : [i]);
          for (const [i, r] of results.entries()) {
            if (r.status === "rejected") {
              assert.ok(r.reason instanceof ConflictError, describeError(r.reason));
              figures.rejected.set(
                "ConflictError",
                (figures.rejected.get("ConflictError") ?? 0) + 1,
              );
              assert.ok(!writers[i].stale || r.reason.resourceVersion > first.resourceVersion);
            }
          }
          figures.resolved += won.length;
          // Stale writers always lose; of the fresh ones, exactly one commits.
          assert.equal(won.length, fresh.length > 0 ? 1 : 0, JSON.stringify(writers));
          const final = await client.get(first.id);
          if (won.length === 1) {
            const w = won[0];
            if (writers[w].op === "delete") {
              assert.ok(final.deletionRequestedAt instanceof Date);
              assert.deepEqual(final.spec, { w: -2 });
            } else {
              assert.deepEqual(final.spec, { w });
              assert.equal(final.generation, 3);
            }
          } else {
            assert.equal(final.resourceVersion, read.resourceVersion, "nothing was written");
          }
          figures.checks++;
        },
      ),
      { seed: SEED, numRuns: 200, ...replay() },
    );
    figures.runs = 200;
  } finally {
    await store.close();
    report("racing conditional writers");
  }
});

// ---------------------------------------------------------------------------
// The console and the CLI

const consoleSegment = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      "",
      "kinds",
      "objects",
      "live",
      "console.js",
      "console.css",
      "Thing.test.beehive.dev",
      "1",
      "2",
      "0",
      "-1",
      "1e3",
      "99999999999999999999",
      "%00",
      "%00.x",
      "A.%00",
      "%1B%5B2J.x",
      "%7F",
      "%C2%9B",
      "%ZZ",
      "%E0%A4%A",
      "%ED%A0%80",
      "%C0%AF",
      "..",
      "%2e%2e",
      "%2F",
      "%20",
      "k".repeat(5_000),
    ),
  },
  {
    weight: 2,
    arbitrary: utf16.map((t) => {
      try {
        return encodeURIComponent(t);
      } catch {
        return "%ED%A0%80"; // a lone surrogate, as a client would send its UTF-8-ish bytes
      }
    }),
  },
);

test("bad input: hostile requests to the console get a 2xx, 403, 404, 405 or 503, never a 500, and write nothing", async () => {
  const store = await openSqliteStore(":memory:");
  try {
    const bh = new Beehive(store);
    const thing = await bh.client(Thing).create("a", {});
    await bh.adminClient(Thing).setCondition(thing.id, { type: "Ready", status: "True" });
    const before = await store.getLatestResourceVersion();
    const handle = consoleHandler({ store, basePath: "/c", maxLiveFeeds: 4 });
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(
          "GET",
          "GET",
          "GET",
          "HEAD",
          "POST",
          "PUT",
          "DELETE",
          "OPTIONS",
          "PROPFIND",
        ),
        fc.constantFrom(
          "localhost",
          "localhost",
          "localhost:8080",
          "127.0.0.1:1",
          "[::1]",
          "LOCALHOST",
          "localhost.",
          "evil.example",
          "127.0.0.2",
          "localhost.evil.example",
        ),
        fc.constantFrom(true, true, true, false),
        fc.array(consoleSegment, { maxLength: 4 }),
        fc.constantFrom("", "?fragment=main", "?fragment=%00", "?a=%ZZ"),
        async (method, host, underBase, segments, query) => {
          const path = `${underBase ? "/c/" : "/"}${segments.join("/")}${query}`;
          const label = `${method} ${host} ${show(path)}`;
          figures.calls++;
          const response = await handle(new Request(`http://${host}${path}`, { method }));
          await response.body?.cancel();
          const status = response.status;
          if (status !== 200) {
            figures.rejected.set(String(status), (figures.rejected.get(String(status)) ?? 0) + 1);
          }
          assert.ok([200, 403, 404, 405, 503].includes(status), `${label}: ${status}`);
          const allowed = !/evil|127\.0\.0\.2/.test(host);
          if (!allowed) assert.equal(status, 403, label);
          else if (method !== "GET" && method !== "HEAD") assert.equal(status, 405, label);
          if (status === 200) figures.resolved++;
          figures.checks++;
        },
      ),
      { seed: SEED, numRuns: 600, ...replay() },
    );
    figures.runs = 600;
    assert.equal(await store.getLatestResourceVersion(), before, "the console wrote");
    figures.refusalsWithoutWrite = figures.calls - figures.resolved;
  } finally {
    await store.close();
    report("console requests (by status)");
  }
});

const copyBombText = JSON.stringify(copyBomb("/spec"));
/** Hostile Kubernetes API bodies, each with the one content type it is sent in. */
const apiBody = fc.oneof(
  fc.constant({ what: "copy bomb", type: "application/json-patch+json", body: copyBombText }),
  fc.integer({ min: 73, max: 20_000 }).map((depth) => ({
    what: `merge patch ${depth} deep`,
    type: "application/merge-patch+json",
    body: deepMergePatch(depth),
  })),
  fc.integer({ min: 73, max: 20_000 }).map((depth) => ({
    what: `apply configuration ${depth} deep`,
    type: "application/apply-patch+yaml",
    body: deepMergePatch(depth),
  })),
  fc.integer({ min: 73, max: 20_000 }).map((depth) => ({
    what: `JSON patch value ${depth} deep`,
    type: "application/json-patch+json",
    body: `[{"op":"add","path":"/spec/a","value":${"[".repeat(depth)}${"]".repeat(depth)}}]`,
  })),
  fc.constantFrom(3 * 1024 * 1024 + 1, 8 * 1024 * 1024).map((size) => ({
    what: `${size} bytes`,
    type: "application/json",
    body: `{"spec":{"pad":"${"x".repeat(size)}"}}`,
  })),
  fc.constantFrom(
    "text/plain;charset=UTF-8",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "",
    "application/json-seq",
    "text/html",
  ).map((type) => ({
    what: `type ${JSON.stringify(type)}`,
    type,
    body: '{"metadata":{"name":"evil"},"spec":{}}',
  })),
  fc.constantFrom("{", "[", '{"spec":', "\u0000", "[1,2,", '"x').map((body) => ({
    what: `truncated ${JSON.stringify(body)}`,
    type: "application/json",
    body,
  })),
);
test("bad input: hostile Kubernetes API requests (patch bombs, deep and oversized bodies, foreign Hosts and content types) get a 4xx, never a 5xx, and write nothing", async () => {
  const store = await openSqliteStore(":memory:");
  try {
    const bh = new Beehive(store);
    await bh.client(Thing).create("a", { n: 1 });
    const before = await store.getLatestResourceVersion();
    const handle = kubeApiHandler({ store, maxBodyBytes: 3 * 1024 * 1024 });
    const things = `/apis/${Thing.group}/v1/${Thing.kind.toLowerCase()}s`;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("POST", "PUT", "PATCH", "DELETE"),
        fc.constantFrom("localhost", "127.0.0.1:6443", "evil.example", "localhost.evil.example"),
        apiBody,
        async (method, host, { what, type, body }) => {
          // A field manager, so an apply configuration is read rather than refused for lack of one.
          const path = `${method === "POST" ? things : `${things}/a`}?fieldManager=campaign`;
          const label = `${method} ${host} ${what}`;
          figures.calls++;
          const response = await handle(
            new Request(`http://${host}${path}`, {
              method,
              headers: type === "" ? {} : { "content-type": type },
              body: type === "" ? new Blob([body]) : body,
            }),
          );
          const status = response.status;
          const answer = await response.json();
          figures.rejected.set(String(status), (figures.rejected.get(String(status)) ?? 0) + 1);
          assert.ok(status >= 400 && status < 500, `${label}: ${status} ${answer.message}`);
          assert.equal(answer.kind, "Status", label);
          if (host.includes("evil")) assert.equal(status, 403, label);
          figures.checks++;
        },
      ),
      { seed: SEED, numRuns: 300, ...replay() },
    );
    figures.runs = 300;
    assert.equal(await store.getLatestResourceVersion(), before, "the API wrote");
    figures.refusalsWithoutWrite = figures.calls;
  } finally {
    await store.close();
    report("Kubernetes API requests (by status)");
  }
});

/** One `apply` item, valid or not, and whether the engine or the CLI must refuse it. */
const applyItem = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom("a", "b", "é", "😀", "x y").map((name) => ({
      item: { group: "g", kind: "K", name, spec: { n: name } } as unknown,
      bad: false,
    })),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom<unknown>(
      { group: "g", kind: "K", name: "n".repeat(1_025), spec: {} },
      { group: "g", kind: "K", name: "a\ud800", spec: {} },
      { group: "g", kind: "K".repeat(1_025), name: "a", spec: {} },
      { group: "g", kind: "K", name: "deep", spec: nestedArrays(65) },
      { group: "g", kind: "K", name: "big", spec: { s: "x".repeat(1_572_864) } },
      { group: "g", kind: "K", name: "a" },
      { group: "g", kind: "K", name: "", spec: {} },
      { group: "g", kind: "K", name: "a", spec: {}, owner: 1 },
      "K/a",
      null,
    ).map((item) => ({ item, bad: true })),
  },
);

// ---------------------------------------------------------------------------
// Issue 27: stored kinds — every writer checks the stored JSON Schema

/** The stored spec schema the writers without the validator are held to. */
const STORED_SPEC_SCHEMA = {
  type: "object",
  required: ["replicas"],
  additionalProperties: false,
  properties: {
    replicas: { type: "integer", minimum: 0, maximum: 100 },
    image: { type: "string", minLength: 1, maxLength: 8 },
  },
};
const STORED_STATUS_SCHEMA = { type: "object", properties: { ready: { type: "boolean" } } };

/** The model of {@linkcode STORED_SPEC_SCHEMA}: whether JSON `value` conforms. */
function conformsToStoredSpec(value: unknown): boolean {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  if (Object.keys(v).some((k) => k !== "replicas" && k !== "image")) return false;
  const r = v.replicas;
  if (typeof r !== "number" || !Number.isInteger(r) || r < 0 || r > 100) return false;
  if (!("image" in v)) return true;
  const chars = typeof v.image === "string" ? [...v.image].length : -1;
  return chars >= 1 && chars <= 8;
}

function conformsToStoredStatus(value: unknown): boolean {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const ready = (value as Record<string, unknown>).ready;
  return ready === undefined || typeof ready === "boolean";
}

const fieldArb = fc.oneof(
  fc.integer({ min: -5, max: 105 }),
  fc.double({ noNaN: true, noDefaultInfinity: true, min: -2, max: 2 }),
  fc.string({ maxLength: 10 }),
  fc.constantFrom<unknown>(null, true, [], {}, "", "nginx"),
);
const storedSpecArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.record(
    { replicas: fieldArb, image: fieldArb, extra: fieldArb },
    { requiredKeys: [] },
  ),
  fc.record({ replicas: fc.integer({ min: 0, max: 100 }), image: fc.string({ maxLength: 9 }) }),
  fc.constantFrom<unknown>(null, 5, "s", [], [{ replicas: 1 }]),
);

type StoredWriter =
  | "create"
  | "getOrCreate"
  | "createOrUpdate"
  | "update"
  | "updateByName"
  | "tx.create"
  | "status"
  | "apply";

const storedWriterArb = fc.constantFrom<StoredWriter>(
  "create",
  "getOrCreate",
  "createOrUpdate",
  "update",
  "updateByName",
  "tx.create",
  "status",
  "apply",
);

/** Stores `gk`'s definition with the given spec and status schema texts, as another process's start would. */
async function putStoredKind(
  store: { kinds: { put(input: unknown): Promise<boolean> } },
  gk: GroupKind,
  specSchema: string | undefined,
  statusSchema: string | undefined,
): Promise<void> {
  await store.kinds.put({
    ...gk,
    plural: "stored",
    singular: "stored",
    shortNames: [],
    namespaced: false,
    columns: "[]",
    specSchema,
    statusSchema,
  });
}

/** Runs one write of `value` through `writer` on a Beehive that knows only `gk`; resolves to its outcome. */
async function storedWrite(
  store: Parameters<typeof putStoredKind>[0] & ConstructorParameters<typeof Beehive>[0],
  db: string | undefined,
  gk: GroupKind,
  writer: StoredWriter,
  seededId: number,
  value: unknown,
): Promise<{ ok: true } | { ok: false; error: unknown }> {
  const bh = new Beehive(store);
  const client = bh.client(gk);
  const call = async (): Promise<unknown> => {
    switch (writer) {
      case "create":
        return await client.create("new", value);
      case "getOrCreate":
        return await client.getOrCreate("new", value);
      case "createOrUpdate":
        return await client.createOrUpdate("seed", value);
      case "update":
        return await client.update(seededId, value);
      case "updateByName":
        return await client.updateByName("seed", value);
      case "tx.create":
        return await store.within((tx) => new Beehive(tx).client(gk).create("new", value));
      case "status":
        return await bh.adminClient(gk).updateStatus(seededId, value);
      case "apply": {
        const r = await cli([db!, "apply", "-f", "-"], {
          stdin: JSON.stringify({ ...gk, name: "new", spec: value }),
        });
        if (r.code !== 0) throw Object.assign(new Error(r.err), { exitCode: r.code });
        return r;
      }
    }
  };
  return await call().then(
    () => ({ ok: true as const }),
    (error) => ({ ok: false as const, error }),
  );
}

test("bad input: specs and statuses that violate a stored JSON Schema are refused from every writer without the validator, and write nothing", async () => {
  const dir = scratchDir();
  let n = 0;
  try {
    const db = dir.file("stored.db");
    const store = await openSqliteFile(db);
    try {
      await fc.assert(
        fc.asyncProperty(storedWriterArb, storedSpecArb, async (writer, value) => {
          const gk = { group: "test.beehive.dev", kind: `Stored${n++}` };
          // Seeded before the schema is stored: the row a non-create write targets.
          const seeded = await new Beehive(store).client(gk).create("seed", { replicas: 1 });
          await putStoredKind(
            store,
            gk,
            JSON.stringify(STORED_SPEC_SCHEMA),
            JSON.stringify(STORED_STATUS_SCHEMA),
          );
          const before = await store.getLatestResourceVersion();
          const expected = writer === "status"
            ? conformsToStoredStatus(value)
            : conformsToStoredSpec(value);
          figures.calls++;
          const outcome = await storedWrite(store, db, gk, writer, seeded.id, value);
          const label = `${writer} of ${show(value)}`;
          if (expected) {
            assert.ok(
              outcome.ok,
              `${label}: ${describeError((outcome as { error?: unknown }).error)}`,
            );
            figures.resolved++;
          } else {
            assert.ok(!outcome.ok, `${label} resolved; expected a refusal`);
            const e = outcome.error;
            if (writer === "apply") {
              assert.equal((e as { exitCode?: number }).exitCode, 1, label);
              assert.match((e as Error).message, /Cannot write the spec of Stored/, label);
            } else {
              const invalid = writer === "status" ? InvalidStatusError : InvalidSpecError;
              assert.ok(e instanceof invalid, `${label}: ${describeError(e)}`);
              assert.ok(e.issues.length > 0, label);
              for (const issue of e.issues) {
                assert.equal(typeof issue.message, "string", label);
                assert.ok(Array.isArray(issue.path), label);
              }
            }
            const name = writer === "apply" ? "exit 1" : (e as Error).constructor.name;
            figures.rejected.set(name, (figures.rejected.get(name) ?? 0) + 1);
            assert.equal(await store.getLatestResourceVersion(), before, `${label} wrote`);
            figures.refusalsWithoutWrite++;
          }
          figures.checks++;
        }),
        { seed: SEED, numRuns: 200, ...replay() },
      );
      figures.runs = 200;
    } finally {
      await store.close();
    }
  } finally {
    dir.remove();
    report("stored JSON Schemas");
  }
});

/** Stored schema texts that are not usable draft 2020-12 JSON Schema. */
const UNUSABLE_SCHEMAS = [
  "not json",
  "[]",
  '"object"',
  "42",
  '{"type":12}',
  '{"type":"thing"}',
  '{"properties":[]}',
  '{"required":"replicas"}',
  '{"minimum":"0"}',
  '{"multipleOf":0}',
  '{"pattern":"("}',
  '{"items":[{}]}',
  '{"$ref":"#/$defs/missing"}',
  '{"properties":{"a":{"$ref":"https://elsewhere.example/schema"}}}',
  '{"allOf":[]}',
];

test("bad input: a stored schema that is not valid JSON Schema is a clear StoreError from every writer, and writes nothing", async () => {
  const dir = scratchDir();
  let n = 0;
  try {
    const db = dir.file("unusable.db");
    const store = await openSqliteFile(db);
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...UNUSABLE_SCHEMAS),
          storedWriterArb,
          async (schema, writer) => {
            const gk = { group: "test.beehive.dev", kind: `Unusable${n++}` };
            const seeded = await new Beehive(store).client(gk).create("seed", { replicas: 1 });
            await putStoredKind(store, gk, schema, schema);
            const before = await store.getLatestResourceVersion();
            figures.calls++;
            const value = { replicas: 1 };
            const outcome = await storedWrite(store, db, gk, writer, seeded.id, value);
            const label = `${writer} under ${schema}`;
            assert.ok(!outcome.ok, `${label} resolved; expected a refusal`);
            const what = writer === "status" ? "status" : "spec";
            const message = new RegExp(
              `Cannot check the ${what} of ${gk.kind}\\.test\\.beehive\\.dev against its stored JSON Schema`,
            );
            if (writer === "apply") {
              assert.equal((outcome.error as { exitCode?: number }).exitCode, 1, label);
              assert.match((outcome.error as Error).message, message, label);
            } else {
              assert.ok(
                outcome.error instanceof StoreError,
                `${label}: ${describeError(outcome.error)}`,
              );
              assert.match(outcome.error.message, message, label);
            }
            figures.rejected.set("StoreError", (figures.rejected.get("StoreError") ?? 0) + 1);
            assert.equal(await store.getLatestResourceVersion(), before, `${label} wrote`);
            figures.refusalsWithoutWrite++;
            figures.checks++;
          },
        ),
        { seed: SEED, numRuns: 120, ...replay() },
      );
      figures.runs = 120;
    } finally {
      await store.close();
    }
  } finally {
    dir.remove();
    report("unusable stored schemas");
  }
});

test("bad input: hostile Standard JSON Schema converters and kind definitions are refused by defineKind with InvalidOptionError", () => {
  const converter = (input: unknown) => ({
    "~standard": {
      version: 1 as const,
      vendor: "hostile",
      validate: (value: unknown) => ({ value }),
      jsonSchema: input,
    },
  });
  const cyclic: Record<string, unknown> = { type: "object" };
  cyclic.properties = { self: cyclic };
  const hostile: unknown[] = [
    null,
    5,
    {},
    { input: "schema" },
    {
      input: () => {
        throw new Error("unrepresentable");
      },
    },
    { input: () => 1n },
    { input: () => cyclic },
    { input: () => ({ type: "object", maximum: Number.POSITIVE_INFINITY }) },
    { input: () => ({ type: 12 }) },
    { input: () => ({ description: "x".repeat(1_100_000) }) },
    { input: () => "object" },
  ];
  for (const jsonSchema of hostile) {
    for (const where of ["spec", "status"] as const) {
      figures.calls++;
      assert.throws(
        () => defineKind({ group: "g", kind: "K", [where]: converter(jsonSchema) } as never),
        InvalidOptionError,
        `${where} converter ${show(jsonSchema)}`,
      );
      figures.rejected.set(
        "InvalidOptionError",
        (figures.rejected.get("InvalidOptionError") ?? 0) + 1,
      );
      figures.checks++;
    }
  }
  const names: Record<string, unknown>[] = [
    { plural: "Ws" },
    { plural: "w".repeat(64) },
    { singular: "" },
    { singular: "a\u0000" },
    { shortNames: [5] },
    { shortNames: ["ok", "NOT"] },
    { shortNames: { length: 1 } },
    { namespaced: 1 },
    { columns: [{ name: "X", jsonPath: ".spec", type: "uuid" }] },
    { columns: [{ name: "x".repeat(64), jsonPath: ".spec" }] },
    { columns: [{ name: "X", jsonPath: `.${"a".repeat(300)}` }] },
    { columns: [{ name: "X\uD800", jsonPath: ".spec" }] },
  ];
  for (const extra of names) {
    figures.calls++;
    assert.throws(
      () => defineKind({ group: "g", kind: "K", ...extra } as never),
      InvalidOptionError,
      show(extra),
    );
    figures.rejected.set(
      "InvalidOptionError",
      (figures.rejected.get("InvalidOptionError") ?? 0) + 1,
    );
    figures.checks++;
  }
  figures.runs = 1;
  report("kind definitions");
});

test("bad input: apply writes every item or none: one refused item leaves the store as it was", async () => {
  const dir = scratchDir();
  try {
    const db = dir.file("apply.db");
    // The CLI speaks SQLite only: this property reads the file it writes, whatever the test store.
    await (await openSqliteFile(db)).close();
    await fc.assert(
      fc.asyncProperty(
        fc.array(applyItem, { minLength: 1, maxLength: 6 }),
        fc.boolean(),
        async (items, bom) => {
          const store = await openSqliteFile(db);
          const before = await store.getLatestResourceVersion();
          await store.close();
          const text = (bom ? "\uFEFF" : "") + JSON.stringify(items.map((i) => i.item));
          figures.calls++;
          const r = await cli([db, "apply", "-f", "-"], { stdin: text });
          const bad = items.some((i) => i.bad);
          const after = await openSqliteFile(db);
          try {
            if (bad) {
              assert.equal(r.code, 1, r.out);
              assert.equal(r.out, "");
              assert.ok(r.err.length < 1_000, `a bounded message (${r.err.length})`);
              assert.equal(await after.getLatestResourceVersion(), before, "a refused apply wrote");
              figures.rejected.set("exit 1", (figures.rejected.get("exit 1") ?? 0) + 1);
              figures.refusalsWithoutWrite++;
            } else {
              assert.equal(r.code, 0, r.err);
              for (const { item } of items) {
                const { name } = item as { name: string };
                assert.equal(
                  (await after.objects.getByName({ group: "g", kind: "K", name })).name,
                  name,
                );
              }
              figures.resolved++;
            }
          } finally {
            await after.close();
          }
          figures.checks++;
        },
      ),
      { seed: SEED, numRuns: 120, ...replay() },
    );
    figures.runs = 120;
  } finally {
    dir.remove();
    report("cli apply");
  }
});

/** Sends `head` on a fresh connection and resolves to the status code answered, or 0 for none. */
function rawStatus(port: number, head: string): Promise<number> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let text = "";
    socket.setEncoding("latin1");
    const done = () => {
      const match = /^HTTP\/1\.[01] (-1|\d{3})/.exec(text);
      resolve(match === null ? 0 : Number(match[1]));
    };
    socket.on("data", (chunk) => {
      text += chunk;
      // The status line is the answer: a live feed would stream on.
      if (/^HTTP\/1\.[01] \d{3}/.test(text)) socket.destroy();
    });
    socket.on("close", done);
    socket.on("error", () => socket.destroy());
    // A guard, not a wait: a connection left open this long is reported as -1 (a failure).
    socket.setTimeout(5_000, () => {
      text = "HTTP/1.1 -1";
      socket.destroy();
    });
    socket.write(head, "latin1");
  });
}

test("bad input: malformed request lines and Host headers through toNodeListener never get a 500 nor stop the server", async () => {
  const store = await openSqliteStore(":memory:");
  const server = await listenNode(consoleHandler({ store, maxLiveFeeds: 2 }));
  const { port } = server;
  try {
    await new Beehive(store).client(Thing).create("a", {});
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(
          "GET",
          "HEAD",
          "TRACE",
          "TRACK",
          "CONNECT",
          "OPTIONS",
          "PROPFIND",
          "G\u00c9T",
        ),
        fc.constantFrom(
          "/",
          "*",
          "http://evil.example/",
          "//x",
          "/kinds/%00.x",
          "/kinds/Thing.test.beehive.dev",
          "/objects/1",
          "/objects/1/live",
          "/%ZZ",
          "/a b",
          "/" + "k".repeat(9_000),
        ),
        fc.constantFrom(
          "localhost",
          `localhost:${port}`,
          "127.0.0.1",
          "[::1]",
          "a b",
          "[::1",
          "x:99999",
          "u@localhost",
          "evil.example",
          "",
        ),
        async (method, target, host) => {
          figures.calls++;
          const status = await rawStatus(
            port,
            `${method} ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
          );
          const label = `${method} ${show(target)} Host: ${show(host)}`;
          if (status < 200 || status >= 300) {
            figures.rejected.set(String(status), (figures.rejected.get(String(status)) ?? 0) + 1);
          }
          assert.ok(status >= 0 && status !== 500 && status < 600, `${label}: ${status}`);
          if (status >= 200 && status < 300) figures.resolved++;
          figures.checks++;
        },
      ),
      { seed: SEED, numRuns: 200, ...replay() },
    );
    figures.runs = 200;
    assert.equal(
      await rawStatus(port, "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"),
      200,
    );
  } finally {
    await server.close();
    await store.close();
    report("raw requests through toNodeListener (by status; 0 = closed without an answer)");
  }
});

// ---------------------------------------------------------------------------
// Issue 27: labels, annotations and label selectors

/** Label keys and values drawn from characters that are legal, illegal, or legal only in places. */
const labelPieceArb = fc.oneof(
  {
    arbitrary: fc.constantFrom("app", "tier", "example.com/app", "a.b-c_d", "x", "web"),
    weight: 12,
  },
  fc.constantFrom("", "-x", "x-", "a b", "A/b"),
  fc.stringMatching(/^[a-zA-Z0-9._\/ -]{0,8}$/),
  fc.constantFrom("k".repeat(63), "k".repeat(64), `${"p".repeat(253)}/k`, `${"p".repeat(254)}/k`),
  fc.constantFrom("\ud800", "a\u0000b", "ü", "a/b/c", "/x", "x/"),
);
const labelMapArb = fc.dictionary(labelPieceArb, labelPieceArb, { maxKeys: 4 });
/** Selector strings: pieces of the grammar, well-formed or not, joined at random. */
const selectorArb = fc.oneof(
  fc.array(
    fc.oneof(
      labelPieceArb,
      fc.constantFrom("=", "==", "!=", "!", ",", " in ", " notin ", "(", ")", " ", "x", "app"),
    ),
    { maxLength: 8 },
  ).map((parts) => parts.join("")),
  fc.constantFrom("app=web", "tier in (x, app)", "!legacy", "app,tier!=x", ""),
);

test("bad input: hostile labels, annotations and selectors get InvalidMetadataError or InvalidOptionError, write nothing, and a selector the store answers matches exactly what the labels say", async () => {
  const store = await openTestStore(":memory:");
  let n = 0;
  const stats = { created: 0, refused: 0, selectors: 0, malformed: 0 };
  try {
    const bh = new Beehive(store);
    const client = bh.client({ group: "test.beehive.dev", kind: "Labelled" });
    await fc.assert(
      fc.asyncProperty(labelMapArb, labelMapArb, selectorArb, async (labels, notes, selector) => {
        const before = await store.getLatestResourceVersion();
        const name = `o${n++}`;
        try {
          const o = await client.create(name, {}, { labels, annotations: notes });
          stats.created++;
          assert.deepEqual({ ...o.labels }, { ...labels });
          assert.deepEqual({ ...(await client.get(o.id)).annotations }, { ...notes });
        } catch (error) {
          assert.ok(error instanceof InvalidMetadataError, describeError(error));
          assert.ok(
            error.key === "" || error.key in (error.field === "labels" ? labels : notes),
            `the error names ${JSON.stringify(error.key)}, not a key given`,
          );
          assert.equal(await store.getLatestResourceVersion(), before);
          stats.refused++;
        }
        try {
          const selected = await client.list({ labelSelector: selector });
          stats.selectors++;
          const requirements = parseLabelSelector(selector)!;
          const expected = (await client.list()).filter((o) =>
            matchesLabels(requirements, o.labels)
          );
          assert.deepEqual(selected.map((o) => o.id), expected.map((o) => o.id), selector);
        } catch (error) {
          assert.ok(error instanceof InvalidOptionError, `${selector}: ${describeError(error)}`);
          assert.throws(() => parseLabelSelector(selector), InvalidOptionError);
          stats.malformed++;
        }
      }),
      { seed: SEED, numRuns: 300 },
    );
    console.log(
      `[bad-input] labels: created ${stats.created}, refused ${stats.refused}; selectors answered ${stats.selectors}, malformed ${stats.malformed}`,
    );
  } finally {
    await store.close();
  }
});

/** Namespace candidates: DNS-1123 labels near their bounds, and what breaks each rule. */
const namespaceArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/),
  fc.constantFrom(
    "",
    "-a",
    "a-",
    "A",
    "a.b",
    "a_b",
    "a b",
    "ü",
    "a\u0000",
    "\uD800",
    "a".repeat(63),
    "a".repeat(64),
    "x".repeat(100_000),
  ),
  fc.string({ maxLength: 70 }),
  fc.constantFrom(undefined, null, 7, {}, [], true),
);

/** The namespace rule, written out on its own: the model the clients must agree with. */
function isNamespaceName(value: unknown): value is string {
  return typeof value === "string" && value.length >= 1 && value.length <= 63 &&
    /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(value);
}

test("bad input: hostile namespaces are refused with InvalidOptionError (clients) or InvalidNameError (store), write nothing, and a name is unique only per namespace", async () => {
  const store = await openTestStore(":memory:");
  const Scoped = defineKind<{ n: number }, never>({
    group: "test.beehive.dev",
    kind: "Scoped",
    namespaced: true,
  });
  const Global = defineKind<{ n: number }, never>({ group: "test.beehive.dev", kind: "Global" });
  const stats = { accepted: 0, refused: 0 };
  let n = 0;
  try {
    const bh = new Beehive(store);
    const owner = await bh.client(Scoped, { namespace: "owners" }).create("owner", { n: 0 });
    await fc.assert(
      fc.asyncProperty(namespaceArb, async (namespace) => {
        const before = await store.getLatestResourceVersion();
        const name = `o${n++}`;
        if (namespace === undefined) return;
        if (!isNamespaceName(namespace)) {
          throwsExactly(
            () => bh.client(Scoped, { namespace: namespace as string }),
            InvalidOptionError,
            `client(Scoped, { namespace: ${show(namespace)} })`,
          );
          // "" is the cluster scope at the store, which a client of a namespaced kind never writes.
          if (namespace !== "") {
            await assert.rejects(
              store.objects.create(Scoped, { name, spec: "{}", namespace: namespace as string }),
              InvalidNameError,
            );
          }
          assert.equal(await store.getLatestResourceVersion(), before);
          stats.refused++;
          return;
        }
        throwsExactly(
          () => bh.client(Global, { namespace }),
          InvalidOptionError,
          `client(Global, { namespace: ${show(namespace)} })`,
        );
        const scoped = bh.client(Scoped, { namespace });
        const o = await scoped.create(name, { n: 1 });
        assert.equal(o.namespace, namespace);
        assert.equal((await scoped.getByName(name)).id, o.id);
        // The same name in another namespace is another object.
        const elsewhere = namespace === "other" ? "another" : "other";
        const other = await bh.client(Scoped, { namespace: elsewhere }).getOrCreate(name, { n: 2 });
        assert.ok(other.created && other.object.id !== o.id);
        // An owner in another namespace is refused, writing nothing.
        if (namespace !== "owners") {
          const at = await store.getLatestResourceVersion();
          await assert.rejects(
            scoped.create(`${name}-child`, { n: 3 }, { owner: owner.id }),
            InvalidOptionError,
          );
          assert.equal(await store.getLatestResourceVersion(), at);
        }
        stats.accepted++;
      }),
      { seed: SEED, numRuns: 300 },
    );
    // Without a namespace, a namespaced kind's name-keyed calls are refused.
    await assert.rejects(bh.client(Scoped).create("x", { n: 0 }), InvalidOptionError);
    console.log(
      `[bad-input] namespaces: accepted ${stats.accepted}, refused ${stats.refused}`,
    );
  } finally {
    await store.close();
  }
});
