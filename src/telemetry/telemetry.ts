/**
 * Metrics and traces through OpenTelemetry, typed structurally: the subset of
 * the OpenTelemetry API's `Meter` and `Tracer` beehive calls, the five
 * instruments, and one span per reconcile pass. Nothing here imports
 * `@opentelemetry/api`; any object with these methods qualifies.
 *
 * @module
 */
import { InvalidOptionError } from "../model/errors.ts";
import type { Logger } from "./logger.ts";
import { describe } from "../model/_values.ts";

/** Attribute values as OpenTelemetry takes them. */
export type TelemetryAttributes = Record<string, string | number | boolean>;

/**
 * The part of an OpenTelemetry `Meter` beehive calls (e.g.
 * `metrics.getMeter("beehive")` from `npm:@opentelemetry/api`): five
 * instruments, each created with options as OpenTelemetry takes them
 * (`MetricOptions`: `description`, the UCUM `unit`, and `advice` such as
 * histogram bucket boundaries).
 */
export interface TelemetryMeter {
  /** Creates a monotonic counter (`Counter`): `add(value, attributes)`. */
  createCounter(
    name: string,
    options?: {
      readonly description?: string;
      readonly unit?: string;
      readonly advice?: { readonly explicitBucketBoundaries?: number[] };
    },
  ): { add(value: number, attributes?: TelemetryAttributes): void };
  /** Creates a histogram (`Histogram`): `record(value, attributes)`. */
  createHistogram(
    name: string,
    options?: {
      readonly description?: string;
      readonly unit?: string;
      readonly advice?: { readonly explicitBucketBoundaries?: number[] };
    },
  ): { record(value: number, attributes?: TelemetryAttributes): void };
  /** Creates an up-down counter (`UpDownCounter`): `add(value, attributes)`. */
  createUpDownCounter(
    name: string,
    options?: {
      readonly description?: string;
      readonly unit?: string;
      readonly advice?: { readonly explicitBucketBoundaries?: number[] };
    },
  ): { add(value: number, attributes?: TelemetryAttributes): void };
  /**
   * Creates an observable gauge (`ObservableGauge`): each callback added is
   * called at every collection with a result to `observe(value, attributes)` through.
   */
  createObservableGauge(
    name: string,
    options?: {
      readonly description?: string;
      readonly unit?: string;
      readonly advice?: { readonly explicitBucketBoundaries?: number[] };
    },
  ): {
    addCallback(
      callback: (
        result: { observe(value: number, attributes?: TelemetryAttributes): void },
      ) => void,
    ): void;
    removeCallback(
      callback: (
        result: { observe(value: number, attributes?: TelemetryAttributes): void },
      ) => void,
    ): void;
  };
}

/**
 * The part of an OpenTelemetry `Tracer` beehive calls (e.g.
 * `trace.getTracer("beehive")` from `npm:@opentelemetry/api`). The pass span
 * is the active span while the controller runs, so spans the controller
 * starts are its children. Of the span, beehive calls `setAttributes`,
 * `recordException`, `setStatus` (`{ code: 2 }`, `SpanStatusCode.ERROR`, on a
 * failed or stalled pass), `end`, and `isRecording` when present (a span that
 * records nothing is given no attributes).
 */
export interface TelemetryTracer {
  /** Starts a span with `options.attributes`, makes it active for `fn`, and returns what `fn` returns. */
  startActiveSpan<
    F extends (span: {
      setAttributes(attributes: TelemetryAttributes): unknown;
      recordException(exception: unknown): void;
      setStatus(status: { code: number; message?: string }): unknown;
      end(): void;
      isRecording?(): boolean;
    }) => unknown,
  >(
    name: string,
    options: { readonly attributes?: TelemetryAttributes },
    fn: F,
  ): ReturnType<F>;
}

/** Instrument options as OpenTelemetry takes them (`MetricOptions`). */
export type TelemetryInstrumentOptions = NonNullable<
  Parameters<TelemetryMeter["createCounter"]>[1]
