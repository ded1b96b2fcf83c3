/**
 * The telemetry benchmark: create→settled throughput (as in
 * `engine_bench.ts`: N objects created through a Client, settled by a no-op
 * controller at concurrency 1, on a file store) with no meter or tracer,
 * against the real `@opentelemetry/api` meter and tracer.
 *
 * 1. In this process, with no SDK installed: the API's no-op meter and tracer.
 * 2. In a Deno child with `OTEL_DENO=true`, exporting OTLP/HTTP JSON every
 *    200 ms to a sink this process runs on 127.0.0.1: Deno's built-in SDK.
 *
 * Rounds alternate between the modes; each mode's figure is its median.
 * Run: `deno task bench:telemetry` (`--quick` for a smoke run). Figures go in
 * docs/performance.md.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { metrics, trace } from "@opentelemetry/api";
import { Beehive, type BeehiveOptions, settled } from "../mod.ts";
import { openSqliteStore } from "../store/sqlite/mod.ts";

const QUICK = process.argv.includes("--quick");
const CHILD = process.argv.includes("--child");
const N = QUICK ? 500 : 2_000;
const ROUNDS = QUICK ? 3 : 9;
const Kind = { group: "bench.beehive.dev", kind: "Item" };
const SPEC = { image: "example.com/app:1.0", replicas: 3 };

/** Creates N objects and waits until a no-op controller settled them all; resolves to obj/s. */
async function run(options: BeehiveOptions): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "beehive-bench-"));
  const store = await openSqliteStore(join(dir, "bench.db"));
  try {
    const bh = new Beehive(store, options);
    let passes = 0;
    const all = Promise.withResolvers<void>();
    bh.register(Kind, () => {
      if (++passes === N) all.resolve();
      return settled();
    });
    const stop = await bh.start();
    const client = bh.client(Kind);
    const t0 = performance.now();
    for (let i = 0; i < N; i++) await client.create(`item-${i}`, SPEC);
    await all.promise;
    await stop();
    return N / ((performance.now() - t0) / 1000);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Alternating rounds of "none" and "api"; resolves to each mode's median obj/s. */
async function measure(): Promise<{ none: number; api: number }> {
  const none: number[] = [];
  const api: number[] = [];
  const withApi: BeehiveOptions = {
    meter: metrics.getMeter("beehive-bench"),
    tracer: trace.getTracer("beehive-bench"),
  };
  await run({}); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    none.push(await run({}));
    api.push(await run(withApi));
  }
  return { none: median(none), api: median(api) };
}

function row(label: string, r: { none: number; api: number }): string {
  const ratio = r.api / r.none;
  return `| ${label} | ${r.none.toFixed(0)} | ${r.api.toFixed(0)} | ${
    ((ratio - 1) * 100).toFixed(1)
  }% |`;
}

if (CHILD) {
  console.log(JSON.stringify(await measure()));
} else {
  const cpu = cpus()[0]?.model ?? "unknown CPU";
  console.log(`telemetry benchmark — ${new Date().toISOString()} — ${cpus().length} × ${cpu}`);
  console.log(`${N} objects per run, ${ROUNDS} alternating rounds per mode, medians`);
  console.log("");
  console.log("| setting | none obj/s | meter+tracer obj/s | difference |");
  console.log("| --- | ---: | ---: | ---: |");
  console.log(row("@opentelemetry/api, no SDK (no-op)", await measure()));

  let exported = 0;
  const sink = createServer((req, res) => {
    req.on("data", (c: Uint8Array) => (exported += c.length));
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve));
  const port = (sink.address() as AddressInfo).port;
  const deno = "Deno" in globalThis
    ? process.execPath
    : fileURLToPath(new URL("../node_modules/.bin/deno", import.meta.url));
  const args = ["run", "-A", fileURLToPath(import.meta.url), "--child"];
  if (QUICK) args.push("--quick");
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(deno, args, {
      stdio: ["ignore", "pipe", "inherit"],
      env: {
        ...process.env,
        OTEL_DENO: "true",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
        OTEL_METRIC_EXPORT_INTERVAL: "200",
      },
    });
    let text = "";
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (c: string) => (text += c));
    child.on("error", reject);
    child.on("close", (code) => code === 0 ? resolve(text) : reject(new Error(`child ${code}`)));
  });
  sink.closeAllConnections();
  await new Promise((resolve) => sink.close(resolve));
  console.log(row("OTEL_DENO=true, OTLP/HTTP JSON every 200 ms", JSON.parse(out.trim())));
  console.log("");
  console.log(`the sink received ${(exported / 1e6).toFixed(1)} MB of OTLP JSON`);
}
