/**
 * End to end: a Deno child process with `OTEL_DENO=true` exports over
 * OTLP/HTTP JSON to a receiver this test runs on 127.0.0.1; the receiver gets
 * `beehive.reconcile.passes` with the pinned attributes and one
 * `reconcile Kind.group` span per pass, the stalled one with error status, and
 * the controller's own span as the pass span's child.
 * Runs under Node too (the child is still Deno, from the pinned toolchain).
 *
 * @module
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { test } from "../_test.ts";

const CHILD = fileURLToPath(new URL("./_otel_child.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const DENO = "Deno" in globalThis
  ? process.execPath
  : fileURLToPath(new URL("../../node_modules/.bin/deno", import.meta.url));
const KIND = "Thing.test.beehive.dev";
const DEADLINE = 60_000;

interface OtlpAttribute {
  key: string;
  value: {
    stringValue?: string;
    intValue?: string | number;
    doubleValue?: number;
    boolValue?: boolean;
  };
}

interface DataPoint {
  attributes?: OtlpAttribute[];
  asInt?: string | number;
  asDouble?: number;
}

interface OtlpMetric {
  name: string;
  unit?: string;
  sum?: { dataPoints: DataPoint[]; isMonotonic?: boolean };
}

interface OtlpSpan {
  name: string;
  spanId?: string;
  parentSpanId?: string;
  attributes?: OtlpAttribute[];
  status?: { code?: number };
}

function attrs(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const a of list ?? []) {
    const v = a.value;
    out[a.key] = v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ??
      v.doubleValue ?? v.boolValue;
  }
  return out;
}

/** An OTLP/HTTP JSON receiver that keeps every metric and span it is sent. */
class Receiver {
  readonly metrics: OtlpMetric[] = [];
  readonly spans: OtlpSpan[] = [];
  readonly #server = createServer((req, res) => this.#handle(req, res));
  readonly #waiters = new Set<() => void>();

  listen(): Promise<number> {
    return new Promise((resolve) => {
      this.#server.listen(
        0,
        "127.0.0.1",
        () => resolve((this.#server.address() as AddressInfo).port),
      );
    });
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }

  /** Resolves once `ready()` holds, checked on every export; rejects at the deadline. */
  until(ready: () => boolean, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!ready()) return;
        this.#waiters.delete(check);
        signal.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = () => {
        this.#waiters.delete(check);
        reject(new Error("the receiver did not get the expected telemetry in time"));
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#waiters.add(check);
      check();
    });
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      try {
        const doc = JSON.parse(body);
        if (req.url === "/v1/metrics") {
          for (const rm of doc.resourceMetrics ?? []) {
            for (const sm of rm.scopeMetrics ?? []) this.metrics.push(...(sm.metrics ?? []));
          }
        } else if (req.url === "/v1/traces") {
          for (const rs of doc.resourceSpans ?? []) {
            for (const ss of rs.scopeSpans ?? []) this.spans.push(...(ss.spans ?? []));
          }
        }
      } catch {
        // Not JSON (e.g. a probe): nothing to keep.
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
      for (const w of [...this.#waiters]) w();
    });
  }

  /** The data points of `beehive.reconcile.passes` exported so far. */
  passPoints(): { unit: string | undefined; attributes: Record<string, unknown> }[] {
    return this.metrics.filter((m) => m.name === "beehive.reconcile.passes").flatMap((m) =>
      (m.sum?.dataPoints ?? []).map((p) => ({ unit: m.unit, attributes: attrs(p.attributes) }))
    );
  }

  /** The `reconcile Kind.group` spans exported so far. */
  passSpans(): OtlpSpan[] {
    return this.spans.filter((s) => s.name === `reconcile ${KIND}`);
  }
}

/** Runs the child to its exit; resolves to its exit code and output. */
function runChild(
  port: number,
  signal: AbortSignal,
): Promise<{ code: number | null; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(DENO, ["run", "-A", CHILD], {
      cwd: ROOT,
      signal,
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...process.env,
        OTEL_DENO: "true",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
        OTEL_METRIC_EXPORT_INTERVAL: "200",
        OTEL_SERVICE_NAME: "beehive-e2e",
      },
    });
    let err = "";
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (c: string) => (err += c));
    child.stdout!.resume();
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, err }));
  });
}

test("Telemetry OTLP a Deno child with OTEL_DENO=true exports beehive.reconcile.passes and reconcile spans to an OTLP/HTTP JSON receiver", async () => {
  const receiver = new Receiver();
  const port = await receiver.listen();
  const deadline = AbortSignal.timeout(DEADLINE);
  try {
    const exited = await runChild(port, deadline);
    assert.equal(exited.code, 0, exited.err);
    await receiver.until(() => {
      const outcomes = new Set(receiver.passPoints().map((p) => p.attributes["beehive.outcome"]));
      const spans = receiver.passSpans();
      return outcomes.has("settled") && outcomes.has("stalled") && spans.length >= 2 &&
        receiver.spans.some((s) => s.name === "controller work");
    }, deadline);
    for (const p of receiver.passPoints()) {
      assert.equal(p.unit, "{pass}");
      assert.deepEqual(Object.keys(p.attributes).sort(), ["beehive.kind", "beehive.outcome"]);
      assert.equal(p.attributes["beehive.kind"], KIND);
    }
    const byName = new Map(
      receiver.passSpans().map((s) => [attrs(s.attributes)["beehive.object.name"], s]),
    );
    const ok = byName.get("ok")!;
    const poison = byName.get("poison")!;
    assert.deepEqual(
      { ...attrs(ok.attributes), "beehive.object.id": undefined },
      {
        "beehive.kind": KIND,
        "beehive.object.id": undefined,
        "beehive.object.name": "ok",
        "beehive.object.generation": 1,
        "beehive.outcome": "settled",
      },
    );
    assert.equal(typeof attrs(ok.attributes)["beehive.object.id"], "number");
    assert.notEqual(ok.status?.code, 2);
    assert.equal(attrs(poison.attributes)["beehive.outcome"], "stalled");
    assert.equal(poison.status?.code, 2); // STATUS_CODE_ERROR
    // The pass span is active while the controller runs: its spans are children.
    const work = receiver.spans.find((s) => s.name === "controller work")!;
    assert.ok(ok.spanId !== undefined && ok.spanId !== "");
    assert.equal(work.parentSpanId, ok.spanId);
  } finally {
    await receiver.close();
  }
});