>;
/** A counter or up-down counter. */
export type TelemetryCounter = ReturnType<TelemetryMeter["createCounter"]>;
/** A histogram. */
export type TelemetryHistogram = ReturnType<TelemetryMeter["createHistogram"]>;
/** An observable gauge. */
export type TelemetryObservableGauge = ReturnType<TelemetryMeter["createObservableGauge"]>;
/** A callback the meter calls at each collection. */
export type TelemetryObservableCallback = Parameters<TelemetryObservableGauge["addCallback"]>[0];
/** What an observable callback reports through. */
export type TelemetryObservableResult = Parameters<TelemetryObservableCallback>[0];
/** The part of an OpenTelemetry `Span` beehive calls. */
export type TelemetrySpan = Parameters<Parameters<TelemetryTracer["startActiveSpan"]>[2]>[0];
/** Span options as OpenTelemetry takes them (`SpanOptions`). */
export type TelemetrySpanOptions = Parameters<TelemetryTracer["startActiveSpan"]>[1];

/** `SpanStatusCode.ERROR` in the OpenTelemetry API. */
const SPAN_STATUS_ERROR = 2;

/** How a pass ended, as metrics and traces report it (`beehive.outcome`). */
export type PassReport = "settled" | "unsettled" | "failed" | "stalled";

const REPORTS: readonly PassReport[] = ["settled", "unsettled", "failed", "stalled"];

/** What a traced pass resolves to: its report, and the error a failed or stalled one records. */
export interface ReportedPass {
  /** `undefined` when no reconcile ran (the object was gone): nothing is counted. */
  readonly report: PassReport | undefined;
  /** The failure a `"failed"` or `"stalled"` pass records on its span. */
  readonly error: unknown;
}

const DURATION_BUCKETS = [
  0.001,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
  60,
];

/**
 * Checks the `meter` option: an object with the four instrument factories.
 * @throws {InvalidOptionError}
 */
export function checkMeter(value: unknown): TelemetryMeter {
  const methods = [
    "createCounter",
    "createHistogram",
    "createUpDownCounter",
    "createObservableGauge",
  ];
  if (!hasMethods(value, methods)) {
    throw new InvalidOptionError(
      `Cannot use option meter: current value is ${
        describe(value)
      }, expected an OpenTelemetry Meter with ${methods.join(", ")} methods`,
    );
  }
  return value as TelemetryMeter;
}

/**
 * Checks the `tracer` option: an object with `startActiveSpan`.
 * @throws {InvalidOptionError}
 */
export function checkTracer(value: unknown): TelemetryTracer {
  if (!hasMethods(value, ["startActiveSpan"])) {
    throw new InvalidOptionError(
      `Cannot use option tracer: current value is ${
        describe(value)
      }, expected an OpenTelemetry Tracer with a startActiveSpan method`,
    );
  }
  return value as TelemetryTracer;
}

function hasMethods(value: unknown, methods: readonly string[]): boolean {
  if (typeof value !== "object" || value === null) return false;
  const o = value as Record<string, unknown>;
  return methods.every((m) => typeof o[m] === "function");
}

/** A guard that runs telemetry calls and logs the first failure once: telemetry never breaks a pass. */
class Guard {
  readonly #log: Logger;
  #warned = false;

  constructor(log: Logger) {
    this.#log = log;
  }

  run(what: string, fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.fault(what, error);
    }
  }

  fault(what: string, error: unknown): void {
    if (this.#warned) return;
    this.#warned = true;
    this.#log.warn("beehive: telemetry failed; further failures are not logged", {
      what,
      error,
    });
  }
}

/** The Beehive-wide gauges' sources, read at each collection. */
export interface GaugeSources {
  /** Each registered kind's label and queue depth. */
  readonly depths: () => Iterable<readonly [kind: string, depth: number]>;
  /** Whether the Beehive leads now. */
  readonly leading: () => boolean;
  /** The lease it holds or contends for. */
  readonly lease: string;
}

/** One Beehive's instruments and tracer. */
export class Telemetry {
  readonly #guard: Guard;
  readonly #tracer: TelemetryTracer | undefined;
  readonly #passes: TelemetryCounter | undefined;
  readonly #duration: TelemetryHistogram | undefined;
  readonly #active: TelemetryCounter | undefined;
  readonly #depth: TelemetryObservableGauge | undefined;
  readonly #leader: TelemetryObservableGauge | undefined;
  #gaugeCallbacks: (() => void) | undefined;

