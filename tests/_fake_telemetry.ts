/**
 * Fake structural OpenTelemetry meter and tracer that record every call, for
 * telemetry tests.
 *
 * @module
 */
import type {
  TelemetryAttributes,
  TelemetryInstrumentOptions,
  TelemetryMeter,
  TelemetryObservableCallback,
  TelemetrySpan,
  TelemetrySpanOptions,
  TelemetryTracer,
} from "../src/telemetry/telemetry.ts";

/** One recorded measurement. */
export interface Measurement {
  readonly value: number;
  readonly attributes: TelemetryAttributes;
}

/** One instrument a fake meter created. */
export interface FakeInstrument {
  readonly name: string;
  readonly type: "counter" | "histogram" | "upDownCounter" | "observableGauge";
  readonly options: TelemetryInstrumentOptions | undefined;
  readonly measurements: Measurement[];
  readonly callbacks: Set<TelemetryObservableCallback>;
}

/** A meter that records what it is asked; `throwing` makes every instrument call throw. */
export class FakeMeter implements TelemetryMeter {
  readonly instruments = new Map<string, FakeInstrument>();
  throwing = false;

  #make(
    name: string,
    type: FakeInstrument["type"],
    options: TelemetryInstrumentOptions | undefined,
  ): FakeInstrument {
    const i: FakeInstrument = { name, type, options, measurements: [], callbacks: new Set() };
    this.instruments.set(name, i);
    return i;
  }

  #recorder(i: FakeInstrument) {
    return (value: number, attributes: TelemetryAttributes = {}) => {
      if (this.throwing) throw new Error(`${i.name} is broken`);
      i.measurements.push({ value, attributes });
    };
  }

  createCounter(name: string, options?: TelemetryInstrumentOptions) {
    return { add: this.#recorder(this.#make(name, "counter", options)) };
  }

  createUpDownCounter(name: string, options?: TelemetryInstrumentOptions) {
    return { add: this.#recorder(this.#make(name, "upDownCounter", options)) };
  }

  createHistogram(name: string, options?: TelemetryInstrumentOptions) {
    return { record: this.#recorder(this.#make(name, "histogram", options)) };
  }

  createObservableGauge(name: string, options?: TelemetryInstrumentOptions) {
    const i = this.#make(name, "observableGauge", options);
    return {
      addCallback: (cb: TelemetryObservableCallback) => {
        if (this.throwing) throw new Error(`${name} is broken`);
        i.callbacks.add(cb);
      },
      removeCallback: (cb: TelemetryObservableCallback) => void i.callbacks.delete(cb),
    };
  }

  /** The measurements of `name`. */
  measurements(name: string): Measurement[] {
    return this.instruments.get(name)?.measurements ?? [];
  }

  /** Runs `name`'s callbacks, as a collection would; resolves to what they observed. */
  collect(name: string): Measurement[] {
    const out: Measurement[] = [];
    for (const cb of this.instruments.get(name)?.callbacks ?? []) {
      cb({ observe: (value, attributes = {}) => out.push({ value, attributes }) });
    }
    return out;
  }
}

/** One span a fake tracer started. */
export class FakeSpan implements TelemetrySpan {
  readonly name: string;
  readonly attributes: TelemetryAttributes;
  readonly exceptions: unknown[] = [];
  status: { code: number; message?: string } | undefined;
  ended = 0;
  readonly #recording: boolean;

  constructor(name: string, options: TelemetrySpanOptions, recording = true) {
    this.name = name;
    this.attributes = { ...options.attributes };
    this.#recording = recording;
  }

  isRecording(): boolean {
    return this.#recording;
  }

  setAttributes(attributes: TelemetryAttributes): this {
    Object.assign(this.attributes, attributes);
    return this;
  }

  recordException(exception: unknown): void {
    this.exceptions.push(exception);
  }

  setStatus(status: { code: number; message?: string }): this {
    this.status = status;
    return this;
  }

  end(): void {
    this.ended++;
  }
}

/** A tracer that records its spans. */
export class FakeTracer implements TelemetryTracer {
  readonly spans: FakeSpan[] = [];
  /** Whether the spans it starts record (a sampled-out or no-op span does not). */
  recording = true;

  startActiveSpan<F extends (span: TelemetrySpan) => unknown>(
    name: string,
    options: TelemetrySpanOptions,
    fn: F,
  ): ReturnType<F> {
    const span = new FakeSpan(name, options, this.recording);
    this.spans.push(span);
    return fn(span) as ReturnType<F>;
  }
}