  constructor(
    meter: TelemetryMeter | undefined,
    tracer: TelemetryTracer | undefined,
    log: Logger,
  ) {
    this.#guard = new Guard(log);
    this.#tracer = tracer;
    if (meter === undefined) return;
    const make = <T>(name: string, fn: () => T): T | undefined => {
      try {
        return fn();
      } catch (error) {
        this.#guard.fault(`creating ${name}`, error);
        return undefined;
      }
    };
    this.#passes = make(
      "beehive.reconcile.passes",
      () =>
        meter.createCounter("beehive.reconcile.passes", {
          description: "Reconcile passes that ended, by kind and outcome",
          unit: "{pass}",
        }),
    );
    this.#duration = make(
      "beehive.reconcile.duration",
      () =>
        meter.createHistogram("beehive.reconcile.duration", {
          description: "How long reconcile passes took, by kind and outcome",
          unit: "s",
          advice: { explicitBucketBoundaries: DURATION_BUCKETS },
        }),
    );
    this.#active = make(
      "beehive.reconcile.active",
      () =>
        meter.createUpDownCounter("beehive.reconcile.active", {
          description: "Reconcile passes running now, by kind",
          unit: "{pass}",
        }),
    );
    this.#depth = make(
      "beehive.queue.depth",
      () =>
        meter.createObservableGauge("beehive.queue.depth", {
          description: "Objects queued or scheduled in a kind's work queue",
          unit: "{object}",
        }),
    );
    this.#leader = make("beehive.leader", () =>
      meter.createObservableGauge("beehive.leader", {
        description: "1 while this Beehive leads (runs its controllers), else 0",
        unit: "1",
      }));
  }

  /** The recorder of kind `kindLabel`'s passes. */
  forKind(kindLabel: string): KindTelemetry {
    return new KindTelemetry(kindLabel, this.#guard, this.#tracer, {
      passes: this.#passes,
      duration: this.#duration,
      active: this.#active,
    });
  }

  /** Starts reporting the gauges from `sources`; until `unobserve`. */
  observe(sources: GaugeSources): void {
    this.unobserve();
    const g = this.#guard;
    const leaseAttrs = { "beehive.lease": sources.lease };
    const depth: TelemetryObservableCallback = (result) =>
      g.run("beehive.queue.depth", () => {
        for (const [kind, n] of sources.depths()) result.observe(n, { "beehive.kind": kind });
      });
    const leader: TelemetryObservableCallback = (result) =>
      g.run("beehive.leader", () => result.observe(sources.leading() ? 1 : 0, leaseAttrs));
    const d = this.#depth;
    const l = this.#leader;
    g.run("beehive.queue.depth", () => d?.addCallback(depth));
    g.run("beehive.leader", () => l?.addCallback(leader));
    this.#gaugeCallbacks = () => {
      g.run("beehive.queue.depth", () => d?.removeCallback(depth));
      g.run("beehive.leader", () => l?.removeCallback(leader));
    };
  }

  /** Stops reporting the gauges. */
  unobserve(): void {
    const off = this.#gaugeCallbacks;
    this.#gaugeCallbacks = undefined;
    off?.();
  }
}

interface PassInstruments {
  readonly passes: TelemetryCounter | undefined;
  readonly duration: TelemetryHistogram | undefined;
  readonly active: TelemetryCounter | undefined;
}

/** One kind's pass recorder: attribute sets built once, so a pass allocates none for metrics. */
export class KindTelemetry {
  readonly #kind: string;
  readonly #spanName: string;
  readonly #guard: Guard;
  readonly #tracer: TelemetryTracer | undefined;
  readonly #i: PassInstruments;
  readonly #kindAttrs: TelemetryAttributes;
  readonly #outcomeAttrs: Record<PassReport, TelemetryAttributes>;

  constructor(
    kind: string,
    guard: Guard,
    tracer: TelemetryTracer | undefined,
    instruments: PassInstruments,
  ) {
    this.#kind = kind;
    this.#spanName = `reconcile ${kind}`;
    this.#guard = guard;
    this.#tracer = tracer;
    this.#i = instruments;
    this.#kindAttrs = Object.freeze({ "beehive.kind": kind });
    const byOutcome = {} as Record<PassReport, TelemetryAttributes>;
    for (const r of REPORTS) {
      byOutcome[r] = Object.freeze({ "beehive.kind": kind, "beehive.outcome": r });
    }
    this.#outcomeAttrs = byOutcome;
  }

  /**
   * Runs one pass over object `id` under the instruments and, with a tracer,
   * inside its span; resolves to what `run` resolves to. `run` gets the span
   * (or `undefined`) to describe the object once loaded.
   */
  async pass<T extends ReportedPass>(
    id: number,
    run: (span: PassSpan | undefined) => Promise<T>,
  ): Promise<T> {
    const i = this.#i;
    // Inline try blocks, not guard closures: this runs on every pass.
    try {
      i.active?.add(1, this.#kindAttrs);
    } catch (error) {
      this.#guard.fault("beehive.reconcile.active", error);
    }
    const started = performance.now();
    let out: T;
    try {
      out = this.#tracer === undefined ? await run(undefined) : await this.#traced(id, run);
    } finally {
      try {
        i.active?.add(-1, this.#kindAttrs);
      } catch (error) {
        this.#guard.fault("beehive.reconcile.active", error);
      }
    }
    const report = out.report;
    if (report !== undefined) {
      const seconds = (performance.now() - started) / 1000;
      const attrs = this.#outcomeAttrs[report];
      try {
        i.passes?.add(1, attrs);
      } catch (error) {
        this.#guard.fault("beehive.reconcile.passes", error);
      }
      try {
        i.duration?.record(seconds, attrs);
      } catch (error) {
        this.#guard.fault("beehive.reconcile.duration", error);
      }
    }
    return out;
  }

  #traced<T extends ReportedPass>(
    id: number,
    run: (span: PassSpan | undefined) => Promise<T>,
  ): Promise<T> {
    const g = this.#guard;
    let ran: Promise<T> | undefined;
    let traced: Promise<T> | undefined;
    try {
      traced = this.#tracer!.startActiveSpan(
        this.#spanName,
        { attributes: { "beehive.kind": this.#kind, "beehive.object.id": id } },
        (span: TelemetrySpan) => {
          if (notRecording(span, g)) {
            ran = run(undefined);
            return ran.finally(() => g.run("a span", () => span.end()));
          }
          const ps = new PassSpan(span, g);
          ran = run(ps);
          return ran.then((out) => {
            ps.finish(out);
            return out;
          }, (error) => {
            ps.finish({ report: "failed", error });
            throw error;
          });
        },
      ) as Promise<T>;
    } catch (error) {
      g.fault("starting a span", error);
    }
    // A tracer that threw before calling back, or returned something else, still gets the pass run.
    if (ran === undefined) return run(undefined);
    if (!(traced instanceof Promise)) return ran;
    return traced;
  }
}

/** Whether `span` says it records nothing (a no-op or sampled-out span). */
function notRecording(span: TelemetrySpan, g: Guard): boolean {
  try {
    return typeof span.isRecording === "function" && span.isRecording() === false;
  } catch (error) {
    g.fault("a span", error);
    return false;
  }
}

/** A pass's span, behind the guard. */
export class PassSpan {
  readonly #span: TelemetrySpan;
  readonly #guard: Guard;

  constructor(span: TelemetrySpan, guard: Guard) {
    this.#span = span;
    this.#guard = guard;
  }

  /** Describes the object the pass loaded. */
  object(name: string, generation: number): void {
    this.#guard.run("a span", () =>
      this.#span.setAttributes({
        "beehive.object.name": name,
        "beehive.object.generation": generation,
      }));
  }

  /** Sets the outcome, records a failure, and ends the span. */
  finish(out: ReportedPass): void {
    const span = this.#span;
    this.#guard.run("a span", () => {
      if (out.report !== undefined) span.setAttributes({ "beehive.outcome": out.report });
      if (out.report === "failed" || out.report === "stalled") {
        span.recordException(out.error);
        span.setStatus({ code: SPAN_STATUS_ERROR, message: errorMessage(out.error) });
      }
    });
    this.#guard.run("a span", () => span.end());
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
